//! Host-side pieces shared by several transports: one concept per file.

pub mod lazy_timer;
pub mod packet_bitmap;

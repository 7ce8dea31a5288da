//! End-to-end tests of the simulator: one binary, one module per topic.

mod common;
mod ideal_fct;
mod switching;
mod tcp_dumbbell;

//! End-to-end tests of the simulator: one binary, one module per topic.

mod admission;
mod canary;
mod common;
mod credit;
mod extending_doc;
mod fastlane;
mod fastpass;
mod golden;
mod ideal_fct;
mod link_series;
mod packet_trace;
mod partitioned;
mod phost_paper;
mod phost_pfabric;
mod semantic_validation;
mod switch_stage;
mod switching;
mod tcp_dumbbell;
mod tcp_family;
mod tcp_handshake;
mod tcp_pacing;
mod tcp_tap;
mod toy_cc;
mod transport_contract;
mod validation;
mod validation_dctcp;

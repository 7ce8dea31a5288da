//! The switch stage: what a switch does with a packet between its arrival
//! and an output queue, and when that queue refuses it.
//!
//! - [`egress`]: which equal-cost next hop a packet takes (ECMP, symmetric
//!   ECMP, spraying, power of two choices, least loaded).
//! - [`refusal`]: one hook through which every drop passes, on every
//!   admission path, that may drop, notify the source, deflect or trim.
//! - [`deflection`]: deflection to the less occupied of two random
//!   switch-facing ports (Vertigo; Canary with an admission check).
//! - [`plugin`]: switch-stage plug-ins, features that change every
//!   switch (FastLane, [`fastlane`]), installed through one interface.
//!
//! The hop limit (a TTL: [`crate::net::NetworkParams::hop_limit`]) bounds
//! loops that deflection can make; a packet that reaches a switch having
//! crossed that many links is dropped with [`crate::metrics::DropReason::HopLimit`].
//!
//! The default switch (ECMP, drop, no hook) costs nothing for these: the
//! egress policy is one `match`, the refusal hook is looked at only on the
//! branch that drops.

pub mod deflection;
pub mod egress;
pub mod fastlane;
pub mod plugin;
pub mod refusal;

pub use deflection::TwoChoiceDeflection;
pub use egress::{Egress, LoadBalancing};
pub use fastlane::{FastLane, FastLaneConfig, FastLaneHook};
pub use plugin::SwitchPlugin;
pub use refusal::{
    notice_to_source, same_hook, RandomDeflection, Refusal, RefusalHook, Refused, SwitchView,
    Theirs, Verdict,
};

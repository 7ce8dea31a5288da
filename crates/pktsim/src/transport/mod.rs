//! Host protocols. Each protocol is one file (or folder) implementing
//! [`contract::Transport`], with its own `[transport]` settings type that
//! implements [`ProtocolConfig`]; the registry below names each protocol in
//! one line (see `docs/extending.md`).

pub mod contract;
pub mod credit;
pub mod fastpass;
pub mod host;
pub mod per_host;
pub mod pfabric;
pub mod phost;
pub mod ping_pong;
pub mod receiver;
pub mod tcp;

/// DCTCP's estimator and controller (kept at its old path).
pub use tcp::dctcp;

pub use credit::{ExpressPassConfig, FlashPassConfig};
pub use fastpass::{EpochStart, FastpassConfig, FastpassModel, FastpassOrder};
pub use pfabric::PfabricConfig;
pub use phost::PhostConfig;
pub use tcp::{TcpConfig, TcpVariantConfig};

use crate::error::Result;
use crate::metrics::RunOutput;
use crate::sim::{Progress, Simulation, StopReason, Transport};
use serde::{Deserialize, Serialize};

/// A protocol's `[transport]` settings: validation, and how they build and
/// run the protocol. Every hook but `run` has a default.
pub trait ProtocolConfig {
    /// One of the TCP family (NIC backpressure, finite default host buffer).
    const TCP_FAMILY: bool = false;

    /// Fill in defaults that depend on the protocol, for the resolved config.
    fn resolve(&mut self) {}

    /// Check the parameters without running (default: build them in `run`'s
    /// way with a setup that does nothing).
    fn validate(&self) -> Result<()> {
        self.run(Check)
    }

    /// The TCP parameters of a TCP-family protocol (`None` for others).
    fn tcp(&self) -> Result<Option<tcp::TcpParams>> {
        Ok(None)
    }

    /// The shared TCP settings of a TCP-family protocol (`None` for others).
    fn tcp_settings(&self) -> Option<&TcpConfig> {
        None
    }

    /// Whether the protocol needs a server of its own (the config then adds
    /// one host).
    fn wants_extra_host(&self) -> bool {
        false
    }

    /// Check host indices in the parameters against the topology's `n_hosts`.
    fn validate_hosts(&self, _n_hosts: u32) -> Result<()> {
        Ok(())
    }

    /// Build the protocol from the settings and run `setup` with it.
    fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output>;
}

/// A [`SimSetup`] that only builds the transport: `validate`'s default.
struct Check;

impl SimSetup for Check {
    type Output = ();
    fn run<T: Transport>(self, _t: T) {}
}

/// Declares [`TransportConfig`] with one variant per `Variant(Config) =
/// "name"` line and dispatches every method to the [`ProtocolConfig`] of
/// the variant's settings.
/// The TCP lines (`Variant(module::Controller) = "name"`) also declare
/// TCP's controller enum [`Cc`] (`tcp::cc::declare_cc`); their settings are
/// [`tcp::TcpVariantConfig`] of the controller.
macro_rules! registry {
    (
        tcp {
            $($(#[$tdoc:meta])* $tvariant:ident($tmod:ident :: $tcc:ident) = $tname:literal,)*
        }
        $($(#[$doc:meta])* $variant:ident($config:ty) = $name:literal,)*
    ) => {
        tcp::cc::declare_cc! { $($(#[$tdoc])* $tmod::$tcc = $tname,)* }
        registry! { @all
            $($(#[$tdoc])* $tvariant(tcp::TcpVariantConfig<tcp::$tmod::$tcc>) = $tname,)*
            $($(#[$doc])* $variant($config) = $name,)*
        }
    };
    (@all $($(#[$doc:meta])* $variant:ident($config:ty) = $name:literal,)*) => {
        /// The `[transport]` section: which protocol, and its parameters.
        #[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
        #[serde(tag = "protocol")]
        pub enum TransportConfig {
            $($(#[$doc])* #[serde(rename = $name)] $variant($config),)*
        }

        impl TransportConfig {
            /// Protocol name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(TransportConfig::$variant(_) => $name,)*
                }
            }

            /// Fill in defaults that depend on the protocol (DCTCP's g).
            pub fn resolve(&mut self) {
                match self {
                    $(TransportConfig::$variant(c) => c.resolve(),)*
                }
            }

            /// Whether the protocol is one of the TCP family (NIC
            /// backpressure, finite default host buffer).
            pub fn is_tcp_family(&self) -> bool {
                match self {
                    $(TransportConfig::$variant(_) => <$config as ProtocolConfig>::TCP_FAMILY,)*
                }
            }

            /// Whether runs of this protocol can split into groups on
            /// threads ([`Transport::copy_for_group`] gives a copy): its
            /// hosts share nothing but packets. A test checks this against
            /// the built transport.
            pub fn splits(&self) -> bool {
                !matches!(self, TransportConfig::Pfabric(_))
            }

            /// The shared TCP settings of a TCP-family protocol (`None`
            /// for others).
            pub fn tcp_settings(&self) -> Option<&TcpConfig> {
                match self {
                    $(TransportConfig::$variant(c) => c.tcp_settings(),)*
                }
            }

            /// The TCP parameters of a TCP-family protocol (`None` for
            /// others), for callers that build the transport themselves.
            pub fn tcp(&self) -> Result<Option<tcp::TcpParams>> {
                match self {
                    $(TransportConfig::$variant(c) => c.tcp(),)*
                }
            }

            /// Check the parameters without running.
            pub fn validate(&self) -> Result<()> {
                match self {
                    $(TransportConfig::$variant(c) => c.validate(),)*
                }
            }

            /// Whether the protocol needs a server of its own (Fastpass's
            /// arbiter, unless placed on a workload host): the config then
            /// adds one host.
            pub fn wants_extra_host(&self) -> bool {
                match self {
                    $(TransportConfig::$variant(c) => c.wants_extra_host(),)*
                }
            }

            /// Check host indices in the parameters against the topology's
            /// `n_hosts`.
            pub fn validate_hosts(&self, n_hosts: u32) -> Result<()> {
                match self {
                    $(TransportConfig::$variant(c) => c.validate_hosts(n_hosts),)*
                }
            }

            /// Build this protocol and run `setup` with it: the one place
            /// that maps config names to implementations.
            pub fn run<S: SimSetup>(&self, setup: S) -> Result<S::Output> {
                match self {
                    $(TransportConfig::$variant(c) => c.run(setup),)*
                }
            }
        }
    };
}

registry! {
    // The TCP family: one line per congestion controller (its file in
    // `tcp/`), all sharing the TCP settings.
    tcp {
        /// TCP NewReno.
        Tcp(newreno::NewReno) = "tcp",
        /// DCTCP: NewReno plus ECN-proportional window cuts.
        Dctcp(dctcp::Dctcp) = "dctcp",
        /// TCP CUBIC (RFC 9438).
        Cubic(cubic::Cubic) = "cubic",
    }
    /// pFabric's minimal rate control (use with `switch_queue = { kind = "pfabric" }`).
    Pfabric(PfabricConfig) = "pfabric",
    /// pHost's receiver-driven tokens (use with `switch_queue = { kind = "pfabric" }`).
    Phost(PhostConfig) = "phost",
    /// Fastpass: a central arbiter allocates every packet a timeslot.
    Fastpass(FastpassConfig) = "fastpass",
    /// ExpressPass: receiver-paced, rate-limited credits (`aeolus = true`: ExpressPass*).
    Expresspass(ExpressPassConfig) = "expresspass",
    /// FlashPass: sender-driven emulation, data at T + T_wait (`aeolus = true`: FlashPass*).
    Flashpass(FlashPassConfig) = "flashpass",
}

/// Something that runs a simulation with a concrete transport type; lets the
/// registry hand over a monomorphic transport without boxing.
pub trait SimSetup {
    /// What the run produces.
    type Output;
    /// Run with transport `t`.
    fn run<T: Transport>(self, t: T) -> Self::Output;
}

/// Set a simulation up, run it to the end and collect its output.
pub fn run_to_end<T: Transport>(
    mut sim: Simulation<T>,
    report: Option<&mut dyn FnMut(&Progress)>,
) -> Result<RunOutput> {
    sim.setup()?;
    let reason: StopReason = sim.run(report);
    Ok(sim.finish(reason))
}

#[cfg(test)]
mod split_tests {
    use super::*;

    /// Builds the transport and says whether it gives a copy for a group.
    struct Copies;

    impl SimSetup for Copies {
        type Output = bool;
        fn run<T: Transport>(self, t: T) -> bool {
            t.copy_for_group().is_some()
        }
    }

    #[test]
    fn splits_says_what_the_built_transport_does() {
        let names = [
            "tcp",
            "dctcp",
            "cubic",
            "pfabric",
            "phost",
            "fastpass",
            "expresspass",
            "flashpass",
        ];
        for name in names {
            let cfg: TransportConfig =
                toml::from_str(&format!("protocol = \"{name}\"")).expect("defaults parse");
            assert_eq!(cfg.name(), name);
            assert_eq!(cfg.run(Copies).expect("builds"), cfg.splits(), "{name}");
        }
    }
}

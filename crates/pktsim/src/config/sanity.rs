//! Numbers that are valid one by one but impossible together, or absurd
//! for any network: packets larger than a buffer, timers below any round
//! trip or out of order, a hop limit that the topology's own paths exceed,
//! two buffer models at once. Each is refused with the field to change;
//! unlike the protocol table ([`super::semantics`]) there is no opt-out,
//! since no experiment means them.

use super::{Config, TopologyConfig};
use crate::error::{Error, Result};
use crate::net::topology::TopologySpec;
use crate::time::{parse_duration, Duration};
use crate::transport::TransportConfig;

/// The smallest retransmission (or request) timeout a config may give:
/// 1 µs. No network pktsim builds has a round trip shorter than that (one
/// full packet alone takes 1.2 µs at 10 Gbit/s), so a shorter timer fires
/// before any answer can arrive and resends everything, every time:
/// `initial_rto = "1ps"` took 727 M events for 50 flows.
pub const MIN_TIMEOUT: Duration = Duration::from_us(1);

/// The smallest header a config may give: an IPv4 header without options.
/// ACKs, tokens, credits' requests and notices are header-sized, so a
/// smaller header makes them almost free on the wire.
pub const MIN_HEADER_BYTES: u32 = 20;

/// The largest packet (payload plus header): an IPv4 packet's total length.
pub const MAX_PACKET_BYTES: u64 = 65_535;

/// Packet size, buffer and header checks: a full packet (`mss +
/// header_bytes`) must fit every buffer a config sets, or every packet of
/// that port is dropped.
pub fn check_packets_and_buffers(cfg: &Config) -> Result<()> {
    let n = &cfg.network;
    if n.mss == 0 {
        return Err(Error::config("network.mss", "must be positive"));
    }
    if n.header_bytes < MIN_HEADER_BYTES {
        return Err(Error::config(
            "network.header_bytes",
            format!(
                "{} is below the {MIN_HEADER_BYTES} bytes of an IPv4 header; control packets \
                 (ACKs, tokens) are header-sized, so use at least {MIN_HEADER_BYTES} (default 40)",
                n.header_bytes
            ),
        ));
    }
    let packet = n.mss as u64 + n.header_bytes as u64;
    if packet > MAX_PACKET_BYTES {
        return Err(Error::config(
            "network.mss",
            format!(
                "mss + header_bytes = {packet} bytes is above the largest IP packet \
                 ({MAX_PACKET_BYTES} bytes)"
            ),
        ));
    }
    let fits = |field: &str, bytes: u64| -> Result<()> {
        if bytes < packet {
            return Err(Error::config(
                field,
                format!(
                    "{bytes} bytes do not hold one full packet (network.mss + network.header_bytes \
                     = {packet} bytes): every packet would be dropped"
                ),
            ));
        }
        Ok(())
    };
    if n.shared_buffer.is_some() && n.switch_buffer_bytes.is_some() {
        // Both would apply (a port holds the smaller of its own limit and
        // the shared threshold), which nobody writing both expects.
        return Err(Error::config(
            "network.switch_buffer_bytes",
            "give either switch_buffer_bytes (a buffer per port) or network.shared_buffer \
             (one buffer per switch, shared with dynamic thresholds), not both",
        ));
    }
    if let Some(b) = n.switch_buffer_bytes {
        fits("network.switch_buffer_bytes", b)?;
    }
    if let Some(sb) = &n.shared_buffer {
        if sb.bytes == 0 {
            return Err(Error::config(
                "network.shared_buffer.bytes",
                "must be positive",
            ));
        }
        if !(sb.alpha > 0.0 && sb.alpha.is_finite()) {
            return Err(Error::config(
                "network.shared_buffer.alpha",
                "must be positive",
            ));
        }
        fits("network.shared_buffer.bytes", sb.bytes)?;
        // An idle port's threshold is alpha × the whole buffer.
        if sb.alpha * (sb.bytes as f64) < packet as f64 {
            return Err(Error::config(
                "network.shared_buffer.alpha",
                format!(
                    "alpha × bytes = {:.0} bytes do not hold one full packet ({packet} bytes)",
                    sb.alpha * sb.bytes as f64
                ),
            ));
        }
    }
    if let Some(b) = n.host_buffer_bytes {
        fits("network.host_buffer_bytes", b)?;
    }
    match &cfg.topology {
        TopologyConfig::Dumbbell {
            bottleneck_buffer_bytes: Some(b),
            ..
        }
        | TopologyConfig::Star {
            bottleneck_buffer_bytes: Some(b),
            ..
        } => fits("topology.bottleneck_buffer_bytes", *b)?,
        TopologyConfig::Explicit { links, .. } => {
            for (i, l) in links.iter().enumerate() {
                if let Some(b) = l.buffer_bytes {
                    fits(&format!("topology.links[{i}].buffer_bytes"), b)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// A timer field: its value must parse and be at least [`MIN_TIMEOUT`].
fn timeout(field: &str, s: &str) -> Result<Duration> {
    let d = parse_duration(s).map_err(|m| Error::config(field, m))?;
    if d < MIN_TIMEOUT {
        return Err(Error::config(
            field,
            format!(
                "{s:?} is shorter than any round trip pktsim simulates; a timer this short resends \
                 every packet before its answer can come (use at least 1us)"
            ),
        ));
    }
    Ok(d)
}

/// Timer checks: every retransmission timeout at least [`MIN_TIMEOUT`],
/// and the TCP family's in order, min_rto ≤ initial_rto ≤ max_rto (RFC
/// 6298 clamps the RTO into [min, max], so an initial value outside is
/// never used as written).
pub fn check_timers(t: &TransportConfig) -> Result<()> {
    let tcp = match t {
        TransportConfig::Pfabric(c) => {
            timeout("transport.rto", &c.rto)?;
            None
        }
        TransportConfig::Expresspass(c) => {
            timeout("transport.rto", &c.common.rto)?;
            None
        }
        TransportConfig::Flashpass(c) => {
            timeout("transport.rto", &c.common.rto)?;
            None
        }
        TransportConfig::Fastpass(c) => {
            timeout("transport.request_timeout", &c.request_timeout)?;
            timeout("transport.retx_timeout", &c.retx_timeout)?;
            None
        }
        TransportConfig::Phost(_) => None,
        // The TCP family (every registry line of it).
        _ => t.tcp_settings(),
    };
    let Some(c) = tcp else {
        return Ok(());
    };
    let min = timeout("transport.min_rto", &c.min_rto)?;
    let initial = timeout("transport.initial_rto", &c.initial_rto)?;
    let max = timeout("transport.max_rto", &c.max_rto)?;
    timeout("transport.syn_fallback_rto", &c.syn_fallback_rto)?;
    if max < min {
        return Err(Error::config(
            "transport.max_rto",
            format!(
                "{:?} is below transport.min_rto = {:?}; the RTO must be able to lie between them",
                c.max_rto, c.min_rto
            ),
        ));
    }
    if initial < min || initial > max {
        return Err(Error::config(
            "transport.initial_rto",
            format!(
                "{:?} must lie between transport.min_rto = {:?} and transport.max_rto = {:?}",
                c.initial_rto, c.min_rto, c.max_rto
            ),
        ));
    }
    Ok(())
}

/// A hop limit below the longest shortest path between two hosts drops
/// every packet between them at the last switch (`hop_limit = 2` on a
/// leaf-spine ran 166 s of hop-limit drops and retransmissions).
pub fn check_hop_limit(topo: &TopologySpec, hop_limit: u8) -> Result<()> {
    // A packet reaches the last switch of an L-link path after L − 1
    // links and is dropped there when it has crossed hop_limit or more.
    if (hop_limit as usize) + 1 >= topo.n_nodes()
        || super::paths::host_path_bound(topo).is_some_and(|b| b <= hop_limit as usize)
    {
        return Ok(());
    }
    if let Some((links, a, b)) = super::paths::longest_host_path(topo) {
        if links > hop_limit as usize {
            return Err(Error::config(
                "network.hop_limit",
                format!(
                    "{hop_limit} is below the {links} links of the shortest path between \
                     hosts {} and {}: every packet between them would be dropped; use at least \
                     {links} (default 64)",
                    topo.names[a], topo.names[b]
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::topology::topology_from_toml;

    #[test]
    fn a_hop_limit_below_the_fat_trees_paths_is_refused() {
        let ft = topology_from_toml(
            "kind = \"fat_tree\"\nk = 4\nhost_rate = \"10Gbps\"\nfabric_rate = \"10Gbps\"\n\
             link_delay = \"1us\"",
        );
        assert!(check_hop_limit(&ft, 6).is_ok());
        let e = check_hop_limit(&ft, 5).unwrap_err().to_string();
        assert!(
            e.starts_with("network.hop_limit: 5 is below the 6 links"),
            "{e}"
        );
    }
}

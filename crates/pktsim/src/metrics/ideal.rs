//! The ideal flow completion time used for slowdown, identical for every
//! protocol.
//!
//! **Definition.** The ideal FCT of a flow of `S` payload bytes is the time
//! from its start until its last bit reaches the receiver when the sender
//! puts all `n = ⌈S / mss⌉` packets on its NIC at the start (no window, no
//! handshake, no ACKs awaited) and the network is otherwise idle. Packets
//! carry `mss` payload bytes plus `header` bytes, the last one
//! `S − (n−1)·mss + header`. The path is the first shortest path from the
//! routing table (all equal-cost paths of the built-in topologies have the
//! same rates and delays).
//!
//! The packets cross the hops exactly as the simulator carries them: a port
//! starts packet `j` when it has arrived (see below) and packet `j−1` has
//! left; transmission takes `tx_i(size) = ⌈size·8 / rate_i⌉` ps.
//! - store-and-forward: packet `j` is at node `i+1` at `end + d_i`;
//! - cut-through (into a switch): the switch sees the packet at
//!   `start + tx_i(header) + d_i` and may start sending it on hop `i+1` no
//!   earlier than `end + d_i − tx_{i+1}(size)`, so that it never transmits
//!   bits it has not received.
//!
//! For store-and-forward with all packets full-sized this is the familiar
//! `Σ_i (d_i + tx_i(MTU)) + (n−1)·tx_bottleneck(MTU)`; the recursion below
//! also handles the short last packet and cut-through exactly. It runs in
//! O(hops), since identical packets leave each hop evenly spaced.

use crate::time::{Duration, Rate};

/// One hop of a path.
#[derive(Clone, Copy, Debug)]
pub struct Hop {
    /// Link rate.
    pub rate: Rate,
    /// Propagation delay.
    pub delay: Duration,
    /// Whether the node at the far end forwards cut-through.
    pub cut_through: bool,
}

/// Ideal FCT of `size` payload bytes over `path` (see the module docs).
pub fn ideal_fct(size: u64, mss: u32, header: u32, path: &[Hop]) -> Duration {
    assert!(!path.is_empty() && mss > 0);
    let size = size.max(1);
    let mss = mss as u64;
    let hdr = header as u64;
    let n = size.div_ceil(mss);
    let full = mss + hdr;
    let last = size - (n - 1) * mss + hdr;
    // The block: packets 1..n-1 (all full); then the last packet.
    let m = n - 1;
    // Times relative to the flow start (picoseconds). `ready` is when a port
    // may start the packet; the block is (first ready, spacing).
    let (mut blk_ready, mut blk_gap) = (0u64, 0u64);
    let mut last_ready = 0u64;
    let mut finish = 0u64;
    for (i, hop) in path.iter().enumerate() {
        let tau = hop.rate.tx_time(full).ps();
        let tau_l = hop.rate.tx_time(last).ps();
        let d = hop.delay.ps();
        let h = hop.rate.tx_time(hdr).ps();
        // Block departures: start_j = ready_1 + (j-1)·max(gap, tau).
        let gap = blk_gap.max(tau);
        let blk_start = blk_ready;
        let blk_end = if m > 0 {
            blk_start + (m - 1) * gap + tau
        } else {
            0
        };
        let l_start = if m > 0 {
            last_ready.max(blk_end)
        } else {
            last_ready
        };
        let l_end = l_start + tau_l;
        let next = path.get(i + 1);
        match next {
            None => finish = l_end + d,
            Some(nx) => {
                let arrive = |start: u64, t: u64| {
                    if hop.cut_through {
                        start + h + d
                    } else {
                        start + t + d
                    }
                };
                let ready = |start: u64, t: u64, size: u64| {
                    let a = arrive(start, t);
                    if hop.cut_through {
                        a.max((start + t + d).saturating_sub(nx.rate.tx_time(size).ps()))
                    } else {
                        a
                    }
                };
                blk_ready = ready(blk_start, tau, full);
                blk_gap = gap;
                last_ready = ready(l_start, tau_l, last);
            }
        }
    }
    Duration::from_ps(finish)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(g: u64, ns: u64, ct: bool) -> Hop {
        Hop {
            rate: Rate::gbps(g),
            delay: Duration::from_ns(ns),
            cut_through: ct,
        }
    }

    #[test]
    fn one_packet_store_and_forward() {
        // 1000 B payload + 40 B = 1040 B: 832 ns per 10G hop, 2 hops, 100 ns each.
        let p = [hop(10, 100, false), hop(10, 100, false)];
        assert_eq!(
            ideal_fct(1000, 1460, 40, &p),
            Duration::from_ns(2 * 832 + 200)
        );
    }

    #[test]
    fn many_packets_store_and_forward_closed_form() {
        // 10 full packets over 10G-40G-10G: bottleneck 10G.
        let p = [
            hop(10, 200, false),
            hop(40, 200, false),
            hop(10, 200, false),
        ];
        let f = ideal_fct(14_600, 1460, 40, &p);
        let expect = 3 * 200 + 1200 + 300 + 1200 + 9 * 1200;
        assert_eq!(f, Duration::from_ns(expect));
    }

    #[test]
    fn short_last_packet_is_cheaper() {
        let p = [hop(10, 200, false), hop(10, 200, false)];
        let a = ideal_fct(1460 * 2, 1460, 40, &p);
        let b = ideal_fct(1460 + 100, 1460, 40, &p);
        // Second packet 140 B: 112 ns instead of 1200 ns at the last hop.
        assert_eq!(a - b, Duration::from_ns(1200 - 112));
    }

    #[test]
    fn cut_through_same_rate() {
        // One 1500 B packet, two 10G hops, switch in the middle cut-through:
        // header 32 ns, then the switch sends the whole packet (1200 ns).
        let p = [hop(10, 100, true), hop(10, 100, false)];
        assert_eq!(
            ideal_fct(1460, 1460, 40, &p),
            Duration::from_ns(32 + 100 + 1200 + 100)
        );
    }

    #[test]
    fn cut_through_slow_to_fast_waits_for_the_tail() {
        // 10G into a switch, 40G out: the 300 ns transmission must end when
        // the tail arrives (1200 + 100 ns), then 100 ns to the host.
        let p = [hop(10, 100, true), hop(40, 100, false)];
        assert_eq!(ideal_fct(1460, 1460, 40, &p), Duration::from_ns(1300 + 100));
    }
}

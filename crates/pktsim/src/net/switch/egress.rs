//! Egress choice: which of the equal-cost next hops a switch sends a packet
//! to. Per flow (ECMP, symmetric or not), per packet (spraying at random or
//! round-robin), or by queue state (power of two choices, least loaded).

use crate::engine::{Rng, RngStreams};
use crate::packet::{flags, NodeId, Packet};

/// How a switch picks among equal-cost next hops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum LoadBalancing {
    /// Hash of the flow (and the packet's `path` entropy): one path per flow.
    #[default]
    Ecmp,
    /// Per packet, uniformly at random.
    Spray,
    /// Per packet, round-robin per (switch, destination).
    SprayRoundRobin,
    /// ECMP whose hash is the same in both directions of a flow and does not
    /// depend on the switch, only on how many links the packet has crossed:
    /// a reverse-direction packet (an ACK, a credit's data) takes the mirror
    /// path of the forward one on topologies whose switches of one tier list
    /// their uplinks in the same order (leaf-spine, fat tree). Credit-based
    /// designs (ExpressPass, FlashPass) need data on the credit's path.
    SymmetricEcmp,
    /// Per packet, the shorter queue (in bytes) of two next hops drawn at
    /// random (Mitzenmacher's power of two choices).
    PowerOfTwo,
    /// Per packet, the next hop with the fewest queued bytes; ties go to the
    /// flow's ECMP choice, then to the lowest index.
    LeastLoaded,
}

impl LoadBalancing {
    /// Whether the choice reads queue state (the network must bring the
    /// candidate ports' queues up to date first).
    #[inline]
    pub fn reads_queues(self) -> bool {
        matches!(self, LoadBalancing::PowerOfTwo | LoadBalancing::LeastLoaded)
    }
}

/// The egress stage of every switch: the policy and its per-switch state.
#[derive(Debug)]
pub struct Egress {
    /// The policy in force.
    pub policy: LoadBalancing,
    /// One random stream per node (`net.spray`, index = node id).
    spray_rng: Vec<Rng>,
    /// Hosts (switches are numbered after them).
    n_hosts: usize,
    /// Round-robin counters per (switch, destination host), index
    /// `(switch - n_hosts) * n_hosts + dst`; allocated only for
    /// [`LoadBalancing::SprayRoundRobin`] (the resource estimate counts it).
    rr: Vec<u32>,
}

impl Egress {
    /// Egress state for `n_nodes` nodes, the first `n_hosts` of them hosts.
    pub fn new(
        policy: LoadBalancing,
        n_nodes: usize,
        n_hosts: usize,
        streams: &RngStreams,
    ) -> Egress {
        let rr_entries = if policy == LoadBalancing::SprayRoundRobin {
            (n_nodes - n_hosts) * n_hosts
        } else {
            0
        };
        Egress {
            policy,
            spray_rng: (0..n_nodes)
                .map(|i| streams.stream("net.spray", i as u64))
                .collect(),
            n_hosts,
            rr: vec![0; rr_entries],
        }
    }

    /// Take from `other` the state of the nodes `theirs(node)` selects:
    /// their random streams and, for switches, their round-robin counters
    /// (gathering a partitioned run's groups into one).
    pub fn absorb(&mut self, other: &mut Egress, theirs: &dyn Fn(NodeId) -> bool) {
        for (i, (mine, o)) in self
            .spray_rng
            .iter_mut()
            .zip(&mut other.spray_rng)
            .enumerate()
        {
            if theirs(NodeId(i as u32)) {
                std::mem::swap(mine, o);
            }
        }
        if self.n_hosts == 0 {
            return;
        }
        let rows = self
            .rr
            .chunks_mut(self.n_hosts)
            .zip(other.rr.chunks(self.n_hosts));
        for (i, (mine, o)) in rows.enumerate() {
            if theirs(NodeId((self.n_hosts + i) as u32)) {
                mine.copy_from_slice(o);
            }
        }
    }

    /// Index into `hops` (the equal-cost next hops at `sw` towards
    /// `pkt.dst`, at least two of them) for `pkt`. `load(i)` reads the queued
    /// bytes of `hops[i]`, for the policies that read queue state.
    #[inline]
    pub fn choose(
        &mut self,
        sw: NodeId,
        pkt: &Packet,
        n: usize,
        load: impl Fn(usize) -> u64,
    ) -> usize {
        if pkt.has(flags::SOURCE_ROUTED) {
            return pkt.path as usize % n;
        }
        match self.policy {
            LoadBalancing::Ecmp => ecmp(sw, pkt, n),
            LoadBalancing::Spray => self.spray_rng[sw.idx()].below(n as u64) as usize,
            LoadBalancing::SprayRoundRobin => {
                let c = &mut self.rr[(sw.idx() - self.n_hosts) * self.n_hosts + pkt.dst.idx()];
                let i = *c as usize % n;
                *c = c.wrapping_add(1);
                i
            }
            LoadBalancing::SymmetricEcmp => symmetric_ecmp(pkt, n),
            LoadBalancing::PowerOfTwo => {
                let rng = &mut self.spray_rng[sw.idx()];
                let a = rng.below(n as u64) as usize;
                // A second, different candidate.
                let b = (a + 1 + rng.below(n as u64 - 1) as usize) % n;
                if load(b) < load(a) {
                    b
                } else {
                    a
                }
            }
            LoadBalancing::LeastLoaded => {
                let mut best = ecmp(sw, pkt, n);
                let mut best_load = load(best);
                for i in 0..n {
                    let l = load(i);
                    if l < best_load {
                        best = i;
                        best_load = l;
                    }
                }
                best
            }
        }
    }
}

/// The ECMP hash of a packet at switch `sw`: its flow, path entropy and
/// addresses, salted with the switch so that tiers choose independently.
#[inline]
fn ecmp(sw: NodeId, pkt: &Packet, n: usize) -> usize {
    let key = (pkt.flow.0 as u64) << 32
        | (pkt.path as u64) << 16
        | (pkt.src.0 as u64 ^ (pkt.dst.0 as u64) << 8);
    (mix64(key ^ (sw.0 as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) % n as u64) as usize
}

/// The symmetric hash: the same for (src, dst) and (dst, src), salted with
/// the packet's link count instead of the switch, so that the k-th switch
/// from either end makes the same choice.
#[inline]
fn symmetric_ecmp(pkt: &Packet, n: usize) -> usize {
    let (lo, hi) = if pkt.src <= pkt.dst {
        (pkt.src.0, pkt.dst.0)
    } else {
        (pkt.dst.0, pkt.src.0)
    };
    let key = (pkt.flow.0 as u64) << 32 | (pkt.path as u64) << 16 | (lo as u64 ^ (hi as u64) << 8);
    (mix64(key ^ (pkt.hops as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) % n as u64) as usize
}

/// A 64-bit integer mixer (SplitMix64 finalizer), for ECMP hashing.
#[inline]
fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{FlowId, Header, PacketKind};

    fn pkt(src: u32, dst: u32, hops: u8) -> Packet {
        let mut p = Packet::new(
            FlowId(7),
            NodeId(src),
            NodeId(dst),
            1500,
            PacketKind::Data,
            Header::TcpData { seq: 0 },
        );
        p.hops = hops;
        p
    }

    #[test]
    fn symmetric_ecmp_is_the_same_both_ways_at_the_same_depth() {
        let mut e = Egress::new(LoadBalancing::SymmetricEcmp, 8, 0, &RngStreams::new(1));
        for n in 2..9 {
            for hops in 1..4 {
                let fwd = e.choose(NodeId(5), &pkt(1, 3, hops), n, |_| 0);
                let rev = e.choose(NodeId(6), &pkt(3, 1, hops), n, |_| 0);
                assert_eq!(fwd, rev, "n = {n}, hops = {hops}");
            }
        }
    }

    #[test]
    fn least_loaded_takes_the_shortest_queue() {
        let mut e = Egress::new(LoadBalancing::LeastLoaded, 1, 0, &RngStreams::new(1));
        let loads = [3000u64, 1500, 0, 4500];
        assert_eq!(e.choose(NodeId(0), &pkt(0, 1, 1), 4, |i| loads[i]), 2);
    }

    #[test]
    fn power_of_two_never_takes_the_longer_of_its_two() {
        let mut e = Egress::new(LoadBalancing::PowerOfTwo, 1, 0, &RngStreams::new(3));
        // With two next hops both are always drawn: the shorter wins.
        let loads = [9000u64, 10];
        for _ in 0..50 {
            assert_eq!(e.choose(NodeId(0), &pkt(0, 1, 1), 2, |i| loads[i]), 1);
        }
    }
}

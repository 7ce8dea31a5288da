//! What Fastpass's arbiter and endpoints know of failed links, and path
//! selection around them (issue 32).
//!
//! The arbiter learns of a failure or a recovery when routing does (after
//! `[network] failure_detection`), as the paper's arbiter would from the
//! fabric's routing protocol, and passes it on to the endpoints (the
//! notification's own delay is not modelled). A source route names a core
//! switch by its place in the rack switch's equal-cost set as built. Then
//!
//! - the arbiter gives each inter-rack packet a colour whose core is still
//!   usable for its pair of racks and free at both racks in that timeslot
//!   (so no rack–core link carries two packets in one slot, as before the
//!   failure), and defers a packet no such colour is left for to a later
//!   slot (its pair gets the slot's demand back): with fewer cores a rack
//!   carries fewer packets per slot, and the spine queues stay empty
//!   through the failure instead of building up;
//! - an endpoint sends on the named core through its place in the set as
//!   routing now has it ([`live_path`]); a slot allocated before the
//!   arbiter learned of the failure, on a core routing has since dropped,
//!   is not used (the packet asks for another slot), since its packet
//!   would collide on the cores left.
//!
//! Before routing learns of a failure, packets sent to a failed core die on
//! its link (`link_down`) and are sent again after `retx_timeout`. While
//! routing has never changed none of this runs: the colouring is the one
//! of the built network.

use crate::packet::NodeId;
use crate::transport::contract::Ctx;

/// The arbiter's view of which cores each pair of racks can still use.
#[derive(Debug)]
pub(super) struct KnownRoutes {
    /// [`Ctx::route_changes`] when this was read.
    version: u32,
    n_racks: usize,
    /// Core switches, as colour `c` names core `c % cores`.
    cores: usize,
    /// Per (source rack, destination rack, core): whether routing still
    /// leads from the source rack's switch through that core towards the
    /// destination rack.
    usable: Vec<bool>,
    /// Whether some pair lost a core or sees them in another order.
    restricted: bool,
}

impl KnownRoutes {
    /// The routes as built: every core usable by every pair.
    pub(super) fn built(n_racks: usize, cores: usize) -> Self {
        KnownRoutes {
            version: 0,
            n_racks,
            cores,
            usable: Vec::new(),
            restricted: false,
        }
    }

    /// Read routing again if it changed since the last read. `rack_switch`
    /// and `rack_host` give each rack's switch and one of its hosts;
    /// `core_node` the core switches in colour order.
    pub(super) fn refresh(
        &mut self,
        ctx: &Ctx,
        rack_switch: &[NodeId],
        rack_host: &[NodeId],
        core_node: &[NodeId],
    ) {
        let version = ctx.route_changes();
        if version == self.version {
            return;
        }
        self.version = version;
        let (n, cores) = (self.n_racks, self.cores);
        self.usable = vec![false; n * n * cores];
        self.restricted = false;
        for (rs, &switch) in rack_switch.iter().enumerate().take(n) {
            for rd in (0..n).filter(|&rd| rd != rs) {
                let now = ctx.next_hop_peers(switch, rack_host[rd], false);
                let at = (rs * n + rd) * cores;
                for (k, core) in core_node.iter().enumerate() {
                    let usable = now.contains(core);
                    self.usable[at + k] = usable;
                    self.restricted |= !usable;
                }
            }
        }
    }

    /// Whether routing has taken a core from some pair of racks, so that
    /// colours need checking.
    pub(super) fn restricted(&self) -> bool {
        self.restricted
    }

    /// The path of colour `c` for racks `(rs, rd)` (its core, `c %
    /// cores`), if the pair can use that core.
    fn path(&self, rs: u32, rd: u32, c: usize) -> Option<u16> {
        let core = c % self.cores;
        let at = (rs as usize * self.n_racks + rd as usize) * self.cores + core;
        self.usable[at].then_some(core as u16)
    }

    /// Paths (cores) for one timeslot's inter-rack `edges` (source rack,
    /// destination rack), coloured as the built network would have them
    /// (`colours`, from `n_colours`; colour `c` is core `c % cores`):
    /// an edge keeps its colour if its core is still usable and no edge
    /// before it took that colour at either rack; otherwise it gets the
    /// first colour that is usable and free at both racks, or `None` (the
    /// packet waits for a later slot).
    pub(super) fn paths(
        &self,
        edges: &[(u32, u32)],
        colours: &[u32],
        n_colours: usize,
    ) -> Vec<Option<u16>> {
        let words = n_colours.div_ceil(64);
        let mut used_out = vec![0u64; self.n_racks * words];
        let mut used_in = vec![0u64; self.n_racks * words];
        let mut take = |rs: u32, rd: u32, c: usize| {
            let (o, i) = (rs as usize * words + c / 64, rd as usize * words + c / 64);
            let bit = 1u64 << (c % 64);
            if (used_out[o] | used_in[i]) & bit != 0 {
                return false;
            }
            used_out[o] |= bit;
            used_in[i] |= bit;
            true
        };
        let mut out = vec![None; edges.len()];
        let mut moved = Vec::new();
        for (e, (&(rs, rd), &c)) in edges.iter().zip(colours).enumerate() {
            let c = c as usize;
            match self.path(rs, rd, c) {
                Some(p) if take(rs, rd, c) => out[e] = Some(p),
                _ => moved.push(e),
            }
        }
        for e in moved {
            let (rs, rd) = edges[e];
            out[e] = (0..n_colours).find_map(|c| {
                let p = self.path(rs, rd, c)?;
                take(rs, rd, c).then_some(p)
            });
        }
        out
    }
}

/// The path to put in a packet to `dst` sent by this call's host on the
/// core its allocation named (`core`: a place in the host's rack switch's
/// equal-cost set as built): that core's place in the set as routing now
/// has it, or `None` if routing no longer leads through it.
pub(super) fn live_path(ctx: &Ctx, dst: NodeId, core: u16) -> Option<u16> {
    if ctx.route_changes() == 0 {
        return Some(core);
    }
    let sw = ctx.attached_switch(ctx.host());
    let built = ctx.next_hop_peers(sw, dst, true);
    let Some(node) = built.get(core as usize % built.len().max(1)) else {
        return Some(core);
    };
    let now = ctx.next_hop_peers(sw, dst, false);
    now.iter().position(|p| p == node).map(|i| i as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two racks, `cores` cores, with the cores of `lost` gone from both
    /// directions.
    fn two_racks(cores: usize, lost: &[usize]) -> KnownRoutes {
        let mut k = KnownRoutes::built(2, cores);
        k.usable = vec![false; 4 * cores];
        for pair in [1, 2] {
            for c in (0..cores).filter(|c| !lost.contains(c)) {
                k.usable[pair * cores + c] = true;
            }
        }
        k.restricted = !lost.is_empty();
        k
    }

    #[test]
    fn an_edge_on_a_lost_core_moves_to_a_free_usable_one() {
        // Core 0 lost: colours 1, 2 keep theirs; the edge on colour 0 takes
        // colour 3, the first one free.
        let k = two_racks(4, &[0]);
        let edges = [(0, 1), (0, 1), (0, 1)];
        assert_eq!(
            k.paths(&edges, &[1, 0, 2], 4),
            vec![Some(1), Some(3), Some(2)]
        );
    }

    #[test]
    fn edges_beyond_the_cores_left_wait_for_a_later_slot() {
        // Four packets from rack 0 to rack 1, three cores left: one waits.
        let k = two_racks(4, &[2]);
        let edges = [(0, 1); 4];
        let paths = k.paths(&edges, &[0, 1, 2, 3], 4);
        assert_eq!(paths, vec![Some(0), Some(1), None, Some(3)]);
        // No two packets of the slot share a core.
        let mut got: Vec<u16> = paths.iter().flatten().copied().collect();
        got.sort();
        got.dedup();
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn with_lanes_a_core_carries_one_packet_per_lane() {
        // Two cores of two lanes (colours 0..4, core = colour % 2); core 1
        // lost: core 0 carries two packets (colours 0 and 2), the rest wait.
        let k = two_racks(2, &[1]);
        let edges = [(0, 1); 4];
        let paths = k.paths(&edges, &[0, 1, 2, 3], 4);
        assert_eq!(paths, vec![Some(0), None, Some(0), None]);
    }
}

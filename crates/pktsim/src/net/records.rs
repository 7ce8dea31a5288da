//! What the network records as it runs, kept apart from its state: the
//! packet counters and each flow's drops. One part of the network keeps
//! one set; the sets of several parts (the pieces of a partitioned run)
//! are merged at the end, in a fixed order, into those of the whole run.

use crate::metrics::Counters;
use crate::packet::FlowId;

/// The network's counters and per-flow drop counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetRecords {
    /// Packet counters (see [`Counters`]). The hot path adds to them in
    /// place, hence visible to the network's modules.
    pub(in crate::net) counters: Counters,
    /// Drops per flow id; flows beyond its length are not counted.
    flow_drops: Vec<u32>,
}

impl NetRecords {
    /// Empty records with room for `n_flows` flows' drops.
    pub fn for_flows(n_flows: usize) -> Self {
        NetRecords {
            counters: Counters::default(),
            flow_drops: vec![0; n_flows],
        }
    }

    /// Room for `n_flows` flows' drops, none counted yet.
    pub(in crate::net) fn set_flow_count(&mut self, n_flows: usize) {
        self.flow_drops = vec![0; n_flows];
    }

    /// The packet counters.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Packets of flow `f` dropped (0 for a flow the records have no room
    /// for).
    pub fn flow_drops(&self, f: FlowId) -> u32 {
        self.flow_drops.get(f.idx()).copied().unwrap_or(0)
    }

    /// Count one drop of a packet of flow `f`.
    #[inline]
    pub(in crate::net) fn count_flow_drop(&mut self, f: FlowId) {
        if let Some(d) = self.flow_drops.get_mut(f.idx()) {
            *d += 1;
        }
    }

    /// Add `other`'s records to these. Merging the parts of a run one after
    /// the other, in the parts' order, gives the records of the whole run;
    /// every record is a sum, so no order of the parts gives another
    /// result, but the fixed order keeps that from being something to prove
    /// each time a record is added.
    pub fn merge(&mut self, other: &NetRecords) {
        self.counters.add(&other.counters);
        if self.flow_drops.len() < other.flow_drops.len() {
            self.flow_drops.resize(other.flow_drops.len(), 0);
        }
        for (d, o) in self.flow_drops.iter_mut().zip(&other.flow_drops) {
            *d += o;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{DropReason, DropSite};

    /// Records of one part of a run, with `k` in every counter and in the
    /// drops of flow `k % 3`.
    fn part(k: u64, n_flows: usize) -> NetRecords {
        let mut r = NetRecords::for_flows(n_flows);
        let c = &mut r.counters;
        c.sent = [k, 2 * k];
        c.delivered = [k, k];
        c.dropped[0][DropReason::HopLimit as usize] = k;
        c.dropped_at[1][DropSite::Fabric as usize] = k;
        c.in_flight = [k, 0];
        c.ecn_marked = k;
        c.packet_hops = 10 * k;
        c.made = [0, k];
        c.deflected = k;
        c.trimmed = k;
        for _ in 0..k {
            r.count_flow_drop(FlowId((k % 3) as u32));
        }
        r
    }

    #[test]
    fn merged_records_are_the_sums_of_the_parts() {
        let mut all = NetRecords::for_flows(3);
        for k in 1..=3 {
            all.merge(&part(k, 3));
        }
        let c = all.counters();
        assert_eq!(
            (c.sent, c.delivered, c.in_flight),
            ([6, 12], [6, 6], [6, 0])
        );
        assert_eq!(c.dropped[0][DropReason::HopLimit as usize], 6);
        assert_eq!(c.dropped_at[1][DropSite::Fabric as usize], 6);
        assert_eq!(c.dropped_total(0), 6);
        assert_eq!((c.ecn_marked, c.packet_hops, c.made), (6, 60, [0, 6]));
        assert_eq!((c.deflected, c.trimmed), (6, 6));
        let drops: Vec<u32> = (0..4).map(|f| all.flow_drops(FlowId(f))).collect();
        assert_eq!(drops, [3, 1, 2, 0]);
    }

    #[test]
    fn merging_in_another_order_or_an_empty_part_changes_nothing() {
        let (a, b, c) = (part(1, 3), part(2, 3), part(5, 3));
        let mut forward = a.clone();
        forward.merge(&b);
        forward.merge(&c);
        let mut backward = c.clone();
        backward.merge(&b);
        backward.merge(&a);
        assert_eq!(forward, backward);
        let mut with_empty = forward.clone();
        with_empty.merge(&NetRecords::default());
        assert_eq!(with_empty, forward);
    }

    #[test]
    fn a_part_with_room_for_more_flows_widens_the_merge() {
        let mut narrow = NetRecords::for_flows(1);
        narrow.merge(&part(2, 4));
        assert_eq!(narrow.flow_drops(FlowId(2)), 2);
        assert_eq!(narrow.flow_drops.len(), 4);
    }
}

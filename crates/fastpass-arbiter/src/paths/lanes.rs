//! Path selection when a rack's link to a core switch carries several
//! packets per timeslot: Fastpass's own setting (its arbiter splits each
//! slot's rack graph into 4 paths, one per core switch, each rack link
//! carrying a quarter of the rack's 32 hosts; `NUM_PATHS 4` in
//! `path_selection.h` of the released code). Each cross-rack pair needs a
//! core whose uplink from its source rack and downlink into its
//! destination rack both have room left.
//!
//! A rack's room is kept as one `u64` per direction, bit `level * cores +
//! core`, with a core's room `r` as its top `r` levels (levels `capacity -
//! r` up to `capacity - 1`). So `up & down` has bit (level, core) set
//! exactly when both ends have at least `capacity - level` room left in
//! that core, and its lowest set bit names the core with the most room at
//! both ends (the lowest core among equals). Taking one unit of room
//! clears the lowest set bit of that core's levels, at each end.
//!
//! Choosing the core with the most joint room keeps the cores balanced:
//! on full 16 × 32 permutations with 4 cores of 8 listed by source, a pair
//! finds no core with room at both ends about 8 times per 100 slots
//! (against 7 times per slot when taking the lowest core with room; about
//! 40 times per 100 slots when the same pairs come in random order, as an
//! allocator lists them). Such a pair `u → v` is fixed by
//! moving one earlier pair: one into v on a core `c` that u still has room
//! on moves to a core its source and v both have room on (or one out of u
//! on a core v has room on moves likewise), which frees `c` for it. Only if
//! no such pair exists (never seen in those permutations) is the slot
//! coloured again as a proper edge colouring with `cores × capacity`
//! colours (colour `c` on core `c % cores`), which always succeeds when no
//! rack has more pairs than that (König's theorem).

/// Largest number of racks (rooms are kept in fixed-size tables).
pub(crate) const LANE_MAX_RACKS: usize = super::MAX_RACKS;

const R: usize = LANE_MAX_RACKS;

/// Room per rack and direction for one timeslot, reused from slot to slot.
#[derive(Clone)]
pub(crate) struct LaneEngine {
    racks: usize,
    /// All levels of all cores: a rack with its full capacity everywhere.
    full: u64,
    /// `room[u]`: the room left on rack u's uplinks; `room[R + v]` on rack
    /// v's downlinks.
    room: Box<[u64; 2 * R]>,
    cores: Cores,
}

/// Which bits of a room belong to which core.
#[derive(Clone)]
struct Cores {
    count: usize,
    /// For each bit, every level of that bit's core (`mask[c]` for
    /// `c < count` is core c's).
    mask: [u64; 64],
    /// For each bit, its core.
    of: [u8; 64],
}

impl Cores {
    /// `room` less one unit on the core whose levels are `levels`.
    fn take(room: u64, levels: u64) -> u64 {
        let own = room & levels;
        room ^ own & own.wrapping_neg()
    }

    /// `room` with one more unit on the core whose levels are `levels`
    /// (the level just below its lowest, or its top level if it has none).
    fn give(&self, room: u64, levels: u64) -> u64 {
        let own = room & levels;
        let below = if own == 0 {
            1 << (63 - levels.leading_zeros())
        } else {
            (own & own.wrapping_neg()) >> self.count
        };
        room | below
    }

    /// The core with the most room in `joint` (the lowest among equals).
    fn best(&self, joint: u64) -> usize {
        self.of[joint.trailing_zeros() as usize & 63] as usize
    }
}

impl std::fmt::Debug for LaneEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneEngine")
            .field("racks", &self.racks)
            .finish_non_exhaustive()
    }
}

impl LaneEngine {
    /// An engine for `racks` (at most [`LANE_MAX_RACKS`]) racks and `cores`
    /// core switches whose links carry `capacity` packets per slot;
    /// `cores × capacity` is at most 64 (checked by the caller).
    pub(crate) fn new(racks: usize, cores: usize, capacity: usize) -> Self {
        let bits = cores * capacity;
        let mut core_mask = [0u64; 64];
        let mut core_of = [0u8; 64];
        for (i, (m, c)) in core_mask.iter_mut().zip(&mut core_of).enumerate() {
            let core = i % cores;
            *c = core as u8;
            *m = (0..capacity)
                .map(|level| level * cores + core)
                .filter(|&b| b < 64)
                .fold(0, |m, b| m | 1 << b);
        }
        LaneEngine {
            racks: racks.min(R),
            full: if bits >= 64 {
                u64::MAX
            } else {
                (1u64 << bits) - 1
            },
            room: Box::new([0; 2 * R]),
            cores: Cores {
                count: cores,
                mask: core_mask,
                of: core_of,
            },
        }
    }

    /// Give each cross-rack pair (hosts already checked to be in range,
    /// `rack` maps a host to its rack) the core with the most room at both
    /// ends, writing it to `out` (preset to [`NO_CORE`](super::NO_CORE)).
    /// Returns `false`, with `out` partly written, if some pair found no
    /// core with room at both ends and no single earlier pair could move
    /// to make some.
    pub(crate) fn assign<F: Fn(u32) -> usize + Copy>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        rack: F,
    ) -> bool {
        if self.cores.count.is_power_of_two() {
            self.assign_with::<true, F>(pairs, out, rack)
        } else {
            self.assign_with::<false, F>(pairs, out, rack)
        }
    }

    /// [`LaneEngine::assign`]; with `POW2` (a power-of-two number of
    /// cores) a bit's core and levels are computed, not looked up.
    #[inline(always)]
    fn assign_with<const POW2: bool, F: Fn(u32) -> usize + Copy>(
        &mut self,
        pairs: &[(u32, u32)],
        out: &mut [u8],
        rack: F,
    ) -> bool {
        let racks = self.racks;
        let cores = &self.cores;
        let (count, column) = (cores.count, cores.mask[0]);
        let room = &mut *self.room;
        room[..racks].fill(self.full);
        room[R..R + racks].fill(self.full);
        // The current source rack's room, kept in a register while
        // consecutive pairs share it.
        let (mut cu, mut cm) = (0, room[0]);
        let n = pairs.len().min(out.len());
        let (pairs, out) = (&pairs[..n], &mut out[..n]);
        for k in 0..n {
            let (s, d) = pairs[k];
            let (u, v) = (rack(s) & (R - 1), rack(d) & (R - 1));
            if u != cu {
                room[cu] = cm;
                (cu, cm) = (u, room[u]);
            }
            if u == v {
                continue;
            }
            let down = room[R + v];
            let joint = cm & down;
            if joint == 0 {
                room[cu] = cm;
                if !cores.move_one(room, pairs, out, k, u, v, rack) {
                    return false;
                }
                cm = room[cu];
                continue;
            }
            let bit = joint.trailing_zeros() as usize & 63;
            let (core, levels) = if POW2 {
                let core = bit & (count - 1);
                (core, column << core)
            } else {
                (cores.of[bit] as usize, cores.mask[bit])
            };
            let (up_levels, down_levels) = (cm & levels, down & levels);
            cm ^= up_levels & up_levels.wrapping_neg();
            room[R + v] = down ^ (down_levels & down_levels.wrapping_neg());
            out[k] = core as u8;
        }
        room[cu] = cm;
        true
    }
}

impl Cores {
    /// Pair `k`, `u → v`, has no core with room at both ends: move one
    /// earlier pair so that it has, and give it that core. Looks for a pair
    /// into v on a core c that u has room on, whose source y and v both
    /// have room on some other core (moving it there frees c at v), or a
    /// pair out of u on a core c that v has room on, whose destination w
    /// and u both have room on another core. Returns `false` if there is
    /// none (rooms and `out` unchanged).
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn move_one<F: Fn(u32) -> usize>(
        &self,
        room: &mut [u64; 2 * R],
        pairs: &[(u32, u32)],
        out: &mut [u8],
        k: usize,
        u: usize,
        v: usize,
        rack: F,
    ) -> bool {
        let has = |x: u64, c: usize| x & self.mask[c] != 0;
        for (e, (&(s, d), &c)) in pairs.iter().zip(out.iter()).enumerate().take(k) {
            let c = c as usize;
            if c >= self.count {
                continue;
            }
            let (y, w) = (rack(s) & (R - 1), rack(d) & (R - 1));
            // The end the move frees c at, and the other end of e.
            let (up, down) = if w == v && has(room[u], c) {
                (y, v)
            } else if y == u && has(room[R + v], c) {
                (u, w)
            } else {
                continue;
            };
            let joint = room[up] & room[R + down];
            if joint == 0 {
                continue;
            }
            let to = self.best(joint);
            let (from, into) = (self.mask[c], self.mask[to]);
            room[up] = Self::take(self.give(room[up], from), into);
            room[R + down] = Self::take(self.give(room[R + down], from), into);
            out[e] = to as u8;
            room[u] = Self::take(room[u], from);
            room[R + v] = Self::take(room[R + v], from);
            out[k] = c as u8;
            return true;
        }
        false
    }
}

/// A full permutation of 4 racks of 4 hosts (host i sends to
/// `NO_SINGLE_MOVE[i]`) that gets stuck, with 2 cores of 2, where no single
/// earlier pair can move (found by search).
#[cfg(test)]
pub(crate) const NO_SINGLE_MOVE: [u32; 16] = [14, 9, 4, 15, 13, 8, 3, 0, 5, 12, 7, 6, 1, 11, 2, 10];

#[cfg(test)]
mod tests {
    use super::*;

    fn assign(e: &mut LaneEngine, pairs: &[(u32, u32)], hpr: u32) -> Option<Vec<u8>> {
        let mut out = vec![super::super::NO_CORE; pairs.len()];
        e.assign(pairs, &mut out, |h| (h / hpr) as usize)
            .then_some(out)
    }

    #[test]
    fn picks_the_core_with_most_room_at_both_ends() {
        // 3 racks of 4 hosts, 2 cores of capacity 2. Rack 0 → rack 1 takes
        // core 0 (both cores equal: the lowest); the next rack 0 → rack 1
        // takes core 1 (2 left there against 1 on core 0); rack 2 → rack 1
        // then has 1 left on each core at rack 1 and takes core 0; rack 2
        // → rack 0 has 2 left on core 1 at rack 2 and on both at rack 0.
        let mut e = LaneEngine::new(3, 2, 2);
        let pairs = [(0, 4), (1, 5), (8, 6), (9, 0)];
        assert_eq!(assign(&mut e, &pairs, 4), Some(vec![0, 1, 0, 1]));
        // Reuse starts from full rooms again.
        assert_eq!(assign(&mut e, &pairs, 4), Some(vec![0, 1, 0, 1]));
    }

    #[test]
    fn a_full_link_is_never_chosen() {
        // Capacity 1: rack 0's uplink on core 0 is used by the first pair,
        // so the second takes core 1; a third pair out of rack 0 is stuck
        // (and no move helps: rack 0 has no room left at all).
        let mut e = LaneEngine::new(2, 2, 1);
        assert_eq!(assign(&mut e, &[(0, 2), (1, 3)], 2), Some(vec![0, 1]));
        assert_eq!(assign(&mut e, &[(0, 2), (1, 3), (0, 3)], 2), None);
        // Pairs inside a rack take no room.
        assert_eq!(
            assign(&mut e, &[(0, 1), (0, 2), (1, 0), (1, 3)], 2),
            Some(vec![255, 0, 255, 1])
        );
    }

    #[test]
    fn a_stuck_pair_moves_a_pair_out_of_its_source_rack() {
        // 3 racks of 2 hosts, 2 cores of 1. 0→1 takes core 0, 0→2 core 1,
        // 1→0 core 0; then 1→2 (rack 1 → rack 2) finds core 0 full on rack
        // 1's uplink and core 1 on rack 2's downlink. Rack 1's core-0 pair
        // (1→0) moves to core 1 (room at rack 1 and at rack 0), freeing
        // core 0 for 1→2. The last two pairs find room directly.
        let mut e = LaneEngine::new(3, 2, 1);
        let pairs = [(0, 2), (1, 4), (2, 0), (3, 5), (4, 1), (5, 3)];
        assert_eq!(assign(&mut e, &pairs, 2), Some(vec![0, 1, 1, 0, 0, 1]));
    }

    #[test]
    fn a_stuck_pair_moves_a_pair_into_its_destination_rack() {
        // 4 racks of 2 hosts, 2 cores of 1. At 7→3 (rack 3 → rack 1), core
        // 0 is full on rack 3's uplink and core 1 on rack 1's downlink.
        // Rack 1's core-0 pair 1→2 (from rack 0) moves to core 1, which
        // rack 0's uplink and rack 1's downlink both have room on, freeing
        // core 0 for 7→3.
        let mut e = LaneEngine::new(4, 2, 1);
        let pairs = [(1, 2), (2, 4), (3, 1), (4, 6), (5, 7), (6, 5), (7, 3)];
        assert_eq!(assign(&mut e, &pairs, 2), Some(vec![1, 0, 1, 0, 1, 1, 0]));
    }

    #[test]
    fn a_slot_no_single_move_fixes_is_refused() {
        // 4 racks of 4 hosts, 2 cores of 2: this full permutation gets
        // stuck where no single earlier pair can move (the selector then
        // colours it in full; see `links_carrying_several_packets`).
        let mut e = LaneEngine::new(4, 2, 2);
        let pairs: Vec<(u32, u32)> = (0..).zip(NO_SINGLE_MOVE).collect();
        assert_eq!(assign(&mut e, &pairs, 4), None);
    }

    #[test]
    fn giving_back_restores_the_room_taken() {
        let e = LaneEngine::new(1, 3, 4);
        let c = &e.cores;
        for core in 0..3 {
            let mut room = e.full;
            let mut seen = vec![room];
            for _ in 0..4 {
                room = Cores::take(room, c.mask[core]);
                seen.push(room);
            }
            assert_eq!(room & c.mask[core], 0);
            for back in (0..4).rev() {
                room = c.give(room, c.mask[core]);
                assert_eq!(room, seen[back]);
            }
        }
    }
}

//! Sets of byte ranges: the sender's SACK scoreboard (RFC 6675) and the receiver's
//! out-of-order data, from which it builds SACK blocks (RFC 2018).

use super::compact::LazyVec;

/// Disjoint, sorted, half-open ranges `[start, end)` of sequence offsets (boxed while not
/// empty: most connections see no hole most of the time).
#[derive(Debug, Clone, Default)]
pub struct RangeSet {
    ranges: LazyVec<(u64, u64)>,
}

impl RangeSet {
    pub fn is_empty(&self) -> bool {
        self.ranges().is_empty()
    }
    pub fn ranges(&self) -> &[(u64, u64)] {
        self.ranges.as_slice()
    }

    /// Adds `[start, end)`, merging overlapping and adjacent ranges. Returns whether any
    /// new offset was added. O(n) in the number of ranges (a handful at these windows).
    pub fn insert(&mut self, start: u64, end: u64) -> bool {
        if start >= end {
            return false;
        }
        let ranges = self.ranges.vec_mut();
        let i = ranges.partition_point(|&(_, e)| e < start);
        let mut j = i;
        let (mut s, mut e) = (start, end);
        let mut covered = 0;
        while j < ranges.len() && ranges[j].0 <= end {
            let (rs, re) = ranges[j];
            covered += re.min(end).saturating_sub(rs.max(start));
            s = s.min(rs);
            e = e.max(re);
            j += 1;
        }
        ranges.splice(i..j, [(s, e)]);
        covered < end - start
    }

    /// Drops everything below `offset`.
    pub fn discard_below(&mut self, offset: u64) {
        let Some(ranges) = self.ranges.existing_mut() else { return };
        ranges.retain(|&(_, e)| e > offset);
        if let Some(first) = ranges.first_mut() {
            first.0 = first.0.max(offset);
        }
        self.ranges.free_if_empty();
    }

    /// Removes and returns the first range if it starts at or below `offset`.
    pub fn pop_reaching(&mut self, offset: u64) -> Option<(u64, u64)> {
        if self.ranges().first().is_some_and(|&(s, _)| s <= offset) {
            let first = self.ranges.vec_mut().remove(0);
            self.ranges.free_if_empty();
            Some(first)
        } else {
            None
        }
    }

    pub fn contains(&self, offset: u64) -> bool {
        let ranges = self.ranges();
        let i = ranges.partition_point(|&(_, e)| e <= offset);
        ranges.get(i).is_some_and(|&(s, _)| s <= offset)
    }

    /// The range holding `offset`, if any.
    pub fn range_of(&self, offset: u64) -> Option<(u64, u64)> {
        let ranges = self.ranges();
        let i = ranges.partition_point(|&(_, e)| e <= offset);
        ranges.get(i).copied().filter(|&(s, _)| s <= offset)
    }

    /// The first part of `[start, end)` the set holds, if any.
    pub fn first_overlap(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let ranges = self.ranges();
        let i = ranges.partition_point(|&(_, e)| e <= start);
        ranges.get(i).filter(|&&(s, _)| s < end).map(|&(s, e)| (s.max(start), e.min(end)))
    }

    /// One range holds all of `[start, end)`.
    pub fn covers(&self, start: u64, end: u64) -> bool {
        self.range_of(start).is_some_and(|(_, e)| e >= end)
    }

    /// Bytes at or above `offset`, and the fewest segments of at most `segment_bytes` that
    /// carry them (each range rounded up on its own: a SACKed range holds whole segments).
    pub fn above(&self, offset: u64, segment_bytes: u64) -> (u64, u64) {
        let mut bytes = 0;
        let mut segments = 0;
        for &(s, e) in self.ranges().iter().rev() {
            if e <= offset {
                break;
            }
            bytes += e - s.max(offset);
            segments += (e - s.max(offset)).div_ceil(segment_bytes);
        }
        (bytes, segments)
    }

    pub fn highest_end(&self) -> Option<u64> {
        self.ranges().last().map(|&(_, e)| e)
    }

    /// First offset in `[from, to)` that is not in the set, with the end of that gap.
    pub fn first_gap(&self, from: u64, to: u64) -> Option<(u64, u64)> {
        let mut at = from;
        let ranges = self.ranges();
        let i = ranges.partition_point(|&(_, e)| e <= at);
        for &(s, e) in &ranges[i..] {
            if at >= to {
                return None;
            }
            if s > at {
                return Some((at, s.min(to)));
            }
            at = at.max(e);
        }
        (at < to).then_some((at, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn merges_and_reports_news() {
        let mut s = RangeSet::default();
        assert!(s.insert(10, 20));
        assert!(s.insert(30, 40));
        assert!(!s.insert(12, 18));
        assert!(s.insert(20, 30));
        assert_eq!(s.ranges(), &[(10, 40)]);
        assert_eq!(s.first_gap(0, 50), Some((0, 10)));
        assert_eq!(s.first_gap(10, 50), Some((40, 50)));
        assert_eq!(s.first_gap(10, 40), None);
        s.discard_below(15);
        assert_eq!(s.ranges(), &[(15, 40)]);
        assert_eq!(s.above(30, 4), (10, 3), "10 bytes need three 4-byte segments");
        s.insert(50, 51);
        assert_eq!(s.above(30, 4), (11, 4), "a one-byte range is a segment");
    }

    proptest! {
        /// The set agrees with a naive set of offsets.
        #[test]
        fn matches_a_naive_model(ops in prop::collection::vec((0u64..200, 0u64..30), 1..60), probe in 0u64..240) {
            let mut s = RangeSet::default();
            let mut naive = BTreeSet::new();
            for (start, len) in ops {
                let news = (start..start + len).any(|o| !naive.contains(&o));
                prop_assert_eq!(s.insert(start, start + len), news);
                naive.extend(start..start + len);
            }
            prop_assert_eq!(s.contains(probe), naive.contains(&probe));
            let bytes_above = naive.range(probe..).count() as u64;
            prop_assert_eq!(s.above(probe, 1), (bytes_above, bytes_above), "one-byte segments: one per byte");
            for w in s.ranges().windows(2) {
                prop_assert!(w[0].1 < w[1].0, "disjoint and non-adjacent");
            }
        }
    }
}

//! ns-2 2.35 variants of DropTail, RED, SFQ and DRR (`variant = "ns2"` on `droptail`,
//! `red`, `sfq` and `fq`): the simulator all five papers ran, so that a run can be held to
//! ns-2's own queues rather than to the RFCs' or Linux's.
//!
//! Each file follows one ns-2 source file (`queue/drop-tail.cc`, `queue/red.cc`,
//! `queue/sfq.cc`, `queue/drr.cc`) with the defaults of `tcl/lib/ns-default.tcl`; the rules
//! that differ from our default disciplines are listed, with ns-2's source lines, in the
//! "ns-2 variant" sections of `docs/droptail.md`, `docs/red.md`, `docs/sfq.md` and
//! `docs/fq.md`.
//!
//! Like ns-2's, these queues hold only the packets waiting: the one being transmitted has
//! left the queue (ns-2 `Queue::recv` dequeues it before handing it to the link, and
//! `Queue::resume` asks for the next one when its transmission ends), as the simulator's
//! links do.

pub mod drr;
pub mod droptail;
pub mod red;
pub mod sfq;

pub use drr::{Ns2Drr, Ns2DrrKnobs};
pub use droptail::{Ns2DropTail, Ns2DropTailKnobs};
pub use red::Ns2Red;
pub use sfq::{Ns2Sfq, Ns2SfqKnobs};

use serde::{Deserialize, Serialize};

/// Which algorithm a discipline runs: ours (the paper's or Linux's), or ns-2 2.35's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueVariant {
    #[default]
    Default,
    Ns2,
}

impl QueueVariant {
    pub fn is_default(&self) -> bool {
        *self == QueueVariant::Default
    }
}

/// ns-2's address hash shape, `k + (k >> 8) + ~(k >> 4)` modulo a prime, on C `int`s
/// (`sfq.cc` hashes source plus destination address, `drr.cc` the source address), then
/// modulo `buckets`. ns-2 addresses are small node numbers; ours are IPv4 addresses, read
/// as a C `int` the same way. ns-2 would index out of its array on a negative remainder
/// (it never meets one with node numbers); here the remainder is taken non-negative.
pub(crate) fn ns2_bucket(k: i32, prime: i32, offset: i32, buckets: u32) -> usize {
    let h = k.wrapping_add(k >> 8).wrapping_add(!(k >> 4)) % prime + offset;
    h.rem_euclid(buckets as i32) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_hash_matches_the_c_expression_for_node_numbers() {
        // By hand from sfq.cc's expression: k = 3 → 3 + 0 + ~0 = 2; k = 17 → 17 + 0 + ~1 =
        // 15; k = 300 → 300 + 1 + ~18 = 282, 282 mod 16 = 10.
        assert_eq!(ns2_bucket(3, 1_048_575, 0, 16), 2);
        assert_eq!(ns2_bucket(17, 1_048_575, 0, 16), 15);
        assert_eq!(ns2_bucket(300, 1_048_575, 0, 16), 10);
        // drr.cc adds 1 after the modulo: node 1 → (1 + 0 + ~0) + 1 = 1; 10 buckets.
        assert_eq!(ns2_bucket(1, 16_777_215, 1, 10), 1);
        assert_eq!(ns2_bucket(25, 16_777_215, 1, 10), (25 - 1 - 1 + 1) % 10);
    }
}

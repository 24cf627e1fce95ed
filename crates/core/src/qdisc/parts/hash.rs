//! Salted hashes of the 5-tuple and of a host address. The salt comes from the run's RNG
//! (SFQ redraws it on perturbation), so which flows collide is random but reproducible.

use crate::packet::FlowKey;

/// SplitMix64 finaliser: a bijective mixer with full avalanche.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A salted hash of the 5-tuple (also the simulator's per-flow load balancing at the edge).
pub fn flow_hash(k: &FlowKey, salt: u64) -> u64 {
    let ips = (k.src_ip as u64) << 32 | k.dst_ip as u64;
    let ports = (k.src_port as u64) << 24 | (k.dst_port as u64) << 8 | k.proto as u64;
    mix(mix(ips ^ salt) ^ ports)
}

pub(crate) fn host_hash(ip: u32, salt: u64) -> u64 {
    mix(ip as u64 ^ salt)
}

/// Maps a hash onto `0..n` without the bias of `%` on small `n` (multiply-high).
pub(crate) fn bucket(h: u64, n: u32) -> u32 {
    (((h >> 32) * n as u64) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_in_range_and_spread() {
        let mut counts = [0u32; 8];
        for port in 0..8000u16 {
            let k = FlowKey { src_ip: 1, dst_ip: 2, src_port: port, dst_port: 80, proto: 6 };
            counts[bucket(flow_hash(&k, 42), 8) as usize] += 1;
        }
        // 1000 expected per bucket, binomial sd = sqrt(8000 * 1/8 * 7/8) = 29.6; allow 5 sd.
        assert!(counts.iter().all(|&c| (c as i64 - 1000).abs() < 150), "{counts:?}");
    }
}

//! Load generator and counter for `scripts/box-accuracy.sh` (box speed):
//!   box_blast send IFACE SECONDS FLOWS   1514-byte TCP/IPv4 frames as fast as the socket
//!                                        takes them, cycling over FLOWS distinct 5-tuples
//!   box_blast count IFACE SECONDS        frames and bytes received in the window
//! Prints one line `frames=N bytes=B seconds=S`.

use etherparse::PacketBuilder;
use smallpipe_middlebox::io::PacketSocket;
use std::time::{Duration, Instant};

fn frame(flow: u32) -> Vec<u8> {
    // Client 198.18.0.1 → server 198.18.0.2, flows spread over source ports and the low
    // 16 bits of a second source address block (198.19.x.y) when there are more than 60000.
    let (src, port) = if flow < 60_000 { ([198, 18, 0, 1], 1024 + flow as u16) } else {
        let f = flow - 60_000;
        ([198, 19, (f >> 8) as u8, f as u8], 40_000)
    };
    let b = PacketBuilder::ethernet2([2, 0, 0xc6, 0x12, 0, 1], [2, 0, 0xc6, 0x12, 0, 2])
        .ipv4(src, [198, 18, 0, 2], 64)
        .tcp(port, 5001, 1, 65535)
        .ack(1);
    let mut out = Vec::with_capacity(1514);
    b.write(&mut out, &[0u8; 1460]).expect("writing to a Vec");
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: box_blast send IFACE SECONDS FLOWS | box_blast count IFACE SECONDS";
    let (mode, iface, secs) = match &args[..] {
        [_, m, i, s, ..] => (m.as_str(), i.as_str(), s.parse::<f64>().expect(usage)),
        _ => panic!("{usage}"),
    };
    let mut sock = PacketSocket::open(iface).expect("open the interface");
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let (mut frames, mut bytes) = (0u64, 0u64);
    let t0 = Instant::now();
    match mode {
        "send" => {
            let flows: u32 = args.get(4).map(|f| f.parse().expect(usage)).unwrap_or(1).max(1);
            let pool: Vec<Vec<u8>> = (0..flows.min(4096)).map(frame).collect();
            let mut next = 0u32;
            while Instant::now() < end {
                // Frames for flows beyond the pool are built on the fly (100 000 flows).
                let batch: Vec<Vec<u8>> = (0..64).map(|k| {
                    let f = (next + k) % flows;
                    if f < pool.len() as u32 { pool[f as usize].clone() } else { frame(f) }
                }).collect();
                next = (next + 64) % flows;
                let refs: Vec<&[u8]> = batch.iter().map(|f| &f[..]).collect();
                let n = sock.send_batch(&refs).unwrap_or(0);
                frames += n as u64;
                bytes += refs[..n].iter().map(|f| f.len() as u64).sum::<u64>();
                if n < refs.len() {
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
        }
        "count" => {
            while Instant::now() < end {
                let n = sock.recv_batch().expect("recv");
                for i in 0..n {
                    frames += 1;
                    bytes += sock.frame(i).len() as u64;
                }
                if n == 0 {
                    std::thread::sleep(Duration::from_micros(100));
                }
            }
        }
        _ => panic!("{usage}"),
    }
    println!("frames={frames} bytes={bytes} seconds={:.3}", t0.elapsed().as_secs_f64());
}

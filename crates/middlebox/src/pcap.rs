//! Optional capture of what entered and left the box, as pcapng with one interface per
//! (side, direction): `a_in`, `b_out`, `b_in`, `a_out`. The data path copies each frame into
//! a bounded channel; a separate thread writes the file. When the channel is full the frame
//! is dropped from the capture and counted, never from the traffic.

use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{InterfaceDescriptionBlock, InterfaceDescriptionOption};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::DataLink;
use std::borrow::Cow;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// The capture points, as pcapng interface ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    AIn = 0,
    BOut,
    BIn,
    AOut,
}

const POINT_NAMES: [&str; 4] = ["a_in", "b_out", "b_in", "a_out"];
/// Frames the channel holds before the capture starts dropping (each as long as it is: 12 MiB
/// of 1514-byte frames, 72 MiB at worst of 9216-byte jumbo frames).
const CHANNEL_FRAMES: usize = 8192;

struct Record {
    point: Point,
    time_ns: u64,
    frame: Vec<u8>,
}

pub struct Capture {
    tx: Option<SyncSender<Record>>,
    thread: Option<JoinHandle<std::io::Result<u64>>>,
    pub dropped: u64,
}

impl Capture {
    pub fn create(path: &str) -> std::io::Result<Self> {
        let file = std::io::BufWriter::new(std::fs::File::create(path)?);
        let (tx, rx) = sync_channel(CHANNEL_FRAMES);
        let thread = std::thread::Builder::new().name("pcap".into()).spawn(move || write_all(file, rx))?;
        Ok(Capture { tx: Some(tx), thread: Some(thread), dropped: 0 })
    }

    /// Hand a frame to the writer; `time_ns` is the run clock (the file is relative to the start).
    pub fn record(&mut self, point: Point, time_ns: u64, frame: &[u8]) {
        let Some(tx) = &self.tx else { return };
        match tx.try_send(Record { point, time_ns, frame: frame.to_vec() }) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => self.dropped += 1,
        }
    }

    /// Close the channel and wait for the writer; returns frames written.
    pub fn finish(&mut self) -> std::io::Result<u64> {
        self.tx = None;
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| std::io::Error::other("pcap writer panicked"))?,
            None => Ok(0),
        }
    }
}

fn write_all(file: std::io::BufWriter<std::fs::File>, rx: Receiver<Record>) -> std::io::Result<u64> {
    let err = |e: pcap_file::PcapError| std::io::Error::other(e.to_string());
    let mut w = PcapNgWriter::new(file).map_err(err)?;
    for name in POINT_NAMES {
        w.write_pcapng_block(InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![InterfaceDescriptionOption::IfName(Cow::Borrowed(name)), InterfaceDescriptionOption::IfTsResol(9)],
        })
        .map_err(err)?;
    }
    let mut written = 0;
    for r in rx {
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: r.point as u32,
            timestamp: std::time::Duration::from_nanos(r.time_ns),
            original_len: r.frame.len() as u32,
            data: Cow::Owned(r.frame),
            options: vec![],
        })
        .map_err(err)?;
        written += 1;
    }
    use std::io::Write;
    w.get_mut().flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_frames_read_back_with_their_interface_and_time() {
        let path = std::env::temp_dir().join(format!("smallpipe-box-pcap-{}.pcapng", std::process::id()));
        let mut c = Capture::create(path.to_str().unwrap()).unwrap();
        c.record(Point::AIn, 1_500, b"first frame");
        c.record(Point::BOut, 2_000_000_123, b"second");
        assert_eq!(c.finish().unwrap(), 2);
        let data = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let mut r = pcap_file::pcapng::PcapNgReader::new(&data[..]).unwrap();
        let mut got = Vec::new();
        while let Some(b) = r.next_block() {
            if let pcap_file::pcapng::Block::EnhancedPacket(p) = b.unwrap() {
                got.push((p.interface_id, p.timestamp.as_nanos() as u64, p.data.to_vec()));
            }
        }
        assert_eq!(got, vec![(0, 1_500, b"first frame".to_vec()), (1, 2_000_000_123, b"second".to_vec())]);
    }
}

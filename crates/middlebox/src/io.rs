//! The thin I/O layer: one AF_PACKET raw socket per interface, frames read and written in
//! batches with `recvmmsg`/`sendmmsg`. Nothing here knows about links or disciplines.
//!
//! Socket options: `PACKET_IGNORE_OUTGOING` (the box must not read back the frames it
//! sends), `PACKET_QDISC_BYPASS` (frames go straight to the driver: the box's own
//! discipline is the only queue), promiscuous membership (frames addressed to the far
//! host's MAC must reach the box), and `PACKET_STATISTICS` for the kernel's own drops when
//! the socket's receive buffer overflows.
//!
//! `unsafe` lives here and in [`crate::timer`] only; every block says why it is sound.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Frames handed to one `recvmmsg` / `sendmmsg` call.
pub const BATCH: usize = 64;
/// Largest frame the box ever carries: the 9216 bytes of the jumbo frames most switches
/// take (an MTU of 9198 with its Ethernet header and one VLAN tag).
pub const MAX_FRAME_BYTES: usize = 9216;
/// Ethernet header (destination, source, EtherType).
pub const ETH_HEADER_BYTES: usize = 14;
/// Ethernet header plus one VLAN tag: a frame is at most this much longer than its MTU.
pub const L2_OVERHEAD_BYTES: usize = ETH_HEADER_BYTES + VLAN_TAG_BYTES;

/// The frame size the box reserves (receive buffers and slab slots) for two interfaces of
/// these MTUs: a full packet of the larger one with its Ethernet header and a VLAN tag, at
/// most [`MAX_FRAME_BYTES`]. Read at start: a later, larger MTU brings oversized drops.
pub fn frame_bytes_for_mtus(mtus: [u32; 2]) -> usize {
    (mtus[0].max(mtus[1]) as usize + L2_OVERHEAD_BYTES).min(MAX_FRAME_BYTES)
}

/// Whether the kernel sends `frame` on an interface of MTU `mtu`: at most the MTU plus the
/// Ethernet header, and 4 bytes more when the frame carries an 802.1Q tag (af_packet's
/// `packet_snd` with `packet_extra_vlan_len_allowed`, which looks for TPID 0x8100 only);
/// anything longer fails with `EMSGSIZE`, as a bridge would drop it.
pub fn fits_mtu(frame: &[u8], mtu: u32) -> bool {
    let tagged = frame.get(12..14) == Some(&[0x81, 0x00][..]);
    frame.len() <= mtu as usize + ETH_HEADER_BYTES + if tagged { VLAN_TAG_BYTES } else { 0 }
}

/// Kernel-side counters from `PACKET_STATISTICS` (which resets them on every read; these
/// are the sums since the socket opened).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct KernelStats {
    pub packets: u64,
    pub drops: u64,
}

pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: i32,
    stats: KernelStats,
    /// Bytes of each receive buffer: the longest frame read whole.
    frame_bytes: usize,
    /// Receive batch: [`BATCH`] buffers of `frame_bytes` back to back, allocated once.
    bufs: Vec<u8>,
    lens: [usize; BATCH],
    /// Control-message space per receive slot (one `tpacket_auxdata`), as `u64`s for alignment.
    cmsgs: Vec<[u64; CMSG_WORDS]>,
}

/// Bytes of a VLAN tag (TPID and TCI).
pub const VLAN_TAG_BYTES: usize = 4;
/// Room for one control message carrying a `tpacket_auxdata` (20 bytes after a 16-byte header).
const CMSG_WORDS: usize = 8;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt_int(fd: BorrowedFd, level: libc::c_int, name: libc::c_int, value: libc::c_int) -> io::Result<()> {
    // SAFETY: `value` lives for the call and its size is passed; the fd is open (borrowed).
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(drop)
}

impl PacketSocket {
    /// Open a raw socket bound to `iface`, receiving every protocol, frames of up to
    /// [`MAX_FRAME_BYTES`] whole.
    pub fn open(iface: &str) -> io::Result<Self> {
        Self::open_sized(iface, MAX_FRAME_BYTES)
    }

    /// [`Self::open`], reading frames of up to `frame_bytes` whole (longer ones are
    /// [`Self::truncated`]).
    pub fn open_sized(iface: &str, frame_bytes: usize) -> io::Result<Self> {
        let ifindex = nix::net::if_::if_nametoindex(iface)
            .map_err(|e| io::Error::new(io::ErrorKind::NotFound, format!("interface {iface:?}: {e}")))?
            as i32;
        let proto_be = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain syscall with constant arguments; the result is checked before use.
        let raw = check(unsafe {
            libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, proto_be as i32)
        })?;
        // SAFETY: `raw` is a freshly opened descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid value before we fill it.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto_be;
        addr.sll_ifindex = ifindex;
        // SAFETY: `addr` is a valid sockaddr_ll and its exact size is passed.
        check(unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        setsockopt_int(fd.as_fd(), libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, 1)?;
        setsockopt_int(fd.as_fd(), libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1)?;
        setsockopt_int(fd.as_fd(), libc::SOL_PACKET, libc::PACKET_AUXDATA, 1)?;
        // 4 MiB each way absorbs a multi-ms stall at line rate; FORCE needs CAP_NET_ADMIN, which
        // the box has, and falls back to the capped size otherwise.
        for (forced, plain) in [(libc::SO_RCVBUFFORCE, libc::SO_RCVBUF), (libc::SO_SNDBUFFORCE, libc::SO_SNDBUF)] {
            if setsockopt_int(fd.as_fd(), libc::SOL_SOCKET, forced, 4 << 20).is_err() {
                setsockopt_int(fd.as_fd(), libc::SOL_SOCKET, plain, 4 << 20)?;
            }
        }
        let mreq = libc::packet_mreq {
            mr_ifindex: ifindex,
            mr_type: libc::PACKET_MR_PROMISC as u16,
            mr_alen: 0,
            mr_address: [0; 8],
        };
        // SAFETY: `mreq` is a valid packet_mreq and its exact size is passed.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                (&mreq as *const libc::packet_mreq).cast(),
                std::mem::size_of::<libc::packet_mreq>() as libc::socklen_t,
            )
        })?;
        Ok(PacketSocket {
            fd,
            ifindex,
            stats: KernelStats::default(),
            frame_bytes,
            bufs: vec![0; BATCH * frame_bytes],
            lens: [0; BATCH],
            cmsgs: vec![[0; CMSG_WORDS]; BATCH],
        })
    }

    /// Bytes of the longest frame read whole.
    pub fn frame_bytes(&self) -> usize {
        self.frame_bytes
    }

    /// The interface index the socket is bound to.
    pub fn ifindex(&self) -> u32 {
        self.ifindex as u32
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Read up to [`BATCH`] frames without blocking; returns how many. Frame `i` is
    /// [`Self::frame`]`(i)`, with its VLAN tag put back in place when the kernel had taken
    /// it out; its true length may exceed [`Self::frame_bytes`] (see [`Self::truncated`]).
    pub fn recv_batch(&mut self) -> io::Result<usize> {
        // Frames are read with room left for the tag that may go back in.
        let mut iovs: [libc::iovec; BATCH] =
            std::array::from_fn(|_| libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 });
        for (iov, buf) in iovs.iter_mut().zip(self.bufs.chunks_exact_mut(self.frame_bytes)) {
            iov.iov_base = buf.as_mut_ptr().cast();
            iov.iov_len = self.frame_bytes;
        }
        // SAFETY: mmsghdr is plain data; all-zero (null pointers, zero lengths) is valid.
        let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
        for ((m, iov), c) in msgs.iter_mut().zip(iovs.iter_mut()).zip(self.cmsgs.iter_mut()) {
            m.msg_hdr.msg_iov = iov;
            m.msg_hdr.msg_iovlen = 1;
            m.msg_hdr.msg_control = c.as_mut_ptr().cast();
            m.msg_hdr.msg_controllen = std::mem::size_of_val(c);
        }
        // SAFETY: each header points at one iovec of `frame_bytes` inside `self.bufs` and at
        // its control buffer in `self.cmsgs`, all of which outlive the call; MSG_TRUNC makes
        // msg_len the frame's true length.
        let n = unsafe {
            libc::recvmmsg(
                self.fd.as_raw_fd(),
                msgs.as_mut_ptr(),
                BATCH as u32,
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                std::ptr::null_mut(),
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
                _ => Err(e),
            };
        }
        for (i, m) in msgs[..n as usize].iter().enumerate() {
            let len = m.msg_len as usize;
            self.lens[i] = len;
            if let Some((tpid, tci)) = vlan_of(&m.msg_hdr) {
                self.lens[i] = len + VLAN_TAG_BYTES;
                if self.lens[i] <= self.frame_bytes {
                    let at = i * self.frame_bytes;
                    insert_vlan_tag(&mut self.bufs[at..at + self.frame_bytes], len, tpid, tci);
                }
            }
        }
        Ok(n as usize)
    }

    /// Frame `i` of the last batch (cut to [`Self::frame_bytes`] if it was longer).
    pub fn frame(&self, i: usize) -> &[u8] {
        let at = i * self.frame_bytes;
        &self.bufs[at..at + self.lens[i].min(self.frame_bytes)]
    }

    /// The true length of frame `i` of the last batch (more than [`Self::frame_bytes`] if truncated).
    pub fn frame_len(&self, i: usize) -> usize {
        self.lens[i]
    }

    /// Whether frame `i` of the last batch was longer than [`Self::frame_bytes`].
    pub fn truncated(&self, i: usize) -> bool {
        self.lens[i] > self.frame_bytes
    }

    /// Send `frames` in batches of [`BATCH`]. Returns how many the kernel took; frames it
    /// refused (a full transmit ring: `ENOBUFS`/`EAGAIN`) are the caller's to count.
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        let mut sent = 0;
        for chunk in frames.chunks(BATCH) {
            let mut iovs: [libc::iovec; BATCH] =
                std::array::from_fn(|_| libc::iovec { iov_base: std::ptr::null_mut(), iov_len: 0 });
            // SAFETY: mmsghdr and sockaddr_ll are plain data; all-zero is valid.
            let mut msgs: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
            let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = self.ifindex;
            for ((m, iov), f) in msgs.iter_mut().zip(iovs.iter_mut()).zip(chunk) {
                // The kernel only reads through this pointer (sendmmsg), never writes.
                iov.iov_base = f.as_ptr() as *mut libc::c_void;
                iov.iov_len = f.len();
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m.msg_hdr.msg_name = (&mut addr as *mut libc::sockaddr_ll).cast();
                m.msg_hdr.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            }
            // SAFETY: each header points at one iovec over a frame borrowed for the call and
            // at `addr`, all alive until it returns; the count matches the filled headers.
            let n = unsafe { libc::sendmmsg(self.fd.as_raw_fd(), msgs.as_mut_ptr(), chunk.len() as u32, libc::MSG_DONTWAIT) };
            if n < 0 {
                let e = io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::ENOBUFS) | Some(libc::EAGAIN) | Some(libc::EINTR) => return Ok(sent),
                    _ => return Err(e),
                }
            }
            sent += n as usize;
            if (n as usize) < chunk.len() {
                return Ok(sent);
            }
        }
        Ok(sent)
    }

    /// Read `PACKET_STATISTICS` (the kernel zeroes its counters on each read) into the sums.
    pub fn kernel_stats(&mut self) -> io::Result<KernelStats> {
        let mut st = libc::tpacket_stats { tp_packets: 0, tp_drops: 0 };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: `st` and `len` are valid for writes and `len` holds `st`'s size.
        check(unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                (&mut st as *mut libc::tpacket_stats).cast(),
                &mut len,
            )
        })?;
        self.stats.packets += u64::from(st.tp_packets);
        self.stats.drops += u64::from(st.tp_drops);
        Ok(self.stats)
    }
}

/// The VLAN tag the kernel took out of a received frame, from its `PACKET_AUXDATA`:
/// (TPID, TCI); the TPID is 802.1Q's 0x8100 when the kernel does not say.
fn vlan_of(hdr: &libc::msghdr) -> Option<(u16, u16)> {
    // SAFETY: `hdr` was filled by recvmmsg: its control pointer and length describe the
    // control messages written into our buffer; the CMSG macros stay within that length.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(hdr);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_PACKET && (*c).cmsg_type == libc::PACKET_AUXDATA {
                let aux: libc::tpacket_auxdata = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                if aux.tp_status & libc::TP_STATUS_VLAN_VALID == 0 {
                    return None;
                }
                let tpid = if aux.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { aux.tp_vlan_tpid } else { 0x8100 };
                return Some((tpid, aux.tp_vlan_tci));
            }
            c = libc::CMSG_NXTHDR(hdr, c);
        }
    }
    None
}

/// Put a VLAN tag back after the two MAC addresses of the `len`-byte frame in `buf`
/// (which has room for it).
pub fn insert_vlan_tag(buf: &mut [u8], len: usize, tpid: u16, tci: u16) {
    let at = 12.min(len);
    buf.copy_within(at..len, at + VLAN_TAG_BYTES);
    buf[at..at + 2].copy_from_slice(&tpid.to_be_bytes());
    buf[at + 2..at + 4].copy_from_slice(&tci.to_be_bytes());
}

/// One offload the box needs off: its `ethtool -K` name and the legacy ethtool commands
/// that read and write it (`linux/ethtool.h`). LRO is a bit of the device flags instead.
struct Offload {
    name: &'static str,
    get: u32,
    set: u32,
}

/// Receive offloads merge frames beyond the wire's size (the box drops them as oversized
/// and a transfer stalls); checksum and segmentation offloads let frames through with
/// unfilled checksums or unsplit.
const OFFLOADS: [Offload; 5] = [
    Offload { name: "gro", get: 0x2b, set: 0x2c },
    Offload { name: "gso", get: 0x23, set: 0x24 },
    Offload { name: "tso", get: 0x1e, set: 0x1f },
    Offload { name: "tx", get: 0x16, set: 0x17 },
    Offload { name: "rx", get: 0x14, set: 0x15 },
];
const ETHTOOL_GFLAGS: u32 = 0x25;
const ETHTOOL_SFLAGS: u32 = 0x26;
const ETH_FLAG_LRO: u32 = 1 << 15;

#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// `SIOCETHTOOL` with an `ethtool_value` on `iface`, through a throwaway socket of the
/// current network namespace.
fn ethtool_value(iface: &str, cmd: u32, data: u32) -> io::Result<u32> {
    let name = iface.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name {iface:?} is too long")));
    }
    // SAFETY: plain syscall with constant arguments; the result is checked before use.
    let raw = check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` is a freshly opened descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut value = EthtoolValue { cmd, data };
    // SAFETY: ifreq is plain data; all-zero is a valid value before we fill it.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name) {
        *d = *s as libc::c_char;
    }
    req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: `req` names the interface and points at `value`, both alive for the call;
    // SIOCETHTOOL reads the command and writes at most the ethtool_value back.
    check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCETHTOOL, &mut req as *mut libc::ifreq) })?;
    Ok(value.data)
}

/// The offloads of [`OFFLOADS`] and LRO that are on at `iface`, by their `ethtool -K` names.
pub fn offloads_on(iface: &str) -> io::Result<Vec<&'static str>> {
    let mut on = Vec::new();
    if ethtool_value(iface, ETHTOOL_GFLAGS, 0)? & ETH_FLAG_LRO != 0 {
        on.push("lro");
    }
    for o in &OFFLOADS {
        match ethtool_value(iface, o.get, 0) {
            Ok(v) if v != 0 => on.push(o.name),
            Ok(_) => {}
            // A device without the feature has it off.
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(on)
}

/// Turn off the offloads named (as [`offloads_on`] returns them).
pub fn turn_offloads_off(iface: &str, names: &[&str]) -> io::Result<()> {
    for name in names {
        if *name == "lro" {
            let flags = ethtool_value(iface, ETHTOOL_GFLAGS, 0)?;
            ethtool_value(iface, ETHTOOL_SFLAGS, flags & !ETH_FLAG_LRO)?;
        } else if let Some(o) = OFFLOADS.iter().find(|o| o.name == *name) {
            ethtool_value(iface, o.set, 0).map_err(|e| io::Error::new(e.kind(), format!("{name} off: {e}")))?;
        }
    }
    Ok(())
}

/// The interface's MTU (`SIOCGIFMTU`).
pub fn mtu(iface: &str) -> io::Result<u32> {
    let name = iface.as_bytes();
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("interface name {iface:?} is too long")));
    }
    // SAFETY: plain syscall with constant arguments; the result is checked before use.
    let raw = check(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` is a freshly opened descriptor that nothing else owns.
    let sock = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: ifreq is plain data; all-zero is a valid value before we fill it.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name) {
        *d = *s as libc::c_char;
    }
    // SAFETY: `req` names the interface and is alive for the call; SIOCGIFMTU writes the mtu field.
    check(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req as *mut libc::ifreq) })?;
    // SAFETY: SIOCGIFMTU filled the union's mtu member.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vlan_tag_goes_back_after_the_mac_addresses() {
        let mut buf = [0u8; 32];
        let frame: Vec<u8> = (1..=20).collect(); // dst 1..6, src 7..12, EtherType 13 14, payload
        buf[..20].copy_from_slice(&frame);
        insert_vlan_tag(&mut buf, 20, 0x8100, 0x2064); // priority 1, VLAN 100
        assert_eq!(&buf[..12], &frame[..12]);
        assert_eq!(&buf[12..16], &[0x81, 0x00, 0x20, 0x64]);
        assert_eq!(&buf[16..24], &frame[12..20]);
    }

    #[test]
    fn the_frame_size_follows_the_larger_mtu_up_to_jumbo_frames() {
        // 1500 + 14 (Ethernet) + 4 (802.1Q): the classic 1518-byte tagged frame.
        assert_eq!(frame_bytes_for_mtus([1500, 1500]), 1518);
        assert_eq!(frame_bytes_for_mtus([1500, 9000]), 9018);
        assert_eq!(frame_bytes_for_mtus([9000, 1500]), 9018);
        assert_eq!(frame_bytes_for_mtus([9198, 9198]), 9216);
        // The loopback's 65536 (or any MTU beyond jumbo) is cut to 9216.
        assert_eq!(frame_bytes_for_mtus([65_536, 1500]), MAX_FRAME_BYTES);
    }

    #[test]
    fn a_frame_fits_an_mtu_as_the_kernel_sends_it() {
        let untagged = |len: usize| { let mut f = vec![0u8; len]; f[12..14].copy_from_slice(&[0x08, 0x00]); f };
        let tagged = |len: usize| { let mut f = vec![0u8; len]; f[12..14].copy_from_slice(&[0x81, 0x00]); f };
        assert!(fits_mtu(&untagged(1514), 1500) && !fits_mtu(&untagged(1515), 1500));
        assert!(fits_mtu(&tagged(1518), 1500) && !fits_mtu(&tagged(1519), 1500));
        // 802.1ad (0x88a8) gets no extra room from packet_snd.
        let mut qinq = untagged(1518);
        qinq[12..14].copy_from_slice(&[0x88, 0xa8]);
        assert!(!fits_mtu(&qinq, 1500));
        assert!(fits_mtu(&untagged(9014), 9000) && !fits_mtu(&untagged(9014), 1500));
        assert!(!fits_mtu(&untagged(4000), 1500), "the testbed's 4000-byte frame is refused towards an MTU of 1500");
    }

    #[test]
    fn the_loopback_has_an_mtu_and_readable_offloads() {
        // lo's MTU is 65536 by default; any positive value shows the ioctl works.
        assert!(mtu("lo").unwrap() >= 1280);
        offloads_on("lo").unwrap();
        assert!(mtu("nosuchif0").is_err());
        assert!(offloads_on("nosuchif0").is_err());
    }
}

//! smallpipe-box: smallpipe-core's queue disciplines in front of real Linux TCP.
//!
//! A transparent bump in the wire between two interfaces: frames read on one side leave on
//! the other unchanged (bar an ECN mark a discipline sets), after the box's own emulation
//! of the thin link (rate, propagation delay, loss, per-host extra delay) with a discipline
//! as its buffer. Layout: [`io`] (AF_PACKET sockets) and [`timer`] (clock, timerfd) are the
//! only modules with `unsafe`; [`parse`], [`link`], [`slab`] and [`config`] are plain logic
//! tested without sockets; [`datapath`] joins them in one thread; [`metrics`], [`pcap`],
//! [`stats`] and [`slice_log`] observe; [`service`] is the lock, systemd notification and interface checks; [`replay`] runs a capture's frames through the same links offline. User documentation: `docs/middlebox.md`.
#![deny(unsafe_code)]

pub mod config;
pub mod datapath;
pub mod delay_window;
#[allow(unsafe_code)]
pub mod io;
pub mod link;
pub mod log;
pub mod metrics;
pub mod parse;
pub mod pcap;
pub mod replay;
pub mod service;
pub mod slab;
pub mod slice_log;
pub mod stats;
#[allow(unsafe_code)]
pub mod timer;

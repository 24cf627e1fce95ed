//! What the box asks of core's `Packet`: the runtime handle it added is never read by a
//! discipline, and the view's size is known (the simulator copies it on every hop).

use smallpipe_core::Packet;

#[test]
fn no_discipline_reads_the_runtime_handle() {
    let core = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/src");
    let mut stack = vec![core.join("qdisc"), core.join("aqm"), core.join("models")];
    let mut files = 0;
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files += 1;
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains("runtime_handle"), "{} reads Packet::runtime_handle", path.display());
            }
        }
    }
    assert!(files > 10, "found only {files} discipline files: wrong path?");
}

#[test]
fn the_packet_view_is_88_bytes() {
    // 72 bytes before the 4-byte handle and the 4-byte RCP rate (a NonZeroU32 option): 80;
    // the 2-byte TCP window field makes 82, padded to the 8-byte alignment of `arrival`: 88.
    assert_eq!(std::mem::size_of::<Packet>(), 88);
}

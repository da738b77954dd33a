// SPDX-License-Identifier: GPL-2.0

//! Fixture frames and captures: parse, ICRC (two implementations) and rebuild identity.
//!
//! Every `*.hex` (one Ethernet frame) and every `*.pcap` / `*.pcapng` in `tests/fixtures/`
//! is checked; drop a capture there and it is picked up automatically.

mod common;

use std::process::Command;

use common::{fixture_dir, parse_hex, reference_icrc};
use rrxe_proto::capture::{self, LINKTYPE_ETHERNET};

/// Checks one Ethernet frame; returns the opcode name, or `None` if it is not RoCEv2.
fn check_frame(what: &str, frame: &[u8]) -> Option<&'static str> {
    let roce = capture::dissect(frame)?;
    let pkt = roce
        .parse()
        .unwrap_or_else(|e| panic!("{what}: parse failed: {e}"));
    roce.verify_icrc()
        .unwrap_or_else(|e| panic!("{what}: ICRC: {e:?}"));
    let reference = reference_icrc(roce.ip, roce.udp, pkt.body);
    assert_eq!(reference, pkt.icrc_value(), "{what}: reference ICRC");
    let rebuilt = capture::rebuild(&roce, &pkt).unwrap();
    assert_eq!(rebuilt, roce.payload, "{what}: rebuild differs");
    Some(pkt.info.name)
}

fn files_with(ext: &str) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    files.sort();
    files
}

#[test]
fn hex_fixtures() {
    let files = files_with("hex");
    assert!(files.len() >= 20, "hand-made fixtures missing");
    let (mut v4, mut v6) = (0, 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let frame = parse_hex(&text);
        let name = check_frame(&path.display().to_string(), &frame).expect("not RoCEv2");
        let expected = text
            .lines()
            .find_map(|l| l.strip_prefix("# opcode: "))
            .expect("missing '# opcode:' line");
        assert_eq!(name, expected.trim(), "{}", path.display());
        match capture::dissect(&frame).unwrap().ip {
            rrxe_proto::icrc::IpHdr::V4(_) => v4 += 1,
            rrxe_proto::icrc::IpHdr::V6(_) => v6 += 1,
        }
    }
    assert!(v4 > 0 && v6 > 0);
    println!(
        "checked {} hex fixtures ({v4} IPv4, {v6} IPv6)",
        files.len()
    );
}

#[test]
fn capture_fixtures() {
    let mut files = files_with("pcap");
    files.extend(files_with("pcapng"));
    let mut packets = 0;
    for path in &files {
        let data = std::fs::read(path).unwrap();
        let frames =
            capture::read_frames(&data).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for (i, frame) in frames.iter().enumerate() {
            if frame.linktype != LINKTYPE_ETHERNET {
                continue;
            }
            let what = format!("{} frame {}", path.display(), i + 1);
            if check_frame(&what, frame.data).is_some() {
                packets += 1;
            }
        }
    }
    println!(
        "checked {packets} RoCEv2 packets in {} capture files",
        files.len()
    );
    // The committed capture holds 4 packets of each of 18 opcodes: a test that checked
    // fewer (a file gone, frames skipped) proves less than it says.
    assert!(
        packets >= 72,
        "only {packets} RoCEv2 packets checked in {} capture files",
        files.len()
    );
}

/// Externally produced vectors: scapy's `test/contrib/roce.uts` UC SEND example (ICRC by
/// scapy's own implementation) and a CNP captured on a Mellanox ConnectX-4 Lx (ICRC by
/// hardware: BECN set, PSN 0, DSCP 48 with ECT(0), as [`rrxe_proto::cc`] builds its own).
#[test]
fn external_vectors() {
    let uc = parse_hex(
        "248a07a8fa22248a07a8fa22080045010040047840004011b4d5c0a80007c0a80007c00012b7002caca2
         2460ffff000000d300cf17104630818be28935d90e9a95505401be885e50000078f353f3",
    );
    assert_eq!(check_frame("scapy UC", &uc), Some("UC_SEND_ONLY"));
    let cnp = parse_hex(
        "e41d2dab2bc27cfe90643b32080045c2003c718c4000401191610a0011010a001201000012b700280000
         8100ffff40000118000000000000000000000000000000000000000082fd002a",
    );
    let roce = capture::dissect(&cnp).unwrap();
    roce.verify_icrc().unwrap();
    let p = roce.parse().unwrap();
    assert!(p.info.is_cnp());
    assert!(p.bth.becn() && !p.bth.fecn());
    assert_eq!(p.bth.dest_qp().get(), 0x118);
    assert_eq!(p.bth.psn().get(), 0);
    assert_eq!(p.bth.pkey(), 0xffff);
}

fn decode(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_rrxe-decode"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn decoder_exit_codes() {
    let pcap = fixture_dir().join("handmade.pcap");
    let (code, out) = decode(&[pcap.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("RC_RDMA_READ_REQUEST qpn=0x000013"), "{out}");
    assert!(
        out.contains("aeth=(RNR_NAK timer=1280us msn=0x000042)"),
        "{out}"
    );
    assert!(!out.contains("BAD"));

    // A capture with a frame whose ICRC is corrupted and a non-RoCE (ARP-like) frame.
    let mut bad = parse_hex(
        &std::fs::read_to_string(fixture_dir().join("00-v4-rc-send-only-pad3.hex")).unwrap(),
    );
    *bad.last_mut().unwrap() ^= 1;
    let mut arp = vec![0xffu8; 42];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    let mut data = Vec::new();
    for word in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65535, 1] {
        data.extend(word.to_le_bytes());
    }
    for frame in [&bad, &arp] {
        let len = u32::try_from(frame.len()).unwrap().to_le_bytes();
        data.extend([0; 8].iter().chain(&len).chain(&len).chain(frame.iter()));
    }
    let tmp = std::env::temp_dir().join(format!("rrxe-bad-{}.pcap", std::process::id()));
    std::fs::write(&tmp, &data).unwrap();
    let (code, out) = decode(&[tmp.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("icrc=BAD(expected"), "{out}");
    assert!(out.contains("1 non-RoCE frames skipped"), "{out}");
    let both = [tmp.to_str().unwrap(), pcap.to_str().unwrap()];
    let (code, out) = decode(&["--no-fail", "--summary", both[0], both[1]]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("       1 bad ICRC"), "{out}");
    assert!(out.contains("       4 RC_ACKNOWLEDGE"), "{out}");
    std::fs::remove_file(&tmp).unwrap();
}

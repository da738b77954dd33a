// SPDX-License-Identifier: GPL-2.0

//! `rrxe-decode`: prints one line per RoCEv2 packet of pcap/pcapng captures.
//!
//! Usage: `rrxe-decode [--summary] [--no-fail] FILE...`
//!
//! Frames that are not RoCEv2 (Ethernet, optional VLAN, IPv4/IPv6, UDP port 4791) are
//! skipped and counted. Each packet is parsed, its ICRC checked, and it is rebuilt from the
//! parsed fields, which must give the received bytes. The exit code is 1 if any RoCEv2
//! packet is malformed, has a bad ICRC or rebuilds differently (unless `--no-fail`), 2 on
//! usage or file errors.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use rrxe_proto::aeth::Syndrome;
use rrxe_proto::capture::{self, RoceFrame, LINKTYPE_ETHERNET};
use rrxe_proto::icrc::{IcrcError, IpHdr};
use rrxe_proto::packet::Packet;

#[derive(Default)]
struct Counts {
    per_opcode: BTreeMap<&'static str, usize>,
    skipped: usize,
    malformed: usize,
    bad_icrc: usize,
    bad_rebuild: usize,
}

fn addresses(frame: &RoceFrame<'_>) -> String {
    match frame.ip {
        IpHdr::V4(h) => match (h.get(12..16), h.get(16..20)) {
            (Some(s), Some(d)) => format!(
                "{}.{}.{}.{} > {}.{}.{}.{}",
                s[0], s[1], s[2], s[3], d[0], d[1], d[2], d[3]
            ),
            _ => String::from("?"),
        },
        IpHdr::V6(h) => {
            let addr = |b: &[u8]| {
                let words: Vec<u16> = b
                    .chunks_exact(2)
                    .map(|w| u16::from_be_bytes([w[0], w[1]]))
                    .collect();
                std::net::Ipv6Addr::from(<[u16; 8]>::try_from(words).unwrap_or_default())
            };
            format!("{} > {}", addr(&h[8..24]), addr(&h[24..40]))
        }
    }
}

/// Formats the BTH, every extended header present and the payload length.
fn describe(pkt: &Packet<'_>) -> String {
    let b = &pkt.bth;
    let mut s = format!(
        "{} qpn={:#08x} psn={:#08x} ack={} se={} m={} pad={} pkey={:#06x} opcode={:#04x}",
        pkt.info.name,
        b.dest_qp().get(),
        b.psn().get(),
        u8::from(b.ack_req()),
        u8::from(b.solicited()),
        u8::from(b.mig_req()),
        b.pad_count(),
        b.pkey(),
        b.opcode().0,
    );
    if b.fecn() || b.becn() {
        let _ = write!(
            s,
            " fecn={} becn={}",
            u8::from(b.fecn()),
            u8::from(b.becn())
        );
    }
    if let Some(h) = pkt.rdeth {
        let _ = write!(s, " rdeth=(eecn={:#08x})", h.eecn().get());
    }
    if let Some(h) = pkt.deth {
        let _ = write!(
            s,
            " deth=(qkey={:#010x} sqp={:#08x})",
            h.qkey(),
            h.src_qp().get()
        );
    }
    if let Some(h) = pkt.feth {
        let _ = write!(
            s,
            " feth=(plt={} sel={})",
            h.placement_type(),
            h.selectivity_level()
        );
    }
    if let Some(h) = pkt.reth {
        let _ = write!(
            s,
            " reth=(va={:#x} rkey={:#010x} len={})",
            h.va(),
            h.rkey(),
            h.dma_len()
        );
    }
    if let Some(h) = pkt.atomic_eth {
        let _ = write!(
            s,
            " atomiceth=(va={:#x} rkey={:#010x} swap_add={:#x} cmp={:#x})",
            h.va(),
            h.rkey(),
            h.swap_add(),
            h.compare()
        );
    }
    if let Some(h) = pkt.immdt {
        let _ = write!(s, " imm={:#010x}", h.imm());
    }
    if let Some(h) = pkt.ieth {
        let _ = write!(s, " ieth=(rkey={:#010x})", h.rkey());
    }
    if let Some(h) = pkt.aeth {
        let syndrome = match h.decode_syndrome() {
            Ok(Syndrome::Ack(c)) => match c.count() {
                Some(n) => format!("ACK credits={n}"),
                None => String::from("ACK credits=invalid"),
            },
            Ok(Syndrome::RnrNak(t)) => format!("RNR_NAK timer={}us", t.micros()),
            Ok(Syndrome::Nak(code)) => format!("NAK {code:?}"),
            Err(e) => format!("RESERVED {:#04x}", e.0),
        };
        let _ = write!(s, " aeth=({syndrome} msn={:#08x})", h.msn().get());
    }
    if let Some(h) = pkt.atomic_ack_eth {
        let _ = write!(s, " atomicack=(orig={:#x})", h.orig());
    }
    let _ = write!(s, " paylen={}", pkt.payload.len());
    s
}

/// Decodes one file; returns false if it could not be read.
fn decode_file(path: &str, summary: bool, counts: &mut Counts) -> bool {
    let file = match std::fs::read(path) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("rrxe-decode: {path}: {e}");
            return false;
        }
    };
    let frames = match capture::read_frames(&file) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("rrxe-decode: {path}: {e}");
            return false;
        }
    };
    for (index, frame) in frames.iter().enumerate() {
        let roce = (frame.linktype == LINKTYPE_ETHERNET)
            .then(|| capture::dissect(frame.data))
            .flatten();
        let Some(roce) = roce else {
            counts.skipped += 1;
            continue;
        };
        let line = match roce.parse() {
            Ok(pkt) => {
                *counts.per_opcode.entry(pkt.info.name).or_default() += 1;
                let icrc = match roce.verify_icrc() {
                    Ok(()) => String::from("ok"),
                    Err(IcrcError::Mismatch { computed, received }) => {
                        counts.bad_icrc += 1;
                        format!("BAD(expected {computed:#010x} got {received:#010x})")
                    }
                    Err(IcrcError::Truncated) => {
                        counts.bad_icrc += 1;
                        String::from("BAD(truncated)")
                    }
                };
                // Rebuilding from the parsed fields must give the received bytes.
                let rebuild = match capture::rebuild(&roce, &pkt) {
                    Ok(bytes) if bytes == roce.payload => "",
                    _ => {
                        counts.bad_rebuild += 1;
                        " rebuild=DIFFERS"
                    }
                };
                format!("{} icrc={icrc}{rebuild}", describe(&pkt))
            }
            Err(e) => {
                counts.malformed += 1;
                format!("MALFORMED({e}) len={}", roce.payload.len())
            }
        };
        if !summary {
            println!("{}: {} {}", index + 1, addresses(&roce), line);
        }
    }
    true
}

fn main() -> ExitCode {
    let mut summary = false;
    let mut fail = true;
    let mut files = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--summary" => summary = true,
            "--no-fail" => fail = false,
            "-h" | "--help" => {
                println!("usage: rrxe-decode [--summary] [--no-fail] FILE.pcap|FILE.pcapng...");
                return ExitCode::SUCCESS;
            }
            _ if arg.starts_with('-') => {
                eprintln!("rrxe-decode: unknown option {arg}");
                return ExitCode::from(2);
            }
            _ => files.push(arg),
        }
    }
    if files.is_empty() {
        eprintln!("usage: rrxe-decode [--summary] [--no-fail] FILE.pcap|FILE.pcapng...");
        return ExitCode::from(2);
    }
    let mut counts = Counts::default();
    let mut readable = true;
    for path in &files {
        readable &= decode_file(path, summary, &mut counts);
    }
    if summary {
        for (name, n) in &counts.per_opcode {
            println!("{n:8} {name}");
        }
        println!("{:8} malformed", counts.malformed);
        println!("{:8} bad ICRC", counts.bad_icrc);
        println!("{:8} rebuilt differently", counts.bad_rebuild);
    }
    println!("{:8} non-RoCE frames skipped", counts.skipped);
    if !readable {
        ExitCode::from(2)
    } else if fail && counts.malformed + counts.bad_icrc + counts.bad_rebuild > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

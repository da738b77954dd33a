// SPDX-License-Identifier: GPL-2.0

//! RDMA READ response segmentation: [`ReadReply::packets`] and [`ReadReply::response`] cut a
//! READ into path-MTU response packets (offset, length, opcode, PSN) and [`ReadResp::spec`]
//! gives each its headers, exactly as the engine's `send_read_responses` sends them. The
//! packets are built, parsed back and compared with what IBA 9.7.5.1 requires.

mod common;

use common::build_vec;
use proptest::prelude::*;
use rrxe_proto::aeth::{Credits, RnrTimer, Syndrome};
use rrxe_proto::bth::Qpn;
use rrxe_proto::ext::RethFields;
use rrxe_proto::opcode::{Opcode, QpType};
use rrxe_proto::packet::{self, PacketSpec};
use rrxe_proto::psn::{Msn, Psn};
use rrxe_proto::rc::{
    PathMtu, ReadReply, ReadResp, Request, Resource, ResourceTable, Responder, ResponderConfig,
    MAX_DMA_LEN,
};

const FIRST: Opcode = Opcode::RC_RDMA_READ_RESPONSE_FIRST;
const MIDDLE: Opcode = Opcode::RC_RDMA_READ_RESPONSE_MIDDLE;
const LAST: Opcode = Opcode::RC_RDMA_READ_RESPONSE_LAST;
const ONLY: Opcode = Opcode::RC_RDMA_READ_RESPONSE_ONLY;

const DEST_QP: u32 = 0x00ab_cdef;
const PKEY: u16 = 0xffff;
const VA: u64 = 0x7f00_1234_5000;
const RKEY: u32 = 0x1234_5678;

/// Start PSNs, including the ones where a READ's responses wrap past `0xffffff`.
const PSNS: [u32; 5] = [0, 1, 0x7f_ffff, 0xff_fffe, 0xff_ffff];

/// Every path MTU, from the verbs enum, with its size in bytes.
fn mtus() -> Vec<(PathMtu, u32)> {
    let all: Vec<_> = (1..=5)
        .map(|v| (PathMtu::from_ib_enum(v).unwrap(), 128u32 << v))
        .collect();
    for &(m, bytes) in &all {
        assert_eq!(m.bytes(), bytes);
        assert_eq!(PathMtu::from_bytes(bytes), Some(m));
    }
    all
}

/// Independent count: `ceil(len / mtu)`, and one packet for a zero-length READ.
fn want_packets(len: u32, mtu: u32) -> u32 {
    u64::from(len).div_ceil(u64::from(mtu)).max(1) as u32
}

fn reply(len: u32, psn: u32, msn: u32) -> ReadReply {
    ReadReply {
        va: VA,
        rkey: RKEY,
        len,
        psn: Psn::new(psn),
        msn: Msn::new(msn),
    }
}

/// Checks response `i` of `n` of `rd` against the rules, without building it.
fn check_response(rd: &ReadReply, mtu: PathMtu, i: u32, n: u32) -> ReadResp {
    let r = rd.response(i, mtu);
    let m = mtu.bytes();
    let ctx = format!("len {} mtu {} packet {}/{}", rd.len, m, i, n);
    // Offsets: packet i starts at i MTUs; lengths: full MTUs, the last one the rest.
    assert_eq!(u64::from(r.offset), u64::from(i) * u64::from(m), "{ctx}");
    assert!(r.len <= m, "{ctx}");
    let last = i + 1 == n;
    if last {
        assert_eq!(
            u64::from(r.offset) + u64::from(r.len),
            u64::from(rd.len),
            "{ctx}"
        );
        assert!(r.len > 0 || rd.len == 0, "{ctx}: empty last packet");
    } else {
        assert_eq!(r.len, m, "{ctx}: only the last packet may be short");
    }
    // Opcodes: ONLY for a single packet, else FIRST, MIDDLE..., LAST.
    let want = match (i == 0, last) {
        (true, true) => ONLY,
        (true, false) => FIRST,
        (false, false) => MIDDLE,
        (false, true) => LAST,
    };
    assert_eq!(r.opcode, want, "{ctx}");
    // PSNs: consecutive from the request's, modulo 2^24.
    assert_eq!(r.psn.get(), (rd.psn.get() + i) & 0x00ff_ffff, "{ctx}");
    r
}

/// The remote memory a READ of `len` bytes reads from (a pattern that differs per offset).
fn memory(len: u32) -> Vec<u8> {
    (0..len).map(|i| (i ^ (i >> 8) ^ (i >> 16)) as u8).collect()
}

/// Builds response `r` of `rd` twice, as the host would ([`packet::build`] with the payload)
/// and as the engine does ([`packet::build_headers`] with an empty payload in the spec, then
/// the payload written in place), and checks the parsed packet.
fn check_packet(rd: &ReadReply, r: &ReadResp, mem: &[u8]) {
    let ctx = format!("len {} offset {} opcode {:?}", rd.len, r.offset, r.opcode);
    let payload = &mem[r.offset as usize..(r.offset + r.len) as usize];
    let spec = r.spec(Qpn::new(DEST_QP), PKEY, rd.msn, payload);
    let bytes = build_vec(&spec);
    assert_eq!(
        Some(bytes.len()),
        packet::packet_len(r.opcode, r.len as usize),
        "{ctx}"
    );

    // The engine's way: headers around a payload filled in place.
    let spec0 = r.spec(Qpn::new(DEST_QP), PKEY, rd.msn, &[]);
    let mut engine = vec![0u8; bytes.len()];
    let layout = packet::build_headers(&spec0, r.len as usize, &mut engine).unwrap();
    assert_eq!(layout.len, bytes.len(), "{ctx}");
    engine[layout.payload].copy_from_slice(payload);
    assert_eq!(engine, bytes, "{ctx}: build_headers and build differ");

    let pkt = packet::parse_for(&bytes, QpType::Rc).unwrap();
    assert_eq!(pkt.opcode(), r.opcode, "{ctx}");
    assert_eq!(pkt.bth.psn(), r.psn, "{ctx}");
    assert_eq!(pkt.bth.dest_qp(), Qpn::new(DEST_QP), "{ctx}");
    assert_eq!(pkt.bth.pkey(), PKEY, "{ctx}");
    assert!(!pkt.bth.ack_req() && !pkt.bth.solicited(), "{ctx}");
    assert_eq!(pkt.payload, payload, "{ctx}");
    assert_eq!(
        usize::from(pkt.bth.pad_count()),
        r.len.wrapping_neg() as usize % 4,
        "{ctx}"
    );
    // FIRST, LAST and ONLY carry an AETH (an ACK with the READ's MSN), MIDDLE carries none
    // (IBA 9.3.5, table 48).
    if r.opcode == MIDDLE {
        assert!(pkt.aeth.is_none(), "{ctx}");
        assert!(spec.aeth.is_none(), "{ctx}");
    } else {
        let aeth = pkt.aeth.expect("AETH");
        assert_eq!(aeth.msn(), rd.msn, "{ctx}");
        assert_eq!(
            aeth.decode_syndrome(),
            Ok(Syndrome::Ack(Credits::INVALID)),
            "{ctx}"
        );
    }
    assert!(pkt.reth.is_none() && pkt.atomic_ack_eth.is_none() && pkt.deth.is_none());
}

/// Walks every response of `rd`, checking each and that they tile `[0, len)`.
fn check_all(rd: &ReadReply, mtu: PathMtu, build: bool) {
    let n = rd.packets(mtu);
    assert_eq!(n, want_packets(rd.len, mtu.bytes()), "len {}", rd.len);
    let mem = if build { memory(rd.len) } else { Vec::new() };
    let mut covered = 0u64;
    for i in 0..n {
        let r = check_response(rd, mtu, i, n);
        assert_eq!(
            u64::from(r.offset),
            covered,
            "len {} packet {}: gap or overlap",
            rd.len,
            i
        );
        covered += u64::from(r.len);
        if build {
            check_packet(rd, &r, &mem);
        }
    }
    assert_eq!(covered, u64::from(rd.len));
}

/// The interesting lengths for MTU `m`.
fn edge_lengths(m: u32) -> Vec<u32> {
    vec![
        0,
        1,
        2,
        3,
        4,
        5,
        m - 1,
        m,
        m + 1,
        2 * m - 1,
        2 * m,
        2 * m + 1,
        3 * m - 1,
        3 * m,
        3 * m + 1,
        10 * m + 7,
        65_536,
    ]
}

#[test]
fn edge_lengths_every_mtu() {
    for (mtu, m) in mtus() {
        for len in edge_lengths(m) {
            for psn in PSNS {
                check_all(&reply(len, psn, 0x00_1234), mtu, true);
            }
        }
    }
}

#[test]
fn zero_length_read_is_one_empty_only() {
    for (mtu, _) in mtus() {
        let rd = reply(0, 0xff_ffff, 7);
        assert_eq!(rd.packets(mtu), 1);
        let r = rd.response(0, mtu);
        assert_eq!(
            r,
            ReadResp {
                opcode: ONLY,
                psn: Psn::new(0xff_ffff),
                offset: 0,
                len: 0
            }
        );
        check_packet(&rd, &r, &[]);
    }
}

#[test]
fn psn_wraps_within_one_read() {
    // Three packets from 0xfffffe: 0xfffffe, 0xffffff, 0.
    let mtu = PathMtu::MTU_1024;
    let rd = reply(3 * 1024, 0xff_fffe, 1);
    let psns: Vec<u32> = (0..3).map(|i| rd.response(i, mtu).psn.get()).collect();
    assert_eq!(psns, [0xff_fffe, 0xff_ffff, 0]);
    let ops: Vec<Opcode> = (0..3).map(|i| rd.response(i, mtu).opcode).collect();
    assert_eq!(ops, [FIRST, MIDDLE, LAST]);
}

#[test]
fn large_reads_first_and_last() {
    let lens = [
        (1u32 << 20) + 1,
        0x7654_3210,
        1_000_000_007,
        MAX_DMA_LEN - 4096,
        MAX_DMA_LEN - 4095,
        MAX_DMA_LEN - 1,
        MAX_DMA_LEN,
    ];
    for (mtu, m) in mtus() {
        for len in lens {
            for psn in PSNS {
                let rd = reply(len, psn, 0xff_ffff);
                let n = rd.packets(mtu);
                assert_eq!(n, want_packets(len, m), "len {len} mtu {m}");
                assert!(n >= 3);
                // A READ of at most 2^31 bytes takes at most 2^23 PSNs: half the PSN space.
                assert!(n <= 1 << 23);
                for i in [0, 1, n / 2, n - 2, n - 1] {
                    check_response(&rd, mtu, i, n);
                }
                let last = rd.response(n - 1, mtu);
                assert_eq!(u64::from(last.offset) + u64::from(last.len), u64::from(len));
                assert_eq!(last.psn, Psn::new(psn).wrapping_add(n - 1));
                assert_eq!(rd.response(n - 2, mtu).offset + m, last.offset);
            }
        }
    }
}

#[test]
fn packet_counts_over_u32() {
    // The count alone, over the whole `u32` range (the responder refuses more than 2^31).
    for (mtu, m) in mtus() {
        for len in [
            0,
            1,
            m - 1,
            m,
            m + 1,
            MAX_DMA_LEN - 1,
            MAX_DMA_LEN,
            MAX_DMA_LEN + 1,
            u32::MAX - m,
            u32::MAX - m + 1,
            u32::MAX,
        ] {
            assert_eq!(mtu.packets(len), want_packets(len, m), "len {len} mtu {m}");
            assert_eq!(
                reply(len, 0, 0).packets(mtu),
                want_packets(len, m),
                "len {len} mtu {m}"
            );
        }
    }
}

fn responder(mtu: PathMtu, psn: u32) -> Responder {
    Responder::new(ResponderConfig {
        rq_psn: Psn::new(psn),
        mtu,
        min_rnr_timer: RnrTimer::new(1).unwrap(),
        remote_write: false,
        remote_read: true,
        remote_atomic: false,
        max_dest_rd_atomic: 4,
        flush_types: 0,
    })
}

/// A READ request as it arrives: built, parsed and reduced to a [`Request`].
fn read_request(psn: Psn, va: u64, len: u32) -> Vec<u8> {
    let mut spec = PacketSpec {
        reth: Some(RethFields {
            va,
            rkey: RKEY,
            dma_len: len,
        }),
        ..PacketSpec::default()
    };
    spec.bth.opcode = Opcode::RC_RDMA_READ_REQUEST;
    spec.bth.dest_qp = Qpn::new(DEST_QP);
    spec.bth.pkey = PKEY;
    spec.bth.psn = psn;
    spec.bth.ack_req = true;
    build_vec(&spec)
}

fn request(bytes: &[u8]) -> Request {
    Request::from_packet(&packet::parse_for(bytes, QpType::Rc).unwrap())
}

#[test]
fn responder_reserves_the_psns_it_segments() {
    for (mtu, m) in mtus() {
        for psn in PSNS {
            let mut rsp = responder(mtu, psn);
            let mut next = Psn::new(psn);
            for (k, len) in [0, 1, m, 3 * m + 1, 5 * m].into_iter().enumerate() {
                let out = rsp.on_request(&request(&read_request(next, VA, len)), None);
                let rd = out.read.expect("READ accepted");
                assert_eq!((rd.va, rd.rkey, rd.len, rd.psn), (VA, RKEY, len, next));
                assert_eq!(rd.msn, Msn::new(k as u32 + 1), "one MSN per READ");
                assert_eq!(rd.msn, rsp.msn());
                assert!(out.reply.is_none() && out.placement.is_none() && !out.fatal);
                check_all(&rd, mtu, true);
                // The next request is expected right after the last response's PSN.
                let last = rd.response(rd.packets(mtu) - 1, mtu);
                next = last.psn.next();
                assert_eq!(rsp.expected_psn(), next);
            }
        }
    }
}

#[test]
fn duplicate_read_resumes_at_its_psn() {
    // C9-112: a repeated READ request for a PSN inside an earlier READ is answered from that
    // PSN on; its responses carry the same bytes and PSNs as the original's tail.
    for (mtu, m) in mtus() {
        let len = 7 * m + 9;
        let mut rsp = responder(mtu, 0xff_fffd);
        let orig = rsp
            .on_request(&request(&read_request(Psn::new(0xff_fffd), VA, len)), None)
            .read
            .unwrap();
        let n = orig.packets(mtu);
        for k in 0..n {
            let psn = orig.psn.wrapping_add(k);
            let va = VA + u64::from(k * m);
            let dup = rsp
                .on_request(&request(&read_request(psn, va, len - k * m)), None)
                .read
                .expect("duplicate READ answered");
            assert_eq!(
                (dup.va, dup.len, dup.psn, dup.msn),
                (va, len - k * m, psn, orig.msn)
            );
            assert_eq!(dup.packets(mtu), n - k);
            check_all(&dup, mtu, false);
            for j in 0..dup.packets(mtu) {
                let (d, o) = (dup.response(j, mtu), orig.response(k + j, mtu));
                assert_eq!((d.offset + k * m, d.len, d.psn), (o.offset, o.len, o.psn));
            }
        }
    }
}

#[test]
fn every_outstanding_read_is_remembered_for_its_duplicate() {
    // A requester may have max_dest_rd_atomic READs outstanding (the driver's QPs: 128, the
    // device's max_qp_rd_atom): a duplicate of the oldest, after all of them, is still
    // answered; with one more READ, the oldest is forgotten (its duplicate is dropped).
    const N: usize = 128;
    // The table on the heap, sized at run time, as the driver allocates it.
    struct Table(Vec<Resource>);
    impl ResourceTable for Table {
        fn slots(&self) -> &[Resource] {
            &self.0
        }
        fn slots_mut(&mut self) -> &mut [Resource] {
            &mut self.0
        }
    }
    let (mtu, m) = (PathMtu::MTU_1024, 1024);
    let table = Table(vec![Resource::default(); N]);
    let mut rsp = Responder::with_table(
        ResponderConfig {
            rq_psn: Psn::new(100),
            mtu,
            min_rnr_timer: RnrTimer::new(1).unwrap(),
            remote_write: false,
            remote_read: true,
            remote_atomic: false,
            max_dest_rd_atomic: N as u32,
            flush_types: 0,
        },
        table,
    );
    let mut psn = Psn::new(100);
    let mut reads = Vec::new();
    for k in 0..=N as u64 {
        let rd = rsp
            .on_request(&request(&read_request(psn, VA + k * 65536, 2 * m)), None)
            .read
            .expect("READ accepted");
        reads.push(rd);
        psn = psn.wrapping_add(rd.packets(mtu));
        if k == N as u64 - 1 {
            // All N outstanding: the first is replayed.
            let first = reads[0];
            let dup = rsp.on_request(
                &request(&read_request(first.psn, first.va, first.len)),
                None,
            );
            assert_eq!(
                dup.read,
                Some(first),
                "the oldest of {N} READs is remembered"
            );
        }
    }
    let first = reads[0];
    let dup = rsp.on_request(
        &request(&read_request(first.psn, first.va, first.len)),
        None,
    );
    assert_eq!(dup.read, None, "beyond {N}, the oldest is forgotten");
    let second = reads[1];
    let dup = rsp.on_request(
        &request(&read_request(second.psn, second.va, second.len)),
        None,
    );
    assert_eq!(dup.read, Some(second));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Random lengths up to 64 KiB at every MTU and any PSN: built, parsed and tiled.
    #[test]
    fn random_lengths(
        len in prop_oneof![0u32..=4096, 0u32..=65_536],
        psn in any::<u32>(),
        msn in any::<u32>(),
        ib_mtu in 1u8..=5,
    ) {
        let mtu = PathMtu::from_ib_enum(ib_mtu).unwrap();
        check_all(&reply(len, psn & 0xff_ffff, msn & 0xff_ffff), mtu, true);
    }

    /// Random lengths up to 2^31: count, first, last and a random packet in between.
    #[test]
    fn random_large_lengths(
        len in 0u32..=MAX_DMA_LEN,
        psn in any::<u32>(),
        ib_mtu in 1u8..=5,
        pick in any::<u32>(),
    ) {
        let mtu = PathMtu::from_ib_enum(ib_mtu).unwrap();
        let rd = reply(len, psn & 0xff_ffff, 3);
        let n = rd.packets(mtu);
        prop_assert_eq!(n, want_packets(len, mtu.bytes()));
        for i in [0, pick % n, n - 1] {
            check_response(&rd, mtu, i, n);
        }
    }
}

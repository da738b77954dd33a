// SPDX-License-Identifier: GPL-2.0

//! The rxe user ABI: layouts against the C compiler's numbers, queue geometry and index
//! protocol (including a simulated provider/kernel run over one byte buffer), WQE validation
//! and completion entries.

use rrxe_proto::opcode::{Opcode, Position, QpType};
use rrxe_proto::uabi::*;
use rrxe_proto::BufferTooSmall;

// ------------------------------------------------------------------------------------------
// Layout, table-driven from rxe_uabi_layout.out (x86_64, gcc, 7.3 uapi headers).
// ------------------------------------------------------------------------------------------

/// `(struct, size, layout, [(field, offset, size)])`; offsets are relative to the structure
/// named in the first column, exactly as printed by `rxe_uabi_layout.c`.
type Row = (
    &'static str,
    usize,
    &'static [FieldLayout],
    &'static [(&'static str, usize, usize)],
);

const TABLE: &[Row] = &[
    (
        "rxe_queue_buf",
        384,
        QueueBufHeaderFields::LAYOUT,
        &[
            ("log2_elem_size", 0, 4),
            ("index_mask", 4, 4),
            ("producer_index", 128, 4),
            ("consumer_index", 256, 4),
        ],
    ),
    (
        "mminfo",
        16,
        MmInfoFields::LAYOUT,
        &[("offset", 0, 8), ("size", 8, 4), ("pad", 12, 4)],
    ),
    ("rxe_create_cq_resp", 16, CreateCqRespFields::LAYOUT, &[]),
    ("rxe_resize_cq_resp", 16, ResizeCqRespFields::LAYOUT, &[]),
    (
        "rxe_create_qp_resp",
        32,
        CreateQpRespFields::LAYOUT,
        &[("rq_mi", 0, 16), ("sq_mi", 16, 16)],
    ),
    (
        "rxe_create_srq_resp",
        24,
        CreateSrqRespFields::LAYOUT,
        &[("mi", 0, 16), ("srq_num", 16, 4), ("reserved", 20, 4)],
    ),
    ("rxe_modify_srq_cmd", 8, ModifySrqCmdFields::LAYOUT, &[]),
    (
        "rxe_create_ah_resp",
        8,
        CreateAhRespFields::LAYOUT,
        &[("ah_num", 0, 4)],
    ),
    (
        "rxe_global_route",
        24,
        RxeGlobalRouteFields::LAYOUT,
        &[
            ("dgid", 0, 16),
            ("flow_label", 16, 4),
            ("sgid_index", 20, 1),
            ("hop_limit", 21, 1),
            ("traffic_class", 22, 1),
        ],
    ),
    (
        "rxe_av",
        88,
        RxeAvFields::LAYOUT,
        &[
            ("port_num", 0, 1),
            ("network_type", 1, 1),
            ("dmac", 2, 6),
            ("grh", 8, 24),
            ("sgid_addr", 32, 28),
            ("dgid_addr", 60, 28),
        ],
    ),
    (
        "rxe_send_wr",
        144,
        RxeSendWrFields::LAYOUT,
        &[
            ("wr_id", 0, 8),
            ("reserved", 8, 4),
            ("opcode", 12, 4),
            ("send_flags", 16, 4),
            ("ex", 20, 4),
            ("wr", 24, 120),
        ],
    ),
    (
        "rxe_sge",
        16,
        RxeSgeFields::LAYOUT,
        &[("addr", 0, 8), ("length", 8, 4), ("lkey", 12, 4)],
    ),
    (
        "rxe_dma_info",
        24,
        RxeDmaInfoFields::LAYOUT,
        &[
            ("length", 0, 4),
            ("resid", 4, 4),
            ("cur_sge", 8, 4),
            ("num_sge", 12, 4),
            ("sge_offset", 16, 4),
            ("reserved", 20, 4),
        ],
    ),
    (
        "rxe_send_wqe",
        208,
        RxeSendWqeFields::LAYOUT,
        &[
            ("wr", 0, 144),
            ("status", 144, 4),
            ("state", 148, 4),
            ("iova", 152, 8),
            ("mask", 160, 4),
            ("first_psn", 164, 4),
            ("last_psn", 168, 4),
            ("ack_length", 172, 4),
            ("ssn", 176, 4),
            ("has_rd_atomic", 180, 4),
            ("dma", 184, 24),
        ],
    ),
    (
        "rxe_recv_wqe",
        40,
        RxeRecvWqeFields::LAYOUT,
        &[
            ("wr_id", 0, 8),
            ("reserved", 8, 4),
            ("padding", 12, 4),
            ("dma", 16, 24),
        ],
    ),
    (
        "ib_uverbs_wc",
        48,
        UverbsWcFields::LAYOUT,
        &[
            ("wr_id", 0, 8),
            ("status", 8, 4),
            ("opcode", 12, 4),
            ("vendor_err", 16, 4),
            ("byte_len", 20, 4),
            ("ex", 24, 4),
            ("qp_num", 28, 4),
            ("src_qp", 32, 4),
            ("wc_flags", 36, 4),
            ("pkey_index", 40, 2),
            ("slid", 42, 2),
            ("sl", 44, 1),
            ("dlid_path_bits", 45, 1),
            ("port_num", 46, 1),
            ("reserved", 47, 1),
        ],
    ),
];

/// `wr` union members of `struct rxe_send_wr`: offsets inside `rxe_send_wr`.
const UNION_TABLE: &[Row] = &[
    (
        "wr.flush",
        24,
        FlushWrFields::LAYOUT,
        &[
            ("remote_addr", 24, 8),
            ("length", 32, 4),
            ("rkey", 36, 4),
            ("placement_type", 40, 1),
            ("level", 41, 1),
        ],
    ),
    (
        "wr.rdma",
        16,
        RdmaWrFields::LAYOUT,
        &[("remote_addr", 24, 8), ("rkey", 32, 4), ("reserved", 36, 4)],
    ),
    (
        "wr.atomic",
        32,
        AtomicWrFields::LAYOUT,
        &[
            ("remote_addr", 24, 8),
            ("compare_add", 32, 8),
            ("swap", 40, 8),
            ("rkey", 48, 4),
            ("reserved", 52, 4),
        ],
    ),
    (
        "wr.ud",
        120,
        UdWrFields::LAYOUT,
        &[
            ("remote_qpn", 24, 4),
            ("remote_qkey", 28, 4),
            ("pkey_index", 32, 2),
            ("reserved", 34, 2),
            ("ah_num", 36, 4),
            ("pad", 40, 16),
            ("av", 56, 88),
        ],
    ),
    (
        "wr.mw",
        32,
        MwWrFields::LAYOUT,
        &[
            ("addr", 24, 8),
            ("length", 32, 8),
            ("mr_lkey", 40, 4),
            ("mw_rkey", 44, 4),
            ("rkey", 48, 4),
            ("access", 52, 4),
        ],
    ),
];

fn field(layout: &[FieldLayout], name: &str) -> FieldLayout {
    *layout
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no field {name}"))
}

#[test]
fn layout_matches_c() {
    for &(name, size, layout, fields) in TABLE {
        let end = layout.last().map_or(0, |f| f.offset + f.size);
        assert_eq!(end, size, "sizeof(struct {name})");
        for &(f, off, sz) in fields {
            let l = field(layout, f);
            assert_eq!((l.offset, l.size), (off, sz), "{name}.{f}");
        }
    }
    for &(name, size, layout, fields) in UNION_TABLE {
        let end = layout.last().map_or(0, |f| f.offset + f.size);
        assert_eq!(end, size, "sizeof({name})");
        assert!(24 + size <= 144, "{name} fits in the union");
        for &(f, off, sz) in fields {
            let l = field(layout, f);
            assert_eq!((24 + l.offset, l.size), (off, sz), "{name}.{f}");
        }
    }
    // Sizes through the views, and the derived constants.
    assert_eq!(QueueBufHeader::LEN, 384);
    assert_eq!(RxeSendWqe::LEN, 208);
    assert_eq!(RxeSendWr::LEN, 144);
    assert_eq!(RxeRecvWqe::LEN, 40);
    assert_eq!(RxeDmaInfo::LEN, 24);
    assert_eq!(RxeSge::LEN, 16);
    assert_eq!(RxeAv::LEN, 88);
    assert_eq!(UverbsWc::LEN, 48);
    assert_eq!(MmInfo::LEN, 16);
    assert_eq!(
        (
            PRODUCER_INDEX_OFFSET,
            CONSUMER_INDEX_OFFSET,
            QUEUE_DATA_OFFSET
        ),
        (128, 256, 384)
    );
    assert_eq!((LOG2_ELEM_SIZE_OFFSET, INDEX_MASK_OFFSET), (0, 4));
    assert_eq!((SEND_WQE_DATA_OFFSET, RECV_WQE_DATA_OFFSET), (208, 40));
    assert_eq!(IndexField::Producer.offset(), 128);
    assert_eq!(IndexField::Consumer.offset(), 256);
}

/// Deterministic pseudo-random bytes.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

macro_rules! round_trip {
    ($($view:ident),*) => {$(
        for seed in 0..8 {
            let bytes = noise($view::LEN, seed);
            let v = $view::new(&bytes).unwrap();
            let mut out = vec![0u8; $view::LEN];
            v.fields().write(&mut out).unwrap();
            assert_eq!(out, bytes, stringify!($view));
            assert_eq!(v.as_bytes().as_slice(), bytes.as_slice());
            assert!($view::new(&bytes[..$view::LEN - 1]).is_none());
            assert_eq!(v.fields().write(&mut out[..$view::LEN - 1]), Err(BufferTooSmall));
        }
    )*};
}

#[test]
fn views_round_trip() {
    round_trip!(
        QueueBufHeader,
        MmInfo,
        CreateCqResp,
        ResizeCqResp,
        CreateQpResp,
        CreateSrqResp,
        ModifySrqCmd,
        CreateAhResp,
        RxeSge,
        RxeDmaInfo,
        RxeGlobalRoute,
        RxeAv,
        RxeSendWr,
        RdmaWr,
        AtomicWr,
        FlushWr,
        UdWr,
        MwWr,
        RxeSendWqe,
        RxeRecvWqe,
        UverbsWc
    );
}

#[test]
fn little_endian_fields_and_unions() {
    let mut b = [0u8; 144];
    b[0..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
    b[12..16].copy_from_slice(&3u32.to_le_bytes());
    b[20..24].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    b[24..32].copy_from_slice(&0xaaaa_bbbb_cccc_dddd_u64.to_le_bytes());
    b[32..36].copy_from_slice(&0x1234u32.to_le_bytes());
    b[36..40].copy_from_slice(&7u32.to_le_bytes());
    let wr = RxeSendWr::new(&b).unwrap();
    assert_eq!(wr.wr_id(), 0x1122_3344_5566_7788);
    assert_eq!(wr.opcode(), 3);
    assert_eq!(wr.ex(), 0xefbe_adde);
    assert_eq!(wr.rdma().remote_addr, 0xaaaa_bbbb_cccc_dddd);
    assert_eq!(wr.rdma().rkey, 0x1234);
    assert_eq!(wr.ud().remote_qpn, 0xcccc_dddd);
    assert_eq!(wr.ud().ah_num, 7);
    assert_eq!(wr.atomic().compare_add, 0x0000_0007_0000_1234);
    assert_eq!(wr.flush().length, 0x1234);
    assert_eq!(wr.mw().length, 0x0000_0007_0000_1234);
    // Setting a union member through the builder lands at the C offsets.
    let mut f = RxeSendWrFields::default();
    f.set_atomic(AtomicWrFields {
        remote_addr: 8,
        compare_add: 1,
        swap: 2,
        rkey: 3,
        reserved: 0,
    });
    let mut out = [0u8; 144];
    f.write(&mut out).unwrap();
    assert_eq!(out[24], 8);
    assert_eq!(out[32], 1);
    assert_eq!(out[40], 2);
    assert_eq!(out[48], 3);
    assert_eq!(f.atomic().swap, 2);
}

#[test]
fn modify_srq_cmd_input() {
    let addr = 0x7fff_0000_1000u64.to_le_bytes();
    assert_eq!(parse_modify_srq_cmd(&addr), Ok(0x7fff_0000_1000));
    let mut long = addr.to_vec();
    long.extend_from_slice(&[0; 8]);
    assert_eq!(parse_modify_srq_cmd(&long), Ok(0x7fff_0000_1000));
    long.push(1);
    assert_eq!(parse_modify_srq_cmd(&long), Err(UdataError::NonZeroTrailer));
    assert_eq!(parse_modify_srq_cmd(&addr[..7]), Err(UdataError::TooShort));
}

#[test]
fn udata_responses() {
    let mi = MmInfoFields {
        offset: 0x1000,
        size: 0x11000,
        pad: 0,
    };
    let mut out = [0xffu8; 32];
    CreateQpRespFields {
        rq_mi: MmInfoFields::default(),
        sq_mi: mi,
    }
    .write(&mut out)
    .unwrap();
    assert_eq!(&out[..16], &[0; 16]);
    assert_eq!(&out[16..24], &0x1000u64.to_le_bytes());
    assert_eq!(&out[24..28], &0x11000u32.to_le_bytes());
    assert_eq!(&out[28..32], &[0; 4]);
    let mut out = [0xffu8; 24];
    CreateSrqRespFields {
        mi,
        srq_num: 0x20001,
        reserved: 0,
    }
    .write(&mut out)
    .unwrap();
    assert_eq!(&out[16..24], &[1, 0, 2, 0, 0, 0, 0, 0]);
    let mut out = [0u8; 8];
    CreateAhRespFields {
        ah_num: 5,
        reserved: 0,
    }
    .write(&mut out)
    .unwrap();
    assert_eq!(out, [5, 0, 0, 0, 0, 0, 0, 0]);
}

// ------------------------------------------------------------------------------------------
// Geometry.
// ------------------------------------------------------------------------------------------

#[test]
fn geometry_matches_rxe_queue_init() {
    // ibv_rc_pingpong defaults (rxe-uabi.md 3.1): CQ 501, SQ 1 x 1 SGE, RQ 500 x 1 SGE.
    let cq = QueueGeometry::new(501, UPSTREAM_CQE_SIZE, CACHE_LINE_SIZE).unwrap();
    assert_eq!(
        (cq.slots(), cq.elem_size(), cq.log2_elem_size()),
        (512, 128, 7)
    );
    assert_eq!((cq.capacity(), cq.index_mask()), (511, 511));
    assert_eq!(cq.mmap_len(4096), Some(0x11000));

    let caps = sq_caps(1, 16).unwrap();
    assert_eq!(
        caps,
        SqCaps {
            max_send_sge: 1,
            max_inline_data: 16,
            wqe_size: 224
        }
    );
    let sq = QueueGeometry::new(1, caps.wqe_size, CACHE_LINE_SIZE).unwrap();
    assert_eq!((sq.slots(), sq.log2_elem_size()), (2, 8));
    assert_eq!(sq.mmap_len(4096), Some(0x1000));

    let rq = QueueGeometry::new(500, recv_wqe_size(1).unwrap(), CACHE_LINE_SIZE).unwrap();
    assert_eq!(
        (rq.slots(), rq.log2_elem_size(), rq.capacity()),
        (512, 6, 511)
    );
    assert_eq!(rq.mmap_len(4096), Some(0x9000));

    // Inline raises the SGE count and vice versa, as rxe_init_sq().
    assert_eq!(sq_caps(2, 512).unwrap().max_send_sge, 32);
    assert_eq!(sq_caps(32, 0).unwrap().max_inline_data, 512);
    assert_eq!(sq_caps(32, 0).unwrap().wqe_size, 720);
    assert_eq!(sq_caps(u32::MAX, 0), Err(QueueError::SizeOverflow));

    // Slot counts: num_elem + 1 rounded up; zero entries still gives one usable slot.
    assert_eq!(QueueGeometry::new(0, 1, 64).unwrap().slots(), 1);
    assert_eq!(QueueGeometry::new(1, 1, 64).unwrap().slots(), 2);
    assert_eq!(QueueGeometry::new(2, 1, 64).unwrap().slots(), 4);
    assert_eq!(QueueGeometry::new(3, 1, 64).unwrap().slots(), 4);
    assert_eq!(
        QueueGeometry::new(u32::MAX, 64, 64),
        Err(QueueError::TooManyEntries)
    );
    assert_eq!(
        QueueGeometry::new(1 << 31, 64, 64),
        Err(QueueError::TooManyEntries)
    );
    // Too big for mminfo.size.
    assert_eq!(
        QueueGeometry::new(1 << 20, 8192, 64),
        Err(QueueError::SizeOverflow)
    );
    assert_eq!(
        QueueGeometry::new(1, usize::MAX, 64),
        Err(QueueError::SizeOverflow)
    );
    // Header values.
    let h = cq.header();
    assert_eq!((h.log2_elem_size, h.index_mask), (7, 511));
    assert_eq!(QueueGeometry::from_raw(7, 511), Ok(cq));
    assert_eq!(
        QueueGeometry::from_raw(7, 510),
        Err(QueueError::BadGeometry)
    );
    assert_eq!(QueueGeometry::from_raw(64, 1), Err(QueueError::BadGeometry));
    assert_eq!(
        QueueGeometry::from_raw(0, u32::MAX),
        Err(QueueError::BadGeometry)
    );
    assert_eq!(cq.mmap_len(3000), None);
    // Slots.
    let s = cq.slot(3);
    assert_eq!((s.index, s.offset, s.len), (3, 384 + 3 * 128, 128));
    assert_eq!(cq.slot(512 + 3), s);
    assert_eq!(cq.buf_len(), 384 + 512 * 128);
    let buf = vec![0u8; cq.buf_len()];
    assert_eq!(cq.slot(511).bytes(&buf).unwrap().len(), 128);
    assert!(cq.slot(511).bytes(&buf[..buf.len() - 1]).is_none());
}

#[test]
fn largest_ring_index_arithmetic_wraps() {
    // 2^31 one-byte slots: the largest ring, where masked differences use all 32 bits.
    let g = QueueGeometry::from_raw(0, (1 << 31) - 1).unwrap();
    let last = g.index_mask();
    assert_eq!(g.next(last), 0);
    assert_eq!(g.count(0, last), 1);
    assert_eq!(g.count(last, 0), last);
    assert!(g.is_full(last, 0));
    assert!(g.is_full(5, 6));
    assert!(g.is_empty(7, 7));
    assert_eq!(
        g.check_index(1 << 31),
        Err(QueueError::IndexOutOfRange {
            value: 1 << 31,
            mask: last
        })
    );
    let mut c = KernelConsumer::with_index(g, last);
    assert_eq!(c.count(1), Ok(2));
    assert_eq!(c.advance(1).unwrap().value, 0);
    assert_eq!(c.advance(1).unwrap().value, 1);
    assert_eq!(c.advance(1), Err(QueueError::Empty));
}

// ------------------------------------------------------------------------------------------
// Index protocol.
// ------------------------------------------------------------------------------------------

#[test]
fn roles_and_ordering() {
    use IndexAccess::*;
    use IndexField::*;
    for k in [QueueKind::Send, QueueKind::Recv, QueueKind::SharedRecv] {
        assert_eq!((k.producer(), k.consumer()), (Side::User, Side::Kernel));
        assert_eq!(
            k.accesses(Side::Kernel),
            [LoadAcquire(Producer), StoreRelease(Consumer)]
        );
        assert_eq!(
            k.accesses(Side::User),
            [LoadAcquire(Consumer), StoreRelease(Producer)]
        );
    }
    let cq = QueueKind::Completion;
    assert_eq!((cq.producer(), cq.consumer()), (Side::Kernel, Side::User));
    assert_eq!(
        cq.accesses(Side::Kernel),
        [LoadAcquire(Consumer), StoreRelease(Producer)]
    );
    assert_eq!(KernelProducer::ACCESSES, cq.accesses(Side::Kernel));
    assert_eq!(
        SendQueueState::ACCESSES,
        QueueKind::Send.accesses(Side::Kernel)
    );
    assert_eq!(
        KernelConsumer::ACCESSES,
        QueueKind::SharedRecv.accesses(Side::Kernel)
    );
}

#[test]
fn send_queue_cursor() {
    let g = QueueGeometry::from_raw(8, 7).unwrap();
    let mut sq = SendQueueState::new(g);
    assert_eq!(sq.next_to_start(0), Ok(None));
    assert_eq!(sq.pending(3), Ok(3));
    assert_eq!(sq.next_to_start(3).unwrap().unwrap().index, 0);
    sq.mark_started(3).unwrap();
    sq.mark_started(3).unwrap();
    assert_eq!(sq.in_flight(), 2);
    assert_eq!(sq.oldest_in_flight().unwrap().index, 0);
    // The producer may not move back over started WQEs.
    assert_eq!(sq.pending(1), Err(QueueError::ProducerRetreated));
    assert_eq!(sq.pending(2), Ok(0));
    assert_eq!(sq.mark_started(2), Err(QueueError::Empty));
    assert_eq!(
        sq.pending(8),
        Err(QueueError::IndexOutOfRange { value: 8, mask: 7 })
    );
    // Unmasked "free-running" producer values are rejected too.
    assert!(sq.pending(3 + 8).is_err());
    let p = sq.complete_oldest().unwrap();
    assert_eq!(
        p,
        Publish {
            access: IndexAccess::StoreRelease(IndexField::Consumer),
            value: 1
        }
    );
    assert_eq!(p.offset(), 256);
    sq.rewind();
    assert_eq!(sq.in_flight(), 0);
    assert_eq!(sq.complete_oldest(), Err(QueueError::NothingInFlight));
    assert_eq!(sq.next_index(), 1);
    assert_eq!(sq.drain(6).unwrap().value, 6);
    assert_eq!(
        (sq.consumer(), sq.next_index(), sq.pending(6)),
        (6, 6, Ok(0))
    );
    // A full ring is 7 posted WQEs.
    assert_eq!(sq.pending(5), Ok(7));
}

#[test]
fn completion_producer() {
    let g = QueueGeometry::from_raw(7, 3).unwrap();
    let mut cq = KernelProducer::new(g);
    for i in 0..3 {
        let r = cq.reserve(0).unwrap();
        assert_eq!(r.slot().index, i);
        let p = cq.commit(r).unwrap();
        assert_eq!(p.access, IndexAccess::StoreRelease(IndexField::Producer));
        assert_eq!(p.value, i + 1);
    }
    assert_eq!(cq.reserve(0).unwrap_err(), QueueError::Full);
    assert_eq!(cq.count(0), Ok(3));
    // rdma-core 44 ibv_end_poll() after an empty poll stores producer + 1: reads as full.
    assert_eq!(cq.reserve(0).unwrap_err(), QueueError::Full);
    assert_eq!(
        cq.reserve(4).unwrap_err(),
        QueueError::IndexOutOfRange { value: 4, mask: 3 }
    );
    let r = cq.reserve(1).unwrap();
    let stale = cq.reserve(1).unwrap();
    cq.commit(r).unwrap();
    assert_eq!(cq.commit(stale), Err(QueueError::StaleReservation));
    assert_eq!(cq.producer(), 0);
}

#[test]
fn resize_plan() {
    let old = QueueGeometry::from_raw(7, 7).unwrap();
    let new = QueueGeometry::from_raw(7, 3).unwrap();
    let plan = ResizePlan::new(old, new, 1, 6).unwrap();
    assert_eq!(plan.count(), 3);
    assert_eq!((plan.new_producer(), plan.new_consumer()), (3, 0));
    let pairs: Vec<(u32, u32)> = plan.copies().map(|(a, b)| (a.index, b.index)).collect();
    assert_eq!(pairs, [(6, 0), (7, 1), (0, 2)]);
    assert_eq!(plan.copy_len(), 128);
    assert_eq!(
        ResizePlan::new(old, new, 2, 6),
        Err(QueueError::ResizeTooSmall {
            count: 4,
            capacity: 3
        })
    );
    assert!(ResizePlan::new(old, new, 9, 0).is_err());
}

/// librxe's side of a queue, written against the raw bytes like `providers/rxe/rxe_queue.h`.
struct User<'a> {
    buf: &'a mut [u8],
}

impl User<'_> {
    fn get(&self, off: usize) -> u32 {
        u32::from_le_bytes(self.buf[off..off + 4].try_into().unwrap())
    }
    fn set(&mut self, off: usize, v: u32) {
        self.buf[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }
    fn mask(&self) -> u32 {
        self.get(INDEX_MASK_OFFSET)
    }
    fn elem(&mut self, i: u32) -> &mut [u8] {
        let log2 = self.get(LOG2_ELEM_SIZE_OFFSET);
        let off = QUEUE_DATA_OFFSET + (((i & self.mask()) as usize) << log2);
        &mut self.buf[off..off + (1 << log2)]
    }
    fn full(&self) -> bool {
        let p = self.get(PRODUCER_INDEX_OFFSET);
        (p + 1) & self.mask() == self.get(CONSUMER_INDEX_OFFSET)
    }
    fn empty(&self) -> bool {
        self.get(PRODUCER_INDEX_OFFSET) == self.get(CONSUMER_INDEX_OFFSET)
    }
}

fn publish(buf: &mut [u8], p: Publish) {
    buf[p.offset()..p.offset() + 4].copy_from_slice(&p.value.to_le_bytes());
}

fn shared(buf: &[u8], f: IndexField) -> u32 {
    u32::from_le_bytes(buf[f.offset()..f.offset() + 4].try_into().unwrap())
}

fn write_send(slot: &mut [u8], wr_id: u64, len: u32) {
    let mut wr = RxeSendWrFields {
        wr_id,
        opcode: WrOpcode::Send.raw(),
        send_flags: SendFlags::SIGNALED,
        ..Default::default()
    };
    wr.wr[0] = 0xee; // stale union bytes are harmless for RC SEND
    RxeSendWqeFields {
        wr,
        status: 0xdead, // kernel scratch left over
        dma: RxeDmaInfoFields {
            length: len,
            resid: len,
            num_sge: 1,
            ..Default::default()
        },
        ..Default::default()
    }
    .write(slot)
    .unwrap();
    RxeSgeFields {
        addr: 0x1000 + wr_id,
        length: len,
        lkey: 9,
    }
    .write(&mut slot[208..])
    .unwrap();
}

/// Provider posts sends, the kernel consumes the SQ and produces CQEs, the provider polls;
/// uneven batches wrap both rings many times.
#[test]
fn simulated_send_queue_and_completion_queue() {
    let caps = sq_caps(1, 0).unwrap();
    let sqg = QueueGeometry::new(5, caps.wqe_size, CACHE_LINE_SIZE).unwrap();
    let cqg = QueueGeometry::new(6, UPSTREAM_CQE_SIZE, CACHE_LINE_SIZE).unwrap();
    let mut sq_buf = vec![0u8; sqg.buf_len()];
    let mut cq_buf = vec![0u8; cqg.buf_len()];
    sqg.header().write(&mut sq_buf).unwrap();
    cqg.header().write(&mut cq_buf).unwrap();
    let params = SendQueueParams {
        qp_type: QpType::Rc,
        max_sge: caps.max_send_sge,
        max_inline: caps.max_inline_data,
        max_msg_size: MAX_MSG_SIZE,
        length_check: LengthCheck::Strict,
        allow_embedded_av: false,
        gid_table_len: 16,
        kernel: false,
    };
    let mut sq = SendQueueState::new(sqg);
    let mut cq = KernelProducer::new(cqg);
    let (mut posted, mut polled) = (0u64, 0u64);
    let mut rng = 0x1234_5678u32;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 17;
        rng ^= rng << 5;
        rng % 7
    };
    for _round in 0..400 {
        // Provider: post up to n WQEs.
        for _ in 0..next() {
            let mut u = User { buf: &mut sq_buf };
            if u.full() {
                break;
            }
            let p = u.get(PRODUCER_INDEX_OFFSET);
            write_send(u.elem(p), posted, (posted % 100) as u32);
            let m = u.mask();
            u.set(PRODUCER_INDEX_OFFSET, (p + 1) & m);
            posted += 1;
        }
        // Kernel: doorbell. Start everything pending, then complete as the CQ allows.
        let prod = shared(&sq_buf, IndexField::Producer);
        while let Some(slot) = sq.next_to_start(prod).unwrap() {
            let copy = slot.bytes(&sq_buf).unwrap().to_vec();
            let wqe = validate_send_wqe(&copy, &params).unwrap();
            assert_eq!(wqe.opcode(), WrOpcode::Send);
            sq.mark_started(prod).unwrap();
        }
        for _ in 0..next() {
            let Some(slot) = sq.oldest_in_flight() else {
                break;
            };
            let copy = slot.bytes(&sq_buf).unwrap().to_vec();
            let wqe = validate_send_wqe(&copy, &params).unwrap();
            let cons = shared(&cq_buf, IndexField::Consumer);
            let Ok(r) = cq.reserve(cons) else {
                break;
            };
            Completion::send_success(&wqe, 17)
                .write(r.slot().bytes_mut(&mut cq_buf).unwrap())
                .unwrap();
            let p = cq.commit(r).unwrap();
            publish(&mut cq_buf, p);
            let p = sq.complete_oldest().unwrap();
            publish(&mut sq_buf, p);
        }
        // Provider: poll.
        for _ in 0..next() {
            let mut u = User { buf: &mut cq_buf };
            if u.empty() {
                break;
            }
            let c = u.get(CONSUMER_INDEX_OFFSET);
            let wc = UverbsWc::new(u.elem(c)).unwrap().fields();
            assert_eq!(wc.wr_id, polled);
            assert_eq!(wc.byte_len, (polled % 100) as u32);
            assert_eq!(wc.status, WcStatus::Success as u32);
            assert_eq!(wc.opcode, WcOpcode::Send as u32);
            assert_eq!(wc.qp_num, 17);
            let m = u.mask();
            u.set(CONSUMER_INDEX_OFFSET, (c + 1) & m);
            polled += 1;
        }
    }
    assert!(polled > 100, "only {polled} completions");
    assert!(posted >= polled);
}

// ------------------------------------------------------------------------------------------
// Opcodes.
// ------------------------------------------------------------------------------------------

#[test]
fn opcode_matrix() {
    let allowed = |qp| -> Vec<u32> {
        WrOpcode::ALL
            .iter()
            .filter(|o| o.allowed_on(qp))
            .map(|o| o.raw())
            .collect()
    };
    assert_eq!(allowed(QpType::Rc), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15]);
    assert_eq!(allowed(QpType::Uc), [0, 1, 2, 3, 8]);
    assert_eq!(allowed(QpType::Ud), [2, 3]);
    assert!(allowed(QpType::Rd).is_empty());
    for raw in [10, 11, 12, 13, 16, 0x20, 0x21, u32::MAX] {
        assert_eq!(WrOpcode::from_raw(raw), None, "{raw}");
    }
    assert_eq!(WrOpcode::KERNEL_REG_MR, 0x20);
    for o in WrOpcode::ALL {
        assert_eq!(WrOpcode::from_raw(o.raw()), Some(o));
    }
}

#[test]
fn packet_opcodes_from_the_table() {
    use Position::*;
    use WrOpcode::*;
    let p = |o: WrOpcode, qp, pos| o.packet_opcode(qp, pos);
    assert_eq!(p(Send, QpType::Rc, Only), Some(Opcode::RC_SEND_ONLY));
    assert_eq!(p(Send, QpType::Rc, First), Some(Opcode::RC_SEND_FIRST));
    assert_eq!(
        p(SendWithImm, QpType::Rc, First),
        Some(Opcode::RC_SEND_FIRST)
    );
    assert_eq!(
        p(SendWithImm, QpType::Rc, Middle),
        Some(Opcode::RC_SEND_MIDDLE)
    );
    assert_eq!(
        p(SendWithImm, QpType::Rc, Last),
        Some(Opcode::RC_SEND_LAST_WITH_IMMEDIATE)
    );
    assert_eq!(
        p(SendWithInv, QpType::Rc, Only),
        Some(Opcode::RC_SEND_ONLY_WITH_INVALIDATE)
    );
    assert_eq!(p(SendWithInv, QpType::Uc, Only), None);
    assert_eq!(p(SendWithInv, QpType::Ud, Only), None);
    assert_eq!(
        p(RdmaWriteWithImm, QpType::Uc, Only),
        Some(Opcode::UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE)
    );
    assert_eq!(
        p(RdmaWriteWithImm, QpType::Uc, First),
        Some(Opcode::UC_RDMA_WRITE_FIRST)
    );
    assert_eq!(
        p(RdmaWrite, QpType::Rc, Last),
        Some(Opcode::RC_RDMA_WRITE_LAST)
    );
    assert_eq!(
        p(RdmaRead, QpType::Rc, Only),
        Some(Opcode::RC_RDMA_READ_REQUEST)
    );
    assert_eq!(p(RdmaRead, QpType::Uc, Only), None);
    assert_eq!(
        p(AtomicCmpAndSwp, QpType::Rc, Only),
        Some(Opcode::RC_COMPARE_SWAP)
    );
    assert_eq!(
        p(AtomicFetchAndAdd, QpType::Rc, Only),
        Some(Opcode::RC_FETCH_ADD)
    );
    assert_eq!(p(Flush, QpType::Rc, Only), Some(Opcode::RC_FLUSH));
    assert_eq!(
        p(AtomicWrite, QpType::Rc, Only),
        Some(Opcode::RC_ATOMIC_WRITE)
    );
    assert_eq!(p(LocalInv, QpType::Rc, Only), None);
    assert_eq!(
        SendWithImm.first_packet_opcode(QpType::Ud, false),
        Some(Opcode::UD_SEND_ONLY_WITH_IMMEDIATE)
    );
    assert_eq!(
        RdmaWrite.first_packet_opcode(QpType::Rc, false),
        Some(Opcode::RC_RDMA_WRITE_FIRST)
    );
}

#[test]
fn wc_opcodes() {
    use WrOpcode::*;
    let expect = [
        (RdmaWrite, 1),
        (RdmaWriteWithImm, 1),
        (Send, 0),
        (SendWithImm, 0),
        (SendWithInv, 0),
        (RdmaRead, 2),
        (AtomicCmpAndSwp, 3),
        (AtomicFetchAndAdd, 4),
        (BindMw, 5),
        (LocalInv, 6),
        (Flush, 8),
        (AtomicWrite, 9),
    ];
    for (o, v) in expect {
        assert_eq!(o.wc_opcode() as u32, v, "{o:?}");
    }
    assert_eq!(WcOpcode::Recv as u32, 128);
    assert_eq!(WcOpcode::RecvRdmaWithImm as u32, 129);
    assert_eq!(WcStatus::WrFlushErr as u32, 5);
    assert_eq!(WcStatus::GeneralErr as u32, 21);
}

// ------------------------------------------------------------------------------------------
// Send WQE validation.
// ------------------------------------------------------------------------------------------

fn params(qp: QpType) -> SendQueueParams {
    SendQueueParams {
        qp_type: qp,
        max_sge: 2,
        max_inline: 32,
        max_msg_size: MAX_MSG_SIZE,
        length_check: LengthCheck::Strict,
        allow_embedded_av: true,
        gid_table_len: 16,
        kernel: false,
    }
}

struct Wqe {
    wr: RxeSendWrFields,
    dma: RxeDmaInfoFields,
    data: Vec<u8>,
    iova: u64,
}

impl Wqe {
    fn new(opcode: u32) -> Self {
        Self {
            wr: RxeSendWrFields {
                wr_id: 0x77,
                opcode,
                ..Default::default()
            },
            dma: RxeDmaInfoFields::default(),
            data: Vec::new(),
            iova: 0,
        }
    }

    fn sges(mut self, sges: &[(u64, u32, u32)]) -> Self {
        self.data.clear();
        for &(addr, length, lkey) in sges {
            let mut b = [0u8; 16];
            RxeSgeFields { addr, length, lkey }.write(&mut b).unwrap();
            self.data.extend_from_slice(&b);
        }
        self.dma.num_sge = sges.len() as u32;
        self.dma.length = sges.iter().fold(0u32, |a, s| a.wrapping_add(s.1));
        self.dma.resid = self.dma.length;
        self
    }

    fn slot(&self, len: usize) -> Vec<u8> {
        let mut s = vec![0u8; len];
        RxeSendWqeFields {
            wr: self.wr,
            iova: self.iova,
            dma: self.dma,
            ..Default::default()
        }
        .write(&mut s)
        .unwrap();
        let n = self.data.len().min(len - 208);
        s[208..208 + n].copy_from_slice(&self.data[..n]);
        s
    }
}

fn check(w: &Wqe, qp: QpType) -> Result<SendWqe<'static>, WqeError> {
    let slot = Box::leak(w.slot(256).into_boxed_slice());
    validate_send_wqe(slot, &params(qp))
}

#[test]
fn send_wqes_accepted() {
    let w = Wqe::new(2).sges(&[(0x1000, 100, 1), (0x2000, 28, 2)]);
    let v = check(&w, QpType::Rc).unwrap();
    assert_eq!(
        (v.wr_id(), v.opcode(), v.length()),
        (0x77, WrOpcode::Send, 128)
    );
    let SendData::Sges(l) = v.data() else {
        panic!()
    };
    assert_eq!(l.len(), 2);
    assert_eq!(l.get(1).unwrap().addr, 0x2000);
    assert_eq!(l.iter().map(|s| s.lkey).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        *v.op(),
        SendOp::Send {
            imm: None,
            invalidate_rkey: None,
            ud: None
        }
    );

    // Immediate data: big-endian in memory, host value of the wire field.
    let mut w = Wqe::new(1).sges(&[(0, 4, 1)]);
    w.wr.ex = u32::from_le_bytes([0x12, 0x34, 0x56, 0x78]);
    w.wr.set_rdma(RdmaWrFields {
        remote_addr: 0xabc,
        rkey: 0x55,
        reserved: 0,
    });
    w.iova = 0xdead; // ignored: the union is authoritative
    let v = check(&w, QpType::Uc).unwrap();
    assert_eq!(
        *v.op(),
        SendOp::Write {
            remote: Remote {
                addr: 0xabc,
                rkey: 0x55
            },
            imm: Some(0x1234_5678)
        }
    );

    // SEND with invalidate.
    let mut w = Wqe::new(9);
    w.wr.ex = 0x4242;
    let v = check(&w, QpType::Rc).unwrap();
    assert!(matches!(
        v.op(),
        SendOp::Send {
            invalidate_rkey: Some(0x4242),
            ..
        }
    ));
    assert!(matches!(v.data(), SendData::Sges(l) if l.is_empty()));

    // Inline, including rc_pingpong -N: INLINE set and an SGE written as "data".
    let mut w = Wqe::new(2).sges(&[(0x1111, 16, 3)]);
    w.wr.send_flags = SendFlags::INLINE | SendFlags::SIGNALED;
    let v = check(&w, QpType::Rc).unwrap();
    let SendData::Inline(d) = v.data() else {
        panic!()
    };
    assert_eq!(d, &w.data[..16]);
    assert!(v.signaled(false));

    // Atomics.
    let mut w = Wqe::new(5).sges(&[(0x3000, 8, 4)]);
    w.wr.set_atomic(AtomicWrFields {
        remote_addr: 0x8000,
        compare_add: 1,
        swap: 2,
        rkey: 7,
        reserved: 0,
    });
    assert_eq!(
        *check(&w, QpType::Rc).unwrap().op(),
        SendOp::CompareSwap {
            remote: Remote {
                addr: 0x8000,
                rkey: 7
            },
            compare: 1,
            swap: 2
        }
    );
    w.wr.opcode = 6;
    assert_eq!(
        *check(&w, QpType::Rc).unwrap().op(),
        SendOp::FetchAdd {
            remote: Remote {
                addr: 0x8000,
                rkey: 7
            },
            add: 1
        }
    );

    // ATOMIC WRITE: 8 bytes in dma.atomic_wr, num_sge 0 (librxe wr_atomic_write).
    let mut w = Wqe::new(15);
    w.wr.set_rdma(RdmaWrFields {
        remote_addr: 0x10,
        rkey: 1,
        reserved: 0,
    });
    w.dma.length = 8;
    w.data = (1..=8).collect();
    let v = check(&w, QpType::Rc).unwrap();
    assert_eq!(v.length(), 8);
    assert!(matches!(
        v.op(),
        SendOp::AtomicWrite {
            value: [1, 2, 3, 4, 5, 6, 7, 8],
            ..
        }
    ));

    // FLUSH: length in dma.length.
    let mut w = Wqe::new(14);
    w.wr.set_flush(FlushWrFields {
        remote_addr: 0x20,
        length: 4096,
        rkey: 2,
        placement_type: FLUSH_PERSISTENT,
        level: FLUSH_RANGE,
        pad: [0; 6],
    });
    w.dma.length = 4096;
    let v = check(&w, QpType::Rc).unwrap();
    assert_eq!(v.length(), 4096);
    assert_eq!(v.data(), SendData::None);

    // Local operations.
    let mut w = Wqe::new(7);
    w.wr.ex = 0x100;
    assert_eq!(
        *check(&w, QpType::Rc).unwrap().op(),
        SendOp::LocalInv { rkey: 0x100 }
    );
    let mut w = Wqe::new(8);
    let mw = MwWrFields {
        addr: 1,
        length: 2,
        mr_lkey: 3,
        mw_rkey: 4,
        rkey: 5,
        access: 6,
    };
    w.wr.set_mw(mw);
    assert_eq!(*check(&w, QpType::Uc).unwrap().op(), SendOp::BindMw(mw));
}

fn v4_av(ip: [u8; 4]) -> RxeAvFields {
    let mut dgid = [0u8; 16];
    dgid[10] = 0xff;
    dgid[11] = 0xff;
    dgid[12..].copy_from_slice(&ip);
    let mut dgid_addr = [0u8; 28];
    dgid_addr[4..8].copy_from_slice(&ip);
    RxeAvFields {
        port_num: 1,
        network_type: NETWORK_TYPE_IPV4,
        dmac: [2, 0, 0, 0, 0, 1],
        grh: RxeGlobalRouteFields {
            dgid,
            sgid_index: 1,
            hop_limit: 64,
            ..Default::default()
        },
        sgid_addr: [0; 28],
        dgid_addr,
    }
}

#[test]
fn ud_sends() {
    let mut w = Wqe::new(3).sges(&[(0, 64, 1)]);
    w.wr.ex = u32::from_le_bytes([0, 0, 0, 9]);
    w.wr.set_ud(UdWrFields {
        remote_qpn: 0x11,
        remote_qkey: 0x1111_1111,
        ah_num: 4,
        ..Default::default()
    });
    let v = check(&w, QpType::Ud).unwrap();
    assert_eq!(
        *v.op(),
        SendOp::Send {
            imm: Some(9),
            invalidate_rkey: None,
            ud: Some(UdDest {
                remote_qpn: rrxe_proto::bth::Qpn::new(0x11),
                remote_qkey: 0x1111_1111,
                pkey_index: 0,
                address: UdAddress::Ah(4)
            })
        }
    );
    let mut ud = w.wr.ud();
    ud.remote_qpn = 0x0100_0000;
    w.wr.set_ud(ud);
    assert_eq!(
        check(&w, QpType::Ud).unwrap_err(),
        WqeError::BadRemoteQpn(0x0100_0000)
    );

    // Embedded AV (legacy providers): IPv4 and IPv6.
    ud.remote_qpn = 0x11;
    ud.ah_num = 0;
    ud.av = v4_av([10, 0, 0, 2]);
    w.wr.set_ud(ud);
    let v = check(&w, QpType::Ud).unwrap();
    let SendOp::Send { ud: Some(d), .. } = v.op() else {
        panic!()
    };
    let UdAddress::Av(av) = d.address else {
        panic!()
    };
    assert!(av.is_ipv4());
    assert_eq!(&av.dgid()[12..], &[10, 0, 0, 2]);
    let mut p = params(QpType::Ud);
    p.allow_embedded_av = false;
    let slot = w.slot(256);
    assert_eq!(validate_send_wqe(&slot, &p), Err(WqeError::MissingAh));

    let mut v6 = v4_av([0; 4]);
    v6.network_type = NETWORK_TYPE_IPV6;
    v6.grh.dgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5];
    v6.dgid_addr = [0; 28];
    v6.dgid_addr[0] = 10; // AF_INET6
    v6.dgid_addr[8..24].copy_from_slice(&v6.grh.dgid);
    assert!(!validate_av(&v6, 16).unwrap().is_ipv4());

    let bad = |f: fn(&mut RxeAvFields), e: AvError| {
        let mut a = v4_av([10, 0, 0, 2]);
        f(&mut a);
        assert_eq!(validate_av(&a, 16), Err(e));
    };
    bad(|a| a.port_num = 2, AvError::BadPort(2));
    bad(|a| a.network_type = 0, AvError::BadNetworkType(0));
    bad(|a| a.network_type = 3, AvError::BadNetworkType(3));
    bad(
        |a| a.network_type = NETWORK_TYPE_IPV6,
        AvError::GidTypeMismatch,
    );
    bad(|a| a.dgid_addr[7] = 3, AvError::AddrMismatch);
    bad(|a| a.grh.sgid_index = 16, AvError::BadSgidIndex(16));
    bad(
        |a| a.grh.flow_label = 1 << 20,
        AvError::BadFlowLabel(1 << 20),
    );
    ud.av.network_type = 7;
    w.wr.set_ud(ud);
    assert_eq!(
        check(&w, QpType::Ud).unwrap_err(),
        WqeError::BadAv(AvError::BadNetworkType(7))
    );
}

#[test]
fn send_wqes_rejected() {
    use WqeError::*;
    let e = |w: &Wqe, qp| check(w, qp).unwrap_err();
    let st = |w: &Wqe, qp| e(w, qp).send_status();

    // Kernel-only and unknown opcodes; opcode vs QP type.
    assert_eq!(e(&Wqe::new(0x20), QpType::Rc), BadOpcode(0x20));
    assert_eq!(st(&Wqe::new(0x20), QpType::Rc), WcStatus::LocQpOpErr);
    assert_eq!(e(&Wqe::new(11), QpType::Rc), BadOpcode(11));
    assert_eq!(e(&Wqe::new(10), QpType::Rc), BadOpcode(10));
    assert_eq!(
        e(&Wqe::new(4), QpType::Uc),
        OpcodeNotAllowed(WrOpcode::RdmaRead)
    );
    assert_eq!(
        e(&Wqe::new(0), QpType::Ud),
        OpcodeNotAllowed(WrOpcode::RdmaWrite)
    );
    assert_eq!(
        e(&Wqe::new(9), QpType::Ud),
        OpcodeNotAllowed(WrOpcode::SendWithInv)
    );
    assert_eq!(
        e(&Wqe::new(7), QpType::Uc),
        OpcodeNotAllowed(WrOpcode::LocalInv)
    );
    assert_eq!(
        e(&Wqe::new(2), QpType::Rd),
        OpcodeNotAllowed(WrOpcode::Send)
    );

    // SGE count and placement.
    let w = Wqe::new(2).sges(&[(0, 1, 1); 3]);
    assert_eq!(
        e(&w, QpType::Rc),
        TooManySge {
            num_sge: 3,
            max_sge: 2
        }
    );
    let w = Wqe::new(2).sges(&[(0, 1, 1); 2]);
    let slot = w.slot(208 + 31);
    assert_eq!(
        validate_send_wqe(&slot, &params(QpType::Rc)),
        Err(SgeOutsideSlot)
    );
    assert_eq!(
        validate_send_wqe(&slot[..207], &params(QpType::Rc)),
        Err(SlotTooShort)
    );

    // Lengths.
    let mut w = Wqe::new(2).sges(&[(0, 10, 1), (0, 20, 1)]);
    w.dma.length = 10;
    assert_eq!(
        e(&w, QpType::Rc),
        LengthMismatch {
            claimed: 10,
            sum: 30
        }
    );
    assert_eq!(st(&w, QpType::Rc), WcStatus::LocLenErr);
    // rdma-core 44.0 ibv_wr_set_sge_list(): accepted with the recomputed sum if asked to.
    let slot = w.slot(256);
    let mut p = params(QpType::Rc);
    p.length_check = LengthCheck::SgeSum;
    assert_eq!(validate_send_wqe(&slot, &p).unwrap().length(), 30);
    let w = Wqe::new(2).sges(&[(0, u32::MAX, 1), (0, 2, 1)]);
    assert_eq!(e(&w, QpType::Rc), LengthOverflow);
    let w = Wqe::new(2).sges(&[(0, MAX_MSG_SIZE, 1), (0, 1, 1)]);
    assert_eq!(e(&w, QpType::Rc), MessageTooLong(MAX_MSG_SIZE + 1));

    // Inline.
    let mut w = Wqe::new(2);
    w.wr.send_flags = SendFlags::INLINE;
    w.dma.length = 33;
    assert_eq!(e(&w, QpType::Rc), InlineTooLong(33));
    assert_eq!(st(&w, QpType::Rc), WcStatus::LocLenErr);
    w.dma.length = 32;
    let slot = w.slot(208 + 31);
    assert_eq!(
        validate_send_wqe(&slot, &params(QpType::Rc)),
        Err(InlineOutsideSlot)
    );
    w.dma.length = u32::MAX; // upstream: copies from inline_data[sge_offset] for resid bytes
    assert_eq!(e(&w, QpType::Rc), InlineTooLong(u32::MAX));
    w.wr.opcode = 4;
    assert_eq!(e(&w, QpType::Rc), InlineNotAllowed);

    // Atomics.
    let mut w = Wqe::new(5).sges(&[(0, 4, 1)]);
    assert_eq!(e(&w, QpType::Rc), AtomicLength(4));
    w = w.sges(&[(0, 8, 1)]);
    w.wr.set_atomic(AtomicWrFields {
        remote_addr: 0x1004,
        ..Default::default()
    });
    assert_eq!(e(&w, QpType::Rc), AtomicMisaligned(0x1004));
    assert_eq!(st(&w, QpType::Rc), WcStatus::LocQpOpErr);
    let mut w = Wqe::new(15);
    w.dma.length = 4096; // upstream would copy an MTU from the 8-byte operand
    assert_eq!(e(&w, QpType::Rc), AtomicWriteLength(4096));
    w.dma.length = 8;
    w.wr.set_rdma(RdmaWrFields {
        remote_addr: 3,
        ..Default::default()
    });
    assert_eq!(e(&w, QpType::Rc), AtomicMisaligned(3));

    // FLUSH.
    let mut w = Wqe::new(14);
    for (t, l) in [(0, 0), (4, 0), (1, 2)] {
        w.wr.set_flush(FlushWrFields {
            placement_type: t,
            level: l,
            ..Default::default()
        });
        assert_eq!(
            e(&w, QpType::Rc),
            BadFlush {
                placement_type: t,
                level: l
            }
        );
    }
}

// ------------------------------------------------------------------------------------------
// Receive WQE validation.
// ------------------------------------------------------------------------------------------

fn recv_slot(num_sge: u32, length: u32, sges: &[(u64, u32, u32)], len: usize) -> Vec<u8> {
    let mut s = vec![0u8; len];
    RxeRecvWqeFields {
        wr_id: 5,
        dma: RxeDmaInfoFields {
            length,
            num_sge,
            ..Default::default()
        },
        ..Default::default()
    }
    .write(&mut s)
    .unwrap();
    for (i, &(addr, length, lkey)) in sges.iter().enumerate() {
        if let Some(b) = s.get_mut(40 + 16 * i..) {
            let _ = RxeSgeFields { addr, length, lkey }.write(b);
        }
    }
    s
}

#[test]
fn recv_wqes() {
    let p = RecvQueueParams {
        max_sge: 1,
        max_msg_size: MAX_MSG_SIZE,
        length_check: LengthCheck::Strict,
    };
    let s = recv_slot(1, 4096, &[(0x5000, 4096, 8)], 64);
    let v = validate_recv_wqe(&s, &p).unwrap();
    assert_eq!((v.wr_id(), v.length(), v.sges().len()), (5, 4096, 1));
    assert_eq!(v.sges().total_len(), Some(4096));
    let s = recv_slot(0, 0, &[], 64);
    assert!(validate_recv_wqe(&s, &p).unwrap().sges().is_empty());
    let s = recv_slot(2, 0, &[], 128);
    assert_eq!(
        validate_recv_wqe(&s, &p),
        Err(WqeError::TooManySge {
            num_sge: 2,
            max_sge: 1
        })
    );
    let s = recv_slot(1, 10, &[(0, 4096, 8)], 64);
    let err = validate_recv_wqe(&s, &p).unwrap_err();
    assert_eq!(
        err,
        WqeError::LengthMismatch {
            claimed: 10,
            sum: 4096
        }
    );
    assert_eq!(err.recv_status(), WcStatus::LocQpOpErr);
    let p3 = RecvQueueParams { max_sge: 3, ..p };
    let s = recv_slot(3, 0, &[], 64);
    assert_eq!(validate_recv_wqe(&s, &p3), Err(WqeError::SgeOutsideSlot));
    assert_eq!(
        validate_recv_wqe(&s[..39], &p3),
        Err(WqeError::SlotTooShort)
    );
}

// ------------------------------------------------------------------------------------------
// Completions.
// ------------------------------------------------------------------------------------------

#[test]
fn completion_bytes() {
    let c = Completion {
        wr_id: 0x0102_0304_0506_0708,
        status: WcStatus::Success,
        opcode: WcOpcode::RecvRdmaWithImm,
        vendor_err: 0,
        byte_len: 0x1000,
        ex: WcEx::Imm(0xaabb_ccdd),
        qp_num: 0x11,
        src_qp: 0x22,
        flags: WcFlags(WcFlags::GRH | WcFlags::WITH_IMM),
        pkey_index: 0x3344,
        slid: 0x5566,
        sl: 7,
        dlid_path_bits: 8,
        port_num: 1,
    };
    let mut slot = [0xffu8; 128];
    c.write(&mut slot).unwrap();
    let mut expect = Vec::new();
    expect.extend_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
    expect.extend_from_slice(&0u32.to_le_bytes());
    expect.extend_from_slice(&129u32.to_le_bytes());
    expect.extend_from_slice(&0u32.to_le_bytes());
    expect.extend_from_slice(&0x1000u32.to_le_bytes());
    expect.extend_from_slice(&[0xaa, 0xbb, 0xcc, 0xdd]); // __be32 imm_data
    expect.extend_from_slice(&0x11u32.to_le_bytes());
    expect.extend_from_slice(&0x22u32.to_le_bytes());
    expect.extend_from_slice(&3u32.to_le_bytes());
    expect.extend_from_slice(&0x3344u16.to_le_bytes());
    expect.extend_from_slice(&0x5566u16.to_le_bytes());
    expect.extend_from_slice(&[7, 8, 1, 0]);
    assert_eq!(&slot[..48], expect.as_slice());
    assert!(
        slot[48..].iter().all(|&b| b == 0xff),
        "only 48 bytes written"
    );
    assert_eq!(c.write(&mut slot[..47]), Err(BufferTooSmall));

    let inv = Completion {
        ex: WcEx::Invalidate(0x1234),
        flags: WcFlags(WcFlags::GRH | WcFlags::WITH_INVALIDATE),
        ..Completion::default()
    };
    let f = inv.to_fields();
    assert_eq!((f.ex, f.wc_flags), (0x1234, 5));
    assert!(WcFlags(f.wc_flags).contains(WcFlags::WITH_INVALIDATE));

    let err = Completion::send_error(9, WcStatus::WrFlushErr, 3).to_fields();
    assert_eq!(
        err,
        UverbsWcFields {
            wr_id: 9,
            status: 5,
            qp_num: 3,
            ..Default::default()
        }
    );

    // do_complete(): GRH always, flags from the ex union, src_qp and port_num.
    let r = Completion::recv_success(4, 0x11, 100, true, WcEx::Imm(0x0102_0304), 0, 1);
    let f = r.to_fields();
    assert_eq!((f.opcode, f.wc_flags, f.port_num), (129, 3, 1));
    assert_eq!(f.ex.to_le_bytes(), [1, 2, 3, 4]);
    let r = Completion::recv_success(4, 0x11, 100, false, WcEx::Invalidate(7), 0x99, 1);
    let f = r.to_fields();
    assert_eq!((f.opcode, f.wc_flags, f.ex, f.src_qp), (128, 5, 7, 0x99));
    let f = Completion::recv_success(4, 0x11, 0, false, WcEx::None, 0, 1).to_fields();
    assert_eq!((f.wc_flags, f.ex), (WcFlags::GRH, 0));

    // make_send_cqe(): WITH_IMM without the immediate, byte_len = length.
    let mut w = Wqe::new(3).sges(&[(0, 12, 1)]);
    w.wr.ex = 0x5555;
    let wqe = check(&w, QpType::Rc).unwrap();
    let f = Completion::send_success(&wqe, 0x33).to_fields();
    assert_eq!(
        f,
        UverbsWcFields {
            wr_id: 0x77,
            opcode: 0,
            byte_len: 12,
            qp_num: 0x33,
            wc_flags: WcFlags::WITH_IMM,
            ..Default::default()
        }
    );
}

#[test]
fn slot_wr_id_reads_any_slot_without_validating_it() {
    use rrxe_proto::uabi::slot_wr_id;
    let mut slot = [0xffu8; 64];
    slot[..8].copy_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(slot_wr_id(&slot), 0x1122_3344_5566_7788);
    assert_eq!(slot_wr_id(&slot[..8]), 0x1122_3344_5566_7788);
    assert_eq!(slot_wr_id(&slot[..7]), 0);
    assert_eq!(slot_wr_id(&[]), 0);
}

#[test]
fn checked_send_wqe_stays_small() {
    // Every shadow slot of a QP holds one (64 for a QP of 64 WRs): the embedded UD address
    // vector is kept as the 32 bytes a datagram's headers need, not the 88 of
    // `struct rxe_av` (a 160-byte copy before).
    assert_eq!(core::mem::size_of::<ValidAv>(), 32);
    assert!(core::mem::size_of::<CheckedSendWqe>() <= 104);
    assert_eq!(
        core::mem::size_of::<Option<CheckedSendWqe>>(),
        core::mem::size_of::<CheckedSendWqe>()
    );
}

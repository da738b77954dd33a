// SPDX-License-Identifier: GPL-2.0

//! Property tests for the rxe user ABI: every field of a user-written send or receive WQE,
//! and every index userspace can write, is hostile. Validation never panics, and whatever it
//! accepts satisfies the documented invariants.

mod common;

use proptest::prelude::*;
use rrxe_proto::opcode::QpType;
use rrxe_proto::uabi::*;

fn qp_type() -> impl Strategy<Value = QpType> {
    prop_oneof![4 => Just(QpType::Rc), 1 => Just(QpType::Uc), 2 => Just(QpType::Ud), 1 => Just(QpType::Rd)]
}

/// Mostly interesting values, sometimes anything.
fn small_or_any(max: u32) -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0..=max, 1 => any::<u32>()]
}

fn raw_opcode() -> impl Strategy<Value = u32> {
    let valid: Vec<u32> = WrOpcode::ALL.iter().map(|o| o.raw()).collect();
    prop_oneof![
        8 => prop::sample::select(valid),
        2 => 0u32..16,
        1 => Just(WrOpcode::KERNEL_REG_MR),
        1 => any::<u32>(),
    ]
}

fn send_params() -> impl Strategy<Value = SendQueueParams> {
    (
        qp_type(),
        small_or_any(40),
        small_or_any(600),
        prop_oneof![Just(MAX_MSG_SIZE), any::<u32>()],
        any::<bool>(),
        any::<bool>(),
        0u32..2000,
    )
        .prop_map(
            |(qp_type, max_sge, max_inline, max_msg_size, strict, av, gids)| SendQueueParams {
                qp_type,
                max_sge,
                max_inline,
                max_msg_size,
                length_check: if strict {
                    LengthCheck::Strict
                } else {
                    LengthCheck::SgeSum
                },
                allow_embedded_av: av,
                gid_table_len: gids,
                kernel: false,
            },
        )
}

/// Every field of `struct rxe_send_wqe`, the payload area, and the slot length.
#[derive(Debug, Clone)]
struct RawSend {
    hdr: RxeSendWqeFields,
    payload: Vec<u8>,
    slot_len: usize,
    fix_length: bool,
    fix_union: bool,
}

fn raw_send() -> impl Strategy<Value = RawSend> {
    let wr = (
        any::<u64>(),
        any::<u32>(),
        raw_opcode(),
        prop_oneof![0u32..32, any::<u32>()],
        any::<u32>(),
        prop::collection::vec(any::<u8>(), 120),
    );
    let scratch = (
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
        any::<u32>(),
    );
    let dma = (
        prop_oneof![0u32..64, Just(8u32), any::<u32>()],
        any::<u32>(),
        any::<u32>(),
        small_or_any(6),
        any::<u32>(),
        any::<u32>(),
    );
    (
        wr,
        scratch,
        dma,
        prop::collection::vec(any::<u8>(), 0..600),
        prop_oneof![
            Just(208usize),
            Just(256usize),
            Just(512usize),
            Just(1024usize),
            0usize..1100
        ],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(
                (wr_id, reserved, opcode, send_flags, ex, union),
                (status, state, iova, mask, first_psn, last_psn, ack_length, ssn, has_rd_atomic),
                (length, resid, cur_sge, num_sge, sge_offset, dreserved),
                payload,
                slot_len,
                fix_length,
                fix_union,
            )| {
                let mut wr = RxeSendWrFields {
                    wr_id,
                    reserved,
                    opcode,
                    send_flags,
                    ex,
                    ..Default::default()
                };
                wr.wr.copy_from_slice(&union);
                RawSend {
                    hdr: RxeSendWqeFields {
                        wr,
                        status,
                        state,
                        iova,
                        mask,
                        first_psn,
                        last_psn,
                        ack_length,
                        ssn,
                        has_rd_atomic,
                        dma: RxeDmaInfoFields {
                            length,
                            resid,
                            cur_sge,
                            num_sge,
                            sge_offset,
                            reserved: dreserved,
                        },
                    },
                    payload,
                    slot_len,
                    fix_length,
                    fix_union,
                }
            },
        )
}

impl RawSend {
    fn slot(&self) -> Vec<u8> {
        let mut hdr = self.hdr;
        let data = &self.payload;
        if self.fix_length {
            // Make dma.length consistent with the SGEs that fit, to reach the accept paths.
            let n = (hdr.dma.num_sge as usize).min(data.len() / 16);
            hdr.dma.length = (0..n).fold(0u32, |a, i| {
                let l = u32::from_le_bytes(data[16 * i + 8..16 * i + 12].try_into().unwrap());
                a.wrapping_add(l % 4096)
            });
        }
        if self.fix_union {
            // Steer the opcode-specific union member towards the accept paths.
            match WrOpcode::from_raw(hdr.wr.opcode) {
                Some(WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd) => {
                    let mut a = hdr.wr.atomic();
                    a.remote_addr &= !7;
                    hdr.wr.set_atomic(a);
                }
                Some(WrOpcode::AtomicWrite) => {
                    let mut r = hdr.wr.rdma();
                    r.remote_addr &= !7;
                    hdr.wr.set_rdma(r);
                    hdr.dma.length = 8;
                }
                Some(WrOpcode::Flush) => {
                    let mut f = hdr.wr.flush();
                    f.placement_type = 1 + f.placement_type % 3;
                    f.level &= 1;
                    hdr.wr.set_flush(f);
                }
                _ => {
                    let mut ud = hdr.wr.ud();
                    ud.remote_qpn &= 0xff_ffff;
                    hdr.wr.set_ud(ud);
                }
            }
        }
        let mut full = vec![0u8; 208 + data.len()];
        hdr.write(&mut full).unwrap();
        full[208..].copy_from_slice(data);
        if self.fix_length {
            // Keep SGE lengths small so sums do not overflow.
            let n = (hdr.dma.num_sge as usize).min(data.len() / 16);
            for i in 0..n {
                let off = 208 + 16 * i + 8;
                let l = u32::from_le_bytes(full[off..off + 4].try_into().unwrap()) % 4096;
                full[off..off + 4].copy_from_slice(&l.to_le_bytes());
            }
        }
        full.resize(self.slot_len, 0);
        full
    }
}

fn within(outer: &[u8], inner: &[u8]) -> (usize, usize) {
    let start = inner.as_ptr() as usize - outer.as_ptr() as usize;
    assert!(start + inner.len() <= outer.len(), "outside the slot");
    (start, start + inner.len())
}

/// Checks what validation accepted; `Ok(false)` when it refused the WQE.
fn check_send(slot: &[u8], p: &SendQueueParams) -> Result<bool, TestCaseError> {
    let Ok(v) = validate_send_wqe(slot, p) else {
        return Ok(false);
    };
    // Detached and attached again to the same bytes, it is the WQE validation gave (the
    // engine keeps it so beside its private copy instead of validating per packet).
    prop_assert_eq!(v.detach().attach(slot), Some(v));
    // The same from a copy of the data area alone (what the engine's shadow ring keeps).
    let area = slot
        .get(SEND_WQE_DATA_OFFSET..)
        .unwrap_or_default()
        .to_vec();
    prop_assert_eq!(v.detach().attach_area(&area), Some(v));
    prop_assert_eq!(v.detach().wr_id(), v.wr_id());
    let hdr = RxeSendWqe::new(slot).unwrap().fields();
    prop_assert_eq!(WrOpcode::from_raw(hdr.wr.opcode), Some(v.opcode()));
    prop_assert!(v.opcode().allowed_on(p.qp_type));
    prop_assert!(p.qp_type != QpType::Rd);
    prop_assert!(hdr.dma.num_sge <= p.max_sge);
    prop_assert_eq!(v.wr_id(), hdr.wr.wr_id);
    match v.data() {
        SendData::Sges(l) => {
            prop_assert!(v.opcode().has_local_data());
            prop_assert_eq!(l.len() as u32, hdr.dma.num_sge);
            let (start, end) = within(slot, l.as_bytes());
            prop_assert_eq!(start, SEND_WQE_DATA_OFFSET);
            prop_assert_eq!(end - start, 16 * l.len());
            prop_assert_eq!(l.total_len(), Some(v.length()));
            prop_assert_eq!(l.iter().count(), l.len());
            prop_assert!(v.length() <= p.max_msg_size);
            if p.length_check == LengthCheck::Strict {
                prop_assert_eq!(v.length(), hdr.dma.length);
            }
        }
        SendData::Inline(d) => {
            prop_assert!(v.opcode().inline_allowed());
            prop_assert!(v.flags().contains(SendFlags::INLINE));
            prop_assert_eq!(d.len() as u32, v.length());
            prop_assert!(v.length() <= p.max_inline);
            prop_assert_eq!(within(slot, d).0, SEND_WQE_DATA_OFFSET);
        }
        SendData::None => {
            prop_assert!(!v.flags().contains(SendFlags::INLINE));
            match v.opcode() {
                WrOpcode::AtomicWrite => prop_assert_eq!(v.length(), 8),
                WrOpcode::Flush => prop_assert!(v.length() <= p.max_msg_size),
                WrOpcode::LocalInv | WrOpcode::BindMw => prop_assert_eq!(v.length(), 0),
                o => prop_assert!(false, "{:?} without data", o),
            }
        }
    }
    match *v.op() {
        SendOp::CompareSwap { remote, .. } | SendOp::FetchAdd { remote, .. } => {
            prop_assert!(v.length() >= 8);
            prop_assert_eq!(remote.addr % 8, 0);
        }
        SendOp::AtomicWrite { remote, value } => {
            prop_assert_eq!(remote.addr % 8, 0);
            prop_assert_eq!(&value[..], &slot[208..216]);
        }
        SendOp::Send {
            ud,
            imm,
            invalidate_rkey,
        } => {
            prop_assert_eq!(imm.is_some(), v.opcode().has_imm());
            prop_assert_eq!(invalidate_rkey.is_some(), v.opcode().has_invalidate());
            prop_assert_eq!(ud.is_some(), p.qp_type == QpType::Ud);
            if let Some(ud) = ud {
                prop_assert!(ud.remote_qpn.get() <= 0xff_ffff);
                match ud.address {
                    UdAddress::Ah(n) => prop_assert!(n != 0),
                    UdAddress::Av(av) => {
                        prop_assert!(p.allow_embedded_av);
                        prop_assert!(u32::from(av.sgid_index()) < p.gid_table_len);
                        prop_assert!(av.flow_label() <= 0xf_ffff);
                        prop_assert_eq!(av.is_ipv4(), gid_is_v4_mapped(&av.dgid()));
                    }
                }
            }
        }
        SendOp::Flush {
            placement_type,
            level,
            ..
        } => {
            prop_assert!((1..=3).contains(&placement_type));
            prop_assert!(level <= 1);
        }
        _ => {}
    }
    // Building the completion never fails for a 48-byte slot.
    let mut cqe = [0u8; 48];
    Completion::send_success(&v, 1).write(&mut cqe).unwrap();
    prop_assert_eq!(UverbsWc::new(&cqe).unwrap().byte_len(), v.length());
    Ok(true)
}

/// Steers a receive WQE slot (at least 40 bytes) towards acceptance: each of the first
/// `num_sge` SGEs that fit gets a length below 64 KiB, and the header's length is their sum.
fn sum_sge_lengths(slot: &mut [u8], num_sge: u32) {
    let n = (num_sge as usize).min((slot.len() - 40) / 16);
    let mut sum = 0u32;
    for i in 0..n {
        let off = 40 + 16 * i + 8;
        let l = u32::from_le_bytes(slot[off..off + 4].try_into().unwrap()) % 65536;
        slot[off..off + 4].copy_from_slice(&l.to_le_bytes());
        sum += l;
    }
    slot[16..20].copy_from_slice(&sum.to_le_bytes());
}

/// Steers a random address vector towards the accept path: port 1, an IPv4-mapped
/// destination GID that agrees with the destination address, a 20-bit flow label.
fn steer_av_v4(av: &mut RxeAvFields) {
    av.port_num = 1;
    av.network_type = NETWORK_TYPE_IPV4;
    av.grh.dgid[..12].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]);
    let ip: [u8; 4] = av.grh.dgid[12..].try_into().unwrap();
    av.dgid_addr[4..8].copy_from_slice(&ip);
    av.grh.flow_label &= 0xf_ffff;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// Hostile producer indices against the kernel's SQ state: no panic, and the state never
    /// claims more than the ring holds.
    #[test]
    fn send_queue_state_hostile(
        log2 in 0u32..40,
        mask in prop_oneof![Just(0u32), Just(1), Just(7), Just(1023), any::<u32>()],
        ops in prop::collection::vec((0u8..5, any::<u32>(), any::<bool>()), 0..200),
    ) {
        let Ok(g) = QueueGeometry::from_raw(log2, mask) else {
            return Ok(());
        };
        prop_assert!(g.slots().is_power_of_two());
        prop_assert!(g.buf_len() <= u32::MAX as usize);
        let mut sq = SendQueueState::new(g);
        let mut prod = 0u32;
        for (op, raw, honest) in ops {
            // An honest provider posts within capacity; a hostile one writes anything.
            if honest {
                let free = g.capacity() - g.count(prod, sq.consumer());
                prod = (prod + raw % (free + 1).max(1)) & g.index_mask();
            } else {
                prod = raw;
            }
            match op {
                0 => { let _ = sq.pending(prod); }
                1 => {
                    if let Ok(Some(s)) = sq.next_to_start(prod) {
                        prop_assert!(s.offset + s.len <= g.buf_len());
                    }
                    let _ = sq.mark_started(prod);
                }
                2 => { let _ = sq.complete_oldest(); }
                3 => sq.rewind(),
                _ => { let _ = sq.drain(prod); }
            }
            prop_assert!(sq.consumer() <= g.index_mask());
            prop_assert!(sq.next_index() <= g.index_mask());
            prop_assert!(sq.in_flight() <= g.capacity());
            if let Ok(n) = sq.pending(prod) {
                prop_assert!(n + sq.in_flight() <= g.capacity());
                prop_assert!(honest || prod <= g.index_mask());
            }
            if let Some(s) = sq.oldest_in_flight() {
                prop_assert!(s.offset + s.len <= g.buf_len());
            }
        }
    }

    /// Hostile consumer indices against the kernel's CQ producer.
    #[test]
    fn completion_producer_hostile(
        mask in prop_oneof![Just(0u32), Just(3), Just(511)],
        cons in prop::collection::vec(any::<u32>(), 0..100),
    ) {
        let g = QueueGeometry::from_raw(7, mask).unwrap();
        let mut cq = KernelProducer::new(g);
        for c in cons {
            let c = if c & 1 == 0 { c & mask } else { c };
            match cq.reserve(c) {
                Ok(r) => {
                    prop_assert!(c <= mask);
                    prop_assert!(g.count(cq.producer(), c) < g.capacity());
                    prop_assert!(r.slot().offset + r.slot().len <= g.buf_len());
                    let p = cq.commit(r).unwrap();
                    prop_assert!(p.value <= mask);
                }
                Err(QueueError::Full) => prop_assert!(g.is_full(cq.producer(), c)),
                Err(e) => prop_assert_eq!(e, QueueError::IndexOutOfRange { value: c, mask }),
            }
        }
    }

    #[test]
    fn geometry_never_panics(n in any::<u32>(), elem in any::<usize>(), line in any::<usize>(), page in any::<usize>()) {
        if let Ok(g) = QueueGeometry::new(n, elem, line) {
            prop_assert!(g.capacity() >= n);
            prop_assert!(g.elem_size() >= elem.max(line));
            prop_assert_eq!(g.slot(g.index_mask()).offset + g.elem_size(), g.buf_len());
            if let Some(len) = g.mmap_len(page) {
                prop_assert!(len as usize >= g.buf_len());
            }
        }
        let _ = sq_caps(n, n.rotate_left(7));
        let _ = recv_wqe_size(n);
    }
}

/// The properties above check only what validation accepts: they would pass, vacuously, if
/// their generators never produced an acceptable input. Sample each generator (seeded, so
/// the figures are repeatable) and require that a fair share of its inputs is accepted.
#[test]
fn fuzzers_reach_the_accept_paths() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    const N: usize = 2000;
    let mut runner = TestRunner::deterministic();
    let mut sample = |s: &dyn Fn(&mut TestRunner) -> bool| -> usize {
        (0..N).filter(|_| s(&mut runner)).count()
    };
    let send = sample(&|r| {
        let raw = raw_send().new_tree(r).unwrap().current();
        let p = send_params().new_tree(r).unwrap().current();
        validate_send_wqe(&raw.slot(), &p).is_ok()
    });
    let av = sample(&|r| {
        let bytes = prop::collection::vec(any::<u8>(), 88)
            .new_tree(r)
            .unwrap()
            .current();
        let mut av = RxeAv::new(&bytes).unwrap().fields();
        steer_av_v4(&mut av);
        let gids = (0u32..300).new_tree(r).unwrap().current();
        validate_av(&av, gids).is_ok()
    });
    let geometry = sample(&|r| {
        let log2 = (0u32..40).new_tree(r).unwrap().current();
        let mask = prop_oneof![Just(0u32), Just(1), Just(7), Just(1023), any::<u32>()]
            .new_tree(r)
            .unwrap()
            .current();
        QueueGeometry::from_raw(log2, mask).is_ok()
    });
    let recv = sample(&|r| {
        // As recv_wqe_fuzzed with `fix`: SGE lengths summed into the header.
        let mut slot = prop::collection::vec(any::<u8>(), 40..300)
            .new_tree(r)
            .unwrap()
            .current();
        let num_sge = small_or_any(20).new_tree(r).unwrap().current();
        slot[28..32].copy_from_slice(&num_sge.to_le_bytes());
        sum_sge_lengths(&mut slot, num_sge);
        let p = RecvQueueParams {
            max_sge: 20,
            max_msg_size: MAX_MSG_SIZE,
            length_check: LengthCheck::Strict,
        };
        validate_recv_wqe(&slot, &p).is_ok()
    });
    println!(
        "accepted of {N}: send WQEs {send}, receive WQEs {recv}, AVs {av}, SQ geometries {geometry}"
    );
    assert!(
        recv >= N / 20,
        "only {recv} of {N} generated receive WQEs validate"
    );
    assert!(
        send >= N / 20,
        "only {send} of {N} generated send WQEs validate"
    );
    assert!(av >= N / 20, "only {av} of {N} steered AVs validate");
    assert!(
        geometry >= N / 20,
        "only {geometry} of {N} SQ geometries are valid"
    );
}

/// Send WQEs with every field fuzzed (mostly valid opcodes, lengths and SGE counts): whatever
/// validation accepts satisfies the invariants of `check_send`, and enough are accepted for
/// that to mean something.
#[test]
fn send_wqe_fields_fuzzed() {
    common::run_accepting(
        "send_wqe_fields_fuzzed",
        4096,
        200, // of 4096; about 430 are accepted
        (raw_send(), send_params()),
        |(raw, p)| check_send(&raw.slot(), &p),
    );
}

/// Unstructured bytes as a send WQE: validation never panics. (Random bytes are almost never
/// a valid WQE; what is accepted is checked by `send_wqe_fields_fuzzed`.)
#[test]
fn send_wqe_random_bytes_never_panic() {
    let strategy = (prop::collection::vec(any::<u8>(), 0..700), send_params());
    common::run_accepting(
        "send_wqe_random_bytes_never_panic",
        4096,
        0,
        strategy,
        |(bytes, p)| check_send(&bytes, &p),
    );
}

/// Receive WQEs with a fuzzed SGE count, lengths summed or not: whatever validation accepts
/// lies within the slot and adds up.
#[test]
fn recv_wqe_fuzzed() {
    let strategy = (
        prop::collection::vec(any::<u8>(), 0..300),
        small_or_any(20),
        any::<bool>(),
        small_or_any(20),
        any::<bool>(),
    );
    common::run_accepting(
        "recv_wqe_fuzzed",
        4096,
        250, // about 560 accepted
        strategy,
        |(bytes, num_sge, fix, max_sge, strict)| {
            let mut slot = bytes;
            if slot.len() >= 40 {
                slot[28..32].copy_from_slice(&num_sge.to_le_bytes());
                if fix {
                    sum_sge_lengths(&mut slot, num_sge);
                }
            }
            let p = RecvQueueParams {
                max_sge,
                max_msg_size: MAX_MSG_SIZE,
                length_check: if strict {
                    LengthCheck::Strict
                } else {
                    LengthCheck::SgeSum
                },
            };
            let Ok(v) = validate_recv_wqe(&slot, &p) else {
                return Ok(false);
            };
            let hdr = RxeRecvWqe::new(&slot).unwrap().fields();
            prop_assert!(v.sges().len() as u32 <= max_sge);
            prop_assert_eq!(v.sges().len() as u32, hdr.dma.num_sge);
            let (start, _) = within(&slot, v.sges().as_bytes());
            prop_assert_eq!(start, RECV_WQE_DATA_OFFSET);
            prop_assert_eq!(v.sges().total_len(), Some(v.length()));
            if strict {
                prop_assert_eq!(v.length(), hdr.dma.length);
            }
            Ok(true)
        },
    );
}

/// Address vectors of random bytes, half steered to IPv4-mapped GIDs: whatever validation
/// accepts names port 1, an existing source GID and a 20-bit flow label (about 1170 of
/// 4096 are accepted).
#[test]
fn av_fuzzed() {
    let strategy = (
        prop::collection::vec(any::<u8>(), 88),
        any::<bool>(),
        0u32..300,
    );
    common::run_accepting("av_fuzzed", 4096, 500, strategy, |(bytes, v4, gids)| {
        let mut av = RxeAv::new(&bytes).unwrap().fields();
        if v4 {
            steer_av_v4(&mut av);
        }
        let Ok(ok) = validate_av(&av, gids) else {
            return Ok(false);
        };
        prop_assert_eq!(av.port_num, 1);
        prop_assert!(u32::from(ok.sgid_index()) < gids);
        prop_assert_eq!(ok.sgid_index(), av.grh.sgid_index);
        prop_assert!(ok.flow_label() <= 0xf_ffff);
        prop_assert_eq!(ok.flow_label(), av.grh.flow_label);
        prop_assert_eq!(
            ok.route(),
            (av.grh.hop_limit, av.grh.traffic_class, av.dmac)
        );
        prop_assert_eq!(ok.dgid(), av.grh.dgid);
        prop_assert_eq!(ok.is_ipv4(), gid_is_v4_mapped(&ok.dgid()));
        Ok(true)
    });
}

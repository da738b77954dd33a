// SPDX-License-Identifier: GPL-2.0

//! Kernel consumers' work requests are checked as typed values
//! ([`CheckedSendWqe::from_kernel`], [`CheckedRecvWqe::from_kernel`]), never laid out as a
//! WQE. These tests hold the two checks to one rule: for each work request, the typed check
//! and the validation of the same request written as an rxe WQE accept it with the same
//! result, or both refuse it.

use rrxe_proto::bth::Qpn;
use rrxe_proto::opcode::QpType;
use rrxe_proto::uabi::*;

const SLOT: usize = 256;

fn params(qp: QpType, kernel: bool) -> SendQueueParams {
    SendQueueParams {
        qp_type: qp,
        max_sge: 2,
        max_inline: 32,
        max_msg_size: MAX_MSG_SIZE,
        length_check: LengthCheck::SgeSum,
        allow_embedded_av: false,
        gid_table_len: 16,
        kernel,
    }
}

/// Local data of a test request.
#[derive(Clone)]
enum Data {
    Sges(Vec<(u64, u32, u32)>),
    Inline(Vec<u8>),
}

/// One work request, as both a kernel consumer and the rxe provider would give it.
#[derive(Clone)]
struct Req {
    opcode: WrOpcode,
    flags: u32,
    /// `ex`: immediate data (as the rxe WQE's little-endian field) or an rkey.
    ex: u32,
    remote: (u64, u32),
    atomic: (u64, u64),
    ud: Option<(u32, u32, u32)>,
    reg: (u32, u32),
    data: Data,
}

impl Req {
    fn new(opcode: WrOpcode) -> Self {
        Self {
            opcode,
            flags: 0,
            ex: 0x1234_5678,
            remote: (0x1000, 0x77),
            atomic: (5, 6),
            ud: None,
            reg: (0x0102_03aa, 7),
            data: Data::Sges(vec![(0x9000, 100, 3), (0xa000, 28, 3)]),
        }
    }

    fn data_bytes(&self) -> Vec<u8> {
        match &self.data {
            Data::Sges(sges) => {
                let mut v = Vec::new();
                for &(addr, length, lkey) in sges {
                    let mut b = [0u8; 16];
                    RxeSgeFields { addr, length, lkey }.write(&mut b).unwrap();
                    v.extend_from_slice(&b);
                }
                v
            }
            Data::Inline(b) => b.clone(),
        }
    }

    /// The request as librxe lays it out in a send queue slot.
    fn slot(&self) -> Vec<u8> {
        let mut wr = RxeSendWrFields {
            wr_id: 0x55,
            opcode: self.opcode as u32,
            send_flags: self.flags,
            ex: self.ex,
            ..Default::default()
        };
        match self.opcode {
            WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd => {
                wr.set_atomic(AtomicWrFields {
                    remote_addr: self.remote.0,
                    compare_add: self.atomic.0,
                    swap: self.atomic.1,
                    rkey: self.remote.1,
                    ..Default::default()
                })
            }
            WrOpcode::RegMr => wr.set_reg(RegWrFields {
                key: self.reg.0,
                access: self.reg.1,
                ..Default::default()
            }),
            _ => match self.ud {
                Some((qpn, qkey, ah)) => wr.set_ud(UdWrFields {
                    remote_qpn: qpn,
                    remote_qkey: qkey,
                    ah_num: ah,
                    ..Default::default()
                }),
                None => wr.set_rdma(RdmaWrFields {
                    remote_addr: self.remote.0,
                    rkey: self.remote.1,
                    ..Default::default()
                }),
            },
        }
        let (num_sge, length) = match &self.data {
            Data::Sges(s) => (
                s.len() as u32,
                s.iter().fold(0u32, |a, x| a.wrapping_add(x.1)),
            ),
            Data::Inline(b) => (0, b.len() as u32),
        };
        let mut slot = vec![0u8; SLOT];
        RxeSendWqeFields {
            wr,
            dma: RxeDmaInfoFields {
                length,
                num_sge,
                ..Default::default()
            },
            ..Default::default()
        }
        .write(&mut slot)
        .unwrap();
        let d = self.data_bytes();
        let n = d.len().min(SLOT - SEND_WQE_DATA_OFFSET);
        slot[SEND_WQE_DATA_OFFSET..SEND_WQE_DATA_OFFSET + n].copy_from_slice(&d[..n]);
        slot
    }

    /// The request as the driver reads it from a `struct ib_send_wr`.
    fn kernel(&self) -> Option<(KernelSendWr, KernelData, Vec<u8>)> {
        let imm = u32::from_be_bytes(self.ex.to_le_bytes());
        let remote = Remote {
            addr: self.remote.0,
            rkey: self.remote.1,
        };
        let op = match self.opcode {
            WrOpcode::Send | WrOpcode::SendWithImm | WrOpcode::SendWithInv => SendOp::Send {
                imm: self.opcode.has_imm().then_some(imm),
                invalidate_rkey: self.opcode.has_invalidate().then_some(self.ex),
                ud: self.ud.map(|(qpn, qkey, ah)| UdDest {
                    remote_qpn: Qpn::try_new(qpn).unwrap(),
                    remote_qkey: qkey,
                    pkey_index: 0,
                    address: UdAddress::Ah(ah),
                }),
            },
            WrOpcode::RdmaWrite | WrOpcode::RdmaWriteWithImm => SendOp::Write {
                remote,
                imm: self.opcode.has_imm().then_some(imm),
            },
            WrOpcode::RdmaRead => SendOp::Read { remote },
            WrOpcode::AtomicCmpAndSwp => SendOp::CompareSwap {
                remote,
                compare: self.atomic.0,
                swap: self.atomic.1,
            },
            WrOpcode::AtomicFetchAndAdd => SendOp::FetchAdd {
                remote,
                add: self.atomic.0,
            },
            WrOpcode::LocalInv => SendOp::LocalInv { rkey: self.ex },
            WrOpcode::RegMr => SendOp::RegMr {
                key: self.reg.0,
                access: self.reg.1,
            },
            _ => return None,
        };
        let data = match &self.data {
            Data::Sges(s) => KernelData::Sges(s.len() as u32),
            Data::Inline(b) => KernelData::Inline(b.len() as u32),
        };
        let wr = KernelSendWr {
            wr_id: 0x55,
            opcode: self.opcode,
            flags: SendFlags(self.flags),
            op,
        };
        let mut area = vec![0u8; SLOT - SEND_WQE_DATA_OFFSET];
        let d = self.data_bytes();
        let n = d.len().min(area.len());
        area[..n].copy_from_slice(&d[..n]);
        Some((wr, data, area))
    }
}

/// Checks `r` both ways on a `qp` QP; returns the common result.
fn both(r: &Req, qp: QpType, kernel: bool) -> Result<CheckedSendWqe, WqeError> {
    let p = params(qp, kernel);
    let slot = r.slot();
    let user = validate_send_wqe(&slot, &p).map(|w| w.detach());
    let (wr, data, area) = r.kernel().unwrap();
    let typed = CheckedSendWqe::from_kernel(&wr, data, &area, &p);
    assert_eq!(
        user.is_ok(),
        typed.is_ok(),
        "{:?} on {qp:?}: as a WQE {user:?}, typed {typed:?}",
        r.opcode
    );
    if let (Ok(u), Ok(t)) = (&user, &typed) {
        assert_eq!(u, t, "{:?} on {qp:?}", r.opcode);
        // Attached to the same data, both describe the same request.
        let mut slot2 = vec![0u8; SLOT];
        slot2[SEND_WQE_DATA_OFFSET..].copy_from_slice(&area);
        assert_eq!(u.attach(&slot).unwrap(), t.attach(&slot2).unwrap());
    }
    typed
}

#[test]
fn accepted_requests_agree() {
    let ops = [
        WrOpcode::Send,
        WrOpcode::SendWithImm,
        WrOpcode::SendWithInv,
        WrOpcode::RdmaWrite,
        WrOpcode::RdmaWriteWithImm,
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::AtomicFetchAndAdd,
        WrOpcode::LocalInv,
        WrOpcode::RegMr,
    ];
    let mut accepted = 0;
    for qp in [QpType::Rc, QpType::Uc] {
        for op in ops {
            let mut r = Req::new(op);
            if matches!(op, WrOpcode::AtomicCmpAndSwp | WrOpcode::AtomicFetchAndAdd) {
                r.data = Data::Sges(vec![(0x9000, 8, 3)]);
            }
            if both(&r, qp, true).is_ok() {
                accepted += 1;
            }
        }
    }
    // RC takes all ten, UC WRITE (with immediate), SEND (with immediate) and REG_MR.
    assert_eq!(accepted, 15);
    let w = both(&Req::new(WrOpcode::RdmaWriteWithImm), QpType::Rc, true).unwrap();
    let slot = Req::new(WrOpcode::RdmaWriteWithImm).slot();
    let a = w.attach(&slot).unwrap();
    assert_eq!((a.length(), a.wr_id()), (128, 0x55));
    assert!(matches!(a.data(), SendData::Sges(l) if l.total_len() == Some(128)));
}

#[test]
fn inline_requests_agree() {
    let mut r = Req::new(WrOpcode::Send);
    r.flags = SendFlags::INLINE | SendFlags::SIGNALED;
    r.data = Data::Inline((0..20).collect());
    let w = both(&r, QpType::Rc, true).unwrap();
    let mut slot = vec![0u8; SLOT];
    slot[SEND_WQE_DATA_OFFSET..SEND_WQE_DATA_OFFSET + 20].copy_from_slice(&r.data_bytes());
    let a = w.attach(&slot).unwrap();
    assert_eq!(a.data(), SendData::Inline(&r.data_bytes()));
    assert!(a.signaled(false));
    // Longer than max_inline.
    r.data = Data::Inline(vec![1; 40]);
    assert_eq!(both(&r, QpType::Rc, true), Err(WqeError::InlineTooLong(40)));
    // Inline on an opcode without local send data.
    let mut rd = Req::new(WrOpcode::RdmaRead);
    rd.flags = SendFlags::INLINE;
    rd.data = Data::Inline(vec![1; 8]);
    assert_eq!(both(&rd, QpType::Rc, true), Err(WqeError::InlineNotAllowed));
}

#[test]
fn refused_requests_agree() {
    // More SGEs than max_send_sge.
    let mut r = Req::new(WrOpcode::Send);
    r.data = Data::Sges(vec![(0, 1, 1); 3]);
    assert_eq!(
        both(&r, QpType::Rc, true),
        Err(WqeError::TooManySge {
            num_sge: 3,
            max_sge: 2
        })
    );
    // SGE lengths that overflow 32 bits.
    r.data = Data::Sges(vec![(0, u32::MAX, 1), (0, 2, 1)]);
    assert_eq!(both(&r, QpType::Rc, true), Err(WqeError::LengthOverflow));
    // Atomics: misaligned, or a local buffer under 8 bytes.
    let mut a = Req::new(WrOpcode::AtomicFetchAndAdd);
    a.data = Data::Sges(vec![(0x9000, 8, 3)]);
    a.remote.0 = 0x1004;
    assert_eq!(
        both(&a, QpType::Rc, true),
        Err(WqeError::AtomicMisaligned(0x1004))
    );
    a.remote.0 = 0x1000;
    a.data = Data::Sges(vec![(0x9000, 4, 3)]);
    assert_eq!(both(&a, QpType::Rc, true), Err(WqeError::AtomicLength(4)));
    // Not on this QP type.
    for op in [
        WrOpcode::RdmaRead,
        WrOpcode::AtomicCmpAndSwp,
        WrOpcode::LocalInv,
    ] {
        assert!(both(&Req::new(op), QpType::Uc, true).is_err());
        assert!(both(&Req::new(op), QpType::Ud, true).is_err());
    }
    // REG_MR from a queue that is not a kernel consumer's.
    assert_eq!(
        both(&Req::new(WrOpcode::RegMr), QpType::Rc, false),
        Err(WqeError::BadOpcode(WrOpcode::RegMr as u32))
    );
}

#[test]
fn ud_requests_agree() {
    let mut r = Req::new(WrOpcode::Send);
    r.ud = Some((0x12, 0x1111_1111, 3));
    let w = both(&r, QpType::Ud, true).unwrap();
    let slot = r.slot();
    let SendOp::Send { ud: Some(d), .. } = *w.attach(&slot).unwrap().op() else {
        panic!("not a UD send");
    };
    assert_eq!((d.remote_qpn.get(), d.address), (0x12, UdAddress::Ah(3)));
    // A UD send without an address handle.
    r.ud = None;
    let (wr, data, area) = r.kernel().unwrap();
    assert_eq!(
        CheckedSendWqe::from_kernel(&wr, data, &area, &params(QpType::Ud, true)),
        Err(WqeError::MissingAh)
    );
    // An address handle on a connected QP.
    r.ud = Some((0x12, 1, 3));
    let (wr, data, area) = r.kernel().unwrap();
    assert!(CheckedSendWqe::from_kernel(&wr, data, &area, &params(QpType::Rc, true)).is_err());
}

#[test]
fn operation_must_be_the_opcodes() {
    let r = Req::new(WrOpcode::Send);
    let (mut wr, data, area) = r.kernel().unwrap();
    let p = params(QpType::Rc, true);
    assert!(CheckedSendWqe::from_kernel(&wr, data, &area, &p).is_ok());
    for (opcode, op) in [
        (
            WrOpcode::SendWithImm,
            SendOp::Send {
                imm: None,
                invalidate_rkey: None,
                ud: None,
            },
        ),
        (
            WrOpcode::Send,
            SendOp::Send {
                imm: Some(1),
                invalidate_rkey: None,
                ud: None,
            },
        ),
        (
            WrOpcode::RdmaRead,
            SendOp::Write {
                remote: Remote { addr: 0, rkey: 1 },
                imm: None,
            },
        ),
        (WrOpcode::LocalInv, SendOp::RegMr { key: 1, access: 0 }),
    ] {
        wr.opcode = opcode;
        wr.op = op;
        assert_eq!(
            CheckedSendWqe::from_kernel(&wr, data, &area, &p),
            Err(WqeError::OpcodeNotAllowed(opcode)),
            "{opcode:?}"
        );
    }
}

#[test]
fn receive_requests_agree() {
    let p = RecvQueueParams {
        max_sge: 2,
        max_msg_size: MAX_MSG_SIZE,
        length_check: LengthCheck::SgeSum,
    };
    let cases: [&[(u64, u32, u32)]; 5] = [
        &[],
        &[(0x5000, 4096, 8)],
        &[(0x5000, 4096, 8), (0x7000, 10, 9)],
        &[(0, 1, 1); 3],
        &[(0, u32::MAX, 1), (0, 1, 1)],
    ];
    let mut accepted = 0;
    for sges in cases {
        let mut slot = vec![0u8; 128];
        RxeRecvWqeFields {
            wr_id: 9,
            dma: RxeDmaInfoFields {
                length: sges.iter().fold(0u32, |a, s| a.wrapping_add(s.1)),
                num_sge: sges.len() as u32,
                ..Default::default()
            },
            ..Default::default()
        }
        .write(&mut slot)
        .unwrap();
        for (i, &(addr, length, lkey)) in sges.iter().enumerate() {
            RxeSgeFields { addr, length, lkey }
                .write(&mut slot[RECV_WQE_DATA_OFFSET + 16 * i..])
                .unwrap();
        }
        let user = validate_recv_wqe(&slot, &p).map(|w| w.detach());
        let area = &slot[RECV_WQE_DATA_OFFSET..];
        let typed = CheckedRecvWqe::from_kernel(9, sges.len() as u32, area, &p);
        assert_eq!(user, typed, "{sges:?}");
        if let Ok(t) = typed {
            accepted += 1;
            let w = t.attach(&slot).unwrap();
            assert_eq!((t.wr_id(), w.sges().len()), (9, sges.len()));
            assert_eq!(Some(w.length()), w.sges().total_len());
        }
    }
    assert_eq!(accepted, 3);
}

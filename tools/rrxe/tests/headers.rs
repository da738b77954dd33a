// SPDX-License-Identifier: GPL-2.0

//! Header views and builders against hand-assembled wire bytes.

use rrxe_proto::bth::{Bth, BthFields, Qpn};
use rrxe_proto::ext::{
    Aeth, AtomicAckEth, AtomicEth, AtomicEthFields, Deth, Feth, FethFields, Ieth, ImmDt, Rdeth,
    Reth, RethFields,
};
use rrxe_proto::opcode::Opcode;
use rrxe_proto::psn::{Msn, Psn};
use rrxe_proto::BufferTooSmall;

const BTH: [u8; 12] = [
    0x0a, 0xe0, 0x12, 0x34, 0xc1, 0xab, 0xcd, 0xef, 0x80, 0x65, 0x43, 0x21,
];

#[test]
fn bth_bits() {
    let b = Bth::new(&BTH).unwrap();
    assert_eq!(b.opcode(), Opcode::RC_RDMA_WRITE_ONLY);
    assert!(b.solicited() && b.mig_req());
    assert_eq!(b.pad_count(), 2);
    assert_eq!(b.tver(), 0);
    assert_eq!(b.pkey(), 0x1234);
    assert!(b.fecn() && b.becn());
    assert_eq!(b.resv6a(), 1);
    assert_eq!(b.dest_qp(), Qpn::new(0xabcdef));
    assert!(b.ack_req());
    assert_eq!(b.resv7(), 0);
    assert_eq!(b.psn(), Psn::new(0x654321));
    let mut out = [0u8; 12];
    b.fields().write(&mut out).unwrap();
    assert_eq!(out, BTH);
    assert!(Bth::new(&BTH[..11]).is_none());
    assert_eq!(b.fields().write(&mut out[..11]), Err(BufferTooSmall));
}

#[test]
fn bth_builder_masks_fields() {
    let f = BthFields {
        opcode: Opcode::RC_ACKNOWLEDGE,
        pad_count: 0xff,
        tver: 0xff,
        resv6a: 0xff,
        resv7: 0xff,
        dest_qp: Qpn::new(0xffff_ffff),
        psn: Psn::new(0x0100_0001),
        ..BthFields::default()
    };
    let mut out = [0u8; 12];
    f.write(&mut out).unwrap();
    assert_eq!(
        out,
        [0x11, 0x3f, 0, 0, 0x3f, 0xff, 0xff, 0xff, 0x7f, 0, 0, 1]
    );
}

#[test]
fn extended_headers() {
    let bytes: Vec<u8> = (1..=28).collect();
    let reth = Reth::new(&bytes).unwrap();
    assert_eq!(reth.va(), 0x0102_0304_0506_0708);
    assert_eq!(reth.rkey(), 0x090a_0b0c);
    assert_eq!(reth.dma_len(), 0x0d0e_0f10);
    let a = AtomicEth::new(&bytes).unwrap();
    assert_eq!(a.rkey(), 0x090a_0b0c);
    assert_eq!(a.swap_add(), 0x0d0e_0f10_1112_1314);
    assert_eq!(a.compare(), 0x1516_1718_191a_1b1c);
    assert_eq!(
        AtomicAckEth::new(&bytes).unwrap().orig(),
        0x0102_0304_0506_0708
    );
    let aeth = Aeth::new(&bytes).unwrap();
    assert_eq!((aeth.syndrome(), aeth.msn()), (1, Msn::new(0x020304)));
    let deth = Deth::new(&bytes).unwrap();
    assert_eq!(
        (deth.qkey(), deth.resv(), deth.src_qp()),
        (0x0102_0304, 5, Qpn::new(0x060708))
    );
    assert_eq!(Rdeth::new(&bytes).unwrap().eecn(), Qpn::new(0x020304));
    assert_eq!(ImmDt::new(&bytes).unwrap().imm(), 0x0102_0304);
    assert_eq!(Ieth::new(&bytes).unwrap().rkey(), 0x0102_0304);
    assert!(AtomicEth::new(&bytes[..27]).is_none());
    assert_eq!(
        format!("{reth:?}"),
        "RethFields { va: 72623859790382856, rkey: 151653132, dma_len: 219025168 }"
    );

    // Every view -> fields -> bytes round trip reproduces the bytes.
    let mut out = [0u8; 28];
    a.fields().write(&mut out).unwrap();
    assert_eq!(out[..], bytes[..]);
    let mut out = [0u8; 8];
    deth.fields().write(&mut out).unwrap();
    assert_eq!(out[..], bytes[..8]);
    let f = AtomicEthFields {
        va: 1,
        ..Default::default()
    };
    assert_eq!(f.write(&mut [0; 27]), Err(BufferTooSmall));
    let r = RethFields {
        va: 0x10,
        rkey: 0x20,
        dma_len: 0x30,
    };
    let mut out = [0xffu8; 17];
    r.write(&mut out).unwrap();
    assert_eq!(
        out,
        [0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0x30, 0xff]
    );
}

#[test]
fn feth_bits() {
    let f = FethFields::new(2, 1);
    assert_eq!(f.bits, 0x12);
    let mut out = [0u8; 4];
    f.write(&mut out).unwrap();
    let v = Feth::new(&out).unwrap();
    assert_eq!((v.placement_type(), v.selectivity_level()), (2, 1));
    let v = Feth::new(&[0xff, 0xff, 0xff, 0xff]).unwrap();
    assert_eq!((v.placement_type(), v.selectivity_level()), (0xf, 3));
}

// SPDX-License-Identifier: GPL-2.0

//! PSN arithmetic and AETH syndromes.

use rrxe_proto::aeth::{Credits, NakCode, ReservedSyndrome, RnrTimer, Syndrome};
use rrxe_proto::psn::{Msn, Psn, PsnClass};
use std::cmp::Ordering;

#[test]
fn psn_wraps() {
    let max = Psn::MAX;
    assert_eq!(max.get(), 0xff_ffff);
    assert_eq!(max.next(), Psn::new(0));
    assert_eq!(Psn::new(0x0100_0005), Psn::new(5));
    assert_eq!(Psn::try_new(0x0100_0000), None);
    assert_eq!(Psn::new(0xff_fffe).wrapping_add(5), Psn::new(3));
    assert_eq!(Psn::new(3).wrapping_add(u32::MAX), Psn::new(2));
    assert_eq!(Msn::new(0xff_ffff).next(), Msn::new(0));
}

#[test]
fn psn_diff_and_order() {
    let p = |v| Psn::new(v);
    assert_eq!(p(5).diff(p(3)), 2);
    assert_eq!(p(3).diff(p(5)), -2);
    assert_eq!(p(1).diff(p(0xff_ffff)), 2);
    assert_eq!(p(0xff_ffff).diff(p(1)), -2);
    assert_eq!(p(0x7f_ffff).diff(p(0)), 0x7f_ffff);
    assert_eq!(p(0x80_0000).diff(p(0)), -0x80_0000);
    assert_eq!(p(0).seq_cmp(p(0xff_fff0)), Ordering::Greater);
    assert_eq!(p(0xff_fff0).seq_cmp(p(0)), Ordering::Less);
    assert_eq!(p(7).seq_cmp(p(7)), Ordering::Equal);
}

#[test]
fn psn_classify() {
    let exp = Psn::new(0xff_fffe);
    let at = |d: u32| exp.wrapping_add(d);
    assert_eq!(at(0).classify(exp, 16), PsnClass::Expected);
    assert_eq!(at(1).classify(exp, 16), PsnClass::Ahead);
    assert_eq!(at(15).classify(exp, 16), PsnClass::Ahead);
    assert_eq!(at(16).classify(exp, 16), PsnClass::TooFarAhead);
    assert_eq!(at(0x7f_ffff).classify(exp, 16), PsnClass::TooFarAhead);
    assert_eq!(at(0x80_0000).classify(exp, 16), PsnClass::Duplicate);
    assert_eq!(at(0xff_ffff).classify(exp, 16), PsnClass::Duplicate);
    assert_eq!(at(1).classify(exp, 0), PsnClass::TooFarAhead);
}

#[test]
fn syndrome_encoding() {
    assert_eq!(Syndrome::decode(0x1f), Ok(Syndrome::Ack(Credits::INVALID)));
    assert_eq!(
        Syndrome::decode(0x00),
        Ok(Syndrome::Ack(Credits::new(0).unwrap()))
    );
    assert_eq!(
        Syndrome::decode(0x2e),
        Ok(Syndrome::RnrNak(RnrTimer::new(14).unwrap()))
    );
    let naks = [
        (0x60, NakCode::PsnSequenceError),
        (0x61, NakCode::InvalidRequest),
        (0x62, NakCode::RemoteAccessError),
        (0x63, NakCode::RemoteOperationalError),
        (0x64, NakCode::InvalidRdRequest),
    ];
    for (byte, code) in naks {
        assert_eq!(Syndrome::decode(byte), Ok(Syndrome::Nak(code)));
    }
    let mut valid = 0;
    for byte in 0..=255u8 {
        match Syndrome::decode(byte) {
            Ok(s) => {
                valid += 1;
                assert_eq!(s.encode(), byte);
                assert_eq!(s.is_ack(), byte < 0x20);
            }
            Err(ReservedSyndrome(b)) => {
                assert_eq!(b, byte);
                assert!(byte >= 0x80 || (0x40..0x60).contains(&byte) || byte >= 0x65);
            }
        }
    }
    assert_eq!(valid, 32 + 32 + 5);
}

#[test]
fn credit_and_rnr_tables() {
    let count = |c| Credits::new(c).unwrap().count();
    assert_eq!(count(0), Some(0));
    assert_eq!(count(5), Some(6));
    assert_eq!(count(16), Some(256));
    assert_eq!(count(30), Some(32768));
    assert_eq!(count(31), None);
    assert_eq!(Credits::new(32), None);
    let us = |c| RnrTimer::new(c).unwrap().micros();
    let table = [
        655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840,
        5120, 7680, 10240, 15360, 20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760,
        327680, 491520,
    ];
    for (code, &micros) in table.iter().enumerate() {
        assert_eq!(us(code as u8), micros, "code {code}");
    }
    assert_eq!(RnrTimer::new(32), None);
}

// SPDX-License-Identifier: GPL-2.0

//! Placement into scatter/gather lists: [`SgeList::pieces`] and [`SgeList::walk`], which the
//! engine uses to gather a send payload, scatter a receive payload or READ response, and check
//! the local keys of a posted WQE. The lists come out of the WQE validators, as in the driver.

use proptest::prelude::*;
use rrxe_proto::opcode::QpType;
use rrxe_proto::uabi::*;

/// `(addr, length, lkey)` of one SGE.
type Sge = (u64, u32, u32);

const RECV_PARAMS: RecvQueueParams = RecvQueueParams {
    max_sge: 32,
    max_msg_size: u32::MAX,
    length_check: LengthCheck::SgeSum,
};

/// A receive WQE slot holding `sges` (`dma.length` is ignored under [`LengthCheck::SgeSum`]).
fn recv_slot(sges: &[Sge]) -> Vec<u8> {
    let mut s = vec![0u8; RECV_WQE_DATA_OFFSET + SGE_LEN * sges.len()];
    RxeRecvWqeFields {
        wr_id: 1,
        dma: RxeDmaInfoFields {
            num_sge: sges.len() as u32,
            ..Default::default()
        },
        ..Default::default()
    }
    .write(&mut s)
    .unwrap();
    for (i, &(addr, length, lkey)) in sges.iter().enumerate() {
        RxeSgeFields { addr, length, lkey }
            .write(&mut s[RECV_WQE_DATA_OFFSET + SGE_LEN * i..])
            .unwrap();
    }
    s
}

/// The SGE list of a validated receive WQE in `slot`.
fn list(slot: &[u8]) -> SgeList<'_> {
    let l = validate_recv_wqe(slot, &RECV_PARAMS).unwrap().sges();
    assert_eq!(l.len(), (slot.len() - RECV_WQE_DATA_OFFSET) / SGE_LEN);
    l
}

fn piece(index: usize, addr: u64, lkey: u32, range: std::ops::Range<usize>) -> SgePiece {
    SgePiece {
        addr,
        lkey,
        index,
        range,
    }
}

/// Walks the list, recording the pieces handed to the callback.
fn walk(l: SgeList<'_>, offset: u32, len: usize) -> (Vec<SgePiece>, Result<(), SgeWalkError<()>>) {
    let mut seen = Vec::new();
    let r = l.walk(offset, len, |p| {
        seen.push(p);
        Ok::<(), ()>(())
    });
    (seen, r)
}

/// Independent model: intersects `[offset, offset + len)` with each SGE's span of the list's
/// byte space. Returns the pieces and whether the list reaches `offset + len`.
fn model(sges: &[Sge], offset: u32, len: usize) -> (Vec<SgePiece>, bool) {
    let (off, end) = (u128::from(offset), u128::from(offset) + len as u128);
    let mut out = Vec::new();
    let mut start = 0u128;
    for (index, &(addr, length, lkey)) in sges.iter().enumerate() {
        let stop = start + u128::from(length);
        let (lo, hi) = (off.max(start), end.min(stop));
        if len != 0 && lo < hi {
            out.push(piece(
                index,
                addr.wrapping_add((lo - start) as u64),
                lkey,
                (lo - off) as usize..(hi - off) as usize,
            ));
        }
        start = stop;
    }
    (out, len == 0 || end <= start)
}

#[test]
fn one_sge() {
    let s = recv_slot(&[(0x1000, 100, 7)]);
    let l = list(&s);
    assert_eq!(walk(l, 0, 100), (vec![piece(0, 0x1000, 7, 0..100)], Ok(())));
    assert_eq!(walk(l, 10, 20), (vec![piece(0, 0x100a, 7, 0..20)], Ok(())));
    assert_eq!(walk(l, 99, 1), (vec![piece(0, 0x1063, 7, 0..1)], Ok(())));
    // One byte past the end: the piece the list holds is visited, then the walk fails.
    assert_eq!(
        walk(l, 50, 51),
        (
            vec![piece(0, 0x1032, 7, 0..50)],
            Err(SgeWalkError::TooShort)
        )
    );
    assert_eq!(walk(l, 100, 1), (vec![], Err(SgeWalkError::TooShort)));
}

#[test]
fn pieces_across_sges_in_order() {
    let s = recv_slot(&[(0x1000, 10, 1), (0x2000, 20, 2), (0x3000, 30, 3)]);
    let l = list(&s);
    assert_eq!(
        walk(l, 5, 40),
        (
            vec![
                piece(0, 0x1005, 1, 0..5),
                piece(1, 0x2000, 2, 5..25),
                piece(2, 0x3000, 3, 25..40)
            ],
            Ok(())
        )
    );
    // The whole list, exactly.
    assert_eq!(
        walk(l, 0, 60),
        (
            vec![
                piece(0, 0x1000, 1, 0..10),
                piece(1, 0x2000, 2, 10..30),
                piece(2, 0x3000, 3, 30..60)
            ],
            Ok(())
        )
    );
    // A range ending exactly on an SGE boundary does not touch the next SGE.
    assert_eq!(
        walk(l, 0, 30),
        (
            vec![piece(0, 0x1000, 1, 0..10), piece(1, 0x2000, 2, 10..30)],
            Ok(())
        )
    );
    // An offset beyond several SGEs skips them entirely.
    assert_eq!(walk(l, 31, 29), (vec![piece(2, 0x3001, 3, 0..29)], Ok(())));
    assert_eq!(walk(l, 30, 30), (vec![piece(2, 0x3000, 3, 0..30)], Ok(())));
    assert_eq!(
        walk(l, 31, 30),
        (
            vec![piece(2, 0x3001, 3, 0..29)],
            Err(SgeWalkError::TooShort)
        )
    );
    assert_eq!(walk(l, 60, 1), (vec![], Err(SgeWalkError::TooShort)));
    assert_eq!(walk(l, u32::MAX, 1), (vec![], Err(SgeWalkError::TooShort)));
    assert_eq!(
        walk(l, 0, usize::MAX).1,
        Err(SgeWalkError::TooShort),
        "a huge range neither overflows nor succeeds"
    );
}

#[test]
fn zero_length_sges_yield_no_piece() {
    let s = recv_slot(&[
        (0x1000, 0, 1),
        (0x2000, 4, 2),
        (0x3000, 0, 3),
        (0x4000, 0, 4),
        (0x5000, 4, 5),
        (0x6000, 0, 6),
    ]);
    let l = list(&s);
    assert_eq!(
        walk(l, 0, 8),
        (
            vec![piece(1, 0x2000, 2, 0..4), piece(4, 0x5000, 5, 4..8)],
            Ok(())
        )
    );
    assert_eq!(walk(l, 4, 4), (vec![piece(4, 0x5000, 5, 0..4)], Ok(())));
    assert_eq!(walk(l, 4, 5).1, Err(SgeWalkError::TooShort));
    // Only zero-length SGEs: nothing to place into.
    let s = recv_slot(&[(0x1000, 0, 1), (0x2000, 0, 2)]);
    assert_eq!(walk(list(&s), 0, 1), (vec![], Err(SgeWalkError::TooShort)));
    assert_eq!(walk(list(&s), 0, 0), (vec![], Ok(())));
}

#[test]
fn empty_range_always_succeeds() {
    let empty = recv_slot(&[]);
    let one = recv_slot(&[(0x1000, 16, 1)]);
    for s in [&empty, &one] {
        for offset in [0, 1, 16, 17, u32::MAX] {
            assert_eq!(
                walk(list(s), offset, 0),
                (vec![], Ok(())),
                "offset {offset}"
            );
        }
    }
    assert_eq!(
        walk(list(&empty), 0, 1),
        (vec![], Err(SgeWalkError::TooShort))
    );
}

#[test]
fn addresses_wrap_like_the_engine() {
    // The address is not checked here (the lkey check bounds it); it wraps rather than
    // overflowing.
    let s = recv_slot(&[(u64::MAX - 1, 8, 9)]);
    assert_eq!(walk(list(&s), 4, 4), (vec![piece(0, 2, 9, 0..4)], Ok(())));
}

#[test]
fn callback_error_stops_the_walk() {
    let s = recv_slot(&[(0x1000, 10, 1), (0x2000, 10, 2), (0x3000, 10, 3)]);
    let l = list(&s);
    let mut seen = Vec::new();
    let r = l.walk(0, 30, |p| {
        seen.push(p.lkey);
        if p.lkey == 2 {
            Err("bad lkey")
        } else {
            Ok(())
        }
    });
    assert_eq!(r, Err(SgeWalkError::Callback("bad lkey")));
    assert_eq!(seen, [1, 2]);
    // The callback's error wins over a list that is too short as well.
    let r = l.walk(25, 10, |_| Err(5u8));
    assert_eq!(r, Err(SgeWalkError::Callback(5)));
}

#[test]
fn pieces_iterator_and_completion() {
    let s = recv_slot(&[(0x1000, 10, 1), (0x2000, 10, 2)]);
    let l = list(&s);
    let mut it = l.pieces(5, 10);
    assert!(!it.is_complete());
    assert_eq!(it.next(), Some(piece(0, 0x1005, 1, 0..5)));
    assert!(!it.is_complete());
    assert_eq!(it.next(), Some(piece(1, 0x2000, 2, 5..10)));
    assert!(it.is_complete());
    assert_eq!(it.next(), None);
    assert_eq!(it.next(), None);
    let mut it = l.pieces(5, 20);
    assert_eq!(it.by_ref().count(), 2);
    assert!(!it.is_complete());
    assert_eq!(it.next(), None);
    assert!(l.pieces(100, 0).is_complete());
}

#[test]
fn send_wqe_gather_list() {
    // The gather list of a validated send WQE (SEND, two SGEs) walks the same way.
    let mut s = vec![0u8; 256];
    RxeSendWqeFields {
        wr: RxeSendWrFields {
            wr_id: 3,
            opcode: 2,
            ..Default::default()
        },
        dma: RxeDmaInfoFields {
            length: 48,
            resid: 48,
            num_sge: 2,
            ..Default::default()
        },
        ..Default::default()
    }
    .write(&mut s)
    .unwrap();
    RxeSgeFields {
        addr: 0x1000,
        length: 16,
        lkey: 1,
    }
    .write(&mut s[208..])
    .unwrap();
    RxeSgeFields {
        addr: 0x8000,
        length: 32,
        lkey: 2,
    }
    .write(&mut s[224..])
    .unwrap();
    let p = SendQueueParams {
        qp_type: QpType::Rc,
        max_sge: 2,
        max_inline: 0,
        max_msg_size: MAX_MSG_SIZE,
        length_check: LengthCheck::Strict,
        allow_embedded_av: false,
        gid_table_len: 16,
        kernel: false,
    };
    let w = validate_send_wqe(&s, &p).unwrap();
    let SendData::Sges(l) = w.data() else {
        panic!("expected an SGE list, got {:?}", w.data());
    };
    assert_eq!(
        walk(l, 8, 40),
        (
            vec![piece(0, 0x1008, 1, 0..8), piece(1, 0x8000, 2, 8..40)],
            Ok(())
        )
    );
    assert_eq!(walk(l, 8, 41).1, Err(SgeWalkError::TooShort));
}

/// SGE lengths: mostly small, some zero, some large (a list of at most 16 stays below 2^32,
/// as validation requires).
fn sge_len() -> impl Strategy<Value = u32> {
    prop_oneof![
        2 => Just(0u32),
        6 => 1u32..=64,
        2 => 1u32..=5000,
        1 => 1u32..=(1 << 27),
    ]
}

/// A list of up to 16 SGEs; the lkey of SGE `i` is `i`, to tell the SGEs apart.
fn sge_list() -> impl Strategy<Value = Vec<Sge>> {
    prop::collection::vec((any::<u64>(), sge_len()), 0..=16).prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, (addr, len))| (addr, len, i as u32))
            .collect()
    })
}

/// A list with an offset and a length around its total length (inside, at and past the
/// end), or anywhere.
fn case() -> impl Strategy<Value = (Vec<Sge>, u32, usize)> {
    sge_list().prop_flat_map(|sges| {
        let total: u64 = sges.iter().map(|s| u64::from(s.1)).sum();
        let t = total as u32;
        let offset = prop_oneof![
            3 => 0..=t,
            1 => Just(t),
            1 => t..=t.saturating_add(8),
            1 => any::<u32>(),
        ];
        (Just(sges), offset).prop_flat_map(move |(sges, offset)| {
            let rest = (total - u64::from(offset).min(total)) as usize;
            let len = prop_oneof![
                3 => 0..=rest,
                2 => Just(rest),
                1 => Just(rest + 1),
                1 => rest..=rest + 64,
                1 => Just(0),
                1 => any::<usize>(),
            ];
            (Just(sges), Just(offset), len)
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    /// The pieces tile `[0, len)` of the range in order, each inside its SGE at the right
    /// address, and the walk fails exactly when the list ends before `offset + len`.
    #[test]
    fn pieces_tile_the_range((sges, offset, len) in case()) {
        let slot = recv_slot(&sges);
        let l = list(&slot);
        let parsed: Vec<Sge> = l.iter().map(|s| (s.addr, s.length, s.lkey)).collect();
        prop_assert_eq!(&parsed, &sges);
        let (pieces, r) = walk(l, offset, len);

        // Where each SGE starts in the list's byte space.
        let starts: Vec<u64> = sges
            .iter()
            .scan(0u64, |acc, s| {
                let start = *acc;
                *acc += u64::from(s.1);
                Some(start)
            })
            .collect();
        let total: u64 = sges.iter().map(|s| u64::from(s.1)).sum();

        let mut pos = 0usize;
        let mut last_sge = None;
        for p in &pieces {
            // Contiguous, in order, non-empty.
            prop_assert_eq!(p.range.start, pos);
            prop_assert!(p.range.end > p.range.start);
            prop_assert!(p.range.end <= len);
            pos = p.range.end;
            // One piece per SGE, SGEs in list order.
            let i = p.lkey as usize;
            prop_assert!(last_sge.is_none_or(|j| i > j), "SGE {} after {:?}", i, last_sge);
            last_sge = Some(i);
            let (addr, length, _) = sges[i];
            // The piece lies inside its SGE, at the address of its place there.
            let at = u64::from(offset) + p.range.start as u64;
            prop_assert!(at >= starts[i]);
            let in_sge = at - starts[i];
            prop_assert!(in_sge + p.range.len() as u64 <= u64::from(length));
            prop_assert_eq!(p.addr, addr.wrapping_add(in_sge));
        }
        let fits = len == 0 || u128::from(offset) + len as u128 <= u128::from(total);
        if fits {
            prop_assert_eq!(&r, &Ok(()));
            prop_assert_eq!(pos, len, "pieces cover the whole range");
        } else {
            prop_assert_eq!(&r, &Err(SgeWalkError::TooShort));
            // Everything the list holds past `offset` was visited.
            prop_assert_eq!(pos as u64, total.saturating_sub(u64::from(offset)));
        }

        // The same pieces as the independent model, and as the iterator.
        let (want, ok) = model(&sges, offset, len);
        prop_assert_eq!(&pieces, &want);
        prop_assert_eq!(ok, fits);
        let mut it = l.pieces(offset, len);
        prop_assert_eq!(it.by_ref().collect::<Vec<_>>(), want);
        prop_assert_eq!(it.is_complete(), fits);
    }

    /// A failing callback stops the walk at the piece it failed on.
    #[test]
    fn callback_error_is_returned_at_once((sges, offset, len) in case(), fail_at in 0usize..4) {
        let slot = recv_slot(&sges);
        let l = list(&slot);
        let (all, _) = walk(l, offset, len);
        let mut calls = 0usize;
        let r = l.walk(offset, len, |_| {
            calls += 1;
            if calls > fail_at { Err(calls) } else { Ok(()) }
        });
        if all.len() > fail_at {
            prop_assert_eq!(r, Err(SgeWalkError::Callback(fail_at + 1)));
            prop_assert_eq!(calls, fail_at + 1);
        } else {
            prop_assert_eq!(calls, all.len());
            prop_assert!(!matches!(r, Err(SgeWalkError::Callback(_))));
        }
    }
}

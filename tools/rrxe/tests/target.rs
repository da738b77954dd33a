// SPDX-License-Identifier: GPL-2.0

//! Target selection for every opcode, both sides and both directions.

use rrxe_proto::opcode::{Opcode, OPCODE_TABLE};
use rrxe_proto::target::{select, Access, Addressing, Dir, Side, Target};

/// Expected answers per opcode: requester gather, requester scatter, responder gather,
/// responder scatter. `-` = no such transfer; otherwise `sw`/`wire` and the access right
/// (`lr` local read, `lw` local write, `rr` remote read, `rw` remote write, `ra` remote
/// atomic, `rf` remote flush).
const EXPECTED: &[(&str, [&str; 4])] = &[
    ("SEND_FIRST", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_MIDDLE", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_LAST", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_LAST_WITH_IMMEDIATE", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_ONLY", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_ONLY_WITH_IMMEDIATE", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_LAST_WITH_INVALIDATE", ["sw:lr", "-", "-", "sw:lw"]),
    ("SEND_ONLY_WITH_INVALIDATE", ["sw:lr", "-", "-", "sw:lw"]),
    ("RDMA_WRITE_FIRST", ["sw:lr", "-", "-", "wire:rw"]),
    ("RDMA_WRITE_MIDDLE", ["sw:lr", "-", "-", "wire:rw"]),
    ("RDMA_WRITE_LAST", ["sw:lr", "-", "-", "wire:rw"]),
    (
        "RDMA_WRITE_LAST_WITH_IMMEDIATE",
        ["sw:lr", "-", "-", "wire:rw"],
    ),
    ("RDMA_WRITE_ONLY", ["sw:lr", "-", "-", "wire:rw"]),
    (
        "RDMA_WRITE_ONLY_WITH_IMMEDIATE",
        ["sw:lr", "-", "-", "wire:rw"],
    ),
    ("RDMA_READ_REQUEST", ["-", "-", "wire:rr", "-"]),
    ("RDMA_READ_RESPONSE_FIRST", ["-", "sw:lw", "wire:rr", "-"]),
    ("RDMA_READ_RESPONSE_MIDDLE", ["-", "sw:lw", "wire:rr", "-"]),
    ("RDMA_READ_RESPONSE_LAST", ["-", "sw:lw", "wire:rr", "-"]),
    ("RDMA_READ_RESPONSE_ONLY", ["-", "sw:lw", "wire:rr", "-"]),
    ("ACKNOWLEDGE", ["-", "-", "-", "-"]),
    ("ATOMIC_ACKNOWLEDGE", ["-", "sw:lw", "-", "-"]),
    ("COMPARE_SWAP", ["-", "-", "wire:ra", "wire:ra"]),
    ("FETCH_ADD", ["-", "-", "wire:ra", "wire:ra"]),
    ("FLUSH", ["-", "-", "-", "wire:rf"]),
    ("ATOMIC_WRITE", ["sw:lr", "-", "-", "wire:rw"]),
    ("CNP", ["-", "-", "-", "-"]),
];

fn code(t: Option<Target>) -> String {
    let Some(t) = t else { return "-".into() };
    let a = match t.addressing {
        Addressing::Software => "sw",
        Addressing::Wire => "wire",
    };
    let r = match t.access {
        Access::LocalRead => "lr",
        Access::LocalWrite => "lw",
        Access::RemoteRead => "rr",
        Access::RemoteWrite => "rw",
        Access::RemoteAtomic => "ra",
        Access::RemoteFlush => "rf",
    };
    format!("{a}:{r}")
}

#[test]
fn every_opcode_side_and_direction() {
    for row in OPCODE_TABLE {
        let op = row
            .name
            .split_once('_')
            .map_or(row.name, |(t, rest)| match t {
                "RC" | "UC" | "RD" | "UD" => rest,
                _ => row.name,
            });
        let (_, expected) = EXPECTED
            .iter()
            .find(|(n, _)| *n == op)
            .unwrap_or_else(|| panic!("no expectation for {}", row.name));
        let got = [
            code(select(row, Side::Requester, Dir::Gather)),
            code(select(row, Side::Requester, Dir::Scatter)),
            code(select(row, Side::Responder, Dir::Gather)),
            code(select(row, Side::Responder, Dir::Scatter)),
        ];
        assert_eq!(got, *expected, "{}", row.name);
    }
}

#[test]
fn the_trap_and_friends() {
    let sel = |op: Opcode, side, dir| select(op.info().unwrap(), side, dir);
    // A responder-side gather that is wire-named: RDMA READ.
    let read = sel(Opcode::RC_RDMA_READ_REQUEST, Side::Responder, Dir::Gather).unwrap();
    assert_eq!(read.addressing, Addressing::Wire);
    assert_eq!(read.access, Access::RemoteRead);
    // SEND has no wire-named target anywhere.
    for side in [Side::Requester, Side::Responder] {
        for dir in [Dir::Gather, Dir::Scatter] {
            let t = sel(Opcode::RC_SEND_ONLY, side, dir);
            assert!(t.is_none_or(|t| t.addressing == Addressing::Software));
            assert!(sel(Opcode::RC_ACKNOWLEDGE, side, dir).is_none());
        }
    }
    // WRITE with immediate: wire-named payload plus one receive WQE for the immediate.
    let wi = Opcode::RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
    let t = sel(wi, Side::Responder, Dir::Scatter).unwrap();
    assert_eq!(t.addressing, Addressing::Wire);
    assert!(wi.info().unwrap().consumes_rwqe());
    assert!(!Opcode::RC_RDMA_WRITE_ONLY.info().unwrap().consumes_rwqe());
    // UD SEND lands in a posted receive WQE like RC.
    let ud = sel(Opcode::UD_SEND_ONLY, Side::Responder, Dir::Scatter).unwrap();
    assert_eq!(ud.access, Access::LocalWrite);
}

#[test]
fn region_checks_pd_rights_and_bounds() {
    use rrxe_proto::target::{rights, Access, AccessError, Region};
    let r = Region {
        iova: 0x1000,
        length: 0x100,
        rights: rights::LOCAL_WRITE | rights::REMOTE_WRITE,
        pd: 7,
    };
    assert_eq!(r.check(7, 0x1000, 0x100, Access::RemoteWrite), Ok(0));
    assert_eq!(r.check(7, 0x10ff, 1, Access::LocalRead), Ok(0xff));
    assert_eq!(r.check(7, 0x1100, 0, Access::LocalWrite), Ok(0x100));
    assert_eq!(
        r.check(7, 0x10ff, 2, Access::RemoteWrite),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        r.check(7, 0xfff, 1, Access::LocalRead),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        r.check(7, u64::MAX, 2, Access::LocalRead),
        Err(AccessError::OutOfBounds)
    );
    assert_eq!(
        r.check(8, 0x1000, 1, Access::LocalRead),
        Err(AccessError::WrongPd)
    );
    assert_eq!(
        r.check(7, 0x1000, 1, Access::RemoteRead),
        Err(AccessError::NoRight)
    );
    assert_eq!(
        r.check(7, 0x1000, 8, Access::RemoteAtomic),
        Err(AccessError::NoRight)
    );
}

/// A fast-registration region's bytes: pieces within one page each, the first one starting
/// at the region's offset in its first page, no arithmetic overflow on hostile offsets.
#[test]
fn page_layout_walks_pieces_within_pages() {
    use rrxe_proto::target::PageLayout;
    let l = PageLayout {
        page_size: 4096,
        first: 100,
    };
    let mut got = Vec::new();
    l.walk(0, 5000, (), |page, in_page, r| {
        got.push((page, in_page, r));
        Ok(())
    })
    .unwrap();
    assert_eq!(got, vec![(0, 100, 0..3996), (1, 0, 3996..5000)]);
    got.clear();
    l.walk(3996, 4096 * 2, (), |page, in_page, r| {
        got.push((page, in_page, r));
        Ok(())
    })
    .unwrap();
    assert_eq!(got, vec![(1, 0, 0..4096), (2, 0, 4096..8192)]);
    assert_eq!(
        l.walk(u64::MAX, 1, "overflow", |_, _, _| Ok(())),
        Err("overflow")
    );
    let zero = PageLayout {
        page_size: 0,
        first: 0,
    };
    assert_eq!(
        zero.walk(0, 1, "overflow", |_, _, _| Ok(())),
        Err("overflow")
    );
    assert_eq!(zero.walk(0, 0, "overflow", |_, _, _| Ok(())), Ok(()));
    // The callback's error stops the walk.
    let mut calls = 0;
    assert_eq!(
        l.walk(0, 9000, "stop", |_, _, _| {
            calls += 1;
            Err("stop")
        }),
        Err("stop")
    );
    assert_eq!(calls, 1);
}

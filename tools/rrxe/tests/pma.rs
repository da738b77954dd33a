// SPDX-License-Identifier: GPL-2.0

//! The Performance Management agent: replies checked at the offsets the RDMA core's sysfs
//! reads them from (drivers/infiniband/core/sysfs.c `PORT_PMA_ATTR*`, bit offsets into the
//! attribute, which starts 40 bytes into the MAD's data), not at the module's own
//! constants.

use proptest::prelude::*;
use rrxe_proto::pma::{self, answer, Answer, PortCounters, MAD_SIZE};

/// The attribute's place in the MAD: the 24-byte common header, then 40 reserved bytes.
const ATTR: usize = 24 + 40;

/// A request as the core's `get_perf_mad` builds it (and a transaction ID, as a remote
/// manager's would carry).
fn request(method: u8, attr: u16, port: u8) -> [u8; MAD_SIZE] {
    let mut m = [0u8; MAD_SIZE];
    m[0] = 1; // base version
    m[1] = pma::CLASS_PERF_MGMT;
    m[2] = 1; // class version
    m[3] = method;
    m[8..16].copy_from_slice(&0x0123_4567_89ab_cdefu64.to_be_bytes());
    m[16..18].copy_from_slice(&attr.to_be_bytes());
    m[ATTR + 1] = port; // PortSelect
    m[ATTR + 2..ATTR + 4].copy_from_slice(&0xffffu16.to_be_bytes()); // CounterSelect
    m
}

/// Reads the counter sysfs.c shows from `bit_offset` with `width` bits.
fn field(m: &[u8; MAD_SIZE], bit_offset: usize, width: usize) -> u64 {
    let at = ATTR + bit_offset / 8;
    m[at..at + width / 8]
        .iter()
        .fold(0, |v, &b| v << 8 | u64::from(b))
}

fn status(m: &[u8; MAD_SIZE]) -> u16 {
    u16::from_be_bytes([m[4], m[5]])
}

fn counters() -> PortCounters {
    PortCounters {
        link_downed: 3,
        rcv_errors: 7,
        xmit_bytes: 4000,
        rcv_bytes: 8004,
        xmit_packets: 100,
        rcv_packets: 200,
        mcast_xmit_packets: 10,
        mcast_rcv_packets: 20,
    }
}

fn ask(req: &[u8; MAD_SIZE], c: &PortCounters) -> (Answer, [u8; MAD_SIZE]) {
    let mut out = [0xa5u8; MAD_SIZE];
    let a = answer(req, 1, c, &mut out);
    (a, out)
}

#[test]
fn class_port_info_announces_the_extended_counters() {
    let req = request(pma::METHOD_GET, pma::ATTR_CLASS_PORT_INFO, 0);
    let (a, out) = ask(&req, &counters());
    assert_eq!(a, Answer::Reply);
    assert_eq!(status(&out), 0);
    assert_eq!(out[3], 0x81, "GetResp");
    assert_eq!(out[..3], req[..3], "versions and class echoed");
    assert_eq!(out[8..16], req[8..16], "transaction ID echoed");
    assert_eq!(out[16..18], req[16..18], "attribute echoed");
    // struct ib_class_port_info: base version, class version, capability mask (BE).
    assert_eq!(out[ATTR], 1);
    assert_eq!(out[ATTR + 1], 1);
    let cap = u16::from_be_bytes([out[ATTR + 2], out[ATTR + 3]]);
    assert_ne!(cap & (1 << 9), 0, "IB_PMA_CLASS_CAP_EXT_WIDTH");
}

#[test]
fn port_counters_sit_where_sysfs_reads_them() {
    let req = request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS, 1);
    let (a, out) = ask(&req, &counters());
    assert_eq!(a, Answer::Reply);
    assert_eq!(status(&out), 0);
    assert_eq!(field(&out, 8, 8), 1, "PortSelect echoed");
    assert_eq!(field(&out, 16, 16), 0xffff, "CounterSelect echoed");
    assert_eq!(field(&out, 32, 16), 0, "symbol_error");
    assert_eq!(field(&out, 56, 8), 3, "link_downed");
    assert_eq!(field(&out, 64, 16), 7, "port_rcv_errors");
    assert_eq!(field(&out, 112, 16), 0, "port_xmit_discards");
    assert_eq!(field(&out, 192, 32), 1000, "port_xmit_data (4-octet units)");
    assert_eq!(field(&out, 224, 32), 2001, "port_rcv_data");
    assert_eq!(field(&out, 256, 32), 100, "port_xmit_packets");
    assert_eq!(field(&out, 288, 32), 200, "port_rcv_packets");
    assert_eq!(field(&out, 320, 32), 0, "port_xmit_wait");
    assert!(
        out[ATTR + 44..].iter().all(|&b| b == 0),
        "nothing past the attribute"
    );
}

#[test]
fn narrow_counters_stop_at_all_ones() {
    let c = PortCounters {
        link_downed: 300,
        rcv_errors: 1 << 20,
        xmit_bytes: u64::MAX,
        rcv_bytes: 4 << 32,
        xmit_packets: 1 << 32,
        rcv_packets: u64::from(u32::MAX),
        ..PortCounters::default()
    };
    let (_, out) = ask(&request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS, 1), &c);
    assert_eq!(field(&out, 56, 8), 0xff);
    assert_eq!(field(&out, 64, 16), 0xffff);
    assert_eq!(field(&out, 192, 32), 0xffff_ffff);
    assert_eq!(field(&out, 224, 32), 0xffff_ffff);
    assert_eq!(field(&out, 256, 32), 0xffff_ffff);
    assert_eq!(field(&out, 288, 32), 0xffff_ffff);
    // The extended set holds them whole.
    let (_, ext) = ask(
        &request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS_EXT, 1),
        &c,
    );
    assert_eq!(field(&ext, 64, 64), u64::MAX / 4);
    assert_eq!(field(&ext, 192, 64), 1 << 32);
}

#[test]
fn extended_counters_sit_where_sysfs_reads_them() {
    let req = request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS_EXT, 1);
    let (a, out) = ask(&req, &counters());
    assert_eq!(a, Answer::Reply);
    assert_eq!(status(&out), 0);
    assert_eq!(field(&out, 8, 8), 1, "PortSelect echoed");
    assert_eq!(field(&out, 64, 64), 1000, "port_xmit_data");
    assert_eq!(field(&out, 128, 64), 2001, "port_rcv_data");
    assert_eq!(field(&out, 192, 64), 100, "port_xmit_packets");
    assert_eq!(field(&out, 256, 64), 200, "port_rcv_packets");
    assert_eq!(field(&out, 320, 64), 90, "unicast_xmit_packets");
    assert_eq!(field(&out, 384, 64), 180, "unicast_rcv_packets");
    assert_eq!(field(&out, 448, 64), 10, "multicast_xmit_packets");
    assert_eq!(field(&out, 512, 64), 20, "multicast_rcv_packets");
}

#[test]
fn refused_requests_get_the_spec_status_and_no_data() {
    let c = counters();
    let cases = [
        (
            request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS, 2),
            0x001c,
            "another port",
        ),
        (
            request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS_EXT, 0xff),
            0x001c,
            "all ports",
        ),
        (
            request(pma::METHOD_SET, pma::ATTR_PORT_COUNTERS, 1),
            0x000c,
            "Set (clear)",
        ),
        (
            request(pma::METHOD_GET, 0x0036, 1),
            0x000c,
            "an attribute not kept",
        ),
        (
            {
                let mut r = request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS, 1);
                r[2] = 2;
                r
            },
            0x0004,
            "class version 2",
        ),
    ];
    for (req, want, what) in cases {
        let (a, out) = ask(&req, &c);
        assert_eq!(a, Answer::Reply, "{what}");
        assert_eq!(status(&out), want, "{what}");
        assert_eq!(out[3], 0x81, "{what}");
        assert_eq!(out[8..16], req[8..16], "{what}: transaction ID");
        assert!(out[24..].iter().all(|&b| b == 0), "{what}: no data");
    }
}

#[test]
fn other_classes_methods_and_responses_are_not_the_agents() {
    let c = counters();
    let mut cm = request(pma::METHOD_GET, pma::ATTR_PORT_COUNTERS, 1);
    cm[1] = 0x07; // the CM's class
    let resp = request(pma::METHOD_GET_RESP, pma::ATTR_PORT_COUNTERS, 1);
    let trap = request(0x05, pma::ATTR_PORT_COUNTERS, 1);
    for req in [cm, resp, trap] {
        let mut out = [0xa5u8; MAD_SIZE];
        assert_eq!(answer(&req, 1, &c, &mut out), Answer::NotMine);
        assert!(out.iter().all(|&b| b == 0xa5), "output untouched");
    }
}

proptest! {
    #[test]
    fn any_mad_gets_an_answer_without_panicking(
        req in prop::array::uniform32(any::<u8>()),
        class in any::<bool>(),
        method in 0u8..4,
        attr in prop::sample::select(vec![1u16, 0x12, 0x1d, 0x36]),
        port in any::<u8>(),
    ) {
        let mut m = [0u8; MAD_SIZE];
        for (i, b) in m.iter_mut().enumerate() {
            *b = req[i % 32] ^ (i as u8);
        }
        if class {
            m[1] = pma::CLASS_PERF_MGMT;
            m[3] = method;
            m[16..18].copy_from_slice(&attr.to_be_bytes());
        }
        let mut out = [0u8; MAD_SIZE];
        if answer(&m, port, &counters(), &mut out) == Answer::Reply {
            prop_assert_eq!(out[3], pma::METHOD_GET_RESP);
            prop_assert_eq!(&out[8..16], &m[8..16]);
        }
    }
}

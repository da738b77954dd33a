// SPDX-License-Identifier: GPL-2.0

//! The port's Performance Management Agent (IBA Vol. 1 ch. 16.1): the answers to
//! Performance Management MADs (class 0x04).
//!
//! The RDMA core asks a driver's `process_mad` for these in two ways: locally, to fill the
//! `ports/<n>/counters/` sysfs files (a `Get` of `ClassPortInfo` once, to learn which
//! counter set the port has, then a `Get` of `PortCounters` or `PortCountersExtended` per
//! file read), and for a MAD that arrived on the port's GSI QP (QP1), where the reply goes
//! back to the sender. [`answer`] builds the reply from the port's counters; it is pure, so
//! the host tests check it byte for byte against IBA's layouts.
//!
//! What is answered: `Get` of `ClassPortInfo`, `PortCounters` and `PortCountersExtended`
//! (IBA 16.1.3.1, 16.1.3.5, 16.1.4.11) with the `GetResp` of IBA 13.4.5: the request's
//! header with the response method and a status. A `Get` or `Set` of anything else, a `Set`
//! (the counters are not cleared remotely), a class version other than 1 or a port that is
//! not this one are answered with the status IBA gives (13.4.7, table 110). Other classes,
//! other methods and responses are not the agent's: the core passes them on to the agents
//! registered for them (the CM's, for instance).

/// The size of a MAD (`struct ib_mad`): the common header and the class data.
pub const MAD_SIZE: usize = 256;
/// The Performance Management class.
pub const CLASS_PERF_MGMT: u8 = 0x04;
/// `Get`, `Set` and `GetResp` (IBA 13.4.5, table 107).
pub const METHOD_GET: u8 = 0x01;
/// See [`METHOD_GET`].
pub const METHOD_SET: u8 = 0x02;
/// See [`METHOD_GET`].
pub const METHOD_GET_RESP: u8 = 0x81;
/// `ClassPortInfo` (IBA 13.4.8.1).
pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
/// `PortCounters` (IBA 16.1.3.5).
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
/// `PortCountersExtended` (IBA 16.1.4.11).
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001d;
/// `ClassPortInfo.CapabilityMask`: `PortCountersExtended` is supported with all its
/// counters (unicast and multicast included).
pub const CAP_EXT_WIDTH: u16 = 1 << 9;

/// MAD status codes (IBA 13.4.7, table 110).
pub mod status {
    /// Success.
    pub const OK: u16 = 0;
    /// The class version is not supported.
    pub const BAD_VERSION: u16 = 0x0004;
    /// The method and attribute combination is not supported.
    pub const UNSUPPORTED_METHOD_ATTRIB: u16 = 0x000c;
    /// A field of the attribute (here the port selected) is invalid.
    pub const INVALID_ATTRIB_VALUE: u16 = 0x001c;
}

/// Offsets in the MAD: the common header (IBA 13.4.2) ...
const MGMT_CLASS: usize = 1;
const CLASS_VERSION: usize = 2;
const METHOD: usize = 3;
const STATUS: usize = 4;
const ATTR_ID: usize = 16;
const HEADER_LEN: usize = 24;
/// ... and the attribute, after the 40 reserved bytes of the class header (IBA 16.1.1).
const ATTR: usize = HEADER_LEN + 40;

/// The counters of a port, as the device keeps them (64-bit, never reset); [`answer`] fits
/// them into each attribute's fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    /// Times the link went down.
    pub link_downed: u64,
    /// Packets received with an error (a bad ICRC, a malformed header).
    pub rcv_errors: u64,
    /// Octets sent and received.
    pub xmit_bytes: u64,
    /// See [`PortCounters::xmit_bytes`].
    pub rcv_bytes: u64,
    /// Packets sent and received, multicast ones included.
    pub xmit_packets: u64,
    /// See [`PortCounters::xmit_packets`].
    pub rcv_packets: u64,
    /// Multicast packets sent and received.
    pub mcast_xmit_packets: u64,
    /// See [`PortCounters::mcast_xmit_packets`].
    pub mcast_rcv_packets: u64,
}

/// What [`answer`] made of a MAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The reply is in the output MAD (its status says whether the request was served).
    Reply,
    /// Not the agent's: another class, another method or a response.
    NotMine,
}

/// Reads a big-endian 16-bit field.
fn get16(mad: &[u8; MAD_SIZE], at: usize) -> u16 {
    let hi = mad.get(at).copied().unwrap_or(0);
    let lo = mad.get(at.wrapping_add(1)).copied().unwrap_or(0);
    u16::from_be_bytes([hi, lo])
}

/// Writes `bytes` at `at` (every offset used is a constant inside the MAD).
fn put(mad: &mut [u8; MAD_SIZE], at: usize, bytes: &[u8]) {
    if let Some(dst) = at
        .checked_add(bytes.len())
        .and_then(|end| mad.get_mut(at..end))
    {
        dst.copy_from_slice(bytes);
    }
}

/// `v` in a field of `N` bytes: IBA 16.1.3.5 has the counters stop at all ones rather
/// than wrap.
fn saturate<const N: usize>(v: u64) -> [u8; N] {
    let max = if N >= 8 {
        u64::MAX
    } else {
        (1u64 << N.saturating_mul(8)).saturating_sub(1)
    };
    let b = v.min(max).to_be_bytes();
    let mut out = [0u8; N];
    if let Some(tail) = b.get(8usize.saturating_sub(N)..) {
        if let Some(dst) = out.get_mut(..tail.len()) {
            dst.copy_from_slice(tail);
        }
    }
    out
}

/// Answers the Performance Management MAD `req` for port `port` from its counters `c`,
/// writing the reply (when there is one) to `out`, which is cleared first.
pub fn answer(
    req: &[u8; MAD_SIZE],
    port: u8,
    c: &PortCounters,
    out: &mut [u8; MAD_SIZE],
) -> Answer {
    let class = req.get(MGMT_CLASS).copied().unwrap_or(0);
    let method = req.get(METHOD).copied().unwrap_or(0);
    if class != CLASS_PERF_MGMT || !matches!(method, METHOD_GET | METHOD_SET) {
        return Answer::NotMine;
    }
    *out = [0; MAD_SIZE];
    // The reply is the request's header (version, class, transaction ID, attribute) with
    // the response method and the status.
    if let (Some(dst), Some(src)) = (out.get_mut(..HEADER_LEN), req.get(..HEADER_LEN)) {
        dst.copy_from_slice(src);
    }
    put(out, METHOD, &[METHOD_GET_RESP]);
    let attr = get16(req, ATTR_ID);
    let st = if req.get(CLASS_VERSION).copied() != Some(1) {
        status::BAD_VERSION
    } else if method == METHOD_SET {
        status::UNSUPPORTED_METHOD_ATTRIB
    } else {
        fill(req, attr, port, c, out)
    };
    if st != status::OK {
        // An error reply carries no attribute data.
        if let Some(data) = out.get_mut(HEADER_LEN..) {
            data.fill(0);
        }
    }
    put(out, STATUS, &st.to_be_bytes());
    Answer::Reply
}

/// Writes the attribute `attr` of a `Get` to `out`; returns the status.
fn fill(
    req: &[u8; MAD_SIZE],
    attr: u16,
    port: u8,
    c: &PortCounters,
    out: &mut [u8; MAD_SIZE],
) -> u16 {
    // PortSelect and CounterSelect are echoed (IBA 16.1.3.5); the port must be this one.
    let select = |out: &mut [u8; MAD_SIZE]| {
        let sel = req.get(ATTR.wrapping_add(1)).copied().unwrap_or(0);
        put(out, ATTR.wrapping_add(1), &[sel]);
        put(
            out,
            ATTR.wrapping_add(2),
            &get16(req, ATTR.wrapping_add(2)).to_be_bytes(),
        );
        sel == port
    };
    match attr {
        ATTR_CLASS_PORT_INFO => {
            // BaseVersion, ClassVersion, CapabilityMask (IBA 13.4.8.1).
            put(out, ATTR, &[1, 1]);
            put(out, ATTR.wrapping_add(2), &CAP_EXT_WIDTH.to_be_bytes());
            status::OK
        }
        ATTR_PORT_COUNTERS => {
            if !select(out) {
                return status::INVALID_ATTRIB_VALUE;
            }
            put(out, ATTR.wrapping_add(7), &saturate::<1>(c.link_downed));
            put(out, ATTR.wrapping_add(8), &saturate::<2>(c.rcv_errors));
            // Data in units of 4 octets (IBA 16.1.3.5).
            put(out, ATTR.wrapping_add(24), &saturate::<4>(c.xmit_bytes / 4));
            put(out, ATTR.wrapping_add(28), &saturate::<4>(c.rcv_bytes / 4));
            put(out, ATTR.wrapping_add(32), &saturate::<4>(c.xmit_packets));
            put(out, ATTR.wrapping_add(36), &saturate::<4>(c.rcv_packets));
            status::OK
        }
        ATTR_PORT_COUNTERS_EXT => {
            if !select(out) {
                return status::INVALID_ATTRIB_VALUE;
            }
            let fields = [
                c.xmit_bytes / 4,
                c.rcv_bytes / 4,
                c.xmit_packets,
                c.rcv_packets,
                c.xmit_packets.saturating_sub(c.mcast_xmit_packets),
                c.rcv_packets.saturating_sub(c.mcast_rcv_packets),
                c.mcast_xmit_packets,
                c.mcast_rcv_packets,
            ];
            let mut at = ATTR.wrapping_add(8);
            for v in fields {
                put(out, at, &v.to_be_bytes());
                at = at.wrapping_add(8);
            }
            status::OK
        }
        _ => status::UNSUPPORTED_METHOD_ATTRIB,
    }
}

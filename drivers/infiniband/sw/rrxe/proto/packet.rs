// SPDX-License-Identifier: GPL-2.0

//! Whole-packet parser and builder, from the BTH (the UDP payload) to the ICRC.
//!
//! [`parse`] checks everything that can be checked from the packet alone; checks that need
//! connection state (PSN, path MTU, whether a middle packet is a full MTU) are the caller's.
//! [`build`] is its inverse: `build(&parse(p)?.spec())` reproduces `p` up to the ICRC, which
//! is computed separately with [`super::icrc`] because it also covers the IP and UDP headers.

use core::fmt;

use super::bth::{Bth, BthFields, TVER};
use super::ext::{
    Aeth, AethFields, AtomicAckEth, AtomicAckEthFields, AtomicEth, AtomicEthFields, Deth,
    DethFields, ExtHdr, Feth, FethFields, Ieth, IethFields, ImmDt, ImmDtFields, Rdeth, RdethFields,
    Reth, RethFields,
};
use super::icrc::ICRC_LEN;
#[cfg(rrxe_host)]
use super::opcode::QpType;
use super::opcode::{info, OpInfo, Opcode, Payload};
use super::BufferTooSmall;

/// Why a packet was rejected by [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than its BTH, extended headers and ICRC.
    Truncated,
    /// The BTH transport version is not 0.
    BadTransportVersion(u8),
    /// Opcode undefined or reserved by the IBA.
    UnknownOpcode(Opcode),
    /// Opcode defined but not supported (RD).
    Unsupported(Opcode),
    /// Opcode not valid for the receiving QP's type.
    #[cfg(rrxe_host)]
    WrongQpType(Opcode, QpType),
    /// Pad count larger than the payload, or non-zero where no payload is allowed.
    BadPadCount,
    /// Payload plus pad is not a multiple of 4 bytes.
    Unaligned,
    /// Payload present on an opcode that carries none (ACK, READ request, atomics, FLUSH).
    UnexpectedPayload,
    /// Payload of the wrong length for an opcode with a fixed payload (ATOMIC WRITE).
    BadPayloadLength,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Truncated => f.write_str("truncated"),
            Self::BadTransportVersion(v) => write!(f, "bad transport version {v}"),
            Self::UnknownOpcode(op) => write!(f, "unknown opcode {:#04x}", op.0),
            Self::Unsupported(op) => write!(f, "unsupported opcode {op:?}"),
            #[cfg(rrxe_host)]
            Self::WrongQpType(op, qp) => write!(f, "opcode {op:?} not valid on {qp:?} QP"),
            Self::BadPadCount => f.write_str("bad pad count"),
            Self::Unaligned => f.write_str("payload not 4-byte aligned"),
            Self::UnexpectedPayload => f.write_str("unexpected payload"),
            Self::BadPayloadLength => f.write_str("bad payload length"),
        }
    }
}

/// A parsed packet: views into the original bytes.
///
/// Exactly the extended headers listed in `info.headers` are `Some`.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// The opcode's table row.
    pub info: &'static OpInfo,
    /// Base transport header.
    pub bth: Bth<'a>,
    /// RD extended transport header.
    pub rdeth: Option<Rdeth<'a>>,
    /// Datagram extended transport header.
    pub deth: Option<Deth<'a>>,
    /// FLUSH extended transport header.
    pub feth: Option<Feth<'a>>,
    /// RDMA extended transport header.
    pub reth: Option<Reth<'a>>,
    /// Atomic extended transport header.
    pub atomic_eth: Option<AtomicEth<'a>>,
    /// Immediate data.
    pub immdt: Option<ImmDt<'a>>,
    /// Invalidate extended transport header.
    pub ieth: Option<Ieth<'a>>,
    /// ACK extended transport header.
    pub aeth: Option<Aeth<'a>>,
    /// Atomic ACK extended transport header.
    pub atomic_ack_eth: Option<AtomicAckEth<'a>>,
    /// Payload, without pad.
    pub payload: &'a [u8],
    /// Pad bytes (as many as the BTH pad count).
    pub pad: &'a [u8],
    /// The packet from the BTH up to the ICRC: what the ICRC covers after the IP/UDP part.
    #[cfg(rrxe_host)]
    pub body: &'a [u8],
    /// The ICRC trailer as on the wire (little-endian).
    #[cfg(rrxe_host)]
    pub icrc: &'a [u8; ICRC_LEN],
    /// A CNP's 16 reserved bytes as received (ignored; empty for other opcodes).
    #[cfg(rrxe_host)]
    pub cnp_reserved: &'a [u8],
}

/// Checks the payload and pad lengths against the opcode's payload rule.
fn check_payload(info: &OpInfo, payload: usize, pad: usize) -> Result<(), ParseError> {
    match info.payload() {
        Payload::None if payload != 0 => Err(ParseError::UnexpectedPayload),
        Payload::None if pad != 0 => Err(ParseError::BadPadCount),
        Payload::Exactly(n) if payload != n => Err(ParseError::BadPayloadLength),
        _ => Ok(()),
    }
}

/// Parses a RoCEv2 packet starting at its BTH (the UDP payload, ICRC included).
///
/// The ICRC itself is not checked here; see [`super::icrc::verify`].
pub fn parse(bytes: &[u8]) -> Result<Packet<'_>, ParseError> {
    let bth = Bth::new(bytes).ok_or(ParseError::Truncated)?;
    if bth.tver() != TVER {
        return Err(ParseError::BadTransportVersion(bth.tver()));
    }
    let op = bth.opcode();
    let info = info(op).ok_or(ParseError::UnknownOpcode(op))?;
    if !info.supported() {
        return Err(ParseError::Unsupported(op));
    }
    // The module checks the ICRC on the datagram (`icrc::verify`), not on the packet.
    #[cfg_attr(not(rrxe_host), allow(unused_variables))]
    let (body, icrc) = bytes
        .split_last_chunk::<ICRC_LEN>()
        .ok_or(ParseError::Truncated)?;
    let mut rest = body.get(Bth::LEN..).ok_or(ParseError::Truncated)?;
    let mut pkt = Packet {
        info,
        bth,
        rdeth: None,
        deth: None,
        feth: None,
        reth: None,
        atomic_eth: None,
        immdt: None,
        ieth: None,
        aeth: None,
        atomic_ack_eth: None,
        payload: &[],
        pad: &[],
        #[cfg(rrxe_host)]
        body,
        #[cfg(rrxe_host)]
        icrc,
        #[cfg(rrxe_host)]
        cnp_reserved: &[],
    };
    for &hdr in info.headers {
        let (h, tail) = rest
            .split_at_checked(hdr.size())
            .ok_or(ParseError::Truncated)?;
        match hdr {
            ExtHdr::Rdeth => pkt.rdeth = Rdeth::new(h),
            ExtHdr::Deth => pkt.deth = Deth::new(h),
            ExtHdr::Feth => pkt.feth = Feth::new(h),
            ExtHdr::Reth => pkt.reth = Reth::new(h),
            ExtHdr::AtomicEth => pkt.atomic_eth = AtomicEth::new(h),
            ExtHdr::ImmDt => pkt.immdt = ImmDt::new(h),
            ExtHdr::Ieth => pkt.ieth = Ieth::new(h),
            ExtHdr::Aeth => pkt.aeth = Aeth::new(h),
            ExtHdr::AtomicAckEth => pkt.atomic_ack_eth = AtomicAckEth::new(h),
            #[cfg(rrxe_host)]
            ExtHdr::CnpReserved => pkt.cnp_reserved = h,
            #[cfg(not(rrxe_host))]
            ExtHdr::CnpReserved => {}
        }
        rest = tail;
    }
    if rest.len() % 4 != 0 {
        return Err(ParseError::Unaligned);
    }
    let pad = usize::from(bth.pad_count());
    let payload_len = rest.len().checked_sub(pad).ok_or(ParseError::BadPadCount)?;
    check_payload(info, payload_len, pad)?;
    (pkt.payload, pkt.pad) = rest
        .split_at_checked(payload_len)
        .ok_or(ParseError::BadPadCount)?;
    Ok(pkt)
}

/// Parses like [`parse`] and also checks that the opcode is valid on a QP of type `qp`.
#[cfg(rrxe_host)]
pub fn parse_for(bytes: &[u8], qp: QpType) -> Result<Packet<'_>, ParseError> {
    let pkt = parse(bytes)?;
    if pkt.info.allowed_on(qp) {
        Ok(pkt)
    } else {
        Err(ParseError::WrongQpType(pkt.info.opcode, qp))
    }
}

impl<'a> Packet<'a> {
    /// Returns the opcode.
    pub fn opcode(&self) -> Opcode {
        self.info.opcode
    }

    /// Returns the ICRC found in the packet.
    #[cfg(rrxe_host)]
    pub fn icrc_value(&self) -> u32 {
        u32::from_le_bytes(*self.icrc)
    }

    /// Returns the packet's fields by value, ready for [`build`].
    #[cfg(rrxe_host)]
    pub fn spec(&self) -> PacketSpec<'a> {
        PacketSpec {
            bth: self.bth.fields(),
            rdeth: self.rdeth.map(|h| h.fields()),
            deth: self.deth.map(|h| h.fields()),
            feth: self.feth.map(|h| h.fields()),
            reth: self.reth.map(|h| h.fields()),
            atomic_eth: self.atomic_eth.map(|h| h.fields()),
            immdt: self.immdt.map(|h| h.fields()),
            ieth: self.ieth.map(|h| h.fields()),
            aeth: self.aeth.map(|h| h.fields()),
            atomic_ack_eth: self.atomic_ack_eth.map(|h| h.fields()),
            cnp_reserved: self
                .cnp_reserved
                .first_chunk::<16>()
                .copied()
                .unwrap_or_default(),
            payload: self.payload,
            pad: self.pad,
        }
    }
}

/// Everything needed to build a packet; [`build`] uses the headers its opcode requires.
#[derive(Clone, Copy, Debug, Default)]
pub struct PacketSpec<'a> {
    /// Base transport header; the pad count is recomputed from the payload length.
    pub bth: BthFields,
    /// RD extended transport header.
    pub rdeth: Option<RdethFields>,
    /// Datagram extended transport header.
    pub deth: Option<DethFields>,
    /// FLUSH extended transport header.
    pub feth: Option<FethFields>,
    /// RDMA extended transport header.
    pub reth: Option<RethFields>,
    /// Atomic extended transport header.
    pub atomic_eth: Option<AtomicEthFields>,
    /// Immediate data.
    pub immdt: Option<ImmDtFields>,
    /// Invalidate extended transport header.
    pub ieth: Option<IethFields>,
    /// ACK extended transport header.
    pub aeth: Option<AethFields>,
    /// Atomic ACK extended transport header.
    pub atomic_ack_eth: Option<AtomicAckEthFields>,
    /// Payload, without pad.
    // Read by `build()` only: the module's data path writes the payload in place.
    #[cfg_attr(
        not(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)),
        allow(dead_code)
    )]
    pub payload: &'a [u8],
    /// A CNP's reserved bytes (zero when rrxe sends one; kept to rebuild a received one).
    #[cfg(rrxe_host)]
    pub cnp_reserved: [u8; 16],
    /// Pad bytes to use; missing ones are zero, extra ones ignored.
    #[cfg_attr(
        not(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)),
        allow(dead_code)
    )]
    pub pad: &'a [u8],
}

/// Why [`build`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The BTH opcode has no table row.
    UnknownOpcode(Opcode),
    /// A header the opcode requires is `None` in the spec.
    MissingHeader(ExtHdr),
    /// The payload length is not allowed for the opcode.
    BadPayload(ParseError),
    /// The output buffer is too small.
    BufferTooSmall,
}

impl From<BufferTooSmall> for BuildError {
    fn from(_: BufferTooSmall) -> Self {
        Self::BufferTooSmall
    }
}

/// Writes `data` at the start of `out` and returns the rest of `out`.
fn put<'o>(out: &'o mut [u8], data: &[u8]) -> Result<&'o mut [u8], BufferTooSmall> {
    let (head, tail) = out.split_at_mut_checked(data.len()).ok_or(BufferTooSmall)?;
    head.copy_from_slice(data);
    Ok(tail)
}

/// Builds a packet into `out`, with a zero ICRC placeholder, and returns its length.
///
/// The BTH pad count is set from the payload length. Compute the ICRC afterwards with
/// [`super::icrc::generate`].
#[cfg(any(rrxe_host, CONFIG_RDMA_RRXE_RUST_KUNIT_TEST))]
pub fn build(spec: &PacketSpec<'_>, out: &mut [u8]) -> Result<usize, BuildError> {
    let layout = build_headers(spec, spec.payload.len(), out)?;
    let payload = out
        .get_mut(layout.payload.clone())
        .ok_or(BuildError::BufferTooSmall)?;
    payload.copy_from_slice(spec.payload);
    let pad_end = layout.len.saturating_sub(ICRC_LEN);
    let pad = out
        .get_mut(layout.payload.end..pad_end)
        .ok_or(BuildError::BufferTooSmall)?;
    for (dst, src) in pad.iter_mut().zip(spec.pad) {
        *dst = *src;
    }
    Ok(layout.len)
}

/// Where [`build_headers`] left room for the payload, and the packet's length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The payload's byte range in the output.
    pub payload: core::ops::Range<usize>,
    /// Length of the packet, BTH to ICRC.
    pub len: usize,
}

/// Returns the length of a packet with opcode `op` and `payload_len` bytes of payload, from
/// the BTH to the end of the ICRC, or `None` for an unknown opcode.
pub fn packet_len(op: super::opcode::Opcode, payload_len: usize) -> Option<usize> {
    let info = info(op)?;
    let pad = payload_len.wrapping_neg() % 4;
    Bth::LEN
        .checked_add(info.headers.iter().map(|h| h.size()).sum::<usize>())?
        .checked_add(payload_len)?
        .checked_add(pad)?
        .checked_add(ICRC_LEN)
}

/// Builds the headers of a packet with `payload_len` bytes of payload into `out`, zero pad
/// bytes and a zero ICRC placeholder, and leaves the payload bytes for the caller to fill in
/// (so that a payload gathered from memory is copied only once). `spec.payload` is ignored.
pub fn build_headers(
    spec: &PacketSpec<'_>,
    payload_len: usize,
    out: &mut [u8],
) -> Result<Layout, BuildError> {
    let op = spec.bth.opcode;
    let info = info(op).ok_or(BuildError::UnknownOpcode(op))?;
    let pad_len = payload_len.wrapping_neg() % 4;
    check_payload(info, payload_len, pad_len).map_err(BuildError::BadPayload)?;
    let bth = BthFields {
        // `pad_len` is below 4.
        pad_count: u8::try_from(pad_len).unwrap_or(0),
        ..spec.bth
    };
    let total = out.len();
    bth.write(out)?;
    let mut rest = out.get_mut(Bth::LEN..).ok_or(BuildError::BufferTooSmall)?;
    for &hdr in info.headers {
        let written = match hdr {
            ExtHdr::Rdeth => spec.rdeth.map(|h| h.write(rest)),
            ExtHdr::Deth => spec.deth.map(|h| h.write(rest)),
            ExtHdr::Feth => spec.feth.map(|h| h.write(rest)),
            ExtHdr::Reth => spec.reth.map(|h| h.write(rest)),
            ExtHdr::AtomicEth => spec.atomic_eth.map(|h| h.write(rest)),
            ExtHdr::ImmDt => spec.immdt.map(|h| h.write(rest)),
            ExtHdr::Ieth => spec.ieth.map(|h| h.write(rest)),
            ExtHdr::Aeth => spec.aeth.map(|h| h.write(rest)),
            ExtHdr::AtomicAckEth => spec.atomic_ack_eth.map(|h| h.write(rest)),
            #[cfg(rrxe_host)]
            ExtHdr::CnpReserved => Some(put(rest, &spec.cnp_reserved).map(|_| ())),
            #[cfg(not(rrxe_host))]
            ExtHdr::CnpReserved => Some(put(rest, &[0; 16]).map(|_| ())),
        };
        written.ok_or(BuildError::MissingHeader(hdr))??;
        rest = rest
            .get_mut(hdr.size()..)
            .ok_or(BuildError::BufferTooSmall)?;
    }
    let start = total
        .checked_sub(rest.len())
        .ok_or(BuildError::BufferTooSmall)?;
    rest = rest
        .get_mut(payload_len..)
        .ok_or(BuildError::BufferTooSmall)?;
    rest = put(rest, [0u8; 3].get(..pad_len).unwrap_or_default())?;
    rest = put(rest, &[0; ICRC_LEN])?;
    let left = rest.len();
    Ok(Layout {
        payload: start..start.saturating_add(payload_len),
        len: total.checked_sub(left).ok_or(BuildError::BufferTooSmall)?,
    })
}

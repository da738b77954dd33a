// SPDX-License-Identifier: GPL-2.0

//! Host-side capture handling: pcap/pcapng reading, frame dissection and packet rebuilding.

use std::vec::Vec;

use crate::crc32::crc32_le;
use crate::icrc::{self, IcrcError, IpHdr, UDP_LEN};
use crate::packet::{self, BuildError, Packet, ParseError};

/// The IANA UDP destination port of RoCEv2.
pub const ROCE_PORT: u16 = 4791;

/// pcap/pcapng link type of Ethernet.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// One captured frame.
#[derive(Clone, Copy, Debug)]
pub struct Frame<'a> {
    /// Link type of the interface it was captured on.
    pub linktype: u32,
    /// Captured bytes (possibly truncated by the snap length).
    pub data: &'a [u8],
}

/// Errors reading a capture file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureError {
    /// Neither a pcap nor a pcapng file.
    BadMagic,
    /// The file ends inside a header or record.
    Truncated,
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::BadMagic => "not a pcap or pcapng file",
            Self::Truncated => "truncated capture file",
        })
    }
}

impl std::error::Error for CaptureError {}

/// A cursor over a byte slice with a fixed byte order.
struct Reader<'a> {
    data: &'a [u8],
    big_endian: bool,
}

impl<'a> Reader<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8], CaptureError> {
        let (head, tail) = self
            .data
            .split_at_checked(n)
            .ok_or(CaptureError::Truncated)?;
        self.data = tail;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, CaptureError> {
        let b: [u8; 4] = self
            .bytes(4)?
            .try_into()
            .map_err(|_| CaptureError::Truncated)?;
        Ok(if self.big_endian {
            u32::from_be_bytes(b)
        } else {
            u32::from_le_bytes(b)
        })
    }

    fn usize(&mut self) -> Result<usize, CaptureError> {
        usize::try_from(self.u32()?).map_err(|_| CaptureError::Truncated)
    }
}

/// Reads all frames of a classic pcap or a pcapng file.
pub fn read_frames(file: &[u8]) -> Result<Vec<Frame<'_>>, CaptureError> {
    let magic = file.first_chunk::<4>().ok_or(CaptureError::BadMagic)?;
    match magic {
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => read_pcap(file, true),
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => read_pcap(file, false),
        [0x0a, 0x0d, 0x0d, 0x0a] => read_pcapng(file),
        _ => Err(CaptureError::BadMagic),
    }
}

fn read_pcap(file: &[u8], big_endian: bool) -> Result<Vec<Frame<'_>>, CaptureError> {
    let mut r = Reader {
        data: file,
        big_endian,
    };
    r.bytes(20)?; // magic, version, thiszone, sigfigs, snaplen
    let linktype = r.u32()? & 0x0fff_ffff; // the top bits may carry FCS information
    let mut frames = Vec::new();
    while !r.data.is_empty() {
        r.bytes(8)?; // timestamp
        let caplen = r.usize()?;
        r.bytes(4)?; // original length
        frames.push(Frame {
            linktype,
            data: r.bytes(caplen)?,
        });
    }
    Ok(frames)
}

fn read_pcapng(file: &[u8]) -> Result<Vec<Frame<'_>>, CaptureError> {
    let mut frames = Vec::new();
    let mut linktypes = Vec::new();
    let mut r = Reader {
        data: file,
        big_endian: false,
    };
    while !r.data.is_empty() {
        let block_type = r.bytes(4)?;
        if block_type == [0x0a, 0x0d, 0x0d, 0x0a] {
            // Section header: the byte-order magic follows the length.
            let bom = r.data.get(4..8).ok_or(CaptureError::Truncated)?;
            r.big_endian = bom == [0x1a, 0x2b, 0x3c, 0x4d];
            linktypes.clear();
        }
        let block_type = if r.big_endian {
            u32::from_be_bytes(block_type.try_into().map_err(|_| CaptureError::Truncated)?)
        } else {
            u32::from_le_bytes(block_type.try_into().map_err(|_| CaptureError::Truncated)?)
        };
        let total = r.usize()?;
        let body_len = total.checked_sub(12).ok_or(CaptureError::Truncated)?;
        let mut body = Reader {
            data: r.bytes(body_len)?,
            big_endian: r.big_endian,
        };
        r.bytes(4)?; // trailing total length
        match block_type {
            // Interface description: link type (16 bits) and reserved (16 bits).
            1 => {
                let word = body.u32()?;
                let linktype = if r.big_endian {
                    word >> 16
                } else {
                    word & 0xffff
                };
                linktypes.push(linktype);
            }
            // Enhanced packet: interface, timestamp (2 words), captured and original length.
            6 => {
                let interface = body.usize()?;
                body.bytes(8)?;
                let caplen = body.usize()?;
                body.bytes(4)?;
                frames.push(Frame {
                    linktype: linktypes.get(interface).copied().unwrap_or(0),
                    data: body.bytes(caplen)?,
                });
            }
            // Simple packet: original length, then data up to the block's end.
            3 => {
                let orig = body.usize()?;
                let data = body.data;
                frames.push(Frame {
                    linktype: linktypes.first().copied().unwrap_or(0),
                    data: data.get(..orig).unwrap_or(data),
                });
            }
            _ => {}
        }
    }
    Ok(frames)
}

/// The RoCEv2 part of an Ethernet frame.
#[derive(Clone, Copy, Debug)]
pub struct RoceFrame<'a> {
    /// IP header (IPv4 with options, or the 40-byte IPv6 header).
    pub ip: IpHdr<'a>,
    /// UDP header (8 bytes).
    pub udp: &'a [u8],
    /// UDP payload: BTH to ICRC, trimmed to the UDP length (no Ethernet padding).
    pub payload: &'a [u8],
}

impl RoceFrame<'_> {
    /// Returns the UDP source port.
    pub fn src_port(&self) -> u16 {
        self.udp
            .first_chunk::<2>()
            .map_or(0, |b| u16::from_be_bytes(*b))
    }

    /// Parses the RoCEv2 packet.
    pub fn parse(&self) -> Result<Packet<'_>, ParseError> {
        packet::parse(self.payload)
    }

    /// Verifies the ICRC with the pure-Rust CRC-32.
    pub fn verify_icrc(&self) -> Result<(), IcrcError> {
        icrc::verify(&crc32_le, self.ip, self.udp, self.payload)
    }
}

fn be16(data: &[u8], off: usize) -> Option<u16> {
    data.get(off..)?
        .first_chunk::<2>()
        .map(|b| u16::from_be_bytes(*b))
}

/// Extracts the RoCEv2 part of an Ethernet frame (optionally VLAN-tagged, IPv4 or IPv6,
/// UDP destination port 4791), or `None` for anything else.
pub fn dissect(frame: &[u8]) -> Option<RoceFrame<'_>> {
    let mut off = 12;
    let mut ethertype = be16(frame, off)?;
    while ethertype == 0x8100 || ethertype == 0x88a8 {
        off += 4;
        ethertype = be16(frame, off)?;
    }
    let l3 = frame.get(off + 2..)?;
    let (ip, rest) = match ethertype {
        0x0800 => {
            let ihl = usize::from(l3.first()? & 0xf) * 4;
            let total = usize::from(be16(l3, 2)?);
            let fragment = be16(l3, 6)? & 0x3fff; // MF flag and offset
            if l3.first()? >> 4 != 4 || *l3.get(9)? != 17 || ihl < 20 || fragment != 0 {
                return None;
            }
            (IpHdr::V4(l3.get(..ihl)?), l3.get(ihl..total.max(ihl))?)
        }
        0x86dd => {
            let payload_len = usize::from(be16(l3, 4)?);
            if l3.first()? >> 4 != 6 || *l3.get(6)? != 17 {
                return None;
            }
            (IpHdr::V6(l3.get(..40)?), l3.get(40..40 + payload_len)?)
        }
        _ => return None,
    };
    let udp_len = usize::from(be16(rest, 4)?);
    if be16(rest, 2)? != ROCE_PORT || udp_len < UDP_LEN {
        return None;
    }
    Some(RoceFrame {
        ip,
        udp: rest.get(..UDP_LEN)?,
        payload: rest.get(UDP_LEN..udp_len)?,
    })
}

/// Why [`rebuild`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RebuildError {
    /// The builder rejected the parsed fields.
    Build(BuildError),
    /// The ICRC could not be computed.
    Icrc(IcrcError),
}

/// Rebuilds a parsed packet: headers re-serialised from their fields, the original payload
/// and pad, and a freshly computed ICRC. For a well-formed packet this equals the original.
pub fn rebuild(frame: &RoceFrame<'_>, pkt: &Packet<'_>) -> Result<Vec<u8>, RebuildError> {
    let mut out = std::vec![0u8; frame.payload.len()];
    let len = packet::build(&pkt.spec(), &mut out).map_err(RebuildError::Build)?;
    out.truncate(len);
    icrc::generate(&crc32_le, frame.ip, frame.udp, &mut out).map_err(RebuildError::Icrc)?;
    Ok(out)
}

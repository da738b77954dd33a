// SPDX-License-Identifier: GPL-2.0

//! Base Transport Header (BTH), the 12-byte header that starts every RoCEv2 packet.
//!
//! Layout (IBA Vol. 1 9.2, all big-endian):
//!
//! | byte | bits |
//! |------|------|
//! | 0    | OpCode |
//! | 1    | SE (7), MigReq (6), PadCnt (5-4), TVer (3-0) |
//! | 2-3  | P_Key |
//! | 4    | FECN (7), BECN (6), reserved (5-0), called `resv8a` in rxe |
//! | 5-7  | DestQP |
//! | 8    | AckReq (7), reserved (6-0) |
//! | 9-11 | PSN |

use super::opcode::Opcode;
use super::psn::Psn;
use super::wire::Field;
use super::BufferTooSmall;

u24_type! {
    /// A 24-bit queue pair number.
    Qpn
}

/// Length of the BTH in bytes.
pub const BTH_LEN: usize = 12;

/// The only transport header version defined by the IBA.
pub const TVER: u8 = 0;

/// Zero-copy view of a BTH.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Bth<'a>(&'a [u8; BTH_LEN]);

impl<'a> Bth<'a> {
    /// Length of the header on the wire in bytes.
    pub const LEN: usize = BTH_LEN;

    /// Views the first [`Self::LEN`] bytes of `bytes`, or `None` if it is shorter.
    pub fn new(bytes: &'a [u8]) -> Option<Self> {
        bytes.first_chunk().map(Self)
    }

    fn bit(&self, off: usize, bit: u32) -> bool {
        (u8::read(self.0, off) >> bit) & 1 != 0
    }

    /// Returns the opcode.
    pub fn opcode(&self) -> Opcode {
        Opcode(u8::read(self.0, 0))
    }

    /// Returns the Solicited Event bit.
    pub fn solicited(&self) -> bool {
        self.bit(1, 7)
    }

    /// Returns the MigReq bit.
    pub fn mig_req(&self) -> bool {
        self.bit(1, 6)
    }

    /// Returns the pad count: bytes (0-3) appended to the payload to align it to 4 bytes.
    pub fn pad_count(&self) -> u8 {
        (u8::read(self.0, 1) >> 4) & 0x3
    }

    /// Returns the transport header version, which must be [`TVER`].
    pub fn tver(&self) -> u8 {
        u8::read(self.0, 1) & 0xf
    }

    /// Returns the partition key.
    pub fn pkey(&self) -> u16 {
        u16::read(self.0, 2)
    }

    /// Returns the FECN bit.
    pub fn fecn(&self) -> bool {
        self.bit(4, 7)
    }

    /// Returns the BECN bit.
    pub fn becn(&self) -> bool {
        self.bit(4, 6)
    }

    /// Returns the six reserved bits of byte 4.
    pub fn resv6a(&self) -> u8 {
        u8::read(self.0, 4) & 0x3f
    }

    /// Returns the destination queue pair number.
    pub fn dest_qp(&self) -> Qpn {
        Qpn::read(self.0, 5)
    }

    /// Returns the AckReq bit.
    pub fn ack_req(&self) -> bool {
        self.bit(8, 7)
    }

    /// Returns the seven reserved bits of byte 8.
    pub fn resv7(&self) -> u8 {
        u8::read(self.0, 8) & 0x7f
    }

    /// Returns the packet sequence number.
    pub fn psn(&self) -> Psn {
        Psn::read(self.0, 9)
    }

    /// Copies all fields into a builder.
    pub fn fields(&self) -> BthFields {
        BthFields {
            opcode: self.opcode(),
            solicited: self.solicited(),
            mig_req: self.mig_req(),
            pad_count: self.pad_count(),
            tver: self.tver(),
            pkey: self.pkey(),
            fecn: self.fecn(),
            becn: self.becn(),
            resv6a: self.resv6a(),
            dest_qp: self.dest_qp(),
            ack_req: self.ack_req(),
            resv7: self.resv7(),
            psn: self.psn(),
        }
    }
}

impl core::fmt::Debug for Bth<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.fields().fmt(f)
    }
}

/// Builder for [`Bth`]: the header's fields by value.
///
/// Multi-bit fields wider than their wire width are truncated by [`BthFields::write`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BthFields {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited Event.
    pub solicited: bool,
    /// MigReq.
    pub mig_req: bool,
    /// Pad count (2 bits).
    pub pad_count: u8,
    /// Transport header version (4 bits), normally [`TVER`].
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// Forward explicit congestion notification.
    pub fecn: bool,
    /// Backward explicit congestion notification.
    pub becn: bool,
    /// Reserved bits of byte 4 (6 bits), normally zero.
    pub resv6a: u8,
    /// Destination queue pair.
    pub dest_qp: Qpn,
    /// AckReq.
    pub ack_req: bool,
    /// Reserved bits of byte 8 (7 bits), normally zero.
    pub resv7: u8,
    /// Packet sequence number.
    pub psn: Psn,
}

impl BthFields {
    /// Serialises the header into the first [`BTH_LEN`] bytes of `out`.
    pub fn write(&self, out: &mut [u8]) -> Result<(), BufferTooSmall> {
        let out: &mut [u8; BTH_LEN] = out.first_chunk_mut().ok_or(BufferTooSmall)?;
        let flag = |set: bool, bit: u32| u8::from(set) << bit;
        self.opcode.0.write(out, 0);
        (flag(self.solicited, 7)
            | flag(self.mig_req, 6)
            | (self.pad_count & 0x3) << 4
            | (self.tver & 0xf))
            .write(out, 1);
        self.pkey.write(out, 2);
        // Byte 4 is written first; the QPN write then fills bytes 5-7.
        (flag(self.fecn, 7) | flag(self.becn, 6) | (self.resv6a & 0x3f)).write(out, 4);
        self.dest_qp.write(out, 5);
        (flag(self.ack_req, 7) | (self.resv7 & 0x7f)).write(out, 8);
        self.psn.write(out, 9);
        Ok(())
    }
}

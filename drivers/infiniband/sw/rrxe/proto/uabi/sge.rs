// SPDX-License-Identifier: GPL-2.0

//! SGE lists of validated WQEs: [`SgeList`], the split of a byte range of a list into per-SGE
//! pieces ([`SgeList::pieces`], [`SgeList::walk`]), and the parsing and length checks the WQE
//! validators share.

use core::ops::Range;

use super::layout::{RxeSge, RxeSgeFields, SGE_LEN};
use super::wqe::{LengthCheck, WqeError};

/// A list of SGEs inside a validated WQE.
///
/// # Invariants
///
/// `bytes.len()` is a multiple of [`SGE_LEN`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SgeList<'a> {
    bytes: &'a [u8],
}

impl<'a> SgeList<'a> {
    /// Returns the list over `bytes`, the bytes of a list [`sge_list`] accepted before.
    pub(super) fn from_checked(bytes: &'a [u8]) -> Self {
        Self { bytes }
    }

    /// Returns the size of the list in bytes.
    pub(super) fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// Returns the number of SGEs.
    #[cfg(rrxe_host)]
    pub fn len(&self) -> usize {
        self.bytes.len() / SGE_LEN
    }

    /// Returns `true` if there is no SGE.
    #[cfg(rrxe_host)]
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Returns the raw bytes of the list.
    #[cfg(rrxe_host)]
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// Returns SGE `i`, if present.
    #[cfg(rrxe_host)]
    pub fn get(&self, i: usize) -> Option<RxeSgeFields> {
        let off = i.checked_mul(SGE_LEN)?;
        RxeSge::new(self.bytes.get(off..)?).map(|s| s.fields())
    }

    /// Iterates over the SGEs.
    pub fn iter(&self) -> impl Iterator<Item = RxeSgeFields> + 'a {
        self.bytes
            .chunks_exact(SGE_LEN)
            .filter_map(|c| RxeSge::new(c).map(|s| s.fields()))
    }

    /// Returns the sum of the SGE lengths, or `None` if it overflows 32 bits.
    pub fn total_len(&self) -> Option<u32> {
        self.iter()
            .try_fold(0u32, |acc, s| acc.checked_add(s.length))
    }

    /// Returns the pieces of the byte range `[offset, offset + len)` of the list, one for each
    /// SGE the range touches, in order.
    ///
    /// The pieces stop early if the list is shorter than `offset + len`; see
    /// [`SgePieces::is_complete`]. Zero-length SGEs yield no piece, and an empty range none
    /// at all (whatever `offset` is).
    pub fn pieces(&self, offset: u32, len: usize) -> SgePieces<'a> {
        SgePieces {
            sges: self.bytes.chunks_exact(SGE_LEN),
            index: 0,
            offset,
            pos: 0,
            len,
        }
    }

    /// Calls `f` for each piece of the byte range `[offset, offset + len)` of the list, in
    /// order (see [`Self::pieces`]).
    ///
    /// Fails with [`SgeWalkError::Callback`] as soon as `f` fails, and with
    /// [`SgeWalkError::TooShort`] if the list is shorter than `offset + len` (once `f` has
    /// been called for the pieces the list does hold). An empty range always succeeds.
    pub fn walk<E>(
        &self,
        offset: u32,
        len: usize,
        mut f: impl FnMut(SgePiece) -> Result<(), E>,
    ) -> Result<(), SgeWalkError<E>> {
        let mut pieces = self.pieces(offset, len);
        for p in pieces.by_ref() {
            f(p).map_err(SgeWalkError::Callback)?;
        }
        if pieces.is_complete() {
            Ok(())
        } else {
            Err(SgeWalkError::TooShort)
        }
    }
}

/// The part of a byte range of an [`SgeList`] that lies in one SGE (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SgePiece {
    /// Address of the piece's first byte: the SGE's address plus the piece's offset inside
    /// the SGE (wrapping, unchecked: the lkey check bounds it).
    pub addr: u64,
    /// The SGE's local key.
    pub lkey: u32,
    /// The SGE's place in the list (0 for the first).
    pub index: usize,
    /// Where the piece lies in a buffer holding the range: a part of `0..len`.
    pub range: Range<usize>,
}

/// Why [`SgeList::walk`] failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SgeWalkError<E> {
    /// The list ends before the end of the range.
    TooShort,
    /// The callback failed with this error.
    Callback(E),
}

/// The pieces of a byte range of an [`SgeList`], in order: see [`SgeList::pieces`].
///
/// # Invariants
///
/// `pos <= len`: the pieces returned so far cover `0..pos` of the range.
#[derive(Clone, Debug)]
pub struct SgePieces<'a> {
    /// The SGEs not looked at yet.
    sges: core::slice::ChunksExact<'a, u8>,
    /// The place in the list of the next SGE `sges` yields.
    index: usize,
    /// Bytes still to skip before the range starts.
    offset: u32,
    /// Bytes of the range covered so far.
    pos: usize,
    /// Length of the range.
    len: usize,
}

impl SgePieces<'_> {
    /// Returns `true` if the pieces returned so far cover the whole range (always, for an
    /// empty range). Once the iterator returned `None`, `false` means the list is shorter than
    /// `offset + len`.
    pub fn is_complete(&self) -> bool {
        self.pos >= self.len
    }
}

impl Iterator for SgePieces<'_> {
    type Item = SgePiece;

    fn next(&mut self) -> Option<SgePiece> {
        while self.pos < self.len {
            let chunk = self.sges.next()?;
            let index = self.index;
            self.index = index.wrapping_add(1);
            let Some(sge) = RxeSge::new(chunk).map(|s| s.fields()) else {
                continue;
            };
            if self.offset >= sge.length {
                // No underflow: `offset >= length`.
                self.offset = self.offset.wrapping_sub(sge.length);
                continue;
            }
            // What the SGE holds after `offset` (not empty); a length that does not fit in
            // `usize` is more than the rest of the range anyway.
            let avail = usize::try_from(sge.length.wrapping_sub(self.offset)).unwrap_or(usize::MAX);
            // No overflow: `pos < len`, and `n <= len - pos`.
            let n = avail.min(self.len.wrapping_sub(self.pos));
            let start = self.pos;
            self.pos = start.wrapping_add(n);
            let addr = sge.addr.wrapping_add(u64::from(self.offset));
            self.offset = 0;
            return Some(SgePiece {
                addr,
                lkey: sge.lkey,
                index,
                range: start..self.pos,
            });
        }
        None
    }
}

impl core::iter::FusedIterator for SgePieces<'_> {}

/// Parses `num_sge` SGEs at the start of `data`, checking the limits.
pub(super) fn sge_list(data: &[u8], num_sge: u32, max_sge: u32) -> Result<SgeList<'_>, WqeError> {
    if num_sge > max_sge {
        return Err(WqeError::TooManySge { num_sge, max_sge });
    }
    let len = usize::try_from(num_sge)
        .ok()
        .and_then(|n| n.checked_mul(SGE_LEN))
        .ok_or(WqeError::SgeOutsideSlot)?;
    let bytes = data.get(..len).ok_or(WqeError::SgeOutsideSlot)?;
    Ok(SgeList { bytes })
}

/// Checks an SGE list against `dma.length`; returns the message length.
pub(super) fn sge_length(
    sges: &SgeList<'_>,
    claimed: u32,
    check: LengthCheck,
    max_msg_size: u32,
) -> Result<u32, WqeError> {
    let sum = sges.total_len().ok_or(WqeError::LengthOverflow)?;
    if check == LengthCheck::Strict && claimed != sum {
        return Err(WqeError::LengthMismatch { claimed, sum });
    }
    if sum > max_msg_size {
        return Err(WqeError::MessageTooLong(sum));
    }
    Ok(sum)
}

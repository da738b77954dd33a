// SPDX-License-Identifier: GPL-2.0

//! Udata helpers: parsing of the driver part of verbs requests that carry input (modify-SRQ).

use super::layout::ModifySrqCmd;

/// Error from [`parse_modify_srq_cmd`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UdataError {
    /// The input is shorter than the structure (`-EINVAL`).
    TooShort,
    /// Bytes beyond the structure are not zero (`-EOPNOTSUPP`, as `ib_copy_validate_udata_in`).
    NonZeroTrailer,
}

/// Parses the driver part of a modify-SRQ request and returns `mmap_info_addr`.
///
/// Mirrors `ib_copy_validate_udata_in(udata, cmd, mmap_info_addr)`: the input must hold the
/// whole structure and any bytes after it must be zero.
pub fn parse_modify_srq_cmd(inbuf: &[u8]) -> Result<u64, UdataError> {
    let cmd = ModifySrqCmd::new(inbuf).ok_or(UdataError::TooShort)?;
    let trailer = inbuf.get(ModifySrqCmd::LEN..).unwrap_or(&[]);
    if trailer.iter().any(|&b| b != 0) {
        return Err(UdataError::NonZeroTrailer);
    }
    Ok(cmd.mmap_info_addr())
}

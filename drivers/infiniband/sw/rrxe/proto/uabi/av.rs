// SPDX-License-Identifier: GPL-2.0

//! Embedded UD address vectors of legacy providers: validation of a `struct rxe_av`
//! ([`validate_av`]) into a [`ValidAv`], or the reason it was rejected ([`AvError`]).

use super::layout::{RxeAvFields, NETWORK_TYPE_IPV4, NETWORK_TYPE_IPV6};

/// Why an embedded address vector was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AvError {
    /// `port_num` is not 1 (rxe has one port).
    BadPort(u8),
    /// `network_type` is neither IPv4 nor IPv6. Upstream then sizes the skb headroom for IPv6
    /// and finds no route; it reads the AV in place, so the type can also change between
    /// sizing and building the packet.
    BadNetworkType(u8),
    /// `network_type` disagrees with the destination GID (IPv4-mapped or not).
    GidTypeMismatch,
    /// The destination IP in `dgid_addr` differs from the destination GID.
    AddrMismatch,
    /// `sgid_index` is outside the GID table.
    BadSgidIndex(u8),
    /// The flow label is wider than 20 bits.
    BadFlowLabel(u32),
}

/// A validated UD address vector from a legacy WQE: what a datagram's headers need of it,
/// not its 88 bytes (the socket addresses repeat the GIDs, checked equal; the port is 1).
/// A validated send WQE carries it, in every copy a QP keeps of one, so it stays small.
///
/// # Invariants
///
/// `ipv4` is the type of `dgid` (IPv4-mapped or not) and the AV's `network_type`, its
/// `dgid_addr` IP equals the GID's, `flow_label` fits in 20 bits and `sgid_index` is inside
/// the GID table it was checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidAv {
    dgid: [u8; 16],
    flow_label: u32,
    dmac: [u8; 6],
    sgid_index: u8,
    hop_limit: u8,
    traffic_class: u8,
    ipv4: bool,
}

#[cfg(rrxe_host)]
impl ValidAv {
    /// Returns `true` for an IPv4 (RoCEv2 over IPv4) destination.
    pub fn is_ipv4(&self) -> bool {
        self.ipv4
    }

    /// Returns the destination GID.
    pub fn dgid(&self) -> [u8; 16] {
        self.dgid
    }

    /// Returns the source GID table index.
    pub fn sgid_index(&self) -> u8 {
        self.sgid_index
    }

    /// Returns the IPv6 flow label (20 bits).
    pub fn flow_label(&self) -> u32 {
        self.flow_label
    }

    /// Returns the hop limit, the traffic class and the destination MAC address.
    pub fn route(&self) -> (u8, u8, [u8; 6]) {
        (self.hop_limit, self.traffic_class, self.dmac)
    }
}

/// Returns `true` if `gid` is an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`).
pub fn gid_is_v4_mapped(gid: &[u8; 16]) -> bool {
    matches!(gid, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ..])
}

/// Validates an embedded `struct rxe_av` (see [`AvError`]).
///
/// The provider sets `network_type` from the destination GID and fills `dgid_addr` from it
/// (a `sockaddr_in` whose `sin_family` it leaves 0, or a `sockaddr_in6`), so the address bytes
/// are compared, not the family.
pub fn validate_av(av: &RxeAvFields, gid_table_len: u32) -> Result<ValidAv, AvError> {
    if av.port_num != 1 {
        return Err(AvError::BadPort(av.port_num));
    }
    let v4 = match av.network_type {
        NETWORK_TYPE_IPV4 => true,
        NETWORK_TYPE_IPV6 => false,
        t => return Err(AvError::BadNetworkType(t)),
    };
    let dgid = &av.grh.dgid;
    if gid_is_v4_mapped(dgid) != v4 {
        return Err(AvError::GidTypeMismatch);
    }
    let ok = if v4 {
        // sockaddr_in: sin_addr at offset 4; GID low 4 bytes.
        av.dgid_addr.get(4..8) == dgid.get(12..16)
    } else {
        // sockaddr_in6: sin6_addr at offset 8.
        av.dgid_addr.get(8..24) == Some(dgid.as_slice())
    };
    if !ok {
        return Err(AvError::AddrMismatch);
    }
    if u32::from(av.grh.sgid_index) >= gid_table_len {
        return Err(AvError::BadSgidIndex(av.grh.sgid_index));
    }
    if av.grh.flow_label > 0xf_ffff {
        return Err(AvError::BadFlowLabel(av.grh.flow_label));
    }
    Ok(ValidAv {
        dgid: *dgid,
        flow_label: av.grh.flow_label,
        dmac: av.dmac,
        sgid_index: av.grh.sgid_index,
        hop_limit: av.grh.hop_limit,
        traffic_class: av.grh.traffic_class,
        ipv4: v4,
    })
}

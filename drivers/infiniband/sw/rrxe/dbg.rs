// SPDX-License-Identifier: GPL-2.0

//! The driver's debug messages: why a QP entered the error state, why a key was refused,
//! why a work request or a datagram was dropped, on dynamic debug ([`kernel::rdma_dbg!`]),
//! off until enabled, e.g. for the whole module:
//!
//! ```text
//! echo 'module rdma_rrxe +p' > /proc/dynamic_debug/control
//! ```
//!
//! Every message starts with the netdevice's name, and the QP number where there is one,
//! so that `dmesg` says which QP of which device and why.

/// A debug message about a QP (a [`crate::engine::QpShared`]):
/// `rdma_rrxe: <netdev>: qp <qpn>: <message>`.
macro_rules! qp_dbg {
    ($qp:expr, $fmt:literal $(, $arg:expr)* $(,)?) => {
        kernel::rdma_dbg!(
            concat!("{}: qp {:#x}: ", $fmt),
            $qp.dev.netdev().name().to_str().unwrap_or("?"),
            $qp.qpn
            $(, $arg)*
        )
    };
}

/// A debug message about a device (a [`crate::shared::DevShared`]):
/// `rdma_rrxe: <netdev>: <message>`.
macro_rules! dev_dbg {
    ($dev:expr, $fmt:literal $(, $arg:expr)* $(,)?) => {
        kernel::rdma_dbg!(
            concat!("{}: ", $fmt),
            $dev.netdev().name().to_str().unwrap_or("?")
            $(, $arg)*
        )
    };
}

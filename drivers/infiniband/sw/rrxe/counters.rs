// SPDX-License-Identifier: GPL-2.0

//! The port counters (`rdma statistic show link rrxe0/1`, the port's `hw_counters` in
//! sysfs, the PMA's port counters) and the per-QP counters bound through the core's counter
//! API (`rdma statistic qp`): one [`Stats`] type for both. Below everything that counts: it
//! imports nothing of the driver but the wire core's PMA layout.

use crate::proto::pma;
use kernel::rdma::device::StatDesc;
use kernel::sync::atomic::{ordering::Relaxed, Atomic};

/// The port counters (`rdma statistic show`), in the order of [`HW_STATS`]: first those of
/// `rdma_rxe`, with its names and meanings (in its order), then rrxe's own: what became of
/// received packets, and of transmissions, completions and work requests.
#[derive(Copy, Clone)]
#[repr(usize)]
pub(crate) enum PortCounter {
    /// Packets sent (requests and acknowledgments), first transmissions.
    SentPkts,
    /// Well-formed packets with a valid ICRC.
    Pkts,
    /// Requests with a PSN before the expected one (RC responder): answered again, never
    /// executed twice.
    DuplicateRequests,
    /// PSN sequence error NAKs sent (RC responder: a request after a gap, once per gap).
    OutOfSeqRequests,
    /// RNR NAKs received (requester).
    RcvdRnrNaks,
    /// RNR NAKs sent: a SEND arrived with no receive WQE posted.
    SentRnrNaks,
    /// PSN sequence error NAKs received (requester).
    RcvdSeqNaks,
    /// Send WQEs completed with `IB_WC_RETRY_EXC_ERR`.
    RetryExceeded,
    /// Send WQEs completed with `IB_WC_RNR_RETRY_EXC_ERR`.
    RnrRetryExceeded,
    /// Times the requester went back to its oldest unacknowledged packet (the local ACK
    /// timeout expired, or a PSN sequence error NAK came).
    CompleterRetries,
    /// Packets that could not be sent (no route, no memory, queue full): the peer sees
    /// loss.
    SendErrors,
    /// Times the port went down (its netdevice down or without carrier).
    LinkDowned,
    /// SEND work requests completed successfully.
    RdmaSends,
    /// Receive work requests completed successfully.
    RdmaRecvs,
    /// Bytes of the packets sent (IP packets).
    SentBytes,
    /// Bytes of the well-formed packets received, as IP datagrams (IP and UDP headers
    /// included, like `SentBytes` and like rdma_rxe: a packet counts the same at both ends).
    RcvdBytes,
    /// Packets whose ICRC did not match (dropped).
    IcrcErr,
    /// Packets the parser rejected: truncated, bad version, pad or length, unknown opcode.
    Malformed,
    /// Valid packets for a QP number that does not exist.
    UnknownQp,
    /// Valid packets an existing QP did not take: not from its peer, wrong state or
    /// partition, or an opcode it does not carry out.
    Dropped,
    /// Request packets sent again (go-back-N after a timeout or a NAK).
    Retransmits,
    /// Completions written to CQs.
    Completions,
    /// Completions lost because their CQ was full.
    CqOverflows,
    /// Work requests userspace posted that failed validation (completed in error).
    BadWqes,
    /// Times a QP found the transmit queue full and paused its responses (instead of
    /// dropping them).
    TxPaused,
    /// Responses (ACKs, atomic ACKs, READs) not queued because the responder's queue was
    /// full: a requester with more READs and atomics outstanding than it negotiated. Its
    /// retry asks again.
    RepliesDropped,
    /// Local operations (fast registration, local invalidation) that failed: the WQE
    /// completed with `IB_WC_LOC_QP_OP_ERR`; and request payloads that could not be read
    /// from local memory whose keys were checked: the WQE completes with
    /// `IB_WC_LOC_PROT_ERR`.
    LocalOpErrors,
    /// SENDs with invalidate received whose rkey could not be invalidated (NAK invalid
    /// request).
    BadInvalidates,
    /// Datagrams sent to a multicast group (also counted in `SentPkts`).
    SentMcastPkts,
    /// Valid datagrams received for a multicast group (also counted in `Pkts`).
    RcvdMcastPkts,
    /// Times a responder's run used up its budget with responses still queued and left them
    /// to a later run (the pacing of large READs: bounded work per softirq run).
    ReplyYields,
    /// Accesses to on-demand paging memory that met a page not present (the data path
    /// answered as to a page fault and asked for the range to be faulted in).
    OdpPageFaults,
    /// Ranges of on-demand paging memory faulted in (in process context).
    OdpFaultsResolved,
    /// Faults that failed (the address no longer mapped, the process gone): the access
    /// that needs it fails when it is retried.
    OdpFaultErrors,
    /// Faults not queued because the device's fault queue was full (the retry asks again).
    OdpFaultsDropped,
    /// Packets of connected QPs received with congestion experienced (CE) in their IP
    /// header (mlx5's name; counted whether or not the notification point answers).
    NpEcnMarked,
    /// CNPs sent by the notification point.
    NpCnpSent,
    /// CNPs the reaction point took (the QP's rate machine saw them).
    RpCnpHandled,
    /// CNPs ignored: the reaction point disabled, or the QP not connected to their sender.
    RpCnpIgnored,
}

const NUM_STATS: usize = 39;

/// The names of the port counters. `rdma_rxe`'s `ack_deferred` (its completer run from a
/// work item instead of inline) has no counterpart: rrxe's completer always runs inline.
pub(crate) static HW_STATS: [StatDesc; NUM_STATS] = [
    StatDesc::new(c"sent_pkts"),
    StatDesc::new(c"rcvd_pkts"),
    StatDesc::new(c"duplicate_request"),
    StatDesc::new(c"out_of_seq_request"),
    StatDesc::new(c"rcvd_rnr_err"),
    StatDesc::new(c"send_rnr_err"),
    StatDesc::new(c"rcvd_seq_err"),
    StatDesc::new(c"retry_exceeded_err"),
    StatDesc::new(c"retry_rnr_exceeded_err"),
    StatDesc::new(c"completer_retry_err"),
    StatDesc::new(c"send_err"),
    StatDesc::new(c"link_downed"),
    StatDesc::new(c"rdma_sends"),
    StatDesc::new(c"rdma_recvs"),
    StatDesc::new(c"sent_bytes"),
    StatDesc::new(c"rcvd_bytes"),
    StatDesc::new(c"rcvd_icrc_err"),
    StatDesc::new(c"rcvd_malformed"),
    StatDesc::new(c"rcvd_unknown_qp"),
    StatDesc::new(c"rcvd_dropped"),
    StatDesc::new(c"retransmits"),
    StatDesc::new(c"completions"),
    StatDesc::new(c"cq_overflows"),
    StatDesc::new(c"bad_wqes"),
    StatDesc::new(c"tx_paused"),
    StatDesc::new(c"replies_dropped"),
    StatDesc::new(c"local_op_errors"),
    StatDesc::new(c"rcvd_bad_invalidate"),
    StatDesc::new(c"sent_mcast_pkts"),
    StatDesc::new(c"rcvd_mcast_pkts"),
    StatDesc::new(c"reply_yields"),
    StatDesc::new(c"odp_page_faults"),
    StatDesc::new(c"odp_faults_resolved"),
    StatDesc::new(c"odp_fault_errors"),
    StatDesc::new(c"odp_faults_dropped"),
    StatDesc::new(c"np_ecn_marked_roce_packets"),
    StatDesc::new(c"np_cnp_sent"),
    StatDesc::new(c"rp_cnp_handled"),
    StatDesc::new(c"rp_cnp_ignored"),
];

/// The port counters of a device.
pub(crate) struct Stats([Atomic<u64>; NUM_STATS]);

impl Stats {
    pub(crate) fn new() -> Self {
        Self([const { Atomic::new(0) }; NUM_STATS])
    }

    pub(crate) fn inc(&self, s: PortCounter) {
        self.add(s, 1);
    }

    pub(crate) fn add(&self, s: PortCounter, n: u64) {
        if let Some(c) = self.0.get(s as usize) {
            c.add(n, Relaxed);
        }
    }

    pub(crate) fn get(&self, s: PortCounter) -> u64 {
        self.0.get(s as usize).map_or(0, |c| c.load(Relaxed))
    }

    /// The counters the port's Performance Management agent reports.
    pub(crate) fn pma(&self) -> pma::PortCounters {
        use PortCounter as C;
        pma::PortCounters {
            link_downed: self.get(C::LinkDowned),
            rcv_errors: self.get(C::IcrcErr).saturating_add(self.get(C::Malformed)),
            xmit_bytes: self.get(C::SentBytes),
            rcv_bytes: self.get(C::RcvdBytes),
            xmit_packets: self.get(C::SentPkts),
            rcv_packets: self.get(C::Pkts),
            mcast_xmit_packets: self.get(C::SentMcastPkts),
            mcast_rcv_packets: self.get(C::RcvdMcastPkts),
        }
    }

    pub(crate) fn read(&self, out: &mut [u64]) {
        for (o, c) in out.iter_mut().zip(self.0.iter()) {
            *o = c.load(Relaxed);
        }
    }
}

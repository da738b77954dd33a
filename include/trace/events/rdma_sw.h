/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transport events of software RDMA drivers: queue pair state changes,
 * requester retries and the NAKs a QP sends and receives, named by the
 * network device the RDMA device runs on and the QP number.
 */

#undef TRACE_SYSTEM
#define TRACE_SYSTEM rdma_sw

#if !defined(_TRACE_RDMA_SW_H) || defined(TRACE_HEADER_MULTI_READ)
#define _TRACE_RDMA_SW_H

#include <linux/tracepoint.h>
#include <rdma/ib_verbs.h>

#define rdma_sw_show_qp_state(state)					\
	__print_symbolic(state,						\
		{ IB_QPS_RESET, "RESET" },				\
		{ IB_QPS_INIT, "INIT" },				\
		{ IB_QPS_RTR, "RTR" },					\
		{ IB_QPS_RTS, "RTS" },					\
		{ IB_QPS_SQD, "SQD" },					\
		{ IB_QPS_SQE, "SQE" },					\
		{ IB_QPS_ERR, "ERR" })

/* The kind of an AETH syndrome (its bits 6:5): RNR NAK or NAK. */
#define rdma_sw_show_nak(syndrome)					\
	__print_symbolic((syndrome) >> 5,				\
		{ 1, "RNR NAK" },					\
		{ 3, "NAK" })

/* Why a requester went back to an older PSN. */
#define RDMA_SW_RETRY_TIMEOUT		0
#define RDMA_SW_RETRY_SEQ_NAK		1
#define RDMA_SW_RETRY_RNR		2

TRACE_EVENT(rdma_sw_qp_state,
	    TP_PROTO(const char *dev, u32 qpn, int old_state, int new_state,
		     const char *why),
	    TP_ARGS(dev, qpn, old_state, new_state, why),
	    TP_STRUCT__entry(__string(dev, dev)
			     __field(u32, qpn)
			     __field(int, old_state)
			     __field(int, new_state)
			     __string(why, why)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->qpn = qpn;
			   __entry->old_state = old_state;
			   __entry->new_state = new_state;
			   __assign_str(why);),
	    TP_printk("%s qpn=0x%x %s -> %s: %s", __get_str(dev), __entry->qpn,
		      rdma_sw_show_qp_state(__entry->old_state),
		      rdma_sw_show_qp_state(__entry->new_state), __get_str(why))
);

TRACE_EVENT(rdma_sw_retry,
	    TP_PROTO(const char *dev, u32 qpn, u32 psn, int cause),
	    TP_ARGS(dev, qpn, psn, cause),
	    TP_STRUCT__entry(__string(dev, dev)
			     __field(u32, qpn)
			     __field(u32, psn)
			     __field(int, cause)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->qpn = qpn;
			   __entry->psn = psn;
			   __entry->cause = cause;),
	    TP_printk("%s qpn=0x%x psn=0x%x cause=%s", __get_str(dev),
		      __entry->qpn, __entry->psn,
		      __print_symbolic(__entry->cause,
				       { RDMA_SW_RETRY_TIMEOUT, "timeout" },
				       { RDMA_SW_RETRY_SEQ_NAK, "sequence NAK" },
				       { RDMA_SW_RETRY_RNR, "RNR wait" }))
);

DECLARE_EVENT_CLASS(rdma_sw_nak_class,
		    TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 syndrome),
		    TP_ARGS(dev, qpn, psn, syndrome),
		    TP_STRUCT__entry(__string(dev, dev)
				     __field(u32, qpn)
				     __field(u32, psn)
				     __field(u8, syndrome)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->qpn = qpn;
				   __entry->psn = psn;
				   __entry->syndrome = syndrome;),
		    TP_printk("%s qpn=0x%x psn=0x%x %s syndrome=0x%02x",
			      __get_str(dev), __entry->qpn, __entry->psn,
			      rdma_sw_show_nak(__entry->syndrome),
			      __entry->syndrome)
);

DEFINE_EVENT(rdma_sw_nak_class, rdma_sw_nak_sent,
	     TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 syndrome),
	     TP_ARGS(dev, qpn, psn, syndrome)
);

DEFINE_EVENT(rdma_sw_nak_class, rdma_sw_nak_rcvd,
	     TP_PROTO(const char *dev, u32 qpn, u32 psn, u8 syndrome),
	     TP_ARGS(dev, qpn, psn, syndrome)
);

#endif /* _TRACE_RDMA_SW_H */

/* This part must be outside protection */
#include <trace/define_trace.h>

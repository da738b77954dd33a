// SPDX-License-Identifier: GPL-2.0
/*
 * The transport tracepoints of software RDMA drivers (include/trace/events/rdma_sw.h),
 * with their entry points for Rust drivers (kernel::rdma::trace).
 */

#define CREATE_TRACE_POINTS
#define CREATE_RUST_TRACE_POINTS
#include <trace/events/rdma_sw.h>

// SPDX-License-Identifier: GPL-2.0

//! The one budget of bounded work, as NAPI's: every loop of the driver that runs in softirq
//! or with bottom halves disabled (a QP's requests, replies and flushes, datagrams, the
//! loopback queue) or in a shared work item (page faults) spends a [`Budget`] per unit of
//! work and, once it is spent, stops and has its work item run again, so that no run is
//! sized by user memory or by a peer's request.

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
use kernel::prelude::kunit_tests;

/// Units of work of one run (packets sent, WQEs taken or flushed, datagrams delivered):
/// NAPI's default weight. A 64 KiB READ at MTU 1024 leaves in one run; at 16 per run, each
/// READ waited for three more runs of the BH work and `ib_read_bw` between the bench guests
/// ran at 6.5 MB/s against rdma_rxe's 14.2 (18.0 against 12.2 at 64). Userspace can keep
/// moving a producer index and a peer can keep asking: neither makes a run longer.
pub(crate) const RUN_BUDGET: u32 = 64;

/// Page faults resolved per run of a device's fault work (each may sleep, and takes as
/// long as the pages it brings in).
pub(crate) const FAULT_BUDGET: u32 = 16;

/// What is left of a run's budget.
pub(crate) struct Budget(u32);

impl Budget {
    /// A run's full budget ([`RUN_BUDGET`]).
    pub(crate) const fn run() -> Self {
        Self(RUN_BUDGET)
    }

    /// A budget of `units`.
    pub(crate) const fn of(units: u32) -> Self {
        Self(units)
    }

    /// Returns the units left.
    pub(crate) fn left(&self) -> u32 {
        self.0
    }

    /// Returns whether the budget is spent: the loop stops and its work runs again.
    pub(crate) fn is_spent(&self) -> bool {
        self.0 == 0
    }

    /// Takes one unit, if any is left: the loop may do one more unit of work.
    pub(crate) fn take(&mut self) -> bool {
        if self.0 == 0 {
            return false;
        }
        self.0 -= 1;
        true
    }

    /// Spends `units` (all that is left, if fewer).
    pub(crate) fn spend(&mut self, units: u32) {
        self.0 = self.0.saturating_sub(units);
    }

    /// Hands `f` the items `next` gives, one unit each, while the budget lasts; returns
    /// whether items may be left (the budget ran out before `next` returned `None`): then
    /// the caller has its work run again.
    pub(crate) fn drain<T>(
        &mut self,
        mut next: impl FnMut() -> Option<T>,
        mut f: impl FnMut(T),
    ) -> bool {
        while !self.is_spent() {
            let Some(item) = next() else {
                return false;
            };
            self.spend(1);
            f(item);
        }
        true
    }
}

#[cfg(CONFIG_RDMA_RRXE_RUST_KUNIT_TEST)]
#[kunit_tests(rrxe_budget)]
mod tests {
    use super::Budget;

    /// A budget of 3 hands out 3 items of 5 and says some may be left; of 2 items, both
    /// and says none is.
    #[test]
    fn drain_stops_at_the_budget() {
        let mut items = [1u32, 2, 3, 4, 5].into_iter();
        let mut seen = 0;
        assert!(Budget::of(3).drain(|| items.next(), |_| seen += 1));
        assert_eq!(seen, 3);
        let mut items = [1u32, 2].into_iter();
        let mut b = Budget::of(3);
        assert!(!b.drain(|| items.next(), |_| ()));
        assert_eq!(b.left(), 1);
        b.spend(5);
        assert!(b.is_spent() && !b.take());
    }
}

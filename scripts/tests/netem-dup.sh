# SPDX-License-Identifier: GPL-2.0
#
# loss.sh under netem's "duplicate 5%", both directions: verified RC transfers (SEND,
# WRITE with immediate, READ) between two rrxe guests while 5% of the packets arrive twice.
NETEM="duplicate 5%" NETEM_BOTH=1 PFX=netem_dup NETEM_RUNS=short
NETEM_SEEN=duplicate_request
. /usr/local/bin/loss.sh

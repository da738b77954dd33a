# SPDX-License-Identifier: GPL-2.0
#
# loss.sh under netem's "delay 2ms reorder 25% 50%", both directions: verified RC transfers (SEND,
# WRITE with immediate, READ) between two rrxe guests while a quarter of the packets overtake the rest (delayed 2 ms).
NETEM="delay 2ms reorder 25% 50%" NETEM_BOTH=1 PFX=netem_reorder NETEM_RUNS=short
NETEM_SEEN="out_of_seq_request retransmits"
. /usr/local/bin/loss.sh

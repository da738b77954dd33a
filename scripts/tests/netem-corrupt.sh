# SPDX-License-Identifier: GPL-2.0
#
# loss.sh under netem's "corrupt 1%", both directions: verified RC transfers (SEND,
# WRITE with immediate, READ) between two rrxe guests while 1% of the packets have a bit flipped.
NETEM="corrupt 1%" NETEM_BOTH=1 PFX=netem_corrupt NETEM_RUNS=short
NETEM_SEEN="corrupted retransmits"
. /usr/local/bin/loss.sh

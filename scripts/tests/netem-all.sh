# SPDX-License-Identifier: GPL-2.0
#
# loss.sh under all of netem's impairments at once, both directions: verified RC transfers
# (SEND, WRITE with immediate, READ) between two rrxe guests while packets are lost (3%),
# duplicated (3%), corrupted (1%) and reordered (20% jump a 2 ms delay).
NETEM="loss 3% duplicate 3% corrupt 1% delay 2ms reorder 20% 50%" NETEM_BOTH=1 PFX=netem_all NETEM_RUNS=short
NETEM_SEEN="retransmits duplicate_request out_of_seq_request corrupted"
. /usr/local/bin/loss.sh

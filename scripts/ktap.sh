#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Extracts KUnit KTAP output from a guest log (out/<g>.dmesg or out/<g>.console).
#
#   ktap.sh LOG [OUT]        write the KTAP document to OUT (default stdout)
#   ktap.sh --parse LOG      extract and run `kunit.py parse` on it (its exit status)
#
# Timestamps are stripped. Every top-level KTAP document of the log (the built-in run at
# boot, one per loaded test module) is merged into one document with renumbered suites,
# which is what kunit.py parse expects. Only indented lines and "# " lines are kept
# between a document's header and its last top-level result, so other kernel messages
# printed meanwhile drop out (indented ones, e.g. call traces, stay as test log).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

extract() {
	awk '
	{ sub(/\r$/, ""); sub(/^\[ *[0-9]+\.[0-9]+\](\[ *[TC][0-9]+\])? ?/, "") }
	/^K?TAP version [0-9]+$/ { doc = 1; plan = -1; seen = 0; next }
	doc && plan < 0 && /^1\.\.[0-9]+$/ { plan = substr($0, 4) + 0; if (!plan) doc = 0; next }
	doc && /^(not )?ok [0-9]+/ {
		n++; sub(/[0-9]+/, n); body = body $0 "\n"
		if (++seen >= plan) doc = 0
		next
	}
	doc && /^([ \t]|# )/ { body = body $0 "\n" }
	END { print "KTAP version 1"; print "1.." n + 0; printf "%s", body }
	' "$1"
}

if [ "${1:-}" = --parse ]; then
	[ $# = 2 ] || rrxe_die "usage: ktap.sh --parse LOG"
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	extract "$2" >"$tmp"
	python3 "$KSRC/tools/testing/kunit/kunit.py" parse "$tmp"
else
	[ $# = 1 ] || [ $# = 2 ] || rrxe_die "usage: ktap.sh LOG [OUT]"
	if [ $# = 2 ]; then extract "$1" >"$2"; else extract "$1"; fi
fi

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Judges a `cargo test` log of the host crate (tools/rrxe) against the declared list.

    host-tally.py CARGO_LOG EXPECTED     lines for scripts/check.sh
    host-tally.py --list CARGO_LOG       the tests the log shows, in the declared format

EXPECTED (scripts/tests/expected-host.txt) names every host test as `<target> <test>`,
where <target> is the test binary cargo announces (`src/lib.rs` for the library's unit
tests, `tests/parse.rs` for an integration test file, `doc` for doc tests). Prints, for
scripts/check.sh, lines `<pass|fail|skip> <weight> <text>`:
  - pass N for the N declared tests that passed;
  - fail 1 for each declared test that failed or did not run (a test that vanished is a
    failure, not a smaller count), and for each test that ran but is not declared;
  - skip N for the N declared tests cargo ignored.
"""
import re
import sys

RUNNING = re.compile(r"^\s*Running (?:unittests )?(\S+) \(")
DOC = re.compile(r"^\s*Doc-tests \S+")
TEST = re.compile(r"^test (.+) \.\.\. (ok|FAILED|ignored)(?:, .*)?$")


def results(path):
    """{(target, test): 'ok'|'FAILED'|'ignored'} from a cargo test log."""
    out, target = {}, None
    with open(path, errors="replace") as fh:
        for line in fh:
            line = line.rstrip("\n")
            m = RUNNING.match(line)
            if m:
                target = m.group(1)
                continue
            if DOC.match(line):
                target = "doc"
                continue
            m = TEST.match(line)
            if m and target:
                out[(target, m.group(1))] = m.group(2)
    return out


def main():
    if sys.argv[1] == "--list":
        for target, test in sorted(results(sys.argv[2])):
            print(f"{target} {test}")
        return 0
    got = results(sys.argv[1])
    declared = []
    with open(sys.argv[2]) as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                target, test = line.split(" ", 1)
                declared.append((target, test))
    out, npass, nskip = [], 0, 0
    for key in declared:
        res = got.get(key)
        if res == "ok":
            npass += 1
        elif res == "ignored":
            nskip += 1
        elif res == "FAILED":
            out.append(("fail", 1, f"host: {key[0]} {key[1]} failed"))
        else:
            out.append(("fail", 1, f"host: {key[0]} {key[1]} did not run (declared in "
                        "scripts/tests/expected-host.txt)"))
    for key in sorted(set(got) - set(declared)):
        out.append(("fail", 1, f"host: {key[0]} {key[1]} {got[key]} (not declared in "
                    "scripts/tests/expected-host.txt)"))
    if npass:
        out.insert(0, ("pass", npass, f"host: cargo test ({npass} declared tests passed)"))
    if nskip:
        out.append(("skip", nskip, f"host: cargo test ({nskip} declared tests ignored)"))
    for kind, weight, text in out:
        print(f"{kind} {weight} {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Counts rrxe's KUnit cases once per kernel build, over every guest boot of a check run.

    kunit-tally.py SRC_DIR LOG...

SRC_DIR is the driver's source (drivers/infiniband/sw/rrxe): the expected cases are read
from it (every `#[test] fn` inside a `#[kunit_tests(suite)]` module, and the KUNIT_CASE()s
of a C test module's suite), so a case that stops being reported is a failure, not a
smaller count. A C test module's suite runs only in the guest test that loads it: when no
boot ran it, it is reported as `NOTRUN suite` (scripts/check.sh fails that when the group
that loads the module ran). Each LOG is one boot's kernel log
(<guest>.dmesg, else <guest>.console) from which the KTAP of every suite is read.

A case passes if it passed in every boot whose log shows its suite, fails if it failed
anywhere or was missing from a boot that ran its suite, and is missing (a failure) if no
boot ran its suite at all. `# SKIP` results are skips. Suites not in SRC_DIR (upstream's
Rust suites) are summarised on one line and not counted.

Prints one line per case, `PASS|FAIL|SKIP suite.case[: reason]`, then
`UPSTREAM suite pass/total` lines; exits 2 when no log loaded the driver's suites at all
(nothing to tally), else 0.
"""
import os
import re
import sys

TS = re.compile(r"^\[ *\d+\.\d+\](\[ *[TC]\d+\])? ?")
HEADER = re.compile(r"^(\s*)# Subtest: (\S+)")
RESULT = re.compile(r"^(\s*)(ok|not ok) \d+ (\S+)(.*)$")


def c_suites(path):
    """{suite: [case, ...]} of a C KUnit file: its `.name = "..."` suite and KUNIT_CASE()s."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    m = re.search(r"struct kunit_suite \w+ = \{[^}]*?\.name = \"(\w+)\"", text, re.S)
    if not m:
        return {}
    return {m.group(1): re.findall(r"KUNIT_CASE\((\w+)\)", text)}


def expected_cases(src):
    """{suite: [case, ...]} from the #[kunit_tests] modules under src, and the set of C
    suites (test modules that a guest test loads on purpose, not at every boot)."""
    suites, optional = {}, set()
    for root, _, files in os.walk(src):
        for f in sorted(files):
            if f.endswith(".c"):
                found = c_suites(os.path.join(root, f))
                suites.update(found)
                optional.update(found)
                continue
            if not f.endswith(".rs"):
                continue
            suite, want_fn = None, False
            with open(os.path.join(root, f), encoding="utf-8") as fh:
                for line in fh:
                    m = re.match(r"\s*#\[kunit_tests\((\w+)\)\]", line)
                    if m:
                        suite = m.group(1)
                        suites.setdefault(suite, [])
                        continue
                    if suite and re.match(r"\s*#\[test\]", line):
                        want_fn = True
                        continue
                    m = re.match(r"\s*(?:pub(?:\(\w+\))?\s+)?fn (\w+)", line)
                    if suite and want_fn and m:
                        suites[suite].append(m.group(1))
                    if line.strip() and not line.strip().startswith("#"):
                        want_fn = False
    return suites, optional


def parse_log(path):
    """{suite: {case: 'ok'|'not ok'|'skip'}} of one boot, and the suites' own verdicts."""
    cases, verdicts = {}, {}
    at = {}  # indent -> suite whose header stands at that indent
    with open(path, encoding="utf-8", errors="replace") as fh:
        for raw in fh:
            line = TS.sub("", raw.rstrip("\r\n"))
            m = HEADER.match(line)
            if m:
                ind = len(m.group(1).expandtabs())
                for k in [k for k in at if k >= ind]:
                    del at[k]
                at[ind] = m.group(2)
                cases.setdefault(m.group(2), {})
                continue
            m = RESULT.match(line)
            if not m:
                continue
            ind = len(m.group(1).expandtabs())
            name, rest = m.group(3), m.group(4)
            res = "skip" if re.search(r"#\s*SKIP", rest, re.I) else m.group(2)
            if ind in at:
                cases[at[ind]][name] = res
            elif name in cases:
                verdicts[name] = res
    return cases, verdicts


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    want, optional = expected_cases(sys.argv[1])
    boots = [(p, *parse_log(p)) for p in sys.argv[2:] if os.path.exists(p)]
    ran = [b for b in boots if any(s in b[1] for s in want if s not in optional)]
    if not ran:
        return 2
    ran = [b for b in boots if any(s in b[1] for s in want)]
    for suite in sorted(want):
        if suite in optional and not any(suite in c for _, c, _ in ran):
            # A test module's suite runs only where its guest test loads it; that test
            # reports the suite's verdict itself.
            print(f"NOTRUN {suite}")
            continue
        for case in want[suite]:
            seen = [(p, c[suite].get(case)) for p, c, _ in ran if suite in c]
            name = f"{suite}.{case}"
            if not seen:
                print(f"FAIL {name}: suite did not run in any boot")
                continue
            bad = [p for p, r in seen if r == "not ok"]
            gone = [p for p, r in seen if r is None]
            if bad:
                print(f"FAIL {name}: failed in {', '.join(bad)}")
            elif gone:
                print(f"FAIL {name}: missing in {', '.join(gone)}")
            elif all(r == "skip" for _, r in seen):
                print(f"SKIP {name}")
            else:
                print(f"PASS {name} ({len(seen)} boots)")
        # A case the log reports but the source does not declare: a stale expectation list.
        extra = sorted({k for _, c, _ in ran for k in c.get(suite, {})} - set(want[suite]))
        for case in extra:
            print(f"FAIL {suite}.{case}: reported but not declared in the source")
    up = {}
    for _, c, _ in boots:
        for suite, res in c.items():
            if suite in want:
                continue
            t = up.setdefault(suite, [0, 0])
            t[0] += sum(1 for r in res.values() if r == "ok")
            t[1] += len(res)
    for suite in sorted(up):
        print(f"UPSTREAM {suite} {up[suite][0]}/{up[suite][1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

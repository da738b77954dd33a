#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Compares two runs of rdma-core's pyverbs suite (the PYVERBS lines of
scripts/guest/pyverbs-run.py, in the results block scripts/tests/pyverbs.sh prints on each
guest's console): REF on rdma_rxe, DUT on rrxe.

usage: pyverbs-compare.py REF_CONSOLE DUT_CONSOLE EXPECTED
       pyverbs-compare.py --list DUT_CONSOLE     rrxe's results in the declared format

EXPECTED (scripts/tests/expected-pyverbs.txt) declares every test of the suite with the
result rrxe must give: `<test> pass` or `<test> skip`. Prints, for scripts/check.sh, lines
"<pass|fail|skip> <weight> <text>":
  - fail 1 for every test that fails or errors on rrxe, or that passes on rdma_rxe and not
    on rrxe (skipped or missing);
  - fail 1 for every declared test whose result on rrxe is not the declared one (a test
    that vanished, or a skip that now passes: the list is updated with the change), and
    for every test that ran undeclared;
  - fail 1 for a run that did not finish (no PYVERBS-DONE line);
  - pass N for the N tests declared to pass that rrxe passes (each counted once);
  - skip N for the N tests declared to skip that skip on both drivers,
and, as "#" lines, both drivers' counts and every skip reason with its count.
"""
import collections
import re
import sys

OK = ('pass', 'xfail')


def load(path):
    """The results of the block the guest prints once the suite is done, with the
    console's log level lowered (the live lines before it can be cut by kernel messages);
    the run finished when the block is whole and holds PYVERBS-DONE."""
    results, done, inside, whole = {}, False, False, False
    with open(path, errors='replace') as f:
        for line in f:
            line = line.rstrip('\n')
            if line == 'PYVERBS-RESULTS-BEGIN':
                results, done, inside = {}, False, True
                continue
            if not inside:
                continue
            if line == 'PYVERBS-RESULTS-END':
                whole, inside = True, False
                continue
            if line.startswith('PYVERBS-DONE'):
                done = True
            m = re.match(r'^PYVERBS (\w+) (\S+) ?(.*)$', line)
            if m:
                results[m.group(2)] = (m.group(1), m.group(3))
    return results, done and whole


def counts(results):
    c = collections.Counter(kind for kind, _ in results.values())
    return (f"{c['pass'] + c['xfail']} pass, {c['skip']} skip, "
            f"{c['fail'] + c['error'] + c['upass']} fail/error")


def declared(path):
    """{test: 'pass'|'skip'} from the declared list."""
    want = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith('#'):
                test, kind = line.split()
                want[test] = kind
    return want


def main():
    if sys.argv[1] == '--list':
        dut, _ = load(sys.argv[2])
        for test, (kind, _) in sorted(dut.items()):
            print(f"{test} {'pass' if kind in OK else kind}")
        return 0
    ref, ref_done = load(sys.argv[1])
    dut, dut_done = load(sys.argv[2])
    want = declared(sys.argv[3])
    out = []
    print(f'# rdma_rxe: {len(ref)} tests: {counts(ref)}')
    print(f'# rrxe:     {len(dut)} tests: {counts(dut)}')
    if not ref_done:
        out.append(('fail', 1, f'pyverbs: the run on rdma_rxe did not finish ({len(ref)} results)'))
    if not dut_done:
        out.append(('fail', 1, f'pyverbs: the run on rrxe did not finish ({len(dut)} results)'))
    both_skip = collections.Counter()
    for test in sorted(set(ref) | set(dut)):
        rk, rwhy = ref.get(test, ('missing', ''))
        dk, dwhy = dut.get(test, ('missing', ''))
        if dk in ('fail', 'error', 'upass'):
            note = ', passes on rdma_rxe' if rk in OK else f', {rk} on rdma_rxe'
            out.append(('fail', 1, f'pyverbs: {test} {dk} on rrxe{note}: {dwhy}'))
        elif rk in OK and dk not in OK:
            out.append(('fail', 1, f'pyverbs: {test} passes on rdma_rxe, {dk} on rrxe: {dwhy}'))
        elif dk == 'skip' and rk == 'skip':
            both_skip[rwhy] += 1
        elif dk in OK and rk not in OK:
            print(f'# {test}: passes on rrxe, {rk} on rdma_rxe: {rwhy}')
    for test in sorted(set(want) | set(dut)):
        wk = want.get(test)
        dk = dut.get(test, ('missing', ''))[0]
        dk = 'pass' if dk in OK else dk
        if wk is None:
            out.append(('fail', 1, f'pyverbs: {test} {dk} on rrxe, not declared in '
                        'scripts/tests/expected-pyverbs.txt'))
        elif dk != wk and dk not in ('fail', 'error', 'upass'):
            out.append(('fail', 1, f'pyverbs: {test} {dk} on rrxe, declared {wk} '
                        '(scripts/tests/expected-pyverbs.txt)'))
    npass = sum(1 for t, k in want.items() if k == 'pass' and dut.get(t, ('',))[0] in OK)
    if npass:
        out.append(('pass', npass, f'pyverbs: rrxe passes {npass} declared tests '
                    f'(rdma_rxe: {counts(ref)}; rrxe: {counts(dut)})'))
    nskip = sum(1 for t, k in want.items() if k == 'skip' and dut.get(t, ('',))[0] == 'skip')
    if nskip:
        out.append(('skip', nskip, f'pyverbs: {nskip} declared tests skip on rrxe '
                    '(hardware or provider features, reasons in pyverbs/compare.txt)'))
    for why, n in both_skip.most_common():
        print(f'# skip on both ({n}): {why}')
    for kind, weight, text in out:
        print(f'{kind} {weight} {text}')
    return 0


if __name__ == '__main__':
    sys.exit(main())

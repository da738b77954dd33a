#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Runs rdma-core's pyverbs suite (its tests/ directory) on one RDMA device, as its own
run_tests.py does, and prints one line per test for scripts/check.sh to compare:

    PYVERBS <pass|skip|fail|error|xfail|upass> <test id> [reason]

usage: pyverbs-run.py SUITE_DIR DEVICE [NAME...]   (NAMEs: unittest names, e.g. test_qp)
Exits 0 when the suite ran (whatever its results), 2 when it could not be loaded.
"""
import os
import sys
import traceback
import unittest
from importlib.machinery import SourceFileLoader


def one_line(text, limit=400):
    return ' '.join(str(text).split())[:limit]


class LineResult(unittest.TestResult):
    """Prints each result as it comes, and the traceback of failures and errors."""

    def _emit(self, kind, test, reason=''):
        print(f'PYVERBS {kind} {test.id()} {one_line(reason)}'.rstrip(), flush=True)

    def _emit_err(self, kind, test, err):
        lines = traceback.format_exception(*err)
        sys.stdout.write(''.join(f'#   {l}' for l in ''.join(lines).splitlines(True)))
        self._emit(kind, test, lines[-1] if lines else '')

    def startTest(self, test):
        super().startTest(test)
        print(f'PYVERBS-START {test.id()}', flush=True)

    def addSuccess(self, test):
        super().addSuccess(test)
        self._emit('pass', test)

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._emit('skip', test, reason)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._emit_err('fail', test, err)

    def addError(self, test, err):
        super().addError(test, err)
        self._emit_err('error', test, err)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._emit('xfail', test)

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._emit('upass', test)


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    suite_dir, dev, names = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3:]
    # As run_tests.py: the suite's own argument parser holds the device for every test,
    # and the package is loaded as "tests" from its __init__.py.
    sys.path.insert(0, suite_dir)
    os.chdir(suite_dir)
    sys.argv = [os.path.join(suite_dir, 'run_tests.py'), '--dev', dev]
    try:
        from args_parser import parser
        tests = SourceFileLoader('tests', os.path.join(suite_dir, '__init__.py')).load_module()
        parser.parse_args()
        loader = unittest.TestLoader()
        suite = (loader.loadTestsFromNames(names, tests) if names
                 else loader.loadTestsFromModule(tests))
    except Exception:  # the suite itself is broken: say so, not "0 tests"
        traceback.print_exc()
        return 2
    result = LineResult()
    suite.run(result)
    print(f'PYVERBS-DONE run={result.testsRun} fail={len(result.failures)} '
          f'error={len(result.errors)} skip={len(result.skipped)}', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())

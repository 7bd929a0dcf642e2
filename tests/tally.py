# SPDX-License-Identifier: ISC
# Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE.
"""The PASS and FAIL lines of the Python suites that print one line a
check (tests/extensions.py, tests/uploads.py, tests/sessions.py,
tests/memsessions.py), and their counts for the "N passed, N failed"
line lib.sh's read_counts reads (summary, which the other suites with
counts of their own use too).
"""

import sys

passed = 0
failed = 0
# Set by a suite whose lines name the configuration they ran in: each
# check's line then says "[label] " before its name.
label = None


def summary(npassed=None, nfailed=None, skipped=False):
    """Prints the "N passed, N failed" line (this module's counts unless
    given) and returns the exit status that goes with it: 1 after a
    failure, else 77 when a part was skipped, else 0."""
    npassed = passed if npassed is None else npassed
    nfailed = failed if nfailed is None else nfailed
    print("%d passed, %d failed" % (npassed, nfailed))
    if nfailed:
        return 1
    return 77 if skipped else 0


def say(ok, what, detail=""):
    """Counts and prints one check's result; a failure's detail goes on an
    indented line below it.  Returns ok."""
    global passed, failed
    tag = "" if label is None else "[%s] " % label
    if ok:
        passed += 1
        print("PASS: %s%s" % (tag, what))
    else:
        failed += 1
        print("FAIL: %s%s%s" % (tag, what,
                                ("\n  " + str(detail)) if detail else ""))
    sys.stdout.flush()
    return ok

# SPDX-License-Identifier: ISC
# Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE.
"""The PASS and FAIL lines of the Python suites that print one line a
check (tests/extensions.py, tests/uploads.py, tests/sessions.py,
tests/memsessions.py), and their counts for the "N passed, N failed"
line lib.sh's read_counts reads.
"""

import sys

passed = 0
failed = 0
# Set by a suite whose lines name the configuration they ran in: each
# check's line then says "[label] " before its name.
label = None


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

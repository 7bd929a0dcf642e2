# SPDX-License-Identifier: ISC
# Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE.
"""The seed loop the randomized model tests share (tests/model.py,
tests/pathmodel.py): their common options, the skip when a server cannot
run, one run a seed with a FAIL line and a command line that replays that
seed alone for each failure, the totals, and the "N passed, N failed"
line.  What a seed does (its model, its requests, its checks) stays in
each test.
"""

import os
import shlex
import sys
import time

import tally


def add_args(ap):
    """The options every seeded test takes."""
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--workdir")
    ap.add_argument("--seed-base", type=int, default=1)
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--seed", type=int, help="run this one seed")


def cannot_run(progs):
    """77, after the SKIP and count lines, when one of progs is not
    executable; None when all are."""
    for prog in progs:
        if not os.access(prog, os.X_OK):
            print("SKIP: server %s not executable" % prog)
            print("0 passed, 0 failed")
            return 77
    return None


def seeds_of(args):
    """--seed alone, or --seeds seeds from --seed-base."""
    if args.seed is not None:
        return [args.seed]
    return range(args.seed_base, args.seed_base + args.seeds)


def label_of(args):
    """What every line of a labelled run starts with."""
    return "[%s] " % args.label if args.label else ""


def run_seeds(args, script, seeds, new_run, errors, replay, count):
    """new_run(seed).run() for each seed: an exception in errors is that
    seed's failure, printed with the command that replays it (script's
    --server, --server-args and --seed, then replay(seed)); count(run) is
    how many requests the run sent, failed or not.  Prints the totals;
    returns (passed, failed)."""
    label = label_of(args)
    passed = failed = total = 0
    t0 = time.monotonic()
    for seed in seeds:
        s = new_run(seed)
        try:
            s.run()
            passed += 1
        except errors as e:
            failed += 1
            print("FAIL: %s%s" % (label, e))
            print("  replay: %s %s --server %s --server-args=%s --seed %d%s"
                  % (shlex.quote(sys.executable),
                     shlex.quote(os.path.abspath(script)),
                     shlex.quote(args.server),
                     shlex.quote(args.server_args), seed, replay(seed)))
        total += count(s)
    print("%s%d seeds, %d requests in %.1fs" % (
        label, len(seeds), total, time.monotonic() - t0))
    return passed, failed


def counts(passed, failed):
    """The last line, and the exit status that goes with it."""
    return tally.summary(passed, failed)

#!/usr/bin/python3
"""Write failures and vanishing clients.

Full file system (--fsdir: an empty, small tmpfs mounted by fullfs.sh):
for each upload pattern (32 KiB writes, 261120-byte writes, odd unaligned
sizes, a mix of all three) the server runs with its cwd on the tmpfs and
`-e -l INFO`, and one batch of contiguous WRITEs adding up to more than the
file system holds is sent without waiting; each pattern runs on an empty
file system and again with a file of random size taking space first, so
that the end of the space falls inside a merged run.  Then:

  * every request gets exactly one reply, in request order, with its id,
    all STATUS, and nothing else is sent;
  * a WRITE is answered OK if and only if all its bytes are in the file,
    and every other WRITE gets FAILURE (what ENOSPC maps to);
  * the OK requests are a prefix of the batch (the upload is sequential);
  * the file is a prefix of the bytes sent (no hole, no foreign byte) that
    holds every acknowledged byte, plus at most a partial piece of the
    first failed request;
  * the `close` log line reports as `written` exactly the sum of the
    acknowledged requests' lengths; the server exits 0 at stdin EOF;
  * the upload did overflow (some OK, some FAILURE): else nothing was
    tested.

Vanishing client (--workdir, any file system): a batch of contiguous
WRITEs (ending with half a packet) is sent, half of the replies (or none)
are read, and then the client side of stdin and stdout is closed at once
(two pipes, or one socketpair as upstream sshd uses), either right away or
once the server has answered all it can and waits for input with its
replies unread (a socketpair then reports ECONNRESET).  The server must exit
0 without a crash; every byte of every WRITE whose OK was read is in the
file; the file is a prefix of the complete WRITEs sent (no byte that was
not sent, nothing of the half packet); and its `forced close` log line
counts at least the bytes the client saw acknowledged and no more than the
file holds.

The transfer log on the full file system (--xferlog, both formats): a
session whose first line can be taken only in part (a short write) and
its next lines not at all leaves the file as it was, logs the failure
once and exits 0; once there is room again, the next line is whole.

All data bytes are non-zero, so a hole (zeros) never passes for data.

Usage: fullfs.py --server PATH [--server-args "ARGS"] [--label NAME]
                 --workdir DIR [--fsdir DIR --fs-size BYTES] [--seed N]
Exit: 0 all passed, 1 a failure.  Last line: "N passed, N failed".
"""

import argparse
import json
import os
import random
import re
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_WRITE, FXF_CREAT, FXF_TRUNC, FXP_WRITE, FXP_STATUS, FX_OK,
    FX_FAILURE, STATUS_NAMES, u32, u64, string, packet)

KIB = 1024
MAX_WRITE = 261120
NONZERO = bytes([1]) + bytes(range(1, 256))   # translate table: 0 -> 1

PASSED = 0
FAILED = 0
LABEL = ""


def ok(desc):
    global PASSED
    PASSED += 1
    print("PASS: %s%s" % (LABEL, desc))


def bad(desc, why):
    global FAILED
    FAILED += 1
    print("FAIL: %s%s: %s" % (LABEL, desc, why))


def check(desc, problems):
    """problems: a list of strings; empty means the check passed."""
    if problems:
        shown = problems[:6]
        more = len(problems) - len(shown)
        bad(desc, "; ".join(shown) + (" (and %d more)" % more
                                      if more > 0 else ""))
    else:
        ok(desc)


def note(msg):
    print("NOTE: %s%s" % (LABEL, msg))


def status_name(rep):
    if rep.type != FXP_STATUS:
        return rep.type_name
    return STATUS_NAMES.get(rep.code, str(rep.code))


def sizes_for(pattern, total, rng):
    out = []
    n = 0
    while n < total:
        if pattern == "32k":
            s = 32 * KIB
        elif pattern == "255k":
            s = MAX_WRITE
        elif pattern == "odd":
            s = rng.randint(1, 70000)
            if s % 512 == 0:
                s += 1
        else:   # mixed
            s = rng.choice((32 * KIB, MAX_WRITE, rng.randint(1, 70000),
                            rng.randint(1, 600), 4095, 4097))
        out.append(s)
        n += s
    return out


class Writes:
    """A batch of contiguous WRITEs from offset 0 on one handle."""

    def __init__(self, client, handle, sizes, rng):
        self.ids = []
        self.offs = []
        self.datas = []
        pkts = []
        off = 0
        for s in sizes:
            rid = client.next_id()
            data = rng.randbytes(s).translate(NONZERO)
            pkts.append(packet(FXP_WRITE, u32(rid) + string(handle)
                               + u64(off) + string(data)))
            self.ids.append(rid)
            self.offs.append(off)
            self.datas.append(data)
            off += s
        self.pkts = pkts
        self.wire = b"".join(pkts)
        self.stream = b"".join(self.datas)

    def in_file(self, i, f):
        o, d = self.offs[i], self.datas[i]
        return len(f) >= o + len(d) and f[o:o + len(d)] == d

    def describe(self, i):
        return "WRITE #%d (id %d) off=%d len=%d" % (
            i, self.ids[i], self.offs[i], len(self.datas[i]))


def first_diff(a, b):
    n = min(len(a), len(b))
    # coarse then fine, fast enough for a few MiB
    step = 4096
    i = 0
    while i < n and a[i:i + step] == b[i:i + step]:
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return i


def parse_log(path, name, forced):
    """(read, written) of the close line for name, or None."""
    word = "forced close" if forced else "close"
    pat = re.compile(r'^%s "%s" bytes read (\d+) written (\d+)$'
                     % (word, re.escape(name)))
    found = None
    with open(path, "rb") as f:
        for line in f.read().decode("utf-8", "replace").splitlines():
            m = pat.match(line.strip())
            if m:
                found = (int(m.group(1)), int(m.group(2)))
    return found


def server_argv(args):
    return [args.server] + shlex.split(args.server_args) + ["-e", "-l",
                                                            "INFO"]


# ------------------------------------------------------------ full fs

def full_fs(args, pattern, ballast, rng):
    """ballast: bytes of another file that take space first, so that the
    file system fills up at a different point of the merged runs."""
    name = "fill.bin"
    path = os.path.join(args.fsdir, name)
    for f in os.listdir(args.fsdir):
        os.unlink(os.path.join(args.fsdir, f))
    if ballast:
        with open(os.path.join(args.fsdir, "ballast"), "wb") as f:
            f.write(b"\xff" * ballast)
    log = os.path.join(args.workdir, "fullfs-%s-%d.log" % (pattern, ballast))
    total = args.fs_size * 3 // 2
    sizes = sizes_for(pattern, total, rng)
    what = "full fs, %s writes (%d requests, %d bytes into %d%s)" % (
        pattern, len(sizes), sum(sizes), args.fs_size,
        ", %d taken" % ballast if ballast else "")
    c = sc.Client(server_argv(args), cwd=args.fsdir, stderr=log,
                  timeout=30)
    try:
        c.init()
        h = c.check_handle(c.open(name, FXF_WRITE | FXF_CREAT | FXF_TRUNC),
                           "open")
        w = Writes(c, h, sizes, rng)
        t0 = time.monotonic()
        c.send_raw(w.wire)
        reps = []
        problems = []
        for i, rid in enumerate(w.ids):
            try:
                rep = c.recv()
            except sc.SFTPError as e:
                problems.append("no reply for %s: %s" % (w.describe(i), e))
                break
            if rep.id != rid:
                problems.append("reply %d is %r, expected one for id %d "
                                "(%s)" % (i, rep, rid, w.describe(i)))
                break
            if rep.type != FXP_STATUS:
                problems.append("%s: reply %r is not a STATUS"
                                % (w.describe(i), rep))
            reps.append(rep)
        elapsed = time.monotonic() - t0
        check("%s: one reply per request, in order" % what, problems)
        if problems:
            return
        crep = c.close_handle(h)
        rc, rest = c.finish(30)
    finally:
        c.close()
    with open(path, "rb") as f:
        data = f.read()
    oks = [i for i, r in enumerate(reps) if r.is_status(FX_OK)]
    fails = [i for i, r in enumerate(reps) if not r.is_status(FX_OK)]
    note("%s: %d OK, %d failed, file %d bytes, %.2fs; failures: %s" % (
        what, len(oks), len(fails), len(data), elapsed,
        sorted({"%s %r" % (status_name(reps[i]), reps[i].msg)
                for i in fails})))

    check("%s: the upload overflowed (some OK, some failed)" % what,
          [] if oks and fails else
          ["%d OK, %d failed: the file system did not fill up"
           % (len(oks), len(fails))])
    check("%s: every failed WRITE is FAILURE (ENOSPC)" % what,
          ["%s: %r" % (w.describe(i), reps[i]) for i in fails
           if not reps[i].is_status(FX_FAILURE)])
    check("%s: OK if and only if all its bytes are in the file" % what,
          ["%s: %s but %s in the file" % (
              w.describe(i), status_name(reps[i]),
              "all its bytes are" if w.in_file(i, data) else
              "not all its bytes are (file %d bytes)" % len(data))
           for i in range(len(reps))
           if reps[i].is_status(FX_OK) != w.in_file(i, data)])
    check("%s: the OK replies are a prefix of the batch" % what,
          [] if not oks or oks == list(range(len(oks))) else
          ["OK for %s after FAILURE for %s" % (
              w.describe(oks[-1]), w.describe(fails[0]))])
    acked = sum(len(w.datas[i]) for i in oks)
    problems = []
    i = first_diff(data, w.stream)
    if i < len(data):
        if i >= len(w.stream):
            problems.append("file has %d bytes, more than the %d sent"
                            % (len(data), len(w.stream)))
        else:
            problems.append("byte %d of the file is %02x, sent %02x%s" % (
                i, data[i], w.stream[i],
                " (a hole)" if data[i] == 0 else ""))
    for k in oks:
        if not w.in_file(k, data):
            problems.append("acknowledged %s missing" % w.describe(k))
            break
    if fails and oks == list(range(len(oks))):
        lim = w.offs[fails[0]] + len(w.datas[fails[0]])
        if len(data) >= lim:
            problems.append("file has %d bytes: beyond the first failed "
                            "request (%s)" % (len(data),
                                              w.describe(fails[0])))
    check("%s: the file holds the acknowledged bytes, and only bytes sent"
          % what, problems)
    if len(data) > acked:
        note("%s: %d bytes of the first failed request are in the file "
             "(a partial write)" % (what, len(data) - acked))
    problems = []
    if not crep.is_status(FX_OK):
        problems.append("CLOSE: %r" % crep)
    if rc != 0:
        problems.append("exit status %d" % rc)
    if rest:
        problems.append("%d unexpected output bytes" % len(rest))
    check("%s: CLOSE OK, nothing extra, exit 0" % what, problems)
    logged = parse_log(log, name, False)
    if logged is None:
        check("%s: close log line" % what,
              ["no 'close \"%s\" bytes read 0 written N' line in the log"
               % name])
    else:
        check("%s: close log line: written = acknowledged bytes" % what,
              [] if logged == (0, acked) else
              ["log says read %d written %d, acknowledged %d bytes in %d "
               "requests" % (logged[0], logged[1], acked, len(oks))])
    os.unlink(path)


# ------------------------------------------------------------ xferlog

PAGE = 4096


def fill_up(fsdir):
    """Take every free page of the file system with one file."""
    fd = os.open(os.path.join(fsdir, "filler"),
                 os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            try:
                if os.write(fd, b"\xff" * PAGE) < PAGE:
                    break
            except OSError:
                break
    finally:
        os.close(fd)


def whole_line(fmt, line):
    """Is line one whole line of the transfer log in format fmt?"""
    if fmt == "json":
        try:
            return isinstance(json.loads(line), dict)
        except ValueError:
            return False
    return re.fullmatch(rb"\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \d+ \S+ "
                        rb"\d+ \S+ b _ [io] r \S+ sftp 0 \* [ci]",
                        line) is not None


def xferlog_full(args, fmt):
    """The transfer log on a full file system: its last page has room for
    40 bytes only, so the first line of the session is taken in part (a
    short write) and the next ones not at all.  The file must be left as
    it was (no half line, which the next line would be glued to), the
    failure logged once, and once there is room again, the next line is
    whole."""
    what = "xferlog (%s) on a full fs" % fmt
    for f in os.listdir(args.fsdir):
        os.unlink(os.path.join(args.fsdir, f))
    logf = os.path.join(args.fsdir, "xfer.log")
    pad = PAGE - 40 - len('{"pad":""}\n')
    before = b'{"pad":"' + b"p" * pad + b'"}\n'
    with open(logf, "wb") as f:
        f.write(before)
    fill_up(args.fsdir)
    argv = server_argv(args) + ["--xferlog=" + logf,
                                "--xferlog-format=" + fmt]
    stderr = os.path.join(args.workdir, "xferlog-full-%s.err" % fmt)
    for step in ("full", "room again"):
        c = sc.Client(argv, cwd=args.workdir, stderr=stderr, timeout=30)
        try:
            c.init()
            for i in range(3 if step == "full" else 1):
                c.put_bytes("xfer-%s-%d" % (fmt, i), b"x" * 10)
            rc, rest = c.finish(30)
        finally:
            c.close()
        with open(logf, "rb") as f:
            after = f.read()
        with open(stderr, "rb") as f:
            err = f.read().decode("utf-8", "replace")
        if step == "full":
            check("%s: the file is as it was (no part of a line)" % what,
                  [] if after == before else
                  ["%d bytes were added: %r" % (len(after) - len(before),
                                                after[len(before):])])
            check("%s: the failure is logged once, exit 0" % what,
                  [] if rc == 0 and err.count("xferlog: write to") == 1
                  else ["exit %r, log %r" % (rc, err[-800:])])
            os.unlink(os.path.join(args.fsdir, "filler"))
        else:
            lines = after[len(before):].split(b"\n")
            ok_lines = (after.startswith(before) and len(lines) == 2 and
                        lines[1] == b"" and whole_line(fmt, lines[0]) and
                        b"/xfer-%s-0 " % fmt.encode()
                        in lines[0].replace(b'"', b" "))
            check("%s: with room again the next line is whole" % what,
                  [] if ok_lines else ["added %r" % after[len(before):]])
    os.unlink(logf)


# ------------------------------------------------------------ vanish

def vanish(args, transport, read_part, rng):
    name = "vanish-%s-%s.bin" % (transport, read_part)
    path = os.path.join(args.workdir, name)
    log = os.path.join(args.workdir, "vanish-%s-%s.log"
                       % (transport, read_part))
    sizes = sizes_for("mixed", 6 * 1024 * 1024, rng)
    what = "vanishing client (%s, reads %s of %d replies%s)" % (
        transport, "none" if read_part == "none" else "half", len(sizes),
        ", cut when idle" if read_part == "idle" else "")
    c = sc.Client(server_argv(args), cwd=args.workdir, stderr=log,
                  socketpair=(transport == "socketpair"), timeout=30)
    try:
        c.init()
        h = c.check_handle(c.open(name, FXF_WRITE | FXF_CREAT | FXF_TRUNC),
                           "open")
        w = Writes(c, h, sizes, rng)
        # Half a WRITE packet at the end: cut mid-packet.
        tail_data = rng.randbytes(50000).translate(NONZERO)
        half = packet(FXP_WRITE, u32(c.next_id()) + string(h)
                      + u64(len(w.stream)) + string(tail_data))
        if read_part == "idle":
            # The last WRITE and the half packet go after the pause.
            last = w.pkts[-1] + half[:len(half) // 2]
            c.send_raw(w.wire[:-len(w.pkts[-1])])
        else:
            c.send_raw(w.wire + half[:len(half) // 2])
        nread = 0 if read_part == "none" else len(sizes) // 2
        problems = []
        acked = []
        for i in range(nread):
            try:
                rep = c.recv()
            except sc.SFTPError as e:
                problems.append("no reply for %s: %s" % (w.describe(i), e))
                break
            if rep.id != w.ids[i] or not rep.is_status(FX_OK):
                problems.append("%s: got %r" % (w.describe(i), rep))
                break
            acked.append(i)
        check("%s: the replies read are OK, in order" % what, problems)
        if read_part == "idle":
            # Let the server answer everything it can; then one more WRITE
            # whose reply stays unread in our end when we vanish.
            time.sleep(0.5)
            c.send_raw(last)
            time.sleep(0.3)
        # The client vanishes: both directions closed at once, with
        # replies unread.
        if c.sock is not None:
            c.sock.close()
            c.sock = None
        else:
            c.proc.stdin.close()
            c.proc.stdout.close()
        try:
            rc = c.proc.wait(30)
        except Exception:
            c.kill()
            rc = "hung (killed after 30s)"
    finally:
        c.close()
    with open(path, "rb") as f:
        data = f.read()
    with open(log, "rb") as f:
        errtext = f.read().decode("utf-8", "replace")
    check("%s: the server exits 0" % what,
          [] if rc == 0 else
          ["exit status %s; log tail: %r" % (rc, errtext[-400:])])
    check("%s: every acknowledged byte is in the file" % what,
          ["%s was acknowledged but is not in the file (file %d bytes)"
           % (w.describe(i), len(data)) for i in acked
           if not w.in_file(i, data)])
    problems = []
    i = first_diff(data, w.stream)
    if i < len(data):
        if i >= len(w.stream):
            problems.append("file has %d bytes, more than the %d of the "
                            "complete WRITEs sent" % (len(data),
                                                      len(w.stream)))
        else:
            problems.append("byte %d of the file is %02x, sent %02x%s" % (
                i, data[i], w.stream[i],
                " (a hole)" if data[i] == 0 else ""))
    check("%s: the file holds only bytes sent, in place" % what, problems)
    logged = parse_log(log, name, True)
    if logged is None:
        check("%s: forced close log line" % what,
              ["no 'forced close \"%s\" ...' line; log tail: %r"
               % (name, errtext[-400:])])
    else:
        seen = sum(len(w.datas[i]) for i in acked)
        check("%s: forced close line: acknowledged <= written <= file size"
              % what,
              [] if seen <= logged[1] <= len(data) else
              ["log says written %d; client saw %d bytes acknowledged; "
               "file has %d" % (logged[1], seen, len(data))])
    done = sum(1 for k in range(len(sizes)) if w.in_file(k, data))
    note("%s: %d of %d complete WRITEs in the file (%d bytes)"
         % (what, done, len(sizes), len(data)))
    os.unlink(path)


def main():
    global LABEL
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--fsdir", help="an empty, small, mounted file system")
    ap.add_argument("--fs-size", type=int, default=2 * 1024 * 1024)
    ap.add_argument("--seed", type=int, default=4)
    args = ap.parse_args()
    LABEL = "[%s] " % args.label if args.label else ""
    rng = random.Random(args.seed)
    t0 = time.monotonic()
    steps = []
    if args.fsdir:
        for p in ("32k", "255k", "odd", "mixed"):
            for ballast in (0, rng.randint(1, 150) * 4096
                            + rng.randint(0, 4095)):
                steps.append(("full fs %s %d" % (p, ballast),
                              lambda p=p, b=ballast: full_fs(args, p, b,
                                                             rng)))
        for fmt in ("json", "xferlog"):
            steps.append(("xferlog %s full fs" % fmt,
                          lambda fmt=fmt: xferlog_full(args, fmt)))
    for t, r in (("pipes", "half"), ("socketpair", "half"),
                 ("pipes", "none"), ("pipes", "idle"),
                 ("socketpair", "idle")):
        steps.append(("vanish %s %s" % (t, r),
                      lambda t=t, r=r: vanish(args, t, r, rng)))
    for step, fn in steps:
        try:
            fn()
        except (sc.SFTPError, OSError) as e:
            bad(step, "%s: %s" % (type(e).__name__, e))
    note("%.1fs (seed %d)" % (time.monotonic() - t0, args.seed))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

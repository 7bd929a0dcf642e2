#!/usr/bin/python3
"""Downloads keep OpenSSH's semantics while other programs change the file.

For each target directory (a file system: ext4, tmpfs, xfs, btrfs, a FUSE
passthrough; an overlay, once with the file still in its lower layer and
once copied up), the server under test and OpenSSH's sftp-server each run
as an unprivileged user (nobody) on a fresh file of FILE_SIZE bytes that
the user owns (the case where a read lease can be had), and, on the
targets named by --root-owned, once more on a root-owned file readable by
all.  Both are started directly on pipes, under the same conditions, one
right after the other; OpenSSH's times are the reference.

The file holds a pattern with no zero byte, different at every offset.

  stalled   OPEN, 64 READs of 32 KiB (and of 255 KiB) sent at once, and
            the client reads nothing until the server's output stops
            growing.  Then one of these, timed:
              open-wronly  another process: open(O_WRONLY)
              truncate     another process: truncate(2) to a smaller size
                           that lies inside the READs' range
              open-trunc   another process: open(O_RDONLY|O_TRUNC)
              punch-hole   another process: open(O_WRONLY) and
                           fallocate(PUNCH_HOLE|KEEP_SIZE) inside the range
              session-open a second server process of the same user gets
                           OPEN for writing; timed until its reply
            The client goes on not reading for a moment after that, then
            reads every reply, then the whole file again from a fresh
            series of READs.
  cold      as stalled, 32 KiB READs, but the file's pages are dropped
            from the page cache first and the READs are sent in a shuffled
            order: each starts no sequential stream, so where the file
            system gives direct I/O an alignment (ext4, xfs) the server
            reads them with O_DIRECT (checked: on ext4 and xfs, for a file
            the user owns, the server holds an O_DIRECT descriptor of the
            file while its replies wait); actions truncate, open-trunc and
            punch-hole on ext4 and xfs, truncate elsewhere.  (The order: no
            READ follows the one before it, and the first is not at 0, so
            none looks sequential.)
  steady    the client reads at about 8 MB/s, 32 KiB READs, 64 of them
            outstanding; after 0.35 s another process truncates the file
            to a size inside the outstanding READs' range, timed; the
            client reads on until EOF, then asks again for anything a short
            reply left out.  Once more truncating to 0 instead (logrotate's
            copytruncate).

Each check passes when the timed action returns (or the reply comes)
within MARGIN (0.1 s) of OpenSSH's time for the same action, and:
  - every DATA byte is one the file held at that offset while the READ
    was outstanding: the pattern's byte, or inside a punched hole a zero
    (after a truncation, old bytes past the new end are fine, zeros never
    but on FUSE, where read(2) itself can give them: see Expect);
  - a DATA reply is short, or a READ gets EOF, only where the file ended
    at some moment during the READ (the new size after a truncation);
  - every reply is well formed, in order, and the session lives on: the
    fresh read of the whole file gives exactly its new content, CLOSE is
    answered, and the server exits 0 at EOF;
  - the second session's reply to its OPEN is of the same type as
    OpenSSH's.
A timed action that the server under test makes wait is ended by the
client reading again after 1 s; its time is still what is compared.  A
check that failed only on time, by less than 0.3 s, is run again once
(OpenSSH's reference too), so that one scheduling hiccup does not fail it.

Usage: readsafety.py --server PATH [--server-args ARGS] [--openssh PATH]
         --target NAME=DIR ... [--overlay NAME=LOWER:UPPER:WORK:MERGED]
         [--root-owned NAME,...] [--user nobody] [--only PATTERN]
         [--expect-direct] [-v]
Prints PASS/FAIL lines and a final "N passed, N failed"; exit 0, 1 or 77.
Needs root (files of other owners, mounts for the overlay).
"""

import argparse
import array
import ctypes
import ctypes.util
import fcntl
import fnmatch
import hashlib
import os
import pwd
import select
import shlex
import signal
import struct
import subprocess
import sys
import termios
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import procinfo  # noqa: E402
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_READ, FXF_WRITE, FXP_DATA, FXP_HANDLE, FXP_READ, FXP_STATUS, FX_EOF,
    packet, string, u32, u64)

KIB = 1024
MIB = 1024 * KIB
FILE_SIZE = 8 * MIB
NREADS = 64
SIZES = (32 * KIB, 255 * KIB)
MARGIN = 0.1
# How long the client goes on not reading when the action has not
# returned, past OpenSSH's time plus MARGIN (a failure either way).
GRACE = 0.9
# Still not reading for this long after the action returned.
AFTER = 0.15
# A failure on time alone, by less than this, is run again once.
RETRY_BELOW = 0.3
STEADY_RATE = 8e6
STEADY_AT = 0.35
ACTIONS = ("open-wronly", "truncate", "open-trunc", "punch-hole",
           "session-open")

FALLOC_FL_KEEP_SIZE = 0x01
FALLOC_FL_PUNCH_HOLE = 0x02

ARGS = None
PATTERN = b""
PASSED = 0
FAILED = 0
LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
LIBC.fallocate.argtypes = (ctypes.c_int, ctypes.c_int, ctypes.c_int64,
                           ctypes.c_int64)


def log(msg):
    if ARGS.verbose:
        print("  " + msg)
        sys.stdout.flush()


def make_pattern(n):
    """n bytes, none zero, that differ from offset to offset (64-byte
    BLAKE2b blocks of the block number, zeros turned into 0x5a)."""
    out = bytearray()
    for i in range((n + 63) // 64):
        out += hashlib.blake2b(struct.pack("<Q", i),
                               digest_size=64).digest()
    table = bytes([0x5A]) + bytes(range(1, 256))
    return bytes(out[:n]).translate(table)


# ------------------------------------------------------------ targets

class Owner:
    def __init__(self, name, uid, gid):
        self.name, self.uid, self.gid = name, uid, gid


def write_file(path, owner):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(PATTERN)
        while view:
            view = view[os.write(fd, view):]
        os.fchown(fd, owner.uid, owner.gid)
        os.fchmod(fd, 0o644)
    finally:
        os.close(fd)


def fs_type(path):
    """The type of the file system path is on (/proc/self/mounts)."""
    path = os.path.realpath(path)
    best, kind = "", "?"
    with open("/proc/self/mounts") as f:
        for line in f:
            w = line.split()
            m = w[1].replace("\\040", " ")
            if (path == m or path.startswith(m.rstrip("/") + "/")) and \
                    len(m) >= len(best):
                best, kind = m, w[2]
    return kind


class Target:
    """A directory on one file system; each run gets a fresh file."""

    count = 0

    def __init__(self, name, path):
        self.name, self.path = name, path
        self.fuse = path is not None and fs_type(path).startswith("fuse")
        self.fs = fs_type(path) if path is not None else "overlay"

    def direct_expected(self, owner, path):
        """Are a cold file's random READs read direct here?  Where the
        file system gives direct I/O an alignment (ext4 and xfs; btrfs,
        tmpfs and FUSE give none) and the kernel tells the user what is
        cached (cachestat(2): a file the user may write); and the kernel
        has both (Linux 6.1 and 6.5: asked, not assumed)."""
        return ARGS.expect_direct and self.fs in ("ext4", "xfs") and \
            owner is ARGS.user and kernel_reads_direct(path)

    def fresh_name(self):
        Target.count += 1
        return "rs-%05d" % Target.count

    def new_file(self, owner):
        path = os.path.join(self.path, self.fresh_name())
        write_file(path, owner)
        return path

    def done(self, path):
        try:
            os.unlink(path)
        except OSError:
            pass


def run_quiet(argv):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), r.stdout.strip()))


class OverlayTarget(Target):
    """An overlay mounted afresh for each run, its file written into the
    lower layer while it is not mounted (so that the overlay never sees
    its layers change under it); copied_up opens it for writing through
    the overlay once before the run (the copy-up), else it stays in the
    lower layer until the run's action copies it up."""

    def __init__(self, name, spec, copied_up):
        Target.__init__(self, name, None)
        self.lower, self.upper, self.work, self.merged = spec
        self.copied_up = copied_up
        self.mounted = False

    def new_file(self, owner):
        base = self.fresh_name()
        write_file(os.path.join(self.lower, base), owner)
        run_quiet(["mount", "-t", "overlay", "overlay", "-o",
                   "lowerdir=%s,upperdir=%s,workdir=%s,index=off" % (
                       self.lower, self.upper, self.work), self.merged])
        self.mounted = True
        path = os.path.join(self.merged, base)
        upper = os.path.join(self.upper, base)
        if self.copied_up:
            os.close(os.open(path, os.O_WRONLY))
            if not os.path.exists(upper):
                raise RuntimeError("%s was not copied up" % path)
        elif os.path.lexists(upper):
            raise RuntimeError("%s is in the upper layer" % path)
        return path

    def done(self, path):
        if self.mounted:
            for _ in range(50):
                r = subprocess.run(["umount", self.merged],
                                   stderr=subprocess.DEVNULL)
                if r.returncode == 0:
                    break
                time.sleep(0.1)
            else:
                run_quiet(["umount", "-l", self.merged])
            self.mounted = False
        base = os.path.basename(path)
        for d in (self.lower, self.upper):
            try:
                os.unlink(os.path.join(d, base))
            except OSError:
                pass


# ------------------------------------------------------------ servers

def drop_to(owner):
    def preexec():
        os.setgroups([])
        os.setgid(owner.gid)
        os.setuid(owner.uid)
    return preexec


def spawn(kind):
    if kind == "openssh":
        argv = [ARGS.openssh]
    else:
        argv = [ARGS.server] + shlex.split(ARGS.server_args)
    return sc.Client(argv + ["-e"], cwd="/", timeout=20,
                     preexec_fn=drop_to(ARGS.user))


def unread(c):
    buf = array.array("i", [0])
    fcntl.ioctl(c.rfd, termios.FIONREAD, buf)
    return buf[0] + len(c.rbuf)


def send_noread(c, data, timeout=10):
    """All of data to the server's stdin, reading none of its output."""
    view = memoryview(data)
    deadline = time.monotonic() + timeout
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise sc.Timeout("the server stopped taking input")
        _, w, _ = select.select([], [c.wfd], [], left)
        if w:
            try:
                view = view[os.write(c.wfd, view):]
            except BlockingIOError:
                pass


def wait_stalled(c, quiet=0.2, cap=5.0):
    """Until the server's unread output has not grown for quiet seconds
    (it has done all it will do for a client that does not read)."""
    start = time.monotonic()
    last, since = -1, start
    while True:
        now = time.monotonic()
        n = unread(c)
        if n != last:
            last, since = n, now
        elif n > 0 and now - since >= quiet:
            return n
        if now - start > cap:
            return n
        time.sleep(0.01)


def exit_text(rc):
    if rc is None:
        return "still running"
    if rc < 0:
        try:
            return "killed by %s" % signal.Signals(-rc).name
        except ValueError:
            return "killed by signal %d" % -rc
    return "exit %d" % rc


def stderr_tail(c):
    try:
        text = c.stderr_bytes()[-300:]
    except OSError:
        return ""
    return text.decode("utf-8", "replace").strip().replace("\n", " | ")


# ------------------------------------------------------------ the action

def timed_action(action, path, geo):
    """Fork a process that does the action and writes its time (or the
    errno) to a pipe; returns (pid, read end of that pipe)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            err = 0
            t0 = time.monotonic()
            try:
                if action == "open-wronly":
                    fd = os.open(path, os.O_WRONLY)
                elif action == "open-trunc":
                    fd = os.open(path, os.O_RDONLY | os.O_TRUNC)
                elif action == "truncate":
                    fd = -1
                    os.truncate(path, geo.new_size)
                elif action == "punch-hole":
                    fd = os.open(path, os.O_WRONLY)
                    if LIBC.fallocate(fd, FALLOC_FL_PUNCH_HOLE |
                                      FALLOC_FL_KEEP_SIZE, geo.hole[0],
                                      geo.hole[1] - geo.hole[0]) != 0:
                        err = ctypes.get_errno()
                else:
                    raise ValueError(action)
                took = time.monotonic() - t0
                if fd >= 0:
                    os.close(fd)
            except OSError as e:
                took = time.monotonic() - t0
                err = e.errno
            os.write(w, b"%.6f %d" % (took, err))
        finally:
            os._exit(0)
    os.close(w)
    return pid, r


def action_result(child, timeout):
    """(seconds, errno) from timed_action's process, or None if it has not
    said within timeout."""
    pid, r = child
    ready, _, _ = select.select([r], [], [], max(0.0, timeout))
    if not ready:
        return None
    data = os.read(r, 100)
    os.close(r)
    os.waitpid(pid, 0)
    took, err = data.split()
    return float(took), int(err)


def reap_action(child):
    pid, r = child
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    try:
        os.close(r)
    except OSError:
        pass


# ------------------------------------------------------------ what the
# file may hold

class Geometry:
    """Where a run's action lands: the READs cover [0, span)."""

    def __init__(self, rsize, count=NREADS):
        span = min(rsize * count, FILE_SIZE)
        self.new_size = span // 2 + 12345
        self.hole = (span // 4 + 1000, span // 2 + 1000)


class Expect:
    """The bytes a READ may return: the pattern's; zeros inside hole; the
    file ends at FILE_SIZE, or, once a truncation may have happened, at
    the new size (EOF or a short reply there is fine, old bytes past it
    too).

    fuse_race: zeros past the new end are tolerated too (counted in
    fuse_zeros).  On FUSE, read(2) itself can return them: a read that
    reaches the daemon after it truncated the file comes back short, the
    kernel fills the rest of the page with zeros, and until the
    truncation's reply has set the new size it hands them out below the
    old one.  OpenSSH's server sends them then (seen about once in 50
    truncations at 1 ms per call).  Nowhere else, and never below the new
    end."""

    def __init__(self, fuse_race=False):
        self.hole = None
        self.min_end = FILE_SIZE
        self.fuse_race = fuse_race
        self.fuse_zeros = 0

    def zero_ok(self, at):
        if self.hole and self.hole[0] <= at < self.hole[1]:
            return True
        return self.fuse_race and at >= self.min_end

    def check(self, off, data, length):
        """Problems with one DATA reply to READ(off, length)."""
        n = len(data)
        if n == 0 or n > length:
            return ["DATA of %d bytes for READ(%d, %d)" % (n, off, length)]
        out = []
        if off + n < min(off + length, self.min_end):
            out.append("short DATA: %d of %d bytes at %d, the file never "
                       "ended before %d" % (n, length, off, self.min_end))
        if off + n > FILE_SIZE:
            out.append("DATA past the file's end: %d bytes at %d"
                       % (n, off))
            return out
        if data == PATTERN[off:off + n]:
            return out
        step = 4096
        for i in range(0, n, step):
            got = data[i:i + step]
            want = PATTERN[off + i:off + i + len(got)]
            if got == want:
                continue
            bad = [k for k in range(len(got)) if got[k] != want[k] and
                   not (got[k] == 0 and self.zero_ok(off + i + k))]
            if not bad:
                if self.fuse_race:
                    self.fuse_zeros += sum(
                        1 for k in range(len(got)) if got[k] != want[k]
                        and not (self.hole and self.hole[0] <= off + i + k
                                 < self.hole[1]))
                continue
            j = bad[0]
            out.append("READ(%d, %d): byte %d is 0x%02x, the file only "
                       "ever held 0x%02x there%s (%d such bytes in that "
                       "4 KiB)" % (off, length, off + i + j, got[j],
                                   want[j], "" if got[j] else ": a zero",
                                   len(bad)))
            return out
        return out

    def check_eof(self, off):
        if off < self.min_end:
            return ["EOF for a READ at %d, the file never ended before %d"
                    % (off, self.min_end)]
        return []


def final_content(action, geo):
    if action == "truncate":
        return PATTERN[:geo.new_size]
    if action == "open-trunc":
        return b""
    if action == "punch-hole":
        a, b = geo.hole
        return PATTERN[:a] + bytes(b - a) + PATTERN[b:]
    return PATTERN


def read_whole(c, h, want, chunk=32 * KIB, depth=64):
    """READ the file from 0 to EOF, depth requests outstanding; every reply
    must match want (the file's content now) exactly.  Problems."""
    out = []
    off = 0
    pending = []
    limit = FILE_SIZE + chunk
    got_eof = False
    while True:
        while not got_eof and len(pending) < depth and off < limit:
            pending.append((c.read(h, off, chunk, wait=False), off))
            off += chunk
        if not pending:
            break
        rid, o = pending.pop(0)
        rep = c.expect(rid)
        if rep.type == FXP_DATA:
            n = len(rep.data)
            if rep.data != want[o:o + n] or n == 0 or \
                    n < min(chunk, len(want) - o):
                out.append("a fresh READ(%d, %d) after the action got %d "
                           "bytes that are not the file's content now"
                           % (o, chunk, n))
                break
        elif rep.is_status(FX_EOF):
            got_eof = True
            if o < len(want):
                out.append("a fresh READ at %d after the action got EOF; "
                           "the file has %d bytes" % (o, len(want)))
                break
        else:
            out.append("a fresh READ at %d after the action: %r" % (o, rep))
            break
    for rid, o in pending:
        c.expect(rid)
    return out


# ------------------------------------------------------------ one run

class Result:
    def __init__(self):
        self.took = None       # seconds the action took
        self.problems = []     # anything but time
        self.reply2 = None     # the second session's reply type
        self.fuse_zeros = 0    # zeros past a new end that FUSE gave
        self.note = ""


def finish_session(c, h, res, who=""):
    if h is not None:
        rep = c.close_handle(h)
        if not rep.is_status(0):
            res.problems.append("%sCLOSE: %r" % (who, rep))
    rc, rest = c.finish(20)
    if rc != 0 or rest:
        res.problems.append("%sthe server's end: %s, %d unread bytes; "
                            "stderr: %s" % (who, exit_text(rc), len(rest),
                                            stderr_tail(c)))


def check_read(res, exp, off, length, rep):
    """The problems of rep, the reply to READ(off, length), to res."""
    if rep.type == FXP_DATA:
        res.problems += exp.check(off, rep.data, length)
    elif rep.is_status(FX_EOF):
        res.problems += exp.check_eof(off)
    else:
        res.problems.append("READ(%d, %d): %r" % (off, length, rep))


def await_action(res, child, timeout, failed=None, late=None):
    """Waits up to timeout seconds for the action child.  Returned: the
    time it took goes to res.took and, when failed names the action, an
    error it met to res.problems; None (nothing left to reap).  Not
    returned: child again; when late is given, that is a problem and the
    time infinite."""
    r = action_result(child, timeout)
    if r is None:
        if late is not None:
            res.problems.append(late)
            res.took = float("inf")
        return child
    res.took, err = r
    if err and failed is not None:
        res.problems.append("%s failed: %s" % (failed, os.strerror(err)))
    return None


def session_failed(res, e, c):
    """A client's session c broke with e."""
    res.problems.append("session: %s: %s (%s; stderr: %s)" % (
        type(e).__name__, e, exit_text(c.proc.poll()) if c else "-",
        stderr_tail(c) if c else ""))


def wind_up(res, exp, target, path, clients, child):
    """The end of every run, however it went: the clients closed, the
    action child reaped, the file given back to its target; a run whose
    action never returned took forever."""
    for c in clients:
        if c is not None:
            c.close()
    if child is not None:
        r = action_result(child, 20)
        if r is None:
            reap_action(child)
        elif res.took is None:
            res.took = r[0]
    res.fuse_zeros = exp.fuse_zeros
    target.done(path)
    if res.took is None:
        res.took = float("inf")


STATX_DIOALIGN = 0x2000
NR_CACHESTAT = 451


def kernel_reads_direct(path):
    """Does this kernel give path a direct I/O alignment (statx(2)
    STATX_DIOALIGN) and answer cachestat(2) for it?"""
    buf = ctypes.create_string_buffer(256)
    if LIBC.statx(-100, path.encode(), 0, STATX_DIOALIGN, buf) != 0:
        return False
    mask = struct.unpack_from("<I", buf, 0)[0]
    offset_align = struct.unpack_from("<I", buf, 0x9C)[0]
    if not mask & STATX_DIOALIGN or offset_align == 0:
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        rng = ctypes.create_string_buffer(struct.pack("<QQ", 0, 4096))
        out = ctypes.create_string_buffer(40)
        return LIBC.syscall(NR_CACHESTAT, fd, rng, out, 0) == 0
    finally:
        os.close(fd)


def drop_cached(path):
    """The file's pages out of the page cache (written back first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def holds_direct(c, path):
    """Does the server behind c hold a descriptor of path open with
    O_DIRECT?"""
    st = os.stat(path)
    return (st.st_dev, st.st_ino) in procinfo.o_direct_files(c.proc.pid)


def stalled_run(kind, target, owner, rsize, action, limit, cold=False):
    """One stalled-client run; limit: seconds to wait for the action before
    the client reads again (None: the reference, no limit to speak of).
    cold: the file's pages dropped first, the READs sent shuffled."""
    res = Result()
    geo = Geometry(rsize)
    exp = Expect(target.fuse)
    path = target.new_file(owner)
    s1 = s2 = child = None
    h2 = None
    order = list(range(NREADS))
    if cold:
        drop_cached(path)
        # No READ right after the one before, none at 0 first: none
        # looks sequential, so no read-ahead window caches the file.
        order = [(i * 37 + 5) % NREADS for i in order]
    try:
        s1 = spawn(kind)
        s1.init()
        if action == "session-open":
            s2 = spawn(kind)
            s2.init()
        h = s1.check_handle(s1.open(path, FXF_READ), "OPEN")
        batch = b"".join(packet(FXP_READ, u32(1000 + i) + string(h) +
                                u64(i * rsize) + u32(rsize))
                         for i in order)
        send_noread(s1, batch)
        held = wait_stalled(s1)
        if cold and kind == "server" and \
                target.direct_expected(owner, path) and \
                not holds_direct(s1, path):
            res.problems.append("the shuffled READs of a cold file were "
                                "not read direct (no O_DIRECT descriptor "
                                "of it in the server)")
        wait = 20.0 if limit is None else limit + GRACE
        t0 = time.monotonic()
        rid2 = None
        if action == "session-open":
            rid2 = s2.open(path, FXF_WRITE, wait=False)
            rep2 = s2.poll_reply(wait)
            if rep2 is not None:
                res.took = time.monotonic() - t0
        else:
            if action == "truncate":
                exp.min_end = geo.new_size
            elif action == "open-trunc":
                exp.min_end = 0
            elif action == "punch-hole":
                exp.hole = geo.hole
            child = timed_action(action, path, geo)
            child = await_action(res, child, wait, failed="the action")
        if res.took is not None:
            time.sleep(AFTER)
        else:
            res.note = "still waiting after %.2f s: the client reads " \
                "again" % wait
        # The client reads again: every reply, in order.
        for i in order:
            check_read(res, exp, i * rsize, rsize, s1.expect(1000 + i))
        if res.took is None:
            if action == "session-open":
                rep2 = s2.expect(rid2, 20)
                res.took = time.monotonic() - t0
            else:
                child = await_action(
                    res, child, 20, late="the action did not return within "
                    "20 s of the client reading again")
        if action == "session-open":
            res.reply2 = rep2.type_name
            if rep2.type == FXP_HANDLE:
                h2 = rep2.handle
            elif rep2.type != FXP_STATUS:
                res.problems.append("second session's OPEN: %r" % rep2)
        if len(res.problems) <= 4:
            res.problems += read_whole(s1, h, final_content(action, geo))
        finish_session(s1, h, res)
        if s2 is not None:
            finish_session(s2, h2, res, "second session: ")
        log("%s %s: %d reply bytes waited unread; the action took %.3f s%s"
            % (kind, action, held, res.took,
               " (%s)" % res.note if res.note else ""))
    except (sc.SFTPError, OSError) as e:
        session_failed(res, e, s1)
    finally:
        wind_up(res, exp, target, path, (s1, s2), child)
    return res


def steady_size(how, pos, chunk):
    """The size a steady run truncates to, the next reply to read being
    at pos: inside the outstanding READs' range, or 0 (logrotate's
    copytruncate)."""
    if how == "truncate":
        return min(pos + 16 * chunk + 12345, FILE_SIZE - 1)
    return 0


def steady_run(kind, target, owner, how, limit):
    """One steadily reading client; another process truncates the file
    (steady_size) at STEADY_AT seconds."""
    del limit  # the client never stops reading
    res = Result()
    exp = Expect(target.fuse)
    chunk, depth = 32 * KIB, NREADS
    path = target.new_file(owner)
    c = child = None
    new_size = None
    try:
        c = spawn(kind)
        c.init()
        h = c.check_handle(c.open(path, FXF_READ), "OPEN")
        pending = []
        got = {}
        next_off = 0
        eof = False
        t0 = time.monotonic()
        consumed = 0
        while True:
            while not eof and len(pending) < depth and next_off < FILE_SIZE:
                pending.append((c.read(h, next_off, chunk, wait=False),
                                next_off))
                next_off += chunk
            if not pending:
                break
            if child is None and new_size is None and \
                    time.monotonic() - t0 >= STEADY_AT:
                new_size = steady_size(how, pending[0][1], chunk)
                exp.min_end = new_size
                geo = Geometry(chunk)
                geo.new_size = new_size
                child = timed_action("truncate", path, geo)
            if child is not None and res.took is None:
                child = await_action(res, child, 0, failed="truncate")
            due = t0 + consumed / STEADY_RATE
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            rid, off = pending.pop(0)
            rep = c.expect(rid)
            check_read(res, exp, off, chunk, rep)
            if rep.type == FXP_DATA:
                got[off] = len(rep.data)
                consumed += len(rep.data)
            elif rep.is_status(FX_EOF):
                eof = True
        if child is not None:
            child = await_action(
                res, child, 20, late="the truncation did not return within "
                "20 s of the download's end")
        if new_size is None:
            res.problems.append("the download ended before the truncation")
        elif len(res.problems) <= 4:
            # As a client would: ask again for what short replies left out
            # below the end it saw; then the file is exactly the old
            # bytes up to the new size.
            have = 0
            for off in sorted(got):
                if off > have:
                    break
                have = max(have, off + got[off])
            while have < new_size:
                rep = c.read(h, have, chunk)
                if rep.type != FXP_DATA:
                    res.problems.append("READ(%d) below the new end %d: %r"
                                        % (have, new_size, rep))
                    break
                res.problems += exp.check(have, rep.data, chunk)
                have += len(rep.data)
            res.problems += read_whole(c, h, PATTERN[:new_size])
        finish_session(c, h, res)
        log("%s steady: truncation to %s at %.2f s took %s" % (
            kind, new_size, STEADY_AT,
            "%.3f s" % res.took if res.took is not None else "?"))
    except (sc.SFTPError, OSError) as e:
        session_failed(res, e, c)
    finally:
        wind_up(res, exp, target, path, (c,), child)
    return res


# ------------------------------------------------------------ checks

def compare(name, run):
    """run(kind, limit) -> Result, for OpenSSH's server and then ours."""
    global PASSED, FAILED
    for attempt in (1, 2):
        ref = run("openssh", None)
        ours = run("server", ref.took + MARGIN)
        problems = list(ours.problems)
        problems += ["OpenSSH's server too: " + p for p in ref.problems]
        if ref.reply2 != ours.reply2:
            problems.append("the second session's OPEN got %s, OpenSSH's "
                            "%s" % (ours.reply2, ref.reply2))
        late = ours.took - (ref.took + MARGIN)
        if late > 0:
            problems.insert(0, "took %.3f s, OpenSSH's %.3f s: more than "
                            "%.1f s longer%s" % (
                                ours.took, ref.took, MARGIN,
                                " (%s)" % ours.note if ours.note else ""))
        if attempt == 1 and late > 0 and late < RETRY_BELOW and \
                len(problems) == 1:
            print("NOTE: %s: %s; once more" % (name, problems[0]))
            continue
        break
    for who, r in (("the server", ours), ("OpenSSH's server", ref)):
        if r.fuse_zeros:
            print("NOTE: %s: %s sent %d zero bytes past the new end, as "
                  "read(2) on FUSE gives them while a truncation is on its "
                  "way (tolerated on FUSE only)" % (name, who,
                                                     r.fuse_zeros))
    times = "server %.3f s, OpenSSH %.3f s" % (ours.took, ref.took)
    if problems:
        FAILED += 1
        print("FAIL: %s: %s" % (name, "; ".join(problems[:6])))
    else:
        PASSED += 1
        print("PASS: %s (%s)" % (name, times))
    sys.stdout.flush()


def checks_for(target, owner):
    for rsize in SIZES:
        for action in ACTIONS:
            name = "%s %s stalled %dK x%d %s" % (
                target.name, owner.name, rsize // KIB, NREADS, action)
            yield name, (lambda kind, limit, r=rsize, a=action:
                         stalled_run(kind, target, owner, r, a, limit))
    # Where READs cannot read direct (no alignment: btrfs, tmpfs, FUSE,
    # overlayfs) they take the buffered path the stalled checks above
    # cover: one action there, all three where they read direct.
    direct_fs = target.fs in ("ext4", "xfs")
    for action in ("truncate", "open-trunc", "punch-hole"):
        if not direct_fs and action != "truncate":
            continue
        name = "%s %s cold shuffled 32K x%d %s" % (
            target.name, owner.name, NREADS, action)
        yield name, (lambda kind, limit, a=action:
                     stalled_run(kind, target, owner, 32 * KIB, a, limit,
                                 cold=True))
    for how in ("truncate", "truncate-to-0"):
        name = "%s %s steady 8MB/s %s" % (target.name, owner.name, how)
        yield name, (lambda kind, limit, h=how:
                     steady_run(kind, target, owner, h, limit))


def main():
    global ARGS, PATTERN, PASSED, FAILED
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--expect-direct", action="store_true",
                    help="the server reads a cold file's random READs "
                    "direct where it can (ours, without --nocache)")
    ap.add_argument("--server-args", default="")
    ap.add_argument("--openssh", default="/usr/lib/openssh/sftp-server")
    ap.add_argument("--target", action="append", default=[],
                    metavar="NAME=DIR")
    ap.add_argument("--overlay", action="append", default=[],
                    metavar="NAME=LOWER:UPPER:WORK:MERGED")
    ap.add_argument("--root-owned", default="",
                    help="targets also tried with a root-owned file")
    ap.add_argument("--user", default="nobody")
    ap.add_argument("--only", default="*")
    ap.add_argument("-v", "--verbose", action="store_true")
    ARGS = ap.parse_args()
    # Stopped from outside: unwind, so that servers are killed and the
    # overlay is unmounted (readsafety.sh's trap does the rest).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ARGS.server = os.path.abspath(ARGS.server)
    for what, path in (("server", ARGS.server), ("OpenSSH's server",
                                                  ARGS.openssh)):
        if not os.access(path, os.X_OK):
            print("SKIP: no %s at %s" % (what, path))
            print("0 passed, 0 failed")
            return 77
    if os.geteuid() != 0:
        print("SKIP: needs root (files of other owners, servers run as %s)"
              % ARGS.user)
        print("0 passed, 0 failed")
        return 77
    pw = pwd.getpwnam(ARGS.user)
    ARGS.user = Owner("%s-owned" % ARGS.user, pw.pw_uid, pw.pw_gid)
    root = Owner("root-owned", 0, 0)
    targets = []
    for spec in ARGS.target:
        name, _, path = spec.partition("=")
        targets.append(Target(name, path))
    for spec in ARGS.overlay:
        name, _, dirs = spec.partition("=")
        dirs = dirs.split(":")
        if len(dirs) != 4:
            ap.error("--overlay NAME=LOWER:UPPER:WORK:MERGED")
        targets.append(OverlayTarget(name + "-lower", dirs, False))
        targets.append(OverlayTarget(name + "-copied-up", dirs, True))
    if not targets:
        ap.error("no --target")
    root_on = set(x for x in ARGS.root_owned.split(",") if x)
    PATTERN = make_pattern(FILE_SIZE)
    t_start = time.monotonic()
    for target in targets:
        owners = [ARGS.user] + ([root] if target.name in root_on else [])
        t0 = time.monotonic()
        for owner in owners:
            for name, run in checks_for(target, owner):
                if not fnmatch.fnmatch(name, ARGS.only):
                    continue
                try:
                    compare(name, run)
                except Exception:  # a bug in the test is a failure too
                    FAILED += 1
                    print("FAIL: %s: exception" % name)
                    traceback.print_exc(file=sys.stdout)
        log("%s: %.1f s" % (target.name, time.monotonic() - t0))
    log("all: %.1f s" % (time.monotonic() - t_start))
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

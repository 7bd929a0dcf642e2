#!/usr/bin/python3
"""Hostile clients against the built server.

Each check starts the server on pipes (or a socketpair, as upstream sshd
gives it) and misbehaves:

  oversized       packet lengths past 256 KiB: exit 11, no reply
  oversized-after-requests  the requests before such a length are
                  answered first
  zero-length     a packet length of 0: exit 255, no reply
  max-packet      a WRITE packet of exactly 256 KiB is accepted; READ
                  lengths past the maximum are clamped to 261120
  truncated       a stream cut at every byte boundary (inside packets over
                  512 bytes: near their edges and every 251st byte), then
                  EOF: exit 0, one reply per complete packet, no crash, no
                  hang
  huge-strings    string and count fields far larger than the packet:
                  exit 255 after answering what came before, nothing after
  before-init     requests before INIT: exit 255, no reply
  handles-limit   opens until the descriptor limit (server run with
                  RLIMIT_NOFILE 256): a FAILURE status, at least as many
                  handles as limits@openssh.com advertises, opens work
                  again once handles are closed
  handles-after-reads  the same after a pipelined download: the
                  advertised number of handles can still be opened
  handles-during-random-reads  the same while shuffled READs of a cold
                  file (read direct where the file system allows) wait
                  unread on two handles
  writeonly-not-read  READs on a handle opened for writing only get a
                  STATUS, also on a cold file
  reopen-planted-proc  with a /proc whose self/fd entries name another
                  file (as a chroot's may), a cold file's random READs
                  still return its own bytes
  handles-many    3000 handles open at once with a large enough limit
  idle-memory     the READ memory a download used is given back after a
                  second of idleness, but for 64 KiB
  read-flood      2048 outstanding 32 KiB READs while the client reads no
                  reply for a few seconds: the server's memory grows by at
                  most READ memory's smallest window (64 KiB) or one READ,
                  as the client never read, and stdout is full; then
                  every request answered once, in order, with the right data
  read-flood-big  the same with 256 READs of 255 KiB
  write-flood     the same with 2048 32 KiB WRITEs; the file then holds
                  exactly the data
  read-write-flood  a READ, then the WRITE flood, the client not reading
                  for a few seconds, then reading as it sends the rest
  eager-writer    a READ, then the WRITE flood, the client reading nothing
                  until all is sent (OpenSSH's server takes it all)
  eager-writer-same-file  the same, the WRITEs going to the file the READ
                  read, past the bytes it read
  eager-writer-behind-reads  the same behind 3 MiB of READ replies that
                  fill stdout: the server still takes 1.5 MiB of WRITEs
  eager-writer-behind-reads-socket  the same on a socketpair behind 12 MiB
                  of READ replies, with 2000 small requests written one
                  by one
  disconnect      the client vanishes mid-stream (pipes and socketpair;
                  both directions at once, or stdout first): the server
                  exits without crashing, every acknowledged WRITE is in
                  the file, and so is every complete WRITE it received
  unknown-types   unknown packet types between requests: no reply to them,
                  no stall (the next reply comes promptly)
  read-truncate   a READ's reply in stdout, unread, while another process
                  truncates the file to 100 bytes and appends 8000 C: that
                  goes ahead at once, and the reply holds the old 64 KiB
                  of A (pipes and socketpair; handle open or closed behind
                  the READ, or a file another process has open for writing)
  flood-truncate  the same with 48 READs of 255 KiB, more than stdout and
                  READ memory hold: the truncation goes ahead at once;
                  every reply holds what the file held when its READ ran
  vanished-client  a READ's reply unread, then a request that waits for
                  the reader (a WRITE through a second handle, an OPEN for
                  writing, an OPEN of another file), then the client
                  closes both ends: the server carries out what it
                  received and exits
  stalled-client-sleeps  the client reads nothing for a while with such a
                  request waiting, or behind a flood of READs: at most 10
                  wake-ups a second (voluntary context switches)
  hints-small-depth  --queue-depth 1 to 8: a sequential download with
                  fsync and copy-data between its READs; none fails
  corpus          every stream in the given corpus directories (fuzz seeds
                  and fuzz regressions) replayed: no crash, no hang

Usage: hostile.py --server PATH [--server-args "ARGS"] [--label NAME]
                  [--workdir DIR] [--only PATTERN] [--corpus DIR]... [-v]
Prints PASS/FAIL lines and a final "N passed, N failed"; exit 0, 1, or 77.
"""

import argparse
import array
import fcntl
import fnmatch
import os
import resource
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import termios
import threading
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import procinfo  # noqa: E402
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_CREAT, FXF_READ, FXF_TRUNC, FXF_WRITE, FXP_ATTRS, FXP_CLOSE,
    FXP_DATA, FXP_EXTENDED, FXP_FSTAT, FXP_HANDLE, FXP_INIT, FXP_MKDIR, FXP_OPEN, FXP_READ,
    FXP_RENAME, FXP_SETSTAT, FXP_STAT, FXP_STATUS, FXP_VERSION, FXP_WRITE,
    FX_EOF, FX_FAILURE, FX_OK, FX_OP_UNSUPPORTED, encode_attrs, packet, string, u32,
    u64)

KIB = 1024
MIB = 1024 * 1024
MAX_PACKET = 256 * KIB
MAX_READ = MAX_PACKET - 1024
FLOOD_COUNT = 2048
FLOOD_CHUNK = 32 * KIB
RSS_LIMIT = 64 * MIB
# The bounds of doc/operations.md: READ memory's smallest window (a
# client that never reads keeps READs within it, or one READ at a time).
READ_WINDOW_LEAST = 64 * 1024
# What an idle session may keep beyond its RSS before a download: the
# smallest window and the allocator's rounding.
IDLE_KEPT = 192 * 1024
QUEUE_DEPTH = 64
PAUSE = 3.0

ARGS = None
PASSED = 0
FAILED = 0


class CheckFailed(Exception):
    pass


def require(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def log(msg):
    if ARGS.verbose:
        print("  " + msg)
        sys.stdout.flush()


# ------------------------------------------------------------ the server

def server_argv(extra=()):
    return ([ARGS.server] + shlex.split(ARGS.server_args)
            + ["-e", "-l", "VERBOSE"] + list(extra))


def nofile(limit):
    def preexec():
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    return preexec


def start(cwd, socketpair=False, preexec_fn=None, timeout=20, extra=()):
    return sc.Client(server_argv(extra), cwd=cwd, socketpair=socketpair,
                     preexec_fn=preexec_fn, timeout=timeout)


def is_sanitized():
    """ASan or valgrind builds need far more memory than the bound."""
    try:
        out = subprocess.run(["ldd", ARGS.server], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "libasan" in out or "libubsan" in out


def rss_of(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * KIB
    except OSError:
        pass
    return 0


class RssSampler:
    """Samples the server's VmRSS every 50 ms in a thread; keeps the peak."""

    def __init__(self, pid):
        self.pid = pid
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_of(self.pid))
            self.stop.wait(0.05)

    def done(self):
        self.stop.set()
        self.thread.join()
        return self.peak


def exit_text(rc):
    if rc < 0:
        return "killed by signal %d (%s)" % (
            -rc, signal.Signals(-rc).name if -rc in
            signal.valid_signals() else "?")
    return "exit %d" % rc


def require_exit(c, want, timeout=20):
    """Close stdin, collect what is left, and check the exit status."""
    rc, rest = c.finish(timeout)
    require(rc == want, "expected exit %d, got %s; stderr: %r"
            % (want, exit_text(rc), c.stderr_bytes()[-400:]))
    return rest


def write_noread(c, data, timeout):
    """Write all of data to the server's stdin without reading any reply
    (the client 'stops reading').  Raises Timeout when the server stops
    taking input."""
    view = memoryview(data)
    deadline = time.monotonic() + timeout
    while view:
        left = deadline - time.monotonic()
        if left <= 0:
            raise sc.Timeout("server stopped taking input with %d bytes "
                             "left" % len(view))
        _, w, _ = select.select([], [c.wfd], [], left)
        if not w:
            continue
        try:
            n = os.write(c.wfd, view[:1 << 20])
        except BlockingIOError:
            continue
        view = view[n:]


def write_for(c, data, seconds):
    """Write to the server's stdin without reading replies for at most
    seconds; returns how many bytes went out."""
    view = memoryview(data)
    deadline = time.monotonic() + seconds
    sent = 0
    while sent < len(data):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        _, w, _ = select.select([], [c.wfd], [], left)
        if not w:
            continue
        try:
            sent += os.write(c.wfd, view[sent:sent + (1 << 20)])
        except BlockingIOError:
            continue
    return sent


def split_replies(data):
    """Whole packets in data -> list of Reply, and the leftover bytes."""
    out = []
    while len(data) >= 4:
        n = int.from_bytes(data[:4], "big")
        if len(data) < 4 + n:
            break
        out.append(sc.Reply(data[4], data[5:4 + n], data[:4 + n]))
        data = data[4 + n:]
    return out, data


def init_packet():
    return packet(FXP_INIT, u32(3))


def req(ptype, rid, payload=b""):
    return packet(ptype, u32(rid) + payload)


def fresh_dir(name):
    path = os.path.join(ARGS.workdir, name)
    if os.path.exists(path):
        shutil.rmtree(path)
    os.makedirs(path)
    return path


def pattern(n, seed):
    """n bytes that differ per seed (cheap, deterministic)."""
    block = (seed.to_bytes(4, "big") * 16 + bytes(range(256)))[:256]
    return (block * (n // 256 + 1))[:n]


# ------------------------------------------------------------ checks

def check_oversized():
    d = fresh_dir("oversized")
    for length in (MAX_PACKET + 1, 0x7FFFFFFF, 0xFFFFFFFF):
        for after_init in (False, True):
            with start(d) as c:
                if after_init:
                    c.init()
                c.send_raw(u32(length) + bytes([FXP_STAT]) + u32(1)
                           + string("."))
                # Do not close stdin: the server must exit on its own.
                try:
                    rc = c.wait(10)
                except sc.Timeout:
                    raise CheckFailed("length %#x: server did not exit"
                                      % length)
                rest = c.pending_bytes(0.2)
                require(rc == 11, "length %#x: expected exit 11, got %s"
                        % (length, exit_text(rc)))
                require(rest == b"", "length %#x: server replied %r"
                        % (length, rest[:64]))
                if after_init:
                    require(b"bad message" in c.stderr_bytes(),
                            "no 'bad message' log line: %r"
                            % c.stderr_bytes()[-300:])


def check_oversized_after_requests():
    """Requests before the bad length are still answered."""
    d = fresh_dir("oversized2")
    with start(d) as c:
        c.init()
        c.send_raw(req(FXP_STAT, 1, string(".")) + req(FXP_STAT, 2,
                                                        string("x"))
                   + u32(MAX_PACKET + 1) + b"\x11" * 64)
        try:
            rc = c.wait(10)
        except sc.Timeout:
            raise CheckFailed("server did not exit")
        replies, rest = split_replies(c.pending_bytes(0.2))
        require(rc == 11, "expected exit 11, got %s" % exit_text(rc))
        require([r.id for r in replies] == [1, 2] and not rest,
                "replies %r, %d stray bytes (want ids 1 and 2)"
                % (replies, len(rest)))


def check_zero_length():
    d = fresh_dir("zero")
    with start(d) as c:
        c.init()
        c.send_raw(u32(0) + req(FXP_STAT, 1, string(".")))
        rest = require_exit(c, 255)
        require(rest == b"", "server replied %r" % rest[:64])


def check_max_packet():
    d = fresh_dir("maxpacket")
    with start(d) as c:
        c.init()
        h = c.check_handle(c.open("f", FXF_WRITE | FXF_CREAT | FXF_TRUNC))
        # length 262144 = type + id + handle + offset + data string
        fixed = 1 + 4 + (4 + len(h)) + 8 + 4
        data = pattern(MAX_PACKET - fixed, 1)
        pkt = packet(FXP_WRITE, u32(77) + string(h) + u64(0) + string(data))
        require(len(pkt) == 4 + MAX_PACKET, "test bug: %d" % len(pkt))
        c.send_raw(pkt)
        c.check_ok(c.expect(77), "WRITE of a 256 KiB packet")
        # a READ of more than the maximum is clamped
        rep = c.read(h, 0, 0xFFFFFFFF)
        require(rep.type == FXP_STATUS, "READ on a write-only handle: %r"
                % rep)
        c.check_ok(c.close_handle(h))
        h = c.check_handle(c.open("f", FXF_READ))
        rep = c.read(h, 0, 0xFFFFFFFF)
        require(rep.type == FXP_DATA and len(rep.data) == MAX_READ,
                "READ len 0xffffffff: expected %d bytes, got %r"
                % (MAX_READ, rep))
        require(rep.data == data[:MAX_READ], "READ returned wrong bytes")
        rep = c.read(h, MAX_READ, 1 << 31)
        require(rep.type == FXP_DATA
                and rep.data == data[MAX_READ:MAX_READ * 2],
                "second clamped READ: %r" % rep)
        c.check_ok(c.close_handle(h))
        require_exit(c, 0)
    with open(os.path.join(d, "f"), "rb") as f:
        require(f.read() == data, "file content differs")


def truncation_stream():
    """A stream of complete packets; returns (bytes, list of (end offset,
    expects a reply))."""
    pkts = [
        (init_packet(), True),
        (req(FXP_OPEN, 1, string("t") + u32(FXF_READ | FXF_WRITE | FXF_CREAT
                                            | FXF_TRUNC) + encode_attrs()),
         True),
        (req(FXP_WRITE, 2, string(u32(0)) + u64(0)
             + string(pattern(100, 2))), True),
        (req(FXP_READ, 3, string(u32(0)) + u64(0) + u32(200)), True),
        # big enough to be used in place in the input buffer
        (req(FXP_WRITE, 11, string(u32(0)) + u64(100)
             + string(pattern(6000, 11))), True),
        (req(FXP_READ, 12, string(u32(0)) + u64(0) + u32(7000)), True),
        (req(99, 4, b"unknown"), False),
        (req(FXP_STAT, 5, string("t")), True),
        (req(FXP_SETSTAT, 6, string("t") + encode_attrs(
            {"perm": 0o600, "extended": [(b"x@y", b"z")]})), True),
        (req(FXP_EXTENDED, 7, string("statvfs@openssh.com")
             + string(".")), True),
        (req(FXP_EXTENDED, 8, string("nonexistent@example.com")), True),
        (req(FXP_RENAME, 9, string("t") + string("u")), True),
        (req(FXP_CLOSE, 10, string(u32(0))), True),
    ]
    data = b""
    ends = []
    for p, reply in pkts:
        data += p
        ends.append((len(data), reply))
    return data, ends


def cut_points(ends):
    """Every byte boundary in packets up to 512 bytes; in bigger ones the
    first and last 16 and every 251st."""
    cuts = [0]
    start = 0
    for end, _ in ends:
        if end - start <= 512:
            cuts += range(start + 1, end + 1)
        else:
            cuts += range(start + 1, start + 17)
            cuts += range(start + 17, end - 16, 251)
            cuts += range(end - 16, end + 1)
        start = end
    return cuts


def check_truncated():
    d = fresh_dir("truncated")
    stream, ends = truncation_stream()
    bad = []
    cuts = cut_points(ends)
    for cut in cuts:
        want = sum(1 for end, reply in ends if end <= cut and reply)
        with start(d, timeout=10) as c:
            try:
                if cut:
                    c.send_raw(stream[:cut])
                rc, out = c.finish(10)
            except sc.SFTPError as e:
                bad.append("cut %d: %s" % (cut, e))
                continue
            replies, rest = split_replies(out)
            if rc != 0 or len(replies) != want or rest:
                bad.append("cut %d: %s, %d replies (want %d), %d stray "
                           "bytes" % (cut, exit_text(rc), len(replies),
                                      want, len(rest)))
        if len(bad) > 5:
            break
    log("%d cuts of a %d-byte stream" % (len(cuts), len(stream)))
    require(not bad, "; ".join(bad))


HUGE = [
    ("OPEN path", FXP_OPEN, u32(0xFFFFFFFF) + b"name"),
    ("OPEN path 2^31-1", FXP_OPEN, u32(0x7FFFFFFF) + b"name"),
    ("OPEN attrs", FXP_OPEN, string("f") + u32(FXF_READ)
     + u32(0x80000000) + u32(0xFFFFFFFF)),
    ("STAT path", FXP_STAT, u32(1000) + b"short"),
    ("WRITE data", FXP_WRITE, string(u32(0)) + u64(0) + u32(0xFFFFFFF0)
     + b"x" * 16),
    ("WRITE data one past", FXP_WRITE, string(u32(0)) + u64(0) + u32(17)
     + b"x" * 16),
    ("READ handle", FXP_READ, u32(0xFFFFFFFF) + u64(0) + u32(10)),
    ("SETSTAT extended count", FXP_SETSTAT, string(".")
     + u32(0x80000000) + u32(0xFFFFFFFF)),
    ("MKDIR extended count", FXP_MKDIR, string("m") + u32(0x80000000)
     + u32(0x100001)),
    ("RENAME second path", FXP_RENAME, string("a") + u32(0xFFFFFFFE)),
    ("EXTENDED name", FXP_EXTENDED, u32(0xFFFFFFFF) + b"statvfs"),
    ("users-groups-by-id", FXP_EXTENDED,
     string("users-groups-by-id@openssh.com") + u32(0xFFFFFFF0) + u32(0)),
    ("copy-data handle", FXP_EXTENDED, string("copy-data")
     + u32(0xFFFFFFFF)),
    ("hardlink path", FXP_EXTENDED, string("hardlink@openssh.com")
     + string("a") + u32(0x10000000)),
]


def check_huge_strings():
    d = fresh_dir("huge")
    bad = []
    for name, ptype, payload in HUGE:
        with start(d, timeout=10) as c:
            try:
                c.init()
                c.send_raw(req(FXP_STAT, 1, string(".")) + req(ptype, 2,
                                                                payload)
                           + req(FXP_STAT, 3, string(".")))
                rc, out = c.finish(10)
            except sc.SFTPError as e:
                bad.append("%s: %s" % (name, e))
                continue
            replies, rest = split_replies(out)
            ids = [r.id for r in replies]
            if rc != 255 or ids != [1] or rest:
                bad.append("%s: %s, replies to %s (want [1])"
                           % (name, exit_text(rc), ids))
    require(not bad, "; ".join(bad))


def check_before_init():
    d = fresh_dir("beforeinit")
    for ptype, payload in ((FXP_STAT, string(".")),
                           (FXP_OPEN, string("f") + u32(FXF_READ)
                            + encode_attrs()),
                           (FXP_EXTENDED, string("limits@openssh.com")),
                           (99, b"")):
        with start(d) as c:
            c.send_raw(req(ptype, 1, payload) + init_packet())
            rest = require_exit(c, 255)
            require(rest == b"", "type %d before INIT got %r"
                    % (ptype, rest[:64]))


def open_until_failure(c, path, limit):
    handles = []
    for _ in range(limit):
        rep = c.open(path, FXF_READ)
        if rep.type != FXP_HANDLE:
            return handles, rep
        handles.append(rep.handle)
    return handles, None


def check_handles_limited():
    d = fresh_dir("handles")
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(b"data")
    with start(d, preexec_fn=nofile(256)) as c:
        c.init()
        rep = c.limits()
        advertised = sc.parse_limits(rep.data)["max_handles"]
        handles, failure = open_until_failure(c, "f", 3000)
        log("opened %d handles, then %r; limits says %d"
            % (len(handles), failure, advertised))
        require(failure is not None, "3000 opens under a limit of 256 "
                "descriptors all succeeded")
        require(failure.is_status(FX_FAILURE),
                "the failing OPEN should be FAILURE: %r" % failure)
        require(len(handles) >= advertised,
                "limits@openssh.com advertises %d handles, only %d opened"
                % (advertised, len(handles)))
        # directories count too
        rep = c.opendir(".")
        require(rep.is_status(FX_FAILURE), "OPENDIR at the limit: %r" % rep)
        # the session still works
        require(c.stat("f").type == sc.FXP_ATTRS, "STAT at the limit")
        for h in handles[:10]:
            c.check_ok(c.close_handle(h), "close")
        more, failure = open_until_failure(c, "f", 20)
        require(len(more) == 10, "after closing 10 handles, %d opens "
                "worked (%r)" % (len(more), failure))
        rep = c.read(handles[-1], 0, 10)
        require(rep.type == FXP_DATA and rep.data == b"data",
                "READ on the last handle: %r" % rep)
        require_exit(c, 0)


def check_handles_after_reads():
    """limits@openssh.com's max-open-handles must still hold after a
    pipelined download (nothing a READ used may keep descriptors)."""
    d = fresh_dir("handles-reads")
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(pattern(64 * FLOOD_CHUNK, 5))
    with start(d, preexec_fn=nofile(256)) as c:
        c.init()
        advertised = sc.parse_limits(c.limits().data)["max_handles"]
        h = c.check_handle(c.open("f", FXF_READ))
        c.begin_batch()
        ids = [c.read(h, i * FLOOD_CHUNK, FLOOD_CHUNK, wait=False)
               for i in range(64)]
        c.end_batch()
        for rid in ids:
            rep = c.expect(rid)
            require(rep.type == FXP_DATA, "READ: %r" % rep)
        handles, failure = open_until_failure(c, "f", 3000)
        handles.append(h)
        log("after 64 pipelined READs: %d handles, then %r; limits says "
            "%d" % (len(handles), failure, advertised))
        require(failure is not None and failure.is_status(FX_FAILURE),
                "the failing OPEN should be FAILURE: %r" % failure)
        require(len(handles) >= advertised,
                "limits@openssh.com advertises %d handles, only %d could "
                "be opened after a pipelined download"
                % (advertised, len(handles)))
        require_exit(c, 0)


def cold_file(path, size, seed):
    """A file of size bytes whose pages are not in the page cache."""
    with open(path, "wb") as f:
        f.write(pattern(size, seed))
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def scattered(n):
    """0 .. n-1 (n a power of two) in an order where no index follows the
    one before it and none is 0 at first: READs in this order never look
    sequential to the server, so none starts a read-ahead window that would
    cache the file (a READ at offset 0 or right after the last one does)."""
    return [(i * 37 + 5) % n for i in range(n)]


def check_handles_during_random_reads():
    """limits@openssh.com's max-open-handles must hold while random READs
    of a cold file run (read with O_DIRECT where the file system allows,
    through a second descriptor of the file: doc/design.md, "Cold random
    READs"): two handles with shuffled READs outstanding, unread, then
    OPENs up to the limit."""
    d = fresh_dir("handles-random")
    cold_file(os.path.join(d, "f"), 64 * FLOOD_CHUNK, 6)
    order = scattered(64)
    with start(d, preexec_fn=nofile(40)) as c:
        c.init()
        advertised = sc.parse_limits(c.limits().data)["max_handles"]
        first = [c.check_handle(c.open("f", FXF_READ)) for _ in range(2)]
        c.begin_batch()
        ids = [c.read(h, i * FLOOD_CHUNK, FLOOD_CHUNK, wait=False)
               for h in first for i in order]
        c.end_batch()
        # The OPENs go behind the READs; the replies wait unread.
        time.sleep(0.3)
        direct = bool(procinfo.o_direct_files(c.proc.pid))
        c.begin_batch()
        more = [c.open("f", FXF_READ, wait=False)
                for _ in range(advertised - len(first))]
        c.end_batch()
        for rid in ids:
            rep = c.expect(rid)
            require(rep.type == FXP_DATA and len(rep.data) == FLOOD_CHUNK,
                    "READ: %r" % rep)
        opened = 0
        for rid in more:
            rep = c.expect(rid)
            require(rep.type == FXP_HANDLE, "OPEN %d of the %d that "
                    "limits@openssh.com advertises: %r"
                    % (len(first) + opened + 1, advertised, rep))
            opened += 1
        log("%d handles open, %d advertised; O_DIRECT descriptor held "
            "during the OPENs: %s" % (len(first) + opened, advertised,
                                      direct))
        require_exit(c, 0)


def check_reopen_in_planted_proc():
    """Direct reads open the file again through /proc/self/fd; in a chroot
    /proc may be a directory of the user's, whose entries name other
    files.  With such a /proc (a bind mount in a mount namespace of its
    own, over the server's /proc/PID/fd) a cold file's random READs still
    return that file's bytes."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("NOTE: reopen-planted-proc: needs root and unshare; not run")
        return
    d = fresh_dir("planted-proc")
    size = 64 * FLOOD_CHUNK
    cold_file(os.path.join(d, "f"), size, 8)
    other = os.path.join(d, "other")
    with open(other, "wb") as f:
        f.write(pattern(size, 9))
    fake_fd = os.path.join(d, "fake-fd")
    os.makedirs(fake_fd)
    for n in range(3, 64):
        os.symlink(other, os.path.join(fake_fd, str(n)))
    want = pattern(size, 8)
    # Only the server's own /proc/PID/fd is covered: the rest of /proc
    # stays (a sanitizer reads /proc/self/maps).
    argv = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" /proc/$$/fd && exec "$@"',
            fake_fd] + server_argv()
    with sc.Client(argv, cwd=d, timeout=20) as c:
        c.init()
        h = c.check_handle(c.open("f", FXF_READ))
        c.begin_batch()
        ids = [(c.read(h, i * FLOOD_CHUNK, FLOOD_CHUNK, wait=False), i)
               for i in scattered(64)]
        c.end_batch()
        for rid, i in ids:
            rep = c.expect(rid)
            off = i * FLOOD_CHUNK
            require(rep.type == FXP_DATA and
                    rep.data == want[off:off + FLOOD_CHUNK],
                    "READ at %d: %s" % (off, "another file's bytes"
                                        if rep.type == FXP_DATA else rep))
        require(c.close_handle(h).is_status(0), "CLOSE")
        require_exit(c, 0)


def check_writeonly_handle_not_read():
    """A handle opened for writing only is not read, also where READs of
    a cold file's random ranges read direct: every READ gets a STATUS, as
    from OpenSSH's server (its read(2) fails with EBADF)."""
    d = fresh_dir("writeonly-read")
    cold_file(os.path.join(d, "f"), 64 * FLOOD_CHUNK, 7)
    with start(d) as c:
        c.init()
        h = c.check_handle(c.open("f", FXF_WRITE))
        for off in (2, 5, 0, 9):
            rep = c.read(h, off * FLOOD_CHUNK, FLOOD_CHUNK)
            require(rep.type == FXP_STATUS and not rep.is_status(0),
                    "READ at %d on a write-only handle: %r"
                    % (off * FLOOD_CHUNK, rep))
        require(c.close_handle(h).is_status(0), "CLOSE")
        require_exit(c, 0)


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def check_idle_memory_released():
    """The READ memory a pipelined download used (up to 1.5 MiB, as its
    reader's rate asked) is given back to the system once the session has
    been idle for a second: an idle session keeps at most READ memory's
    smallest window (64 KiB)."""
    d = fresh_dir("idle-memory")
    big = 261120
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(pattern(64 * big, 6))
    with start(d) as c:
        c.init()
        h = c.check_handle(c.open("f", FXF_READ))
        before = rss_of(c.proc.pid)
        c.begin_batch()
        ids = [c.read(h, i * big, big, wait=False) for i in range(64)]
        c.end_batch()
        for rid in ids:
            require(c.expect(rid).type == FXP_DATA, "READ failed")
        busy = rss_of(c.proc.pid)
        t0 = time.monotonic()
        # A second idle, then the server's next look: on a busy machine
        # that look may come late, so it is waited for (10 s at most).
        # ASan's quarantine holds freed heap blocks (the requests' and
        # replies' memory) back from reuse: a sanitizer build keeps more.
        kept = IDLE_KEPT * (4 if is_sanitized() else 1)
        within(10, lambda: rss_of(c.proc.pid) - before <= kept)
        idle = rss_of(c.proc.pid)
        log("RSS: %.2f MiB before the download, %.2f right after, %.2f "
            "after %.1f s idle" % (before / MIB, busy / MIB, idle / MIB,
                                   time.monotonic() - t0))
        require(busy - before >= big, "RSS grew by %.2f MiB in the "
                "download: the check tests nothing" % ((busy - before) / MIB))
        # Given back but for the smallest window and the allocator's
        # rounding (the requests' and replies' memory).
        require(idle - before <= kept, "RSS %.2f MiB after 10 s idle, "
                "%.2f MiB before the download and %.2f right after"
                % (idle / MIB, before / MIB, busy / MIB))
        # And the memory comes back when needed.
        rep = c.read(h, 0, big)
        require(rep.type == FXP_DATA and len(rep.data) == big,
                "READ after idle: %r" % rep)
        c.check_ok(c.close_handle(h), "close")
        require_exit(c, 0)


def check_handles_many():
    d = fresh_dir("handles-many")
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(b"x")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    limit = 3000 + 64
    if hard != resource.RLIM_INFINITY and hard < limit:
        limit = hard
    want = limit - 64
    with start(d, preexec_fn=nofile(limit)) as c:
        c.init()
        c.begin_batch()
        ids = [c.open("f", FXF_READ, wait=False) for _ in range(want)]
        c.end_batch()
        handles = []
        for rid in ids:
            handles.append(c.check_handle(c.expect(rid), "open"))
        require(len(set(handles)) == want, "handles not distinct")
        c.begin_batch()
        ids = [c.close_handle(h, wait=False) for h in handles]
        c.end_batch()
        for rid in ids:
            c.check_ok(c.expect(rid), "close")
        require_exit(c, 0)
    log("%d handles open at once" % want)


def flood_file():
    path = os.path.join(ARGS.workdir, "flood.bin")
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(os.urandom(FLOOD_COUNT * FLOOD_CHUNK))
    with open(path, "rb") as f:
        return path, f.read()


def flood_writes(h, data, count=FLOOD_COUNT):
    """count 32 KiB WRITEs of data to handle h, ids from 5000."""
    return b"".join(req(FXP_WRITE, 5000 + i, string(h)
                        + u64(i * FLOOD_CHUNK)
                        + string(data[i * FLOOD_CHUNK:(i + 1) * FLOOD_CHUNK]))
                    for i in range(count))


def read_flood(size, count):
    """count READs of size bytes sent while the client reads nothing for
    a few seconds: stdout fills, and what the server holds besides (READ
    data in its memory, seen as RSS growth) is at least one READ (else the
    check tests nothing) and, as the client never read, no more than READ
    memory's smallest window or one READ, whatever the count: READ memory
    grows only while its reader keeps up.  Then every reply, in order,
    with the right data."""
    path, data = flood_file()
    rss_limit = RSS_LIMIT * (8 if is_sanitized() else 1)
    with start(os.path.dirname(path), timeout=60) as c:
        c.init()
        h = c.check_handle(c.open(path, FXF_READ))
        reqs = b"".join(req(FXP_READ, 1000 + i, string(h)
                            + u64(i * size) + u32(size))
                        for i in range(count))
        base_rss = rss_of(c.proc.pid)
        sampler = RssSampler(c.proc.pid)
        write_noread(c, reqs, 30)
        time.sleep(PAUSE)
        require(c.proc.poll() is None, "server died while the client "
                "was not reading")
        held_mem = max(rss_of(c.proc.pid) - base_rss, 0)
        in_stdout = unread_bytes(c.rfd)
        t0 = time.monotonic()
        for i in range(count):
            rep = c.recv(30)
            require(rep.id == 1000 + i, "reply %d has id %s (%r)"
                    % (i, rep.id, rep))
            require(rep.type == FXP_DATA, "reply %d: %r" % (i, rep))
            require(rep.data == data[i * size:(i + 1) * size],
                    "reply %d: wrong data" % i)
        elapsed = time.monotonic() - t0
        peak = sampler.done()
        c.check_ok(c.close_handle(h), "close")
        require_exit(c, 0)
    log("RSS peak %.1f MiB (%.2f MiB more than before the flood while the "
        "client was not reading); %d bytes in stdout; replies drained in "
        "%.2f s" % (peak / MIB, held_mem / MIB, in_stdout, elapsed))
    require(peak < rss_limit, "server RSS reached %.1f MiB (limit %d MiB)"
            % (peak / MIB, rss_limit // MIB))
    require(in_stdout >= 32768, "only %d bytes in stdout while the client "
            "was not reading: the check tests nothing" % in_stdout)
    # RSS growth: READ memory's smallest window (a READ larger than it
    # runs alone in it), plus the allocator's rounding and bookkeeping
    # (ASan's redzones and quarantine more so).
    most = max(READ_WINDOW_LEAST, DATA_HDR + size) + \
        (8 if is_sanitized() else 1) * MIB
    require(held_mem >= size, "only %.2f MiB of replies held while the "
            "client was not reading: the check tests nothing"
            % (held_mem / MIB))
    require(held_mem <= most, "%.2f MiB of replies held, more than %.2f MiB"
            % (held_mem / MIB, most / MIB))


def check_read_flood():
    """32 KiB READs: READ memory's smallest window holds one of them
    (the region, 47)."""
    read_flood(FLOOD_CHUNK, FLOOD_COUNT)


def check_read_flood_big():
    """255 KiB READs: one at a time in the smallest window (the region
    holds 6)."""
    read_flood(MAX_READ, 256)


def check_write_flood():
    _, data = flood_file()
    d = fresh_dir("writeflood")
    target = os.path.join(d, "out.bin")
    rss_limit = RSS_LIMIT * (8 if is_sanitized() else 1)
    with start(d, timeout=60) as c:
        c.init()
        h = c.check_handle(c.open("out.bin", FXF_WRITE | FXF_CREAT
                                  | FXF_TRUNC))
        sampler = RssSampler(c.proc.pid)
        write_noread(c, flood_writes(h, data), 60)
        time.sleep(PAUSE)
        require(c.proc.poll() is None, "server died while the client "
                "was not reading")
        for i in range(FLOOD_COUNT):
            rep = c.recv(30)
            require(rep.id == 5000 + i, "reply %d has id %s (%r)"
                    % (i, rep.id, rep))
            require(rep.is_status(FX_OK), "reply %d: %r" % (i, rep))
        peak = sampler.done()
        c.check_ok(c.close_handle(h), "close")
        require_exit(c, 0)
    log("RSS peak %.1f MiB" % (peak / MIB))
    require(peak < rss_limit, "server RSS reached %.1f MiB (limit %d MiB)"
            % (peak / MIB, rss_limit // MIB))
    with open(target, "rb") as f:
        got = f.read()
    require(len(got) == len(data), "file has %d bytes, want %d"
            % (len(got), len(data)))
    require(got == data, "file content differs")


def read_then_writes(h_src, h_dst, data):
    """A READ, then 2048 32 KiB WRITEs to another file."""
    return req(FXP_READ, 1, string(h_src) + u64(0) + u32(FLOOD_CHUNK)) + \
        flood_writes(h_dst, data)


def check_read_write_replies(c, data, target):
    rep = c.expect(1, 30)
    require(rep.type == FXP_DATA and rep.data == data[:FLOOD_CHUNK],
            "READ: %r" % rep)
    for i in range(FLOOD_COUNT):
        rep = c.recv(30)
        require(rep.id == 5000 + i and rep.is_status(FX_OK),
                "reply %d: %r" % (i, rep))
    with open(target, "rb") as f:
        require(f.read() == data, "file content differs")


def check_read_write_flood():
    """A READ, then a flood of WRITEs while the client reads nothing for a
    few seconds, then reads as it sends the rest: every request answered
    in order, the file complete."""
    path, data = flood_file()
    d = fresh_dir("rwflood")
    with start(d, timeout=60) as c:
        c.init()
        h_src = c.check_handle(c.open(path, FXF_READ))
        h_dst = c.check_handle(c.open("out", FXF_WRITE | FXF_CREAT
                                      | FXF_TRUNC))
        reqs = read_then_writes(h_src, h_dst, data)
        sent = write_for(c, reqs, PAUSE)
        log("%d of %d bytes taken while the client was not reading"
            % (sent, len(reqs)))
        require(c.proc.poll() is None, "server died")
        c.send_raw(reqs[sent:], 60)
        check_read_write_replies(c, data, os.path.join(d, "out"))
        require_exit(c, 0)


def check_eager_writer():
    """A client that sends everything before it reads any reply, as
    OpenSSH's server allows: a READ, then 64 MiB of WRITEs to another file.
    Nothing the server holds is near a limit (the replies are 28 bytes
    each), so it must keep taking input."""
    path, data = flood_file()
    d = fresh_dir("eager")
    with start(d, timeout=60) as c:
        c.init()
        h_src = c.check_handle(c.open(path, FXF_READ))
        h_dst = c.check_handle(c.open("out", FXF_WRITE | FXF_CREAT
                                      | FXF_TRUNC))
        reqs = read_then_writes(h_src, h_dst, data)
        try:
            write_noread(c, reqs, 10)
        except sc.Timeout as e:
            raise CheckFailed("deadlock: %s while the client had not yet "
                              "read the READ reply" % e)
        check_read_write_replies(c, data, os.path.join(d, "out"))
        require_exit(c, 0)


def write_each_noread(c, packets, timeout):
    """Write each packet with a write of its own, reading no reply; raises
    Timeout when the server stops taking input.  On a socket every write
    is charged whole against the send buffer, so few bytes can block."""
    deadline = time.monotonic() + timeout
    left_after = sum(len(p) for p in packets)
    for p in packets:
        left_after -= len(p)
        view = memoryview(p)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise sc.Timeout("server stopped taking input with %d "
                                 "bytes left" % (len(view) + left_after))
            _, w, _ = select.select([], [c.wfd], [], left)
            if not w:
                continue
            try:
                view = view[os.write(c.wfd, view):]
            except BlockingIOError:
                continue


def unread_by_client(c):
    """Bytes the server wrote that the client has not read yet."""
    buf = array.array("i", [0])
    fcntl.ioctl(c.rfd, termios.FIONREAD, buf)
    return buf[0]


def eager_writer_behind_reads(socketpair, nreads, writes_of):
    """READs of 255 KiB whose replies fill stdout and wait there, which
    lets the server stop watching stdin (new requests could not be
    answered sooner).  It must still take what the client then writes
    without reading, within its bounds: writes_of(handle) gives those
    requests, each written by a write of its own, and the replies that
    must follow the READs' (id, check) in order."""
    path, data = flood_file()
    d = fresh_dir("eager-reads")
    big = 261120
    with start(d, socketpair=socketpair, timeout=60) as c:
        c.init()
        h_src = c.check_handle(c.open(path, FXF_READ))
        h_dst = c.check_handle(c.open("out", FXF_WRITE | FXF_CREAT
                                      | FXF_TRUNC))
        reads = b"".join(req(FXP_READ, 1 + i, string(h_src) + u64(i * big)
                             + u32(big)) for i in range(nreads))
        packets, expect = writes_of(h_dst, data)
        write_noread(c, reads, 10)
        require(within(10, lambda: unread_by_client(c) + MIB <=
                       nreads * big),
                "stdout did not fill: the check tests nothing")
        try:
            write_each_noread(c, packets, 10)
        except sc.Timeout as e:
            raise CheckFailed("deadlock: %s while %d READ replies waited "
                              "for the client" % (e, nreads))
        for i in range(nreads):
            rep = c.recv(30)
            require(rep.id == 1 + i and rep.type == FXP_DATA
                    and rep.data == data[i * big:(i + 1) * big],
                    "READ %d: %r" % (i, rep))
        for rid, ok in expect:
            rep = c.recv(30)
            require(rep.id == rid and ok(rep), "reply %d: %r" % (rid, rep))
        c.check_ok(c.close_handle(h_dst), "close")
        require_exit(c, 0)
    return d, data


def check_eager_writer_behind_reads():
    """Through pipes: 12 READs (3 MiB of replies; stdout holds 1 MiB), then
    48 WRITEs of 32 KiB, more than the stdin pipe holds (60 requests in
    flight of 64)."""
    nwrites = 48

    def writes(h, data):
        return ([req(FXP_WRITE, 5000 + i, string(h) + u64(i * FLOOD_CHUNK)
                     + string(data[i * FLOOD_CHUNK:(i + 1) * FLOOD_CHUNK]))
                 for i in range(nwrites)],
                [(5000 + i, lambda r: r.is_status(FX_OK))
                 for i in range(nwrites)])
    d, data = eager_writer_behind_reads(False, 12, writes)
    with open(os.path.join(d, "out"), "rb") as f:
        require(f.read() == data[:nwrites * FLOOD_CHUNK],
                "file content differs")


def check_eager_writer_behind_reads_socket():
    """Through a socketpair: 48 READs (12 MiB of replies, more than the
    socket buffer holds), then 2000 small STATs, each its own write: each
    is charged whole against the client's send buffer, so it blocks with
    little for the server to see waiting."""
    nstats = 2000

    def stats(h, data):
        return ([req(FXP_FSTAT, 9000 + i, string(h)) for i in range(nstats)],
                [(9000 + i, lambda r: r.type == FXP_ATTRS)
                 for i in range(nstats)])
    eager_writer_behind_reads(True, 48, stats)


def check_eager_writer_same_file():
    """As eager-writer, but the WRITEs go to the file the READ read, past
    the bytes it read: the READ's data cannot change, so nothing needs to
    wait for the client to read it."""
    _, data = flood_file()
    d = fresh_dir("eager-same")
    target = os.path.join(d, "f")
    with open(target, "wb") as f:
        f.write(data[:FLOOD_CHUNK])
    with start(d, timeout=60) as c:
        c.init()
        h = c.check_handle(c.open("f", FXF_READ | FXF_WRITE))
        reqs = req(FXP_READ, 1, string(h) + u64(0) + u32(FLOOD_CHUNK)) + \
            b"".join(req(FXP_WRITE, 5000 + i, string(h)
                         + u64((i + 1) * FLOOD_CHUNK)
                         + string(data[(i + 1) * FLOOD_CHUNK:
                                       (i + 2) * FLOOD_CHUNK]))
                     for i in range(FLOOD_COUNT - 1))
        try:
            write_noread(c, reqs, 10)
        except sc.Timeout as e:
            raise CheckFailed("deadlock: %s while the client had not yet "
                              "read the READ reply" % e)
        rep = c.expect(1, 30)
        require(rep.type == FXP_DATA and rep.data == data[:FLOOD_CHUNK],
                "READ: %r" % rep)
        for i in range(FLOOD_COUNT - 1):
            rep = c.recv(30)
            require(rep.id == 5000 + i and rep.is_status(FX_OK),
                    "reply %d: %r" % (i, rep))
        c.check_ok(c.close_handle(h))
        require_exit(c, 0)
    with open(target, "rb") as f:
        require(f.read() == data, "file content differs")


def vanish(c, what=""):
    """The client closes both ends without reading anything more; the
    server must exit (it would wait for a reader that never comes), with
    a status, not a signal.  Returns that status and the seconds it
    took."""
    t0 = time.monotonic()
    if c.sock is not None:
        c.sock.close()
        c.sock = None
    else:
        c.proc.stdin.close()
        c.proc.stdout.close()
    c.wclosed = True
    try:
        rc = c.proc.wait(20)
    except subprocess.TimeoutExpired:
        raise CheckFailed("the server did not exit after the client "
                          "vanished%s" % (" (%s)" % what if what else ""))
    require(0 <= rc < 128, "server %s" % exit_text(rc))
    return rc, time.monotonic() - t0


def disconnect(socketpair, how):
    """The client vanishes mid-stream.  how: "both" closes stdin and stdout
    at once right after sending; "output" (pipes) stops reading first,
    sends the rest, then closes stdin.  Every acknowledged WRITE must be in
    the file; so must every complete WRITE received (DESIGN.md rule 5: at
    end of input every complete request is carried out)."""
    d = fresh_dir("disconnect")
    chunk = FLOOD_CHUNK
    count = 400
    data = b"".join(pattern(chunk, i) for i in range(count))
    acked = set()
    t0 = time.monotonic()
    c = start(d, socketpair=socketpair, timeout=30)
    try:
        c.init()
        h = c.check_handle(c.open("out", FXF_WRITE | FXF_CREAT | FXF_TRUNC))
        pkts = [req(FXP_WRITE, 100 + i, string(h) + u64(i * chunk)
                    + string(data[i * chunk:(i + 1) * chunk]))
                for i in range(count)]
        # First half: wait for every acknowledgement.
        c.send_raw(b"".join(pkts[:count // 2]))
        for i in range(count // 2):
            rep = c.expect(100 + i)
            require(rep.is_status(FX_OK), "write %d: %r" % (i, rep))
            acked.add(i)
        # The rest, the last packet cut in the middle.
        tail = b"".join(pkts[count // 2:count - 1])
        tail += pkts[-1][:len(pkts[-1]) // 2]
        if how == "output":
            c.proc.stdout.close()
        write_noread(c, tail, 30)
        rc, _ = vanish(c, how)
        log("%s, %s: %s, %d writes acknowledged, %.1f s" % (
            "socketpair" if socketpair else "pipes", how, exit_text(rc),
            len(acked), time.monotonic() - t0))
    finally:
        c.close()
    with open(os.path.join(d, "out"), "rb") as f:
        got = f.read()
    for i in range(count - 1):
        if got[i * chunk:(i + 1) * chunk] != data[i * chunk:(i + 1) * chunk]:
            require(i not in acked,
                    "acknowledged write %d is not in the file" % i)
            raise CheckFailed("complete write %d (not acknowledged) is not "
                              "in the file: received requests must be "
                              "carried out at end of input" % i)
    require(len(got) == (count - 1) * chunk,
            "file has %d bytes, want %d" % (len(got), (count - 1) * chunk))


def check_disconnect():
    disconnect(False, "both")
    disconnect(False, "output")
    disconnect(True, "both")


def check_unknown_types():
    d = fresh_dir("unknown")
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(pattern(100000, 3))
    with start(d) as c:
        c.init()
        h = c.check_handle(c.open("f", FXF_READ))
        unknown = [99, 0, FXP_VERSION, FXP_STATUS, FXP_DATA, 150, 255]
        for t in unknown:
            # the unknown packet alone, then a request: it is answered
            # with nothing more sent (a server waiting for more input
            # would never answer) and nothing answers the unknown one
            c.send_raw(req(t, 50 + t, b"payload")
                       + req(FXP_READ, 1000 + t, string(h) + u64(0)
                             + u32(1000)))
            rep = c.recv()
            require(rep.id == 1000 + t and rep.type == FXP_DATA,
                    "after unknown type %d: %r" % (t, rep))
            # the unknown packet last, nothing after it for a while
            c.send_raw(req(FXP_STAT, 2000 + t, string("f"))
                       + req(t, 60 + t, b""))
            rep = c.recv()
            require(rep.id == 2000 + t, "STAT before unknown type %d: %r"
                    % (t, rep))
            time.sleep(0.05)
            c.send_raw(req(FXP_STAT, 3000 + t, string("f")))
            rep = c.recv()
            require(rep.id == 3000 + t, "STAT after unknown type %d: %r"
                    % (t, rep))
        # many, mixed with pipelined reads
        c.begin_batch()
        want = []
        for i in range(200):
            c.send_raw(req(unknown[i % len(unknown)], 9999, b""))
            want.append(c.read(h, i * 100, 100, wait=False))
        c.end_batch()
        for rid in want:
            rep = c.expect(rid)
            require(rep.type == FXP_DATA, "pipelined read: %r" % rep)
        rep = c.extended("unknown@example.com")
        require(rep.is_status(FX_OP_UNSUPPORTED),
                "unknown extension: %r" % rep)
        extra = c.pending_bytes(0.2)
        require(extra == b"", "unexpected output: %r" % extra[:64])
        c.check_ok(c.close_handle(h))
        require_exit(c, 0)


def check_corpus():
    files = []
    for d in ARGS.corpus:
        if os.path.isdir(d):
            files += [os.path.join(d, f) for f in sorted(os.listdir(d))
                      if not f.startswith(".")
                      and os.path.isfile(os.path.join(d, f))]
    require(files, "no corpus files in %s" % ARGS.corpus)
    bad = []
    for path in files:
        with open(path, "rb") as f:
            stream = f.read()
        d = fresh_dir("corpus")
        with start(d, timeout=10) as c:
            try:
                try:
                    c.send_raw(stream)
                except sc.ServerClosed:
                    pass
                rc, _ = c.finish(10)
            except sc.SFTPError as e:
                bad.append("%s: %s" % (os.path.basename(path), e))
                continue
            if rc not in (0, 11, 255):
                bad.append("%s: %s" % (os.path.basename(path),
                                       exit_text(rc)))
    log("%d streams replayed" % len(files))
    require(not bad, "; ".join(bad))


# ------------------------------------- stalled and vanished clients

DATA_HDR = 13  # length, type, id, data length


def unread_bytes(fd):
    """Bytes waiting for the client on its end of stdout, not read."""
    buf = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return buf[0]


def within(seconds, cond):
    """Whether cond() holds within seconds (checked every 10 ms): for a
    state the server reaches by itself, which a busy machine may delay
    well past what it takes on an idle one."""
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def wait_unread(c, n, timeout=20):
    """Wait until at least n bytes wait for the client, without reading
    them (they stay in the server's stdout)."""
    deadline = time.monotonic() + timeout
    while unread_bytes(c.rfd) < n:
        if time.monotonic() > deadline:
            raise CheckFailed("only %d of %d reply bytes arrived"
                              % (unread_bytes(c.rfd), n))
        time.sleep(0.01)


TRUNCATOR = """
import os, sys
path = sys.argv[1]
if len(sys.argv) > 2:
    fd = int(sys.argv[2])
    os.ftruncate(fd, 100)
    os.lseek(fd, 0, os.SEEK_END)
    os.write(fd, b"C" * 8000)
else:
    os.truncate(path, 100)
    with open(path, "ab") as f:
        f.write(b"C" * 8000)
"""


def truncator_done(t):
    """Process t ends, as it does with OpenSSH's server: nothing of ours
    makes it wait.  What could make it wait (a lease the server held) holds
    it for fs.lease-break-time, 45 s by default; 10 s leaves a busy
    machine the time to start a python3 and run it."""
    try:
        rc = t.wait(10)
    except subprocess.TimeoutExpired:
        raise CheckFailed("the truncating process still waits after 10 s")
    require(rc == 0, "the truncating process failed")


def truncate_behind(c, path, writer_fd=None, close=False):
    """A 64 KiB file of A; READ(0, 65536) (and CLOSE with close) sent, the
    reply in the server's stdout and not read; another process truncates
    the file to 100 bytes and appends 8000 C (through writer_fd, a
    descriptor it already has open for writing, if given), which must
    not wait; only then is the reply read.  It must hold what the file
    held when the READ ran: 65536 A."""
    h = c.check_handle(c.open(os.path.basename(path), FXF_READ))
    pkt = req(FXP_READ, 7, string(h) + u64(0) + u32(65536))
    want = DATA_HDR + 65536
    if close:
        pkt += req(FXP_CLOSE, 8, string(h))
        want += 28  # the STATUS after it
    write_noread(c, pkt, 20)
    wait_unread(c, want)
    argv = [sys.executable, "-c", TRUNCATOR, path]
    fds = ()
    if writer_fd is not None:
        argv.append(str(writer_fd))
        fds = (writer_fd,)
    t = subprocess.Popen(argv, pass_fds=fds)
    try:
        truncator_done(t)
        rep = c.expect(7)
        require(rep.type == FXP_DATA, "READ: %r" % rep)
        data = rep.data
        bad = [i for i, b in enumerate(data) if b != ord("A")]
        require(not bad, "the reply holds %d bytes the file did not hold "
                "when the reply left, first at %d: %r (of %d)" % (
                    len(bad), bad[0] if bad else 0,
                    data[bad[0]:bad[0] + 8] if bad else b"", len(data)))
        require(len(data) == 65536, "READ of a 64 KiB file held %d bytes "
                "when it left" % len(data))
        if close:
            c.check_ok(c.expect(8), "close")
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()
    with open(path, "rb") as f:
        require(f.read() == b"A" * 100 + b"C" * 8000,
                "the file was not truncated and appended to")
    return h


def check_read_vs_truncate():
    """On pipes and a socketpair: the READ ran before another process
    truncated and rewrote the file; the reply still holds the old bytes.
    Then the same with the handle closed behind the READ, and with a file
    someone has open for writing."""
    for sp in (False, True):
        for variant in ("open", "closed", "writer"):
            d = fresh_dir("read-truncate")
            path = os.path.join(d, "f")
            with open(path, "wb") as f:
                f.write(b"A" * 65536)
            writer = None
            if variant == "writer":
                writer = os.open(path, os.O_RDWR)
            try:
                with start(d, socketpair=sp) as c:
                    c.init()
                    h = truncate_behind(c, path, writer,
                                        variant == "closed")
                    # The handle goes on, now with the new content.
                    if variant != "closed":
                        rep = c.read(h, 0, 65536)
                        require(rep.type == FXP_DATA and
                                rep.data ==
                                b"A" * 100 + b"C" * 8000,
                                "READ after the truncation: %r" % rep)
                        c.check_ok(c.close_handle(h), "close")
                    require_exit(c, 0)
            finally:
                if writer is not None:
                    os.close(writer)
            log("%s, %s: the truncation went ahead at once, the reply "
                "held the old bytes" % ("socketpair" if sp else "pipes",
                                        variant))


def check_flood_vs_truncate():
    """48 READs of 255 KiB (12 MiB) of a file in the page cache, more than
    stdout (a socket's buffer may hold 8 MiB) and READ memory hold, sent at
    once and not read; another process
    truncates the file and appends to it, which goes ahead at once.  On
    pipes and a socketpair.  Every reply holds what the file held when
    its READ ran: the old bytes for those that ran before, the new file
    (or EOF) for those that waited for READ memory."""
    block, count = 261120, 48
    for sp in (False, True):
        d = fresh_dir("flood-truncate")
        path = os.path.join(d, "f")
        with open(path, "wb") as f:
            f.write(b"A" * block * count)
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass
        with start(d, socketpair=sp) as c:
            c.init()
            h = c.check_handle(c.open("f", FXF_READ))
            write_noread(c, b"".join(
                req(FXP_READ, 100 + i, string(h) + u64(i * block) +
                    u32(block)) for i in range(count)), 20)
            wait_unread(c, 32768)
            t = subprocess.Popen([sys.executable, "-c", TRUNCATOR, path])
            try:
                truncator_done(t)
                after = b"A" * 100 + b"C" * 8000
                ran_after = 0
                for i in range(count):
                    rep = c.expect(100 + i)
                    old = rep.type == FXP_DATA and \
                        rep.data == b"A" * block
                    new = (rep.data == after[i * block:(i + 1) * block]
                           if rep.type == FXP_DATA and i * block < len(after)
                           else rep.is_status(FX_EOF))
                    ran_after += not old
                    require(old or new, "READ %d after the truncation "
                            "started: %r" % (i, rep if rep.type != FXP_DATA
                                             else (len(rep.data),
                                                   rep.data[:8])))
                require(ran_after > 0, "every READ ran before the "
                        "truncation: READ memory bounds nothing")
            finally:
                if t.poll() is None:
                    t.kill()
                    t.wait()
            rep = c.read(h, 0, block)
            require(rep.type == FXP_DATA and
                    rep.data == b"A" * 100 + b"C" * 8000,
                    "READ after the truncation: %r" % rep)
            c.check_ok(c.close_handle(h), "close")
            require_exit(c, 0)
        log("%s: the truncation went ahead at once; %d of %d READs ran "
            "after it" % ("socketpair" if sp else "pipes", ran_after, count))


def check_vanished_client():
    """A READ whose reply is not read, then requests
    behind it (a WRITE to the range through a second handle, an OPEN for
    writing of the same file, an OPEN of another file), then the client
    closes both pipes (or its socket).  The server carries out what it
    received and exits."""
    for sp in (False, True):
        for case in ("write-2nd-handle", "open-same-for-write",
                     "open-other"):
            d = fresh_dir("vanished")
            path = os.path.join(d, "f")
            with open(path, "wb") as f:
                f.write(b"A" * 65536)
            with open(os.path.join(d, "g"), "wb") as f:
                f.write(b"G" * 100)
            c = start(d, socketpair=sp, timeout=30)
            try:
                c.init()
                h = c.check_handle(c.open("f", FXF_READ))
                pkts = b""
                if case == "write-2nd-handle":
                    h2 = c.check_handle(c.open("f", FXF_WRITE))
                    pkts = req(FXP_READ, 7, string(h) + u64(0) + u32(65536))
                    pkts += req(FXP_WRITE, 8, string(h2) + u64(0)
                                + string(b"W" * 1000))
                elif case == "open-same-for-write":
                    pkts = req(FXP_READ, 7, string(h) + u64(0) + u32(65536))
                    pkts += req(FXP_OPEN, 8, string("f") + u32(FXF_WRITE)
                                + u32(0))
                    pkts += req(FXP_WRITE, 9, string(b"\0\0\0\1") + u64(0)
                                + string(b"W" * 1000))
                else:
                    pkts = req(FXP_READ, 7, string(h) + u64(0) + u32(65536))
                    pkts += req(FXP_OPEN, 8, string("g") + u32(FXF_READ)
                                + u32(0))
                write_noread(c, pkts, 20)
                wait_unread(c, DATA_HDR + 65536)
                time.sleep(0.2)  # let it settle into waiting
                _, took = vanish(c)
            finally:
                c.close()
            with open(path, "rb") as f:
                got = f.read(1000)
            if case != "open-other":
                require(got == b"W" * 1000, "%s: the WRITE received before "
                        "the client left is not in the file" % case)
            log("%s, %s: exited %.2f s after the client left" % (
                "socketpair" if sp else "pipes", case, took))


def ctxt_switches(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise CheckFailed("no voluntary_ctxt_switches for %d" % pid)


WAKEUP_SECONDS = 2.0
WAKEUP_LIMIT = 10  # per second


def count_wakeups(c):
    """The server's sleeps (voluntary context switches) over a few
    seconds while the client reads nothing."""
    time.sleep(0.5)  # past the first, quick rechecks
    before = ctxt_switches(c.proc.pid)
    time.sleep(WAKEUP_SECONDS)
    return ctxt_switches(c.proc.pid) - before


def check_stalled_client_sleeps():
    """A client that stops reading (an OPEN for writing
    behind a READ; a flood of READs whose replies fill stdout) costs at
    most 10 wake-ups a second."""
    d = fresh_dir("stalled")
    with open(os.path.join(d, "f"), "wb") as f:
        f.write(pattern(8 * MIB, 9))
    for sp in (False, True):
        for case in ("open-behind-read", "read-flood"):
            with start(d, socketpair=sp, timeout=30) as c:
                c.init()
                h = c.check_handle(c.open("f", FXF_READ))
                if case == "open-behind-read":
                    pkts = req(FXP_READ, 7, string(h) + u64(0) + u32(65536))
                    pkts += req(FXP_OPEN, 8, string("f") + u32(FXF_WRITE)
                                + u32(0))
                    n = 2
                else:
                    n = 256
                    pkts = b"".join(req(FXP_READ, 100 + i, string(h)
                                        + u64(i * FLOOD_CHUNK)
                                        + u32(FLOOD_CHUNK))
                                    for i in range(n))
                write_noread(c, pkts, 20)
                woke = count_wakeups(c)
                log("%s, %s: %d wake-ups in %.0f s" % (
                    "socketpair" if sp else "pipes", case, woke,
                    WAKEUP_SECONDS))
                require(woke <= WAKEUP_LIMIT * WAKEUP_SECONDS,
                        "%s: %d wake-ups in %.0f s while the client read "
                        "nothing" % (case, woke, WAKEUP_SECONDS))
                # Then everything is answered.
                for i in range(n):
                    rep = c.recv(30)
                    require(rep.type in (FXP_DATA, FXP_HANDLE),
                            "%s: reply %d: %r" % (case, i, rep))
                require_exit(c, 0)


def check_hints_small_depth():
    """With --queue-depth 1 to 8, read-ahead hints of a
    sequential download never make fsync or copy-data fail."""
    d = fresh_dir("hints")
    size = 4 * MIB
    data = pattern(size, 10)
    for depth in (1, 2, 4, 8):
        for i in range(3):
            with open(os.path.join(d, "f%d" % i), "wb") as f:
                f.write(data)
        c = sc.Client(server_argv(["--queue-depth", str(depth)]), cwd=d,
                      timeout=30)
        with c:
            c.init()
            bad = []
            for i in range(3):
                h = c.check_handle(c.open("f%d" % i, FXF_READ))
                w = c.check_handle(c.open("copy%d" % i, FXF_WRITE
                                          | FXF_CREAT | FXF_TRUNC))
                c.begin_batch()
                want = []
                chunk = 64 * KIB
                for k in range(size // chunk):
                    want.append(("read", c.read(h, k * chunk, chunk,
                                                wait=False)))
                    if k % 4 == 3:
                        want.append(("fsync", c.extended(
                            "fsync@openssh.com", string(w), wait=False)))
                        want.append(("copy-data", c.extended(
                            "copy-data", string(h) + u64((k - 3) * chunk)
                            + u64(4 * chunk) + string(w)
                            + u64((k - 3) * chunk),
                            wait=False)))
                c.end_batch()
                for what, rid in want:
                    rep = c.expect(rid)
                    if what == "read":
                        ok = rep.type == FXP_DATA
                    else:
                        ok = rep.is_status(FX_OK)
                    if not ok:
                        bad.append("%s: %r" % (what, rep))
                c.check_ok(c.close_handle(h), "close")
                c.check_ok(c.close_handle(w), "close")
            require(not bad, "--queue-depth %d: %d failed, first %s"
                    % (depth, len(bad), bad[0] if bad else ""))
            require_exit(c, 0)
        for i in range(3):
            with open(os.path.join(d, "copy%d" % i), "rb") as f:
                require(f.read() == data, "--queue-depth %d: copy %d "
                        "differs" % (depth, i))


CHECKS = [
    ("oversized", check_oversized),
    ("oversized-after-requests", check_oversized_after_requests),
    ("zero-length", check_zero_length),
    ("max-packet", check_max_packet),
    ("truncated", check_truncated),
    ("huge-strings", check_huge_strings),
    ("before-init", check_before_init),
    ("handles-limit", check_handles_limited),
    ("handles-after-reads", check_handles_after_reads),
    ("handles-during-random-reads", check_handles_during_random_reads),
    ("writeonly-not-read", check_writeonly_handle_not_read),
    ("reopen-planted-proc", check_reopen_in_planted_proc),
    ("handles-many", check_handles_many),
    ("idle-memory", check_idle_memory_released),
    ("read-flood", check_read_flood),
    ("read-flood-big", check_read_flood_big),
    ("write-flood", check_write_flood),
    ("read-write-flood", check_read_write_flood),
    ("eager-writer", check_eager_writer),
    ("eager-writer-same-file", check_eager_writer_same_file),
    ("eager-writer-behind-reads", check_eager_writer_behind_reads),
    ("eager-writer-behind-reads-socket",
     check_eager_writer_behind_reads_socket),
    ("disconnect", check_disconnect),
    ("unknown-types", check_unknown_types),
    ("read-truncate", check_read_vs_truncate),
    ("flood-truncate", check_flood_vs_truncate),
    ("vanished-client", check_vanished_client),
    ("stalled-client-sleeps", check_stalled_client_sleeps),
    ("hints-small-depth", check_hints_small_depth),
    ("corpus", check_corpus),
]


def main():
    global ARGS, PASSED, FAILED
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--only", default="*")
    ap.add_argument("--corpus", action="append", default=[])
    ap.add_argument("-v", "--verbose", action="store_true")
    ARGS = ap.parse_args()
    ARGS.server = os.path.abspath(ARGS.server)
    ARGS.corpus = [os.path.abspath(d) for d in ARGS.corpus]
    if not os.access(ARGS.server, os.X_OK):
        print("SKIP: no server at %s" % ARGS.server)
        print("0 passed, 0 failed")
        return 77
    ARGS.workdir = tempfile.mkdtemp(prefix="hostile.", dir=ARGS.workdir)
    label = "[%s] " % ARGS.label if ARGS.label else ""
    try:
        for name, fn in CHECKS:
            if not fnmatch.fnmatch(name, ARGS.only):
                continue
            if name == "corpus" and not ARGS.corpus:
                continue
            t0 = time.monotonic()
            try:
                fn()
            except (CheckFailed, sc.SFTPError) as e:
                FAILED += 1
                print("FAIL: %s%s: %s" % (label, name, e))
                if ARGS.verbose and not isinstance(e, CheckFailed):
                    traceback.print_exc(file=sys.stdout)
            except Exception:  # a bug in the test is a failure too
                FAILED += 1
                print("FAIL: %s%s: exception" % (label, name))
                traceback.print_exc(file=sys.stdout)
            else:
                PASSED += 1
                print("PASS: %s%s (%.1f s)" % (label, name,
                                               time.monotonic() - t0))
            sys.stdout.flush()
    finally:
        shutil.rmtree(ARGS.workdir, ignore_errors=True)
    print("%d passed, %d failed" % (PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

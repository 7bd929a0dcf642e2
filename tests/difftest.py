#!/usr/bin/python3
"""Differential test: OpenSSH's sftp-server versus ours.

Every scenario builds the same fixture tree twice (base/ref and base/new,
same path lengths), runs the reference server and the server under test in
their own tree with the same scripted requests, and compares:

  * the replies, step by step, after normalisation (handle bytes become
    H0, H1... in order of appearance; the tree's path becomes <ROOT>;
    atime/mtime values from this run become RECENT and so does the date
    in a longname; statvfs free counts are dropped; READDIR listings are
    compared as the sorted set of (name, longname, attrs) plus the number of
    entries in each NAME reply);
  * the exit status and any unexpected output after stdin is closed;
  * the file tree afterwards (type, mode, size, nlink, owner, mtime,
    content, link target);
  * the -e log (stderr) line by line (strict: byte-for-byte after the path
    substitution).

Known, deliberate tolerances (see also the report printed at the end):
  (a) reads: OpenSSH does one read() and may return short; the scenarios
      only make reads that are full or end at EOF, so both must agree.
  (b) stdin EOF: OpenSSH drops queued requests, ours answers them: checked
      by new-only scenarios (eof_drain*), never compared.
  (c) unknown packet types: OpenSSH sends nothing and may stall; the
      scenarios send the unknown packet alone, then a request, and compare
      only the reply to that request.  Any reply to the unknown packet
      from either server is a difference (the README promises none).
  (d) malformed/oversized packets: exit status and output are compared.
  (e) requests beyond OpenSSH (ADDITIONS, issue 12): VERSION and -Q
      requests are compared without them; the "additions" check sends each
      once and expects OP_UNSUPPORTED from OpenSSH and the right answer
      from the server under test.

/proc and /sys files (kernel_files*, issue 20; stat gives 0 or a page, not
their length) are read from their absolute paths; each download is also
compared with what read() gives, their large files are compared as whole
downloads (tolerance (a)), and a scenario on them runs again when the
files changed while it ran.  OpenSSH's sftp and scp download them through
each server too (run_kernel_clients).

Options that change behaviour on purpose (issue 23): with --variant NAME
the server under test runs every scenario with that variant's options
(VARIANTS), and each scenario's replies, file tree and log must be as
OpenSSH's except the aspects VARIANTS lists for it, which must differ: the
documented differences, no more and no fewer.

A scenario that cannot go on (a timeout, a server gone: Abort) fails, even
when both servers stop at the same step and their shorter transcripts
match.  A scenario that cannot run here (no tmpfs can be mounted, no
setpriv) is printed as SKIP and makes the exit status 77 when nothing
failed, so the gap is visible (tests/difftest.sh and test.sh report it).

Usage: difftest.py --ref /usr/lib/openssh/sftp-server --server PATH
       [--server-args "ARGS"] [--variant NAME] [--label NAME]
       [--only PATTERN] [-v]
Exit: 0 all passed, 1 a failure, 77 nothing failed but a scenario could
not run (or nothing could run at all).
"""

import argparse
import difflib
import fnmatch
import hashlib
import os
import pwd
import random
import re
import resource
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_READ, FXF_WRITE, FXF_APPEND, FXF_CREAT, FXF_TRUNC, FXF_EXCL,
    FXP_STATUS, FXP_HANDLE, FXP_NAME, FXP_REALPATH, FXP_DATA, u32, u64, string, packet, encode_attrs)

T0 = int(time.time())
OLD = 1000000000                 # 2001-09-09, longname shows the year
OLD2 = 1234567890                # 2009-02-13
MONTHS3 = T0 - 90 * 86400        # within 6 months: "%b %e %H:%M"
FUTURE = T0 + 30 * 86400         # in the future: shows the year
IS_ROOT = os.geteuid() == 0
UNPRIV_UID = 65534
ME = pwd.getpwuid(os.getuid()).pw_name

VERBOSE = False

# Log lines left out of the comparison (a regular expression): those in
# which the server says what the kernel lacks, under tests/oldkernel
# (tests/kernel-matrix.sh checks them on their own).
DROP_LOG = (re.compile(os.environ["DIFFTEST_DROP_LOG"].encode())
            if os.environ.get("DIFFTEST_DROP_LOG") else None)

# Deliberate additions (issue 12): requests OpenSSH does not know.
ADDITIONS = ("check-file-name", "check-file-handle", "check-file",
             "copy-file", "space-available", "vendor-id")
ADDITION_REFUSAL = re.compile(rb"^Refusing .*\b(%s) request" % "|".join(
    ADDITIONS).encode())


def is_recent(t):
    return T0 - 5 <= t <= time.time() + 5


def hb(data):
    return hashlib.sha256(data).hexdigest()[:16]


def rnd(seed, n):
    return random.Random(seed).randbytes(n)


def hexcut(raw, n=96):
    if raw is None:
        return ""
    h = raw[:n].hex()
    return h + ("..(%d bytes)" % len(raw) if len(raw) > n else "")


# Scenarios that could not run here; reported, and the exit status is 77.
SKIPPED = set()


def mask_modes(lines):
    """Permission bits out of replies, trees and log lines, for -m/-M: the
    modes themselves are checked by tests/uploads.py."""
    def bits(m):
        return "%o" % (int(m.group(2), 8) & ~0o7777)
    out = []
    for x in lines:
        raw = isinstance(x, bytes)
        x = x.decode("latin-1") if raw else x
        x = re.sub(r"\b(perm|mode)=([0-7]+)", lambda m: "%s=%s-----" % (
            m.group(1), bits(m)), x)
        x = re.sub(r"'([-dlpscb])[-rwxsStT]{9} ", r"'\1--------- ", x)
        x = re.sub(r'(set ".*" mode [0-7]+) ignored: -[mM] [0-7]+$', r"\1",
                   x)
        out.append(x.encode("latin-1") if raw else x)
    return out


# Options that change behaviour on purpose (doc/uploads.md): the
# options, what to mask before comparing (or None), and for each scenario
# (an fnmatch pattern) the aspects that differ from OpenSSH ("replies",
# "tree", "log", "server only": a server-only check that does not hold)
# and why.  Every other aspect of every scenario stays identical.
ATOMIC_NOT_CLOSED = "an upload never closed is discarded: the file is not " \
    "there after the session"
VARIANTS = {
    # fsync is invisible but for the handles limits@openssh.com
    # advertises (halves_handles)
    "fsync": (["--fsync-on-close"], None, {}),
    "atomic": (["--atomic-uploads"], None, {
        "write": ({"replies", "tree", "log"},
                  "a WRITE past 2^63 fails, so CLOSE discards the upload "
                  "(FAILURE); a second OPEN of the name during an upload "
                  "finds no file"),
        "pipelined": ({"replies", "log"},
                      "STAT of an upload's name before its CLOSE: no file"),
        "socketpair": ({"replies", "log"},
                       "STAT of an upload's name before its CLOSE: no "
                       "file"),
        "enospc": ({"replies", "tree", "log"},
                   "an upload whose WRITE failed on a full disk is "
                   "discarded at CLOSE (FAILURE), which frees its space"),
        "close": ({"tree"}, ATOMIC_NOT_CLOSED),
        "vanish*": ({"server only"}, ATOMIC_NOT_CLOSED),
        # and the "opt" scenarios of sc_write_requests: write_requests_opt
    }),
    "modes": (["-m", "0640", "-M", "2750"], mask_modes, {}),
}
VARIANT = None
HALF_HANDLES = "an upload holds two descriptors (its file and its " \
    "directory): limits@openssh.com advertises half as many handles"


def halves_handles(name):
    """Scenario name asks limits@openssh.com: under --fsync-on-close and
    --atomic-uploads its max-open-handles differs (doc/uploads.md)."""
    for v in ("fsync", "atomic"):
        aspects, why = VARIANTS[v][2].get(name, (set(), None))
        VARIANTS[v][2][name] = (aspects | {"replies"},
                                why + "; " + HALF_HANDLES if why
                                else HALF_HANDLES)


for _name in ("limits_users_groups", "unknown_extensions", "many_handles",
              "nofile_64"):
    halves_handles(_name)


def documented(scn_name, aspect):
    """The documented reason this aspect differs under --variant, or
    None when it must be identical."""
    if VARIANT is None:
        return None
    for pat, (aspects, why) in VARIANTS[VARIANT][2].items():
        if fnmatch.fnmatch(scn_name, pat) and aspect in aspects:
            return why
    return None


def masked(lines):
    if VARIANT is None or VARIANTS[VARIANT][1] is None:
        return lines
    return VARIANTS[VARIANT][1](lines)


class Abort(Exception):
    """A side could not go on (timeout, server gone)."""


# ------------------------------------------------------------- normalising

class Norm:
    def __init__(self, root):
        self.root = root

    def sub(self, v):
        if isinstance(v, (bytes, bytearray)):
            return bytes(v).replace(self.root, b"<ROOT>")
        return v

    def t(self, v):
        return "RECENT" if is_recent(v) else str(v)

    def attrs(self, a):
        out = ["fl=%#x" % a["flags"]]
        if "size" in a:
            out.append("size=%d" % a["size"])
        if "uid" in a:
            out.append("uid=%d gid=%d" % (a["uid"], a["gid"]))
        if "perm" in a:
            out.append("perm=%o" % a["perm"])
        if "atime" in a:
            out.append("atime=%s mtime=%s" % (self.t(a["atime"]),
                                              self.t(a["mtime"])))
        if "extended" in a:
            out.append("ext=%r" % (a["extended"],))
        return " ".join(out)

    def longname(self, ln, a):
        ln = self.sub(ln)
        if "mtime" in a and is_recent(a["mtime"]):
            # A file changed this second may print with its year when the
            # server's clock reads a little behind the file's time (both
            # servers can hit this); either form is its date.
            for fmt in ("%b %e %H:%M", "%b %e  %Y"):
                d = time.strftime(fmt, time.localtime(a["mtime"])).encode()
                if d in ln:
                    ln = ln.replace(d, b"<DATE>", 1)
                    break
        return ln

    def entry(self, e):
        name, ln, a = e
        return "%r %r {%s}" % (self.sub(name), self.longname(ln, a),
                               self.attrs(a))

    def reply(self, rep, kind, hlabel):
        t = rep.type
        if t == FXP_STATUS:
            return "STATUS %s %r %r" % (
                sc.STATUS_NAMES.get(rep.code, rep.code), self.sub(rep.msg),
                rep.lang)
        if t == FXP_HANDLE:
            if len(rep.handle) > 256:
                return "HANDLE-TOO-LONG(%d)" % len(rep.handle)
            return "HANDLE " + hlabel(rep.handle)
        if t == sc.FXP_DATA:
            d = rep.data
            if len(d) <= 48:
                return "DATA %r" % d
            return "DATA len=%d sha=%s" % (len(d), hb(d))
        if t == FXP_NAME:
            return "NAME %d [%s]" % (len(rep.names), "; ".join(
                self.entry(e) for e in rep.names))
        if t == sc.FXP_ATTRS:
            return "ATTRS " + self.attrs(rep.attrs)
        if t == sc.FXP_VERSION:
            return "VERSION %d %r" % (rep.version, [
                e for e in rep.extensions
                if e[0].decode("latin-1") not in ADDITIONS])
        if t == sc.FXP_EXTENDED_REPLY:
            try:
                if kind in ("statvfs", "fstatvfs"):
                    d = sc.parse_statvfs(rep.data)
                    for k in ("bfree", "bavail", "ffree", "favail"):
                        if d[k] > (d["blocks"] if k[0] == "b" else d["files"]):
                            d[k] = "IMPOSSIBLE(%d)" % d[k]
                        else:
                            d[k] = "~"
                    return "EXTREPLY statvfs %r" % sorted(d.items())
                if kind == "limits":
                    return "EXTREPLY limits %r" % sorted(
                        sc.parse_limits(rep.data).items())
                if kind == "users_groups_by_id":
                    return "EXTREPLY names %r" % (
                        sc.parse_users_groups(rep.data),)
            except sc.ProtocolError as e:
                return "EXTREPLY undecodable (%s) %s" % (e, rep.data.hex())
            return "EXTREPLY %s" % rep.data.hex()
        return "TYPE%d %s" % (t, rep.raw.hex())


# ------------------------------------------------------------- sessions

REQ_METHODS = {
    "open", "close_handle", "read", "write", "lstat", "fstat", "setstat",
    "fsetstat", "opendir", "readdir", "remove", "mkdir", "rmdir", "realpath",
    "stat", "rename", "readlink", "symlink", "posix_rename", "statvfs",
    "fstatvfs", "hardlink", "fsync", "lsetstat", "limits", "expand_path",
    "copy_data", "home_directory", "users_groups_by_id", "extended",
    "request",
}

PFLAG_NAMES = [(FXF_READ, "R"), (FXF_WRITE, "W"), (FXF_APPEND, "A"),
               (FXF_CREAT, "C"), (FXF_TRUNC, "T"), (FXF_EXCL, "X")]


class Session:
    """Records one side's transcript: a list of (description, normalised
    reply, raw bytes)."""

    def __init__(self, client, root, tag):
        self.c = client
        self.root = root
        self.tag = tag
        self.norm = Norm(root)
        self.t = []
        self.notes = []
        self.hl = {}
        self.nh = 0

    def hlabel(self, h, new=True):
        if new:
            lab = "H%d" % self.nh
            self.nh += 1
            self.hl[h] = lab
            return lab
        return self.hl.get(h)

    def fmt(self, a):
        if isinstance(a, (bytes, bytearray)):
            a = bytes(a)
            lab = self.hl.get(a)
            if lab:
                return lab
            s = repr(self.norm.sub(a))
            return s if len(s) < 70 else s[:60] + "..(%d)" % len(a)
        if isinstance(a, str):
            return repr(self.norm.sub(a.encode()).decode("latin-1"))
        return repr(a)

    def record(self, desc, norm, raw=b""):
        self.t.append((desc, norm, raw))

    def note(self, text):
        self.notes.append(text)

    def abs(self, rel=b""):
        rel = sc.b(rel)
        return self.root + (b"/" + rel if rel else b"")

    def on_reply(self, rep, kind):
        lab = None
        if rep.type == FXP_HANDLE:
            lab = self.hlabel(rep.handle)
        return self.norm.reply(rep, kind, lambda h: lab)

    def __getattr__(self, name):
        if name not in REQ_METHODS:
            raise AttributeError(name)
        fn = getattr(self.c, name)

        def wrapper(*args, **kw):
            desc = "%s(%s)" % (name, ", ".join(self.fmt(a) for a in args))
            if name == "open" and len(args) > 1:
                desc += " [%s]" % "".join(
                    n for f, n in PFLAG_NAMES if args[1] & f)
            try:
                rep = fn(*args, **kw)
            except sc.SFTPError as e:
                self.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
                raise Abort(str(e))
            if not kw.get("wait", True):
                return rep
            self.record(desc, self.on_reply(rep, name), rep.raw)
            return rep
        return wrapper

    def h(self, rep):
        """The handle of a reply, or a placeholder that is no handle."""
        if rep.type == FXP_HANDLE:
            return rep.handle
        return b"\xde\xad\xbe\xef-no-handle"

    def init(self, version=3):
        desc = "INIT(%d)" % version
        try:
            rep = self.c.init(version)
        except sc.SFTPError as e:
            self.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
            raise Abort(str(e))
        self.record(desc, self.norm.reply(rep, "init", None), rep.raw)
        return rep

    def readdir_all(self, handle, desc=None):
        """All READDIR replies until a status, recorded as one step: the
        number of entries and their sorted set.  How they are split into
        replies is not compared: ours carry up to 1024 names (OpenSSH's
        100), as many as fit in about 60 KiB."""
        desc = desc or "readdir*(%s)" % self.fmt(handle)
        counts, entries = [], []
        try:
            while True:
                rep = self.c.readdir(handle)
                if rep.type != FXP_NAME:
                    break
                counts.append(len(rep.names))
                entries.extend(rep.names)
                if len(counts) > 10000:
                    raise Abort("READDIR never ends")
        except sc.SFTPError as e:
            self.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
            raise Abort(str(e))
        end = self.norm.reply(rep, "readdir", None)
        ents = sorted(self.norm.entry(e) for e in entries)
        self.record(desc, "entries=%d end=%s\n      %s" % (
            sum(counts), end, "\n      ".join(ents)), rep.raw)
        return entries

    def batch(self, items, desc="batch"):
        """Send all requests in one write, then read the replies in order.
        items: (method, args...) tuples.  Each reply is one step."""
        ids = []
        self.c.begin_batch()
        try:
            for it in items:
                ids.append(getattr(self.c, it[0])(*it[1:], wait=False))
            self.c.end_batch()
        except sc.SFTPError as e:
            self.c.held = None
            self.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
            raise Abort(str(e))
        reps = []
        for i, (it, rid) in enumerate(zip(items, ids)):
            d = "%s#%d %s(%s)" % (desc, i, it[0],
                                  ", ".join(self.fmt(a) for a in it[1:]))
            try:
                rep = self.c.recv()
            except sc.SFTPError as e:
                self.record(d, "EXCEPTION %s: %s" % (type(e).__name__, e))
                raise Abort(str(e))
            n = self.on_reply(rep, it[0])
            if rep.id != rid:
                n = "OUT-OF-ORDER(reply id %s, expected %d) %s" % (
                    rep.id, rid, n)
            self.record(d, n, rep.raw)
            reps.append(rep)
        return reps

    def raw(self, desc, data):
        """Send raw bytes (no reply expected)."""
        try:
            self.c.send_raw(data)
        except sc.ServerClosed:
            pass    # it may exit before reading everything: not compared
        except sc.SFTPError as e:
            self.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
            raise Abort(str(e))

    def expect_reply(self, desc, kind=""):
        try:
            rep = self.c.recv()
        except sc.SFTPError as e:
            self.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
            raise Abort(str(e))
        self.record(desc, self.on_reply(rep, kind), rep.raw)
        return rep

    def expect_exit(self, desc, timeout=5.0):
        """The server should exit by itself (without EOF on its stdin)."""
        try:
            rc = self.c.proc.wait(timeout)
            out = self.c.pending_bytes(0.2)
            self.record(desc, "exited by itself: status %d, output %s" % (
                rc, out.hex() or "none"))
        except Exception:
            out = self.c.pending_bytes(0.1)
            self.record(desc, "still running after %.1fs, output %s" % (
                timeout, out.hex() or "none"))


# ------------------------------------------------------------- fixtures

def W(path, data=b"", mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def D(path, mode=0o755):
    os.mkdir(path)
    os.chmod(path, mode)


def settimes(root, t=OLD):
    """Set every mtime/atime below root (root included) to t, bottom-up."""
    for dp, dns, fns in os.walk(root, topdown=False):
        for n in fns + dns:
            p = os.path.join(dp, n)
            try:
                os.utime(p, (t, t), follow_symlinks=False)
            except OSError:
                pass
    os.utime(root, (t, t))


def fx_basic(r):
    W(r + b"/f.txt", b"hello world\n")
    W(r + b"/big.bin", rnd(1, 1 << 20))
    W(r + b"/odd.bin", rnd(2, 261121))
    W(r + b"/empty", b"")
    W(r + b"/ro.txt", b"read only\n", 0o444)
    W(r + b"/exec.sh", b"#!/bin/sh\n", 0o755)
    D(r + b"/d")
    W(r + b"/d/a", b"a" * 10)
    W(r + b"/d/b", b"b" * 20)
    D(r + b"/d/sub")
    W(r + b"/d/sub/x", b"x")
    D(r + b"/emptydir")
    D(r + b"/full")
    W(r + b"/full/inside", b"i")
    os.symlink(b"f.txt", r + b"/link")
    os.symlink(b"nope", r + b"/dangling")
    os.symlink(b"loop2", r + b"/loop1")
    os.symlink(b"loop1", r + b"/loop2")
    os.symlink(b"d", r + b"/dirlink")
    os.symlink(r + b"/f.txt", r + b"/abslink")
    os.symlink(b"d/sub", r + b"/sublink")
    settimes(r)
    os.utime(r + b"/f.txt", (OLD2, OLD2))


def fx_open_flags(r):
    fx_basic(r)
    for i in range(64):
        W(r + b"/ex%02d" % i, b"content-%02d\n" % i, 0o640)
    settimes(r)


def fx_readdir(r):
    fx_basic(r)
    D(r + b"/many")
    for i in range(250):
        W(r + b"/many/file%03d" % i, b"x" * i)
    D(r + b"/many/subdir")
    D(r + b"/var")
    v = r + b"/var/"
    W(v + b"plain", b"p" * 100)
    W(v + b"suid", b"", 0o4755)
    W(v + b"suid-noexec", b"", 0o4644)
    W(v + b"sgid", b"", 0o2755)
    W(v + b"sgid-noexec", b"", 0o2644)
    W(v + b"noperm", b"", 0o000)
    W(v + b"allperm", b"", 0o777)
    D(v + b"sticky", 0o1777)
    D(v + b"sticky-noexec", 0o1776)
    D(v + b"dir700", 0o700)
    os.mkfifo(v + b"fifo", 0o600)
    s = socket.socket(socket.AF_UNIX)
    s.bind(v + b"sock")
    s.close()
    os.symlink(b"plain", v + b"symlink")
    os.link(v + b"plain", v + b"hardlink1")
    os.link(v + b"plain", v + b"hardlink2")
    W(v + b"with space", b"s")
    W(v + b"new\nline", b"n")
    W(v + b"\xff\xfebin", b"b")
    W(v + b"back\\slash", b"b")
    W(v + b"per%cent", b"p")
    W(v + b"caf\xc3\xa9", b"c")
    W(v + b"L" * 255, b"long")
    W(v + b"sparse", b"")
    os.truncate(v + b"sparse", 10 ** 10)
    W(v + b"size99999999", b"")
    os.truncate(v + b"size99999999", 99999999)
    W(v + b"size100000000", b"")
    os.truncate(v + b"size100000000", 100000000)
    if IS_ROOT:
        os.mknod(v + b"chardev", 0o620 | stat.S_IFCHR, os.makedev(1, 3))
        os.mknod(v + b"blockdev", 0o660 | stat.S_IFBLK, os.makedev(7, 0))
        W(v + b"unknown-owner", b"u")
        os.chown(v + b"unknown-owner", 12345, 54321)
        W(v + b"nobody-owned", b"n")
        os.chown(v + b"nobody-owned", 65534, 65534)
        W(v + b"longuser", b"n")
        os.chown(v + b"longuser", 4000000000, 4000000001)
    settimes(r)
    os.utime(v + b"plain", (MONTHS3, MONTHS3))
    os.utime(v + b"with space", (FUTURE, FUTURE))
    os.utime(v + b"symlink", (MONTHS3, MONTHS3), follow_symlinks=False)
    os.utime(v + b"suid", (T0 - 200 * 86400, T0 - 200 * 86400))
    os.utime(v, (OLD, OLD))


def fx_unpriv(r):
    fx_basic(r)
    D(r + b"/locked", 0o000)
    D(r + b"/rodir", 0o555)
    W(r + b"/rodir/f", b"f")
    D(r + b"/noexec", 0o644)
    W(r + b"/noexec/f", b"f")
    D(r + b"/wonly", 0o333)
    W(r + b"/wonly/f", b"f")
    W(r + b"/secret", b"s", 0o000)
    W(r + b"/readonly", b"r", 0o444)
    D(r + b"/stickydir", 0o1777)
    if IS_ROOT:
        for dp, dns, fns in os.walk(r):
            for n in dns + fns + [b""]:
                os.lchown(os.path.join(dp, n), UNPRIV_UID, UNPRIV_UID)
        W(r + b"/rootfile", b"root", 0o644)
        W(r + b"/stickydir/rootfile", b"root", 0o666)
        D(r + b"/rootdir", 0o755)
        W(r + b"/rootdir/f", b"f", 0o666)
    settimes(r)


# ------------------------------------------------------------- scenarios

SCENARIOS = []


class Scenario:
    def __init__(self, fn, name, setup, args, socketpair, unpriv, init,
                 only, log, timeout, nofile=None, env=None,
                 fingerprint=None):
        self.fn, self.name, self.setup = fn, name, setup
        self.env = env
        # what the scenario reads outside its tree, now: when this changes
        # while the two servers run, they run again (up to 3 times)
        self.fingerprint = fingerprint
        self.args, self.socketpair, self.unpriv = args, socketpair, unpriv
        self.init, self.only, self.log = init, only, log
        self.timeout = timeout
        self.nofile = nofile


def scenario(name=None, setup=fx_basic, args=(), socketpair=False,
             unpriv=False, init=True, only=None, log=True, timeout=None,
             nofile=None, env=None, fingerprint=None):
    def deco(fn):
        SCENARIOS.append(Scenario(fn, name or fn.__name__[3:], setup,
                                  tuple(args), socketpair, unpriv, init,
                                  only, log, timeout, nofile, env,
                                  fingerprint))
        return fn
    return deco


BAD_HANDLES = [b"", b"\x00\x00\x00\x63", b"\xff\xff\xff\xff",
               b"\x00\x00\x00\x00\x00\x00\x00\x00", b"x" * 255, b"y" * 300]


@scenario()
def sc_version(s):
    s.init(3)          # a second INIT is answered again
    s.init(6)
    s.realpath(".")


@scenario(init=False)
def sc_version_v2(s):
    s.init(2)
    s.stat("missing")  # STATUS without message and language
    s.realpath(".")
    s.remove("missing")
    s.stat("f.txt")


@scenario(init=False)
def sc_version_0(s):
    s.init(0)
    s.stat("missing")
    s.open("missing", FXF_READ)


@scenario(init=False)
def sc_version_big(s):
    s.init(0xFFFFFFFF)
    s.stat("missing")


@scenario(setup=fx_open_flags)
def sc_open_flags(s):
    for i in range(64):
        for name in (b"ex%02d" % i, b"new%02d" % i):
            rep = s.open(name, i)
            if rep.type == FXP_HANDLE:
                h = rep.handle
                s.fstat(h)
                s.write(h, 0, b"XY")
                s.read(h, 0, 100)
                s.close_handle(h)
            s.lstat(name)
    # modes from attrs; all other attrs are ignored by OPEN
    for i, a in enumerate([{"perm": 0o600}, {"perm": 0o7777},
                           {"perm": 0o100640}, {"perm": 0},
                           {"size": 5, "uid": 12345, "gid": 12345,
                            "atime": OLD, "mtime": OLD},
                           {"extended": [(b"a@b", b"c")]}]):
        rep = s.open(b"m%d" % i, FXF_WRITE | FXF_CREAT, a)
        if rep.type == FXP_HANDLE:
            s.close_handle(rep.handle)
        s.lstat(b"m%d" % i)
    # unknown flag bits are ignored
    rep = s.open("unk", FXF_WRITE | FXF_CREAT | 0xFFC0)
    s.close_handle(s.h(rep))
    for path, fl in [("d", FXF_READ), ("d", FXF_WRITE), ("d", 0),
                     ("d", FXF_WRITE | FXF_CREAT),
                     ("nodir/x", FXF_WRITE | FXF_CREAT),
                     ("", FXF_READ), ("", FXF_WRITE | FXF_CREAT),
                     ("f.txt/x", FXF_READ), ("f.txt/", FXF_READ),
                     ("link", FXF_READ), ("loop1", FXF_READ),
                     ("loop1", FXF_WRITE | FXF_CREAT),
                     ("dangling", FXF_WRITE | FXF_CREAT | FXF_EXCL),
                     ("dangling", FXF_WRITE | FXF_CREAT),
                     ("N" * 256, FXF_WRITE | FXF_CREAT),
                     ("N" * 255, FXF_WRITE | FXF_CREAT),
                     ("a/" * 2100 + "x", FXF_READ),
                     ("empty", FXF_READ), ("f.txt", FXF_READ)]:
        rep = s.open(path, fl)
        if rep.type == FXP_HANDLE:
            s.read(rep.handle, 0, 10)
            s.fstat(rep.handle)
            s.close_handle(rep.handle)
    s.lstat("nope")
    # absolute paths
    rep = s.open(s.abs("f.txt"), FXF_READ)
    s.read(s.h(rep), 0, 5)
    s.close_handle(s.h(rep))


@scenario()
def sc_read(s):
    big = s.h(s.open("big.bin", FXF_READ))
    size = 1 << 20
    for off, ln in [(0, 32768), (1000, 100), (0, 0), (size, 0),
                    (size + 100, 0), (2 ** 63, 0), (0, 300000),
                    (0, 261120), (0, 261121), (0, 0xFFFFFFFF),
                    (size - 261120, 261120), (size - 10, 100), (size - 1, 1),
                    (size, 100), (size + 1, 100), (size * 4, 32768),
                    (2 ** 63 - 1, 10), (2 ** 63, 10), (2 ** 64 - 1, 10),
                    (size - 261120, 300000), (5, 1)]:
        s.read(big, off, ln)
    s.fstat(big)
    s.close_handle(big)
    s.read(big, 0, 10)              # closed handle
    e = s.h(s.open("empty", FXF_READ))
    s.read(e, 0, 0)
    s.read(e, 0, 1)
    s.read(e, 10, 1)
    s.close_handle(e)
    o = s.h(s.open("odd.bin", FXF_READ))
    off = 0
    while off < 261121 + 32768:
        s.read(o, off, 32768)
        off += 32768
    s.close_handle(o)
    w = s.h(s.open("f.txt", FXF_WRITE))
    s.read(w, 0, 10)                # write-only fd: EBADF
    s.close_handle(w)
    dh = s.h(s.opendir("d"))
    s.read(dh, 0, 10)               # directory handle
    s.close_handle(dh)
    fd = s.h(s.open("d", FXF_READ))  # a directory opened as a file
    s.read(fd, 0, 10)
    s.close_handle(fd)
    for bh in BAD_HANDLES:
        s.read(bh, 0, 10)
    # READ on a file that grows and shrinks under the handle
    h = s.h(s.open("grow", FXF_READ | FXF_WRITE | FXF_CREAT))
    s.read(h, 0, 10)
    s.write(h, 0, b"0123456789")
    s.read(h, 0, 10)
    s.read(h, 5, 10)
    s.fsetstat(h, {"size": 3})
    s.read(h, 0, 10)
    s.read(h, 3, 10)
    s.close_handle(h)


@scenario()
def sc_write(s):
    h = s.h(s.open("w.bin", FXF_WRITE | FXF_CREAT | FXF_TRUNC))
    s.write(h, 0, b"A" * 100)
    s.write(h, 200, b"B" * 10)      # hole
    s.write(h, 50, b"C" * 10)       # overwrite
    s.write(h, 210, b"")            # zero length
    s.write(h, 5000, b"")           # zero length past EOF
    s.write(h, 1000, rnd(3, 65536))
    s.write(h, 2 ** 63 - 10, b"x" * 100)   # EFBIG
    s.write(h, 2 ** 63, b"x")               # offset not representable
    s.write(h, 2 ** 64 - 1, b"x")
    s.fstat(h)
    s.close_handle(h)
    s.write(h, 0, b"closed")
    r = s.h(s.open("w.bin", FXF_READ))
    s.read(r, 0, 300)
    s.read(r, 1000, 65536)
    s.write(r, 0, b"ro")            # read-only fd: EBADF
    s.close_handle(r)
    a = s.h(s.open("f.txt", FXF_WRITE | FXF_APPEND))
    s.write(a, 0, b"app1\n")        # offset ignored
    s.write(a, 1000, b"app2\n")
    s.write(a, 2 ** 64 - 1, b"app3\n")   # even one no off_t holds
    # pipelined (merged by our server): the same answers
    s.batch([("write", a, 2 ** 64 - 1, b"x" * 100),
             ("write", a, 0, b"y" * 100), ("write", a, 0, b"z" * 100),
             ("write", a, 2 ** 63, b"w" * 10)], "append")
    s.fstat(a)
    s.close_handle(a)
    a = s.h(s.open("f.txt", FXF_READ | FXF_APPEND))
    s.write(a, 0, b"x")             # read-only, append
    s.read(a, 0, 100)
    s.close_handle(a)
    dh = s.h(s.opendir("d"))
    s.write(dh, 0, b"x")
    s.close_handle(dh)
    for bh in BAD_HANDLES:
        s.write(bh, 0, b"data")
    # largest write that fits in a packet (length 262144)
    h = s.h(s.open("maxw", FXF_WRITE | FXF_CREAT))
    hl = len(h)
    n = 262144 - 1 - 4 - (4 + hl) - 8 - 4
    s.write(h, 0, rnd(4, n))
    s.write(h, n, rnd(5, 261120))
    s.fstat(h)
    s.close_handle(h)
    # two handles on one file see each other's writes
    h1 = s.h(s.open("two", FXF_WRITE | FXF_CREAT | FXF_READ))
    h2 = s.h(s.open("two", FXF_WRITE | FXF_READ))
    s.write(h1, 0, b"1111")
    s.read(h2, 0, 10)
    s.write(h2, 2, b"22")
    s.read(h1, 0, 10)
    s.close_handle(h1)
    s.close_handle(h2)


STAT_PATHS = ["f.txt", "big.bin", "empty", "ro.txt", "exec.sh", "d", "d/",
              "d/sub", "emptydir", "link", "dangling", "loop1", "dirlink",
              "dirlink/", "abslink", "sublink/x", "missing", "", ".", "..",
              "d/..", "f.txt/x", "f.txt/", "missing/x", "N" * 256,
              "d/" + "N" * 256, "a/" * 2100, "d//a", "./d/./a"]


@scenario()
def sc_stat(s):
    for p in STAT_PATHS:
        s.stat(p)
        s.lstat(p)
    s.stat(s.abs("f.txt"))
    s.lstat(s.abs("link"))
    h = s.h(s.open("f.txt", FXF_READ))
    s.fstat(h)
    s.close_handle(h)
    s.fstat(h)
    h = s.h(s.open("d", FXF_READ))
    s.fstat(h)
    s.close_handle(h)
    dh = s.h(s.opendir("d"))
    s.fstat(dh)
    s.close_handle(dh)
    for bh in BAD_HANDLES:
        s.fstat(bh)


@scenario()
def sc_setstat(s):
    cases = [
        {}, {"size": 5}, {"size": 100000}, {"size": 0}, {"perm": 0o600},
        {"perm": 0o4755}, {"perm": 0o100640}, {"perm": 0xFFFFFFFF},
        {"perm": 0o7777}, {"atime": OLD, "mtime": OLD2},
        {"atime": 0, "mtime": 0}, {"atime": 0xFFFFFFFF, "mtime": 0x7FFFFFFF},
        {"uid": os.getuid(), "gid": os.getgid()},
        {"size": 3, "perm": 0o640, "atime": OLD2, "mtime": OLD,
         "uid": os.getuid(), "gid": os.getgid()},
        {"extended": [(b"x@y", b"z")]},
        {"extended": [(b"ends-in-nul\x00", b"z"), (b"", b"")]},
        {"flags": 0x40},
    ]
    if IS_ROOT:
        cases.append({"uid": 12345, "gid": 54321})
        cases.append({"uid": 0xFFFFFFFF, "gid": 0xFFFFFFFF})
    for i, a in enumerate(cases):
        s.setstat("f.txt", a)
        s.lstat("f.txt")
        s.stat("d/a")
        s.setstat("d/a", a)
        s.lstat("d/a")
    for p in ("missing", "", "f.txt/x", "loop1", "dangling"):
        s.setstat(p, {"perm": 0o600})
        s.setstat(p, {"size": 1, "perm": 0o600, "atime": 1, "mtime": 2})
    # order: size fails on a directory, the rest still runs
    s.setstat("emptydir", {"size": 0, "perm": 0o700, "atime": OLD2,
                           "mtime": OLD2})
    s.lstat("emptydir")
    s.setstat("link", {"perm": 0o604, "atime": OLD2, "mtime": OLD2})
    s.lstat("link")
    s.stat("link")
    # FSETSTAT
    h = s.h(s.open("d/b", FXF_READ | FXF_WRITE))
    for a in cases:
        s.fsetstat(h, a)
        s.fstat(h)
    s.close_handle(h)
    s.fsetstat(h, {"perm": 0o600})
    r = s.h(s.open("exec.sh", FXF_READ))
    s.fsetstat(r, {"size": 1})      # ftruncate on O_RDONLY: EINVAL
    s.fsetstat(r, {"perm": 0o700, "atime": OLD2, "mtime": OLD2})
    s.fsetstat(r, {"size": 1, "perm": 0o711})
    s.fstat(r)
    s.close_handle(r)
    dh = s.h(s.opendir("d"))
    s.fsetstat(dh, {"perm": 0o700})
    s.close_handle(dh)
    fdh = s.h(s.open("d", FXF_READ))   # directory opened as a file
    s.fsetstat(fdh, {"perm": 0o711, "atime": OLD2, "mtime": OLD2})
    s.fsetstat(fdh, {"size": 0})
    s.close_handle(fdh)
    s.lstat("d")
    for bh in BAD_HANDLES:
        s.fsetstat(bh, {"perm": 0o600})


@scenario(setup=fx_readdir)
def sc_readdir(s):
    for p in ("many", "var", "emptydir", "d", ".", "dirlink", "d/sub",
              s.abs("var"), s.abs(""), "var/dir700", "var/sticky"):
        rep = s.opendir(p)
        if rep.type == FXP_HANDLE:
            s.readdir_all(rep.handle)
            s.readdir(rep.handle)        # EOF again
            s.readdir(rep.handle)
            s.close_handle(rep.handle)
    for p in ("f.txt", "missing", "", "link", "dangling", "loop1",
              "f.txt/x", "N" * 256):
        s.opendir(p)
    h = s.h(s.open("f.txt", FXF_READ))
    s.readdir(h)
    s.close_handle(h)
    for bh in BAD_HANDLES:
        s.readdir(bh)
    dh = s.h(s.opendir("d"))
    s.close_handle(dh)
    s.readdir(dh)
    s.close_handle(dh)
    for p in ("var/plain", "var/suid", "var/sparse", "var/fifo",
              "var/sock", "var/symlink", "var/with space"):
        s.lstat(p)
    # several directory handles at once
    h1 = s.h(s.opendir("d"))
    h2 = s.h(s.opendir("d"))
    s.readdir_all(h1)
    s.readdir_all(h2)
    s.close_handle(h2)
    s.close_handle(h1)


@scenario()
def sc_remove_mkdir_rmdir(s):
    for p in ("f.txt", "f.txt", "link", "dangling", "d", "missing", "",
              "f.txt/x", "loop1", "emptydir", "N" * 256, "d/a"):
        s.remove(p)
    s.lstat("f.txt")
    s.lstat("link")
    for p, a in [("m1", None), ("m2", {"perm": 0o700}),
                 ("m3", {"perm": 0o7777}), ("m4", {"perm": 0o40755}),
                 ("m5", {"perm": 0}), ("m6", {"size": 1, "uid": 12345,
                                             "gid": 1, "atime": 1,
                                             "mtime": 1}),
                 ("m1", None), ("d", None), ("exec.sh", None),
                 ("nodir/m", None), ("", None), ("N" * 256, None),
                 ("f.txt", None), ("d/sub/deeper", {"perm": 0o750}),
                 ("dangling", None), ("loop1", None), ("m7/", None)]:
        s.mkdir(p, a)
        s.lstat(p)
    for p in ("m1", "m1", "d", "full", "exec.sh", "missing", "",
              "dirlink", "m2/", "d/sub/deeper", ".", "emptydir/.",
              "N" * 256):
        s.rmdir(p)
    s.lstat("m2")


REALPATHS = ["", ".", "..", "/", "//", "///", "/..", "/../..", "/./",
             "d", "d/", "d/.", "d/..", "d/../d/sub", "dirlink", "dirlink/",
             "dirlink/..", "sublink", "sublink/..", "link", "abslink",
             "dangling", "dangling/x", "missing", "missing/", "missing/x",
             "d/missing", "d/missing/x", "d/sub/missing", "f.txt/..",
             "f.txt/x", "f.txt/.", "loop1", "loop1/x", "d//a",
             "./d/./sub/../a", "N" * 256, "d/" + "N" * 256, "a/" * 2100,
             "emptydir/../d", "~", "~/x", "..//..//"]


@scenario()
def sc_realpath(s):
    for p in REALPATHS:
        s.realpath(p)
    s.realpath(s.abs("d/../f.txt"))
    s.realpath(s.abs("") + b"/")


@scenario()
def sc_expand_path(s):
    for p in REALPATHS + ["~root", "~root/", "~root/x", "~nosuchuser",
                          "~nosuchuser/x", "~/", "~/d", "~/../..", "~~",
                          "x~", "~" + ME, "~" + ME + "/d", "~/missing/x",
                          "~nobody", "~/", "~//d"]:
        s.expand_path(p)


@scenario()
def sc_home_directory(s):
    for u in ("root", "", ME, "nobody", "nosuchuser", "daemon", "ROOT",
              "root ", "x" * 300):
        s.home_directory(u)


@scenario()
def sc_readlink_symlink(s):
    for p in ("link", "dangling", "abslink", "dirlink", "loop1", "f.txt",
              "d", "missing", "", "d/missing", "sublink", "N" * 256):
        s.readlink(p)
    # OpenSSH's order: (target, linkpath)
    for target, lp in [("f.txt", "s1"), ("no/such/target", "s2"),
                       ("d", "s3"), (s.abs("d"), "s4"), ("", "s5"),
                       ("f.txt", "s1"), ("f.txt", "d"), ("x", "nodir/s"),
                       ("../../..", "s6"), ("s7", "s7"),
                       ("t" * 4000, "s8"), ("t" * 4096, "s9"),
                       ("f.txt", "N" * 256), ("f.txt", "")]:
        s.symlink(target, lp)
        s.lstat(lp)
        s.readlink(lp)
    s.stat("s1")
    s.realpath("s3")


@scenario()
def sc_rename(s):
    W_ = [("f.txt", "g.txt"), ("g.txt", "g.txt"), ("g.txt", "exec.sh"),
          ("g.txt", "d"), ("d", "emptydir"), ("d", "dd"), ("dd", "d"),
          ("emptydir", "link"), ("emptydir", "dangling"),
          ("link", "link2"), ("link2", "dangling"),
          ("dangling", "dang2"), ("dang2", "newdang"),
          ("big.bin", "missing/dir/x"), ("missing", "x"), ("", "x"),
          ("g.txt", ""), ("ro.txt", "d/ro.txt"), ("d", "d/sub/inside"),
          ("exec.sh", "exec.sh/x"), ("odd.bin", "N" * 256),
          ("loop1", "loop3"), ("empty", "dirlink"), ("empty", "dirlink/e"),
          ("full", "emptydir2"), ("d/a", "d/b"), ("d/a", "d/a2")]
    for old, new in W_:
        s.rename(old, new)
        s.lstat(old)
        s.lstat(new)


@scenario()
def sc_posix_rename(s):
    for old, new in [("f.txt", "g.txt"), ("g.txt", "g.txt"),
                     ("g.txt", "exec.sh"), ("exec.sh", "d"),
                     ("emptydir", "d"), ("full", "d/sub"),
                     ("d/sub", "emptydir"), ("link", "dangling"),
                     ("missing", "x"), ("", "x"), ("d", "d/sub/x"),
                     ("empty", "N" * 256), ("ro.txt", "nodir/x")]:
        s.posix_rename(old, new)
        s.lstat(old)
        s.lstat(new)


@scenario()
def sc_hardlink(s):
    for old, new in [("f.txt", "hl1"), ("f.txt", "hl1"), ("f.txt", "d"),
                     ("d", "dhl"), ("missing", "x"), ("link", "hl-link"),
                     ("dangling", "hl-dangling"), ("", "x"), ("f.txt", ""),
                     ("f.txt", "nodir/x"), ("f.txt", "N" * 256),
                     ("hl1", "hl2")]:
        s.hardlink(old, new)
        s.lstat(new)
    s.lstat("f.txt")


@scenario()
def sc_statvfs_fsync(s):
    for p in (".", "f.txt", "missing", "", "d/..", s.abs(""), "/",
              "f.txt/x", "loop1", "N" * 256):
        s.statvfs(p)
    h = s.h(s.open("f.txt", FXF_READ))
    s.fstatvfs(h)
    s.fsync(h)                      # fsync on a read-only fd works
    s.close_handle(h)
    s.fstatvfs(h)
    s.fsync(h)
    h = s.h(s.open("new", FXF_WRITE | FXF_CREAT))
    s.write(h, 0, b"data")
    s.fsync(h)
    s.fstatvfs(h)
    s.close_handle(h)
    dh = s.h(s.opendir("d"))
    s.fstatvfs(dh)
    s.fsync(dh)
    s.close_handle(dh)
    fdh = s.h(s.open("d", FXF_READ))
    s.fsync(fdh)
    s.fstatvfs(fdh)
    s.close_handle(fdh)
    for bh in BAD_HANDLES:
        s.fstatvfs(bh)
        s.fsync(bh)


@scenario()
def sc_lsetstat(s):
    for p, a in [("link", {"atime": OLD2, "mtime": OLD2}),
                 ("link", {"perm": 0o600}),
                 ("link", {"size": 0}),
                 ("link", {"size": 0, "perm": 0o600}),
                 ("f.txt", {"perm": 0o600, "atime": OLD, "mtime": OLD2}),
                 ("f.txt", {"size": 3}),
                 ("dangling", {"atime": OLD2, "mtime": OLD}),
                 ("dangling", {"uid": os.getuid(), "gid": os.getgid()}),
                 ("missing", {"perm": 0o600}),
                 ("missing", {"atime": 1, "mtime": 2}),
                 ("", {"perm": 0o600}),
                 ("d", {"perm": 0o700, "atime": 5, "mtime": 6}),
                 ("loop1", {"atime": 7, "mtime": 8}),
                 ("f.txt", {}),
                 ("f.txt", {"extended": [(b"a", b"b")]}),
                 ("link", {"perm": 0o600, "atime": 9, "mtime": 10,
                           "uid": os.getuid(), "gid": os.getgid()})]:
        s.lsetstat(p, a)
        s.lstat(p)
    if IS_ROOT:
        s.lsetstat("link", {"uid": 12345, "gid": 54321})
        s.lstat("link")
        s.lstat("f.txt")


@scenario()
def sc_limits_users_groups(s):
    s.limits()
    s.extended("limits@openssh.com", b"trailing junk")
    ids = [os.getuid(), 0, 1, 2, 12345, 65534, 0xFFFFFFFF]
    s.users_groups_by_id([], [])
    s.users_groups_by_id(ids, [])
    s.users_groups_by_id([], ids)
    s.users_groups_by_id(ids, list(reversed(ids)))
    s.users_groups_by_id([0] * 50, [0] * 50)


@scenario()
def sc_unknown_extensions(s):
    for name in ("no-such-extension", "", "LIMITS@OPENSSH.COM",
                 "limits@openssh.co", "posix-rename", "statvfs",
                 "limits@openssh.com\x00", "x" * 300, "copy-data@openssh.com",
                 "md5-hash-handle", "check-file-NAME", "space_available",
                 "home-directory@openssh.com", "users-groups-by-id"):
        s.extended(name, string("f.txt") + string("x"))
    s.realpath(".")


@scenario()
def sc_copy_data(s):
    src = s.h(s.open("big.bin", FXF_READ))
    dst = s.h(s.open("copy1", FXF_WRITE | FXF_CREAT))
    s.copy_data(src, 0, 0, dst, 0)             # whole file
    s.fstat(dst)
    s.copy_data(src, 100, 1000, dst, 5000)     # part, into the middle
    s.copy_data(src, 1048000, 1000, dst, 0)    # EOF inside the last chunk
    s.copy_data(src, 1048576, 100, dst, 0)     # at EOF
    s.copy_data(src, 2000000, 0, dst, 0)       # past EOF, to EOF
    s.copy_data(src, 0, 200000, dst, 1 << 21)  # beyond dst EOF
    s.copy_data(src, 900000, 300000, dst, 0)   # EOF before the last chunk
    s.copy_data(src, 0, 65536 * 3, dst, 7)     # exactly three chunks
    s.copy_data(src, 0, 10, src, 100)          # same handle
    s.fstat(dst)
    s.close_handle(dst)
    src2 = s.h(s.open("big.bin", FXF_READ | FXF_WRITE))
    s.copy_data(src, 0, 10, src2, 100)         # same path, other handle
    s.close_handle(src2)
    # The same file under another name: 9.2 copies, we refuse as 10.4
    # does (sc_copy_data_same_file, server only).
    ro = s.h(s.open("f.txt", FXF_READ))
    wo = s.h(s.open("wonly", FXF_WRITE | FXF_CREAT))
    # A destination that cannot be written: see sc_copy_data_failure.
    app = s.h(s.open("exec.sh", FXF_WRITE | FXF_APPEND))
    s.copy_data(ro, 0, 0, app, 0)              # append: offset ignored
    s.copy_data(ro, 2, 3, app, 99999)
    s.close_handle(app)
    dh = s.h(s.opendir("d"))
    s.copy_data(dh, 0, 0, wo, 0)
    s.copy_data(ro, 0, 0, dh, 0)
    s.close_handle(dh)
    for bh in BAD_HANDLES:
        s.copy_data(bh, 0, 0, wo, 0)
        s.copy_data(ro, 0, 0, bh, 0)
    s.copy_data(src, 2 ** 63, 10, wo, 0)
    s.copy_data(src, 0, 10, wo, 2 ** 63)
    s.copy_data(src, 0, 10, wo, 2 ** 64 - 1)
    s.close_handle(wo)
    s.close_handle(ro)
    s.close_handle(src)
    s.lstat("copy1")
    s.lstat("wonly")


def fx_special(r):
    fx_basic(r)
    os.mkfifo(r + b"/fifo", 0o644)
    sk = socket.socket(socket.AF_UNIX)
    sk.bind(r + b"/sock")
    sk.close()
    settimes(r)


# FIFOs, sockets and character devices (issue 10 item 3): OpenSSH seeks
# before every READ and WRITE (but a WRITE on an append handle), so a FIFO
# answers FAILURE ("Illegal seek") while /dev/zero and /dev/null, whose
# lseek works, are read and written.  Only opens that cannot block
# OpenSSH: a FIFO opened for both reading and writing has its own reader
# and writer.  Never enough bytes into the FIFO to fill it (OpenSSH would
# block).
@scenario(setup=fx_special)
def sc_special_files(s):
    f = s.h(s.open("fifo", FXF_READ | FXF_WRITE))
    s.read(f, 0, 100)
    s.read(f, 0, 0)
    s.read(f, 2 ** 64 - 1, 10)
    s.write(f, 0, b"into the fifo")
    s.write(f, 0, b"")
    s.fstat(f)
    s.fsetstat(f, {"perm": 0o600})
    s.fsetstat(f, {"size": 0})
    s.fsync(f)
    s.fstatvfs(f)
    reg = s.h(s.open("f.txt", FXF_READ))
    out = s.h(s.open("copy", FXF_WRITE | FXF_CREAT))
    s.copy_data(f, 0, 0, out, 0)            # read_seek fails
    s.copy_data(f, 0, 100, out, 0)
    s.copy_data(reg, 0, 5, f, 0)            # write_seek fails
    s.close_handle(f)
    # an append handle does not seek: the bytes go into the pipe
    a = s.h(s.open("fifo", FXF_READ | FXF_WRITE | FXF_APPEND))
    s.write(a, 0, b"appended")
    s.write(a, 2 ** 64 - 1, b"anywhere")
    s.copy_data(reg, 0, 5, a, 0)
    s.copy_data(reg, 0, 0, a, 2 ** 64 - 1)
    s.read(a, 0, 10)
    s.close_handle(a)
    for p, fl in (("sock", FXF_READ), ("sock", FXF_WRITE),
                  ("sock", FXF_READ | FXF_WRITE)):
        s.open(p, fl)
    s.opendir("sock")
    s.opendir("fifo")
    s.stat("fifo")
    s.stat("sock")
    # character devices: lseek works, so they are read and written
    z = s.h(s.open("/dev/zero", FXF_READ | FXF_WRITE))
    for off, ln in ((0, 100), (12345, 5000), (0, 0), (0, 261120),
                    (0, 300000), (2 ** 63, 10), (2 ** 64 - 1, 10)):
        s.read(z, off, ln)
    s.write(z, 0, b"zeros")
    s.write(z, 2 ** 64 - 1, b"far")
    s.copy_data(z, 0, 100000, out, 0)
    s.copy_data(z, 2 ** 63, 10, out, 0)
    s.fstat(out)
    s.close_handle(z)
    n = s.h(s.open("/dev/null", FXF_READ | FXF_WRITE))
    s.read(n, 0, 100)
    s.read(n, 2 ** 64 - 1, 100)
    s.read(n, 0, 0)
    s.write(n, 0, b"discarded")
    s.write(n, 2 ** 63, b"far")
    s.copy_data(n, 0, 0, out, 0)            # to EOF: OK at once
    s.copy_data(n, 0, 100, out, 0)          # EOF before any byte
    s.copy_data(reg, 0, 0, n, 0)
    s.copy_data(reg, 0, 0, n, 2 ** 64 - 1)
    s.close_handle(n)
    # a terminal: its lseek fails as a FIFO's does
    t = s.h(s.open("/dev/ptmx", FXF_READ | FXF_WRITE))
    s.read(t, 0, 10)
    s.write(t, 0, b"typed")
    s.close_handle(t)
    full = s.h(s.open("/dev/full", FXF_WRITE))
    s.write(full, 0, b"no room")
    s.copy_data(reg, 0, 0, full, 0)
    s.close_handle(full)
    na = s.h(s.open("/dev/null", FXF_WRITE | FXF_APPEND))
    s.write(na, 2 ** 64 - 1, b"x")
    s.copy_data(reg, 0, 0, na, 2 ** 64 - 1)
    s.close_handle(na)
    s.close_handle(out)
    s.close_handle(reg)
    s.realpath(".")


@scenario(setup=fx_special, socketpair=True)
def sc_special_files_socketpair(s):
    sc_special_files(s)


# ------------------------------------------------------------- /proc, /sys

# Files whose size in stat is 0 or not their length (issue 20): procfs and
# sysfs files hold what read() gives until it returns 0, whatever stat
# says.  Those missing here are left out; so is one that changes between
# two reads (kernel_files).  /proc/kallsyms and /sys/kernel/btf/vmlinux
# are the large ones (megabytes: many READs of 32 and 255 KiB), where
# procfs gives about a page per read() and sysfs exactly one page.
KERNEL_FILES = [
    "/proc/version", "/proc/sys/kernel/ostype", "/proc/sys/kernel/osrelease",
    "/proc/sys/kernel/pid_max", "/proc/filesystems", "/proc/cmdline",
    "/proc/devices", "/proc/execdomains", "/proc/crypto", "/proc/kallsyms",
    "/sys/kernel/mm/transparent_hugepage/enabled",
    "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible",
    "/sys/kernel/btf/vmlinux", "/proc/cpuinfo"]
# Files with lines that change between reads: compared by kernel_view.
VOLATILE_FILES = {"/proc/cpuinfo"}
_KERNEL_FILES = None


def read_whole(path):
    """Every byte read() gives until it returns 0 (None: cannot read)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    out = bytearray()
    try:
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return bytes(out)
            out += chunk
    except OSError:
        return None
    finally:
        os.close(fd)


def kernel_view(path, data):
    """The bytes compared for path: /proc/cpuinfo's clock rates ("cpu MHz"
    lines) change between reads, so their values are masked; its line
    count, every key, and every other value are compared."""
    if data is None or path not in VOLATILE_FILES:
        return data
    out = []
    for line in data.split(b"\n"):
        key, sep, _ = line.partition(b":")
        if sep and b"MHz" in key:
            line = key + b": <varies>"
        out.append(line)
    return b"\n".join(out)


def kernel_files():
    """The KERNEL_FILES this machine has, readable, that read the same
    twice: [(path, bytes as read now)].  Chosen once per run, so that both
    servers get the same list."""
    global _KERNEL_FILES
    if _KERNEL_FILES is None:
        _KERNEL_FILES = []
        # DIFFTEST_SKIP_FILES: paths that read differently for the server
        # than for this test (kallsyms under a wrapper that drops
        # CAP_SYSLOG: its addresses then read as zeros).
        skip = os.environ.get("DIFFTEST_SKIP_FILES", "").split()
        for p in KERNEL_FILES:
            if p in skip:
                continue
            a = kernel_view(p, read_whole(p))
            if not a or kernel_view(p, read_whole(p)) != a:
                continue
            _KERNEL_FILES.append(p)
    return _KERNEL_FILES


def kernel_fingerprint():
    """What the kernel files hold now (masked as kernel_view does): a
    scenario on them is run again when this changed during its runs."""
    return tuple(hb(kernel_view(p, read_whole(p)) or b"")
                 for p in kernel_files())


def whole_download(s, h, path, chunk, truth, limit=None):
    """READs of chunk bytes from offset 0, each from where the data ended,
    until a status: one step, the bytes (masked by kernel_view) and the
    status that ended it, and whether they are what read() gave just
    before (truth).  limit: stop after that many bytes (no EOF then)."""
    desc = "download(%r, %d%s)" % (path, chunk,
                                   ", first %d" % limit if limit else "")
    out = bytearray()
    most = (limit or len(truth)) // min(chunk, 2048) + 64
    end = None
    try:
        for _ in range(most):
            if limit and len(out) >= limit:
                end = "(stopped at %d bytes)" % limit
                break
            rep = s.c.read(h, len(out), chunk)
            if rep.type != FXP_DATA:
                end = s.norm.reply(rep, "read", None)
                break
            if not rep.data:
                end = "empty DATA at %d" % len(out)
                break
            out += rep.data
        else:
            end = "no status after %d READs" % most
    except sc.SFTPError as e:
        s.record(desc, "EXCEPTION %s: %s" % (type(e).__name__, e))
        raise Abort(str(e))
    got = kernel_view(path, bytes(out))
    want = truth[:limit] if limit else truth
    s.record(desc, "bytes=%d sha=%s %s; %s" % (
        len(got), hb(got), end, "the file's bytes" if got == want else
        "NOT the file's bytes (read() gave %d, sha=%s)" % (len(want),
                                                         hb(want))))


def small_reads(s, h, path, data):
    """7-byte READs, pipelined 64 at a time, every reply its own step: over
    the whole of a small file, over the first 4 KiB and the last bytes of
    a large one, and past the end."""
    n = len(data)
    if n <= 4096:
        offs = list(range(0, n + 8, 7))
    else:
        # (each READ away from the last one's end costs procfs a walk
        # from the start of the file)
        offs = list(range(0, 4200, 7)) + [n - 100, n - 20, n - 3]
    # far past the end: lseek(2) refuses some of these (OpenSSH seeks
    # before every READ), differently on procfs and sysfs
    offs += [n, n + 1, 10 ** 12, 2 ** 63 - 1, 2 ** 63, 2 ** 64 - 1]
    for i in range(0, len(offs), 64):
        s.batch([("read", h, o, 7) for o in offs[i:i + 64]], "r7")


@scenario(name="kernel_files", timeout=30, fingerprint=kernel_fingerprint)
def sc_kernel_files(s):
    """/proc and /sys files (KERNEL_FILES): whole downloads with READs of
    7 bytes, 32 KiB and 255 KiB, then single READs, each reply compared.
    A large file's 32 KiB READs are compared as downloads only: OpenSSH's
    one read() gives about a page of procfs (difference (a))."""
    for path in kernel_files():
        truth = kernel_view(path, read_whole(path))
        h = s.h(s.open(path, FXF_READ))
        for chunk in (32768, 261120):
            whole_download(s, h, path, chunk, truth)
            if len(truth) <= 65536:
                # again from the start, after the end was seen
                whole_download(s, h, path, chunk, truth)
        # 7-byte READs: past a page of a large file, then only its end
        whole_download(s, h, path, 7, truth,
                       limit=None if len(truth) <= 16384 else 4200)
        if path not in VOLATILE_FILES:
            if len(truth) <= 3000:  # one read() gives it all
                s.read(h, 0, 32768)
                s.read(h, 1, 261120)
                s.read(h, len(truth) // 2, 32768)
            s.read(h, 0, 0)
            small_reads(s, h, path, truth)
        s.read(h, len(truth), 261120)
        s.read(h, len(truth) + 4096, 32768)
        s.close_handle(h)
    # two handles of one file, READs alternating
    p = kernel_files()[0]
    truth = kernel_view(p, read_whole(p))
    h1 = s.h(s.open(p, FXF_READ))
    h2 = s.h(s.open(p, FXF_READ))
    whole_download(s, h1, p, 32768, truth)
    s.batch([("read", h, o, 7) for o in range(0, 28, 7) for h in (h1, h2)],
            "two")
    s.close_handle(h1)
    s.close_handle(h2)


@scenario(name="kernel_files_socketpair", socketpair=True, timeout=30,
          fingerprint=kernel_fingerprint)
def sc_kernel_files_socketpair(s):
    sc_kernel_files(s)


def pipelined_reads(s, h, path, truth, chunk, count):
    """count READs of chunk bytes at consecutive offsets sent at once: one
    step saying whether every DATA is the file's bytes at its offset (a
    prefix of them: OpenSSH's replies may be short, difference (a)) and
    whether EOF came exactly for offsets at or past the end."""
    ids = []
    s.c.begin_batch()
    try:
        for k in range(count):
            ids.append(s.c.read(h, k * chunk, chunk, wait=False))
        s.c.end_batch()
        bad = []
        for k, rid in enumerate(ids):
            rep = s.c.recv()
            off = k * chunk
            if rep.id != rid:
                bad.append("reply %d has id %s" % (k, rep.id))
            elif rep.type == FXP_DATA:
                d = rep.data
                if not d or d != truth[off:off + len(d)] or len(d) > chunk:
                    bad.append("READ at %d: %d bytes, not the file's" % (
                        off, len(d)))
            elif not (rep.is_status(sc.FX_EOF) and off >= len(truth)):
                bad.append("READ at %d: %s" % (off, s.norm.reply(
                    rep, "read", None)))
    except sc.SFTPError as e:
        s.c.held = None
        s.record("pipelined", "EXCEPTION %s: %s" % (type(e).__name__, e))
        raise Abort(str(e))
    s.record("pipelined(%r, %d x %d)" % (path, count, chunk),
             "every reply the file's bytes at its offset, EOF exactly past "
             "the end" if not bad else "%d bad: %s" % (len(bad),
                                                      "; ".join(bad[:3])))


# The log's close line counts the bytes read, which differ where
# OpenSSH's replies are short: not compared here.
@scenario(name="kernel_files_pipelined", timeout=30, log=False,
          fingerprint=kernel_fingerprint)
def sc_kernel_files_pipelined(s):
    """Every READ of a kernel file sent at once (64 in flight, as sftp
    sends them), 32 KiB and 255 KiB.  Not /proc/kallsyms: a read() of
    procfs that does not start where the last one ended walks the file
    from its start, and READs in flight interleave their read()s (22
    READs of 255 KiB took the copy path 26 s, OpenSSH's server 0.4 s)."""
    for path in kernel_files():
        if path in VOLATILE_FILES or path == "/proc/kallsyms":
            continue
        truth = kernel_view(path, read_whole(path))
        h = s.h(s.open(path, FXF_READ))
        for chunk in (32768, 261120):
            count = min(64, len(truth) // chunk + 2)
            pipelined_reads(s, h, path, truth, chunk, count)
        s.close_handle(h)


@scenario()
def sc_close(s):
    h = s.h(s.open("f.txt", FXF_READ))
    s.read(h, 0, 5)
    s.close_handle(h)
    s.close_handle(h)
    dh = s.h(s.opendir("d"))
    s.close_handle(dh)
    s.close_handle(dh)
    for bh in BAD_HANDLES:
        s.close_handle(bh)
    # many handles at once, closed in another order
    hs = [s.h(s.open("f.txt", FXF_READ)) for _ in range(40)]
    hs += [s.h(s.opendir("d")) for _ in range(10)]
    for h in hs[::2] + hs[1::2]:
        s.close_handle(h)
    # handles left open are closed at exit ("forced close" in the log)
    h = s.h(s.open("new", FXF_WRITE | FXF_CREAT))
    s.write(h, 0, b"forced")
    s.h(s.opendir("d"))
    s.h(s.open("f.txt", FXF_READ))


@scenario(init=False)
def sc_before_init(s):
    s.raw("REALPATH before INIT",
          packet(FXP_REALPATH, u32(1) + string(".")))
    s.expect_exit("server exits")


@scenario(init=False)
def sc_extended_before_init(s):
    s.raw("EXTENDED before INIT",
          packet(sc.FXP_EXTENDED, u32(1) + string("limits@openssh.com")))
    s.expect_exit("server exits")


def wait_log(s, needle, timeout):
    """Wait until the server's stderr has one more needle than before."""
    have = getattr(s, "_seen", {}).get(needle, 0)
    end = time.time() + timeout
    while time.time() < end:
        if s.c.stderr_bytes().count(needle) > have:
            break
        time.sleep(0.01)
    s.__dict__.setdefault("_seen", {})[needle] = have + 1


@scenario()
def sc_unknown_types(s):
    for t in (0, 2, 21, 99, 101, 201, 255):
        rid = s.c.next_id()
        s.raw("unknown type %d" % t, packet(t, u32(rid) + b"junk"))
        # OpenSSH stalls if the next request is already buffered when it
        # skips the unknown one: wait until it has logged the skip.
        wait_log(s, b"Unknown message %d\r\n" % t, 2.0)
        extra = s.c.poll_reply(0.05)
        if extra is not None:
            s.record("reply to unknown type %d" % t,
                     "UNEXPECTED " + repr(extra), extra.raw)
        s.realpath(".")
    # unknown type and a request in one write: OpenSSH stalls until more
    # input arrives; send a second request after a pause.
    rid = s.c.next_id()
    r1 = rid + 1
    s.raw("unknown 99 + REALPATH in one write",
          packet(99, u32(rid) + b"zz")
          + packet(FXP_REALPATH, u32(r1) + string("d")))
    s.c._next_id = r1
    got = []
    rep = s.c.poll_reply(0.5)
    if rep is not None:
        got.append(rep)
    s.realpath("f.txt", wait=False)
    for _ in range(3):
        rep = s.c.poll_reply(3.0)
        if rep is None:
            break
        got.append(rep)
        if rep.id == r1 + 1:
            break
    # a reply to the unknown packet (id rid) is recorded as a difference
    rest = [g for g in got if g.id != rid]
    for g in got:
        if g.id == rid:
            s.record("reply to unknown type 99", "UNEXPECTED " + repr(g),
                     g.raw)
    for want, g in zip((r1, r1 + 1), rest + [None, None]):
        if g is None:
            s.record("reply to id %d" % want, "NO REPLY")
        else:
            s.record("reply to id %d" % want, ("" if g.id == want else
                     "WRONG ID %s " % g.id) + s.norm.reply(g, "", None), g.raw)
    s.realpath("..")


@scenario()
def sc_trailing_bytes(s):
    # extra bytes after the expected fields are ignored
    rid = s.c.next_id()
    s.raw("REALPATH + junk", packet(FXP_REALPATH, u32(rid) + string(".")
                                    + b"JUNKJUNK"))
    s.expect_reply("reply")
    rid = s.c.next_id()
    s.raw("STAT + junk", packet(sc.FXP_STAT, u32(rid) + string("f.txt")
                                + b"\x00" * 100))
    s.expect_reply("reply")
    rid = s.c.next_id()
    s.raw("OPEN + junk", packet(sc.FXP_OPEN, u32(rid) + string("f.txt")
                                + u32(FXF_READ) + encode_attrs({}) + b"J"))
    rep = s.expect_reply("reply")
    if rep.type == FXP_HANDLE:
        rid = s.c.next_id()
        s.raw("CLOSE + junk", packet(sc.FXP_CLOSE, u32(rid)
                                     + string(rep.handle) + b"xyz"))
        s.expect_reply("reply")
    rid = s.c.next_id()
    s.raw("INIT + extension pairs", packet(sc.FXP_INIT, u32(3)
                                           + string("a@b") + string("1")))
    s.expect_reply("reply")
    # a handle string of 300 bytes is read and ignored
    s.read(b"H" * 300, 0, 10)
    s.realpath(".")


@scenario()
def sc_pipelined(s):
    data = rnd(6, 64 * 32768)
    h = s.h(s.open("pipe.bin", FXF_READ | FXF_WRITE | FXF_CREAT))
    items = [("write", h, i * 32768, data[i * 32768:(i + 1) * 32768])
             for i in range(64)]
    # reads of what was just written, overlapping rewrites, and barriers
    items += [("read", h, 0, 32768), ("write", h, 100, b"Z" * 50),
              ("read", h, 0, 200), ("fstat", h),
              ("write", h, 64 * 32768, b"tail"), ("read", h, 64 * 32768 - 2,
                                                   10),
              ("stat", "pipe.bin"), ("read", h, 32768 * 63, 32768 + 4),
              ("write", h, 10, b"early"), ("read", h, 0, 20)]
    s.batch(items, "w")
    items = [("read", h, off, 32768) for off in range(0, 64 * 32768 + 4,
                                                       32768)]
    items += [("read", h, 64 * 32768 + 4, 32768), ("close_handle", h),
              ("read", h, 0, 10)]
    s.batch(items, "r")
    # mixed requests on several handles
    h1 = s.h(s.open("p1", FXF_WRITE | FXF_CREAT))
    h2 = s.h(s.open("p2", FXF_WRITE | FXF_CREAT))
    items = []
    for i in range(32):
        items.append(("write", h1 if i % 2 else h2, (i // 2) * 1000,
                      bytes([65 + i]) * 1000))
        if i % 8 == 7:
            items.append(("realpath", "."))
            items.append(("lstat", "p1"))
    items += [("close_handle", h1), ("close_handle", h2), ("stat", "p1"),
              ("stat", "p2"), ("remove", "p2"), ("stat", "p2")]
    s.batch(items, "mix")


@scenario()
def sc_pipelined_listing(s):
    """WRITE then READDIR of its directory, sent at once: each listing
    shows the size the WRITEs before it made (a run of merged WRITEs
    included), as does one after an FSETSTAT or a SETSTAT.  Each READDIR
    has a directory handle of its own, opened before, so that each lists
    the whole directory.  The files exist before and are opened to write
    in place (neither created nor truncated): not uploads, so that
    --atomic-uploads writes them in place too."""
    s.mkdir("wd")
    for n in ("f", "g"):
        os.close(os.open(s.abs("wd/" + n), os.O_WRONLY | os.O_CREAT, 0o644))
    h = s.h(s.open("wd/f", FXF_WRITE))
    g = s.h(s.open("wd/g", FXF_WRITE))
    dirs = [s.h(s.opendir("wd")) for _ in range(14)]
    items = []
    for i in range(6):
        items += [("write", h, i * 4096, rnd(20 + i, 4096)),
                  ("readdir", dirs[i])]
    for i in range(4):
        items += [("fsetstat", g, {"size": 1000 * (i + 1)}),
                  ("readdir", dirs[6 + i])]
    for i in range(4):
        items += [("write", h, 24576 + i * 100, b"t" * 100),
                  ("setstat", "wd/g", {"size": 100 * i}),
                  ("readdir", dirs[10 + i])]
    s.batch(items, "write-then-list")
    for d in dirs:
        s.close_handle(d)
    s.close_handle(h)
    s.close_handle(g)


@scenario()
def sc_write_burst_read(s):
    """A burst of WRITEs then a READ of the same handle, sent at once,
    repeated: every reply must come without more input."""
    data = rnd(10, 64 * 32768)
    h = s.h(s.open("burst.bin", FXF_READ | FXF_WRITE | FXF_CREAT))
    for rnd_ in range(12):
        base = rnd_ * 64 * 32768
        items = [("write", h, base + i * 32768,
                  data[i * 32768:(i + 1) * 32768]) for i in range(64)]
        items.append(("read", h, base + (rnd_ % 4) * 32768, 32768))
        if rnd_ % 2:
            items.append(("write", h, base + 100, b"z" * 10))
            items.append(("read", h, base, 200))
        s.batch(items, "burst%d" % rnd_)
    s.close_handle(h)


@scenario()
def sc_flood(s):
    """Many requests in flight at once: 8 MiB of READs, then 8 MiB of
    WRITEs, then big READs, all in single writes."""
    fd = os.open(s.abs("flood.bin"), os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, rnd(11, 8 << 20))
    os.close(fd)
    h = s.h(s.open("flood.bin", FXF_READ | FXF_WRITE))
    s.batch([("read", h, i * 32768, 32768) for i in range(257)], "r")
    data = rnd(12, 8 << 20)
    s.batch([("write", h, i * 32768, data[i * 32768:(i + 1) * 32768])
             for i in range(256)], "w")
    s.batch([("read", h, i * 261120, 261120) for i in range(34)], "R")
    s.close_handle(h)


@scenario()
def sc_prefetch(s):
    # what paramiko's prefetch does: every READ of a file at once
    h = s.h(s.open("big.bin", FXF_READ))
    items = [("read", h, off, 32768) for off in range(0, (1 << 20) + 65536,
                                                      32768)]
    s.batch(items, "prefetch")
    items = [("read", h, off, 261120) for off in range(0, 1 << 20, 261120)]
    items += [("read", h, 1 << 20, 261120)]
    s.batch(items, "bigreads")
    s.close_handle(h)
    h = s.h(s.open("odd.bin", FXF_READ))
    items = [("read", h, off, 100000) for off in range(0, 261121, 100000)]
    items += [("read", h, 261121, 100000)]
    s.batch(items, "odd")
    s.close_handle(h)


@scenario(socketpair=True)
def sc_socketpair(s):
    sc_read(s)
    sc_pipelined(s)


@scenario(socketpair=True, setup=fx_open_flags)
def sc_socketpair_open_flags(s):
    sc_open_flags(s)


# ----- READ data waiting for stdout and this session's own later WRITEs

def read_own_write(s):
    """A READ, then a request that changes the bytes it read, sent in one
    write: the client reads nothing until both are sent, so our READ data
    still waits for stdout when the change arrives.  The DATA must hold
    the bytes from before the change; OpenSSH's server, one request at a
    time, gives exactly that."""
    cur = bytearray(rnd(1, 1 << 20))   # big.bin, see fx_basic
    h = s.h(s.open("big.bin", FXF_READ | FXF_WRITE))
    h2 = s.h(s.open("big.bin", FXF_WRITE))
    s.read(h, 1 << 19, 16384)
    cases = [  # (read offset, length, writing handle, write offset, length)
        (0, 16384, h, 0, 16384),
        (65536, 261120, h, 65536 + 4096, 100),
        (400000, 32768, h2, 390000, 20000),
        (600000, 131072, h2, 600000 + 131071, 1),
    ]
    for i, (roff, rlen, wh, woff, wlen) in enumerate(cases):
        old = bytes(cur[roff:roff + rlen])
        data = rnd(100 + i, wlen)
        reps = s.batch([("read", h, roff, rlen), ("write", wh, woff, data)],
                       "read+write%d" % i)
        s.record("read+write%d: DATA holds the bytes from before" % i,
                 str(reps[0].type == FXP_DATA and reps[0].data == old))
        cur[woff:woff + wlen] = data
    # the same with a truncation, by handle and by path
    for i, (roff, req, size) in enumerate((
            (440000, ("fsetstat", h2), 460000),
            (420000, ("setstat", "big.bin"), 430000))):
        old = bytes(cur[roff:roff + 32768])
        reps = s.batch([("read", h, roff, 32768),
                        req + ({"size": size},)], "read+truncate%d" % i)
        s.record("read+truncate%d: DATA holds the bytes from before" % i,
                 str(reps[0].type == FXP_DATA and reps[0].data == old))
        del cur[size:]
    s.close_handle(h2)
    s.close_handle(h)
    s.stat("big.bin")


@scenario()
def sc_read_own_write(s):
    read_own_write(s)


@scenario(socketpair=True)
def sc_read_own_write_socket(s):
    read_own_write(s)


# ----- server options

def write_requests_opt(name, args):
    """Register sc_write_requests with these options.  Its OPEN of "new"
    (WRITE|CREATE) is never closed: with --atomic-uploads the file is not
    there afterwards, and when READDIR runs, d's listing shows the start
    directory's mtime unchanged.  Documented in VARIANTS."""
    def listed(opt):
        return (args[args.index(opt) + 1].split(",") if opt in args
                else None)
    denied, allowed = listed("-P") or [], listed("-p")

    def runs(req, writes=False):
        return not (writes and "-R" in args) and req not in denied and (
            allowed is None or req in allowed)
    scenario(name=name, args=args)(sc_write_requests)
    if runs("open", writes=True):
        listing = runs("opendir") and runs("readdir")
        VARIANTS["atomic"][2][name] = (
            {"tree", "replies"} if listing else {"tree"},
            ATOMIC_NOT_CLOSED + (" (nor the directory's mtime changed, "
                                 "seen in a listing)" if listing else ""))
    if runs("limits"):
        halves_handles(name)


def sc_write_requests(s):
    """Every modifying request once (for -R, -P, -p)."""
    s.open("f.txt", FXF_READ)
    s.open("f.txt", FXF_READ | FXF_APPEND)
    s.open("f.txt", FXF_READ | FXF_EXCL)
    s.open("f.txt", FXF_READ | FXF_TRUNC)
    s.open("f.txt", FXF_READ | FXF_CREAT)
    s.open("f.txt", FXF_WRITE)
    s.open("f.txt", FXF_READ | FXF_WRITE)
    s.open("new", FXF_WRITE | FXF_CREAT)
    s.open("f.txt", 0)
    h = s.h(s.open("f.txt", FXF_READ))
    s.read(h, 0, 5)
    s.write(h, 0, b"x")
    s.fstat(h)
    s.fsetstat(h, {"perm": 0o600})
    s.fstatvfs(h)
    s.fsync(h)
    s.close_handle(h)
    s.setstat("f.txt", {"perm": 0o600})
    s.lsetstat("f.txt", {"perm": 0o600})
    dh = s.h(s.opendir("d"))
    s.readdir_all(dh)
    s.close_handle(dh)
    s.remove("exec.sh")
    s.mkdir("newdir")
    s.rmdir("emptydir")
    s.rename("f.txt", "g.txt")
    s.posix_rename("f.txt", "g.txt")
    s.hardlink("f.txt", "hl")
    s.symlink("f.txt", "sl")
    s.readlink("link")
    s.realpath(".")
    s.stat("f.txt")
    s.lstat("link")
    s.statvfs(".")
    s.limits()
    s.expand_path("~")
    s.home_directory("root")
    s.users_groups_by_id([0], [0])
    src = s.h(s.open("big.bin", FXF_READ))
    s.copy_data(src, 0, 0, src, 0)
    s.close_handle(src)


for _args in (["-R"], ["-P", "write,remove,posix-rename,limits"],
              ["-P", "open"], ["-P", "realpath"],
              ["-p", "realpath,stat"], ["-p", "open,read,close,opendir"],
              ["-p", "open,close,write,fsync,copy-data,readdir"],
              ["-P", "Open,STAT,posix-rename@openssh.com,nosuch"],
              ["-P", "stat,,lstat"], ["-p", ""], ["-P", ""],
              ["-R", "-p", "write,read,open,close,fsync,mkdir"],
              ["-P", "read", "-p", "read,open"],
              ["-R", "-P", "realpath"]):
    write_requests_opt("opt " + " ".join(_args), _args)


@scenario(name="opt -u 077", args=["-u", "077"])
def sc_umask(s):
    for i, a in enumerate([None, {"perm": 0o666}, {"perm": 0o777},
                           {"perm": 0o4777}]):
        rep = s.open(b"u%d" % i, FXF_WRITE | FXF_CREAT, a)
        s.close_handle(s.h(rep))
        s.lstat(b"u%d" % i)
        s.mkdir(b"ud%d" % i, a)
        s.lstat(b"ud%d" % i)


for _u in ("0", "0777", "022", "7", "0000"):
    scenario(name="opt -u " + _u, args=["-u", _u])(sc_umask)


@scenario(name="opt -d dir", args=["-d", "{ROOT}/d"])
def sc_startdir(s):
    s.realpath(".")
    s.realpath("")
    s.expand_path("~")
    s.expand_path("~/x")
    s.stat("a")
    s.open("a", FXF_READ)


for _d in ("%d", "~", "~root", "{ROOT}/d/", "{ROOT}/missing", "{ROOT}/f.txt",
           "%%", "{ROOT}/%%d", "%U-%u", "{ROOT}/dirlink", "/", "d",
           "{ROOT}/" + "N" * 256):
    scenario(name="opt -d " + _d, args=["-d", _d])(sc_startdir)


@scenario(name="opt -c", args=["-c", "some", "command"])
def sc_opt_c(s):
    s.realpath(".")


scenario(name="SSH_CONNECTION set", args=["-l", "INFO"],
         env={"SSH_CONNECTION": "192.0.2.7 51234 192.0.2.1 22"})(sc_opt_c)
scenario(name="SSH_CONNECTION ipv6", args=["-l", "INFO"],
         env={"SSH_CONNECTION": "2001:db8::7 51234 2001:db8::1 22"})(sc_opt_c)
scenario(name="SSH_CONNECTION malformed", init=False,
         env={"SSH_CONNECTION": "nospace"})(sc_before_init)
scenario(name="SSH_CONNECTION empty", init=False,
         env={"SSH_CONNECTION": ""})(sc_before_init)

for _lv in ("INFO", "info", "VERBOSE", "QUIET", "FATAL", "ERROR"):
    write_requests_opt("opt -l " + _lv, ["-l", _lv])

scenario(name="opt -f LOCAL0", args=["-f", "LOCAL0"])(sc_opt_c)
scenario(name="opt -f bogus with -e", args=["-f", "bogus"])(sc_opt_c)
scenario(name="opt -h", args=["-h"], init=False)(sc_before_init)
scenario(name="opt -z", args=["-z"], init=False)(sc_before_init)


# ----- malformed input

def malformed(name, data, init=True, close=False, log=True):
    def fn(s):
        s.raw(name, data)
        if close:
            s.c.close_stdin()
        s.expect_exit("after " + name)
    scenario(name="malformed " + name, init=init, log=log)(fn)


def _open_body(path):
    return u32(1) + string(path) + u32(FXF_READ)


malformed("length 262145", u32(262145) + bytes([6]) + b"\x00" * 100)
malformed("length 0xffffffff", u32(0xFFFFFFFF) + b"\x05" + b"\x00" * 20)
malformed("length 300000 complete", u32(300000) + bytes([6])
          + b"\x00" * 299999)
malformed("truncated OPEN", packet(sc.FXP_OPEN, _open_body("f.txt")[:-2]))
malformed("OPEN string too long", packet(sc.FXP_OPEN, u32(1) + u32(1000)
                                         + b"f.txt"))
malformed("OPEN without attrs", packet(sc.FXP_OPEN, _open_body("f.txt")))
malformed("READ without length", packet(sc.FXP_READ, u32(1) + string("h")
                                        + u64(0)))
malformed("WRITE data too long", packet(sc.FXP_WRITE, u32(1) + string(
    b"\x00\x00\x00\x00") + u64(0) + u32(100) + b"short"))
# Deliberate difference: OpenSSH parses a zero-length packet's "type"
# from the next packet's bytes and logs "Unknown message 0" then
# "msg_len 0 < consumed 5"; we stop at the zero length itself ("process:
# parse: incomplete message").  Both exit 255 with no reply.
malformed("packet length 0", u32(0) + packet(FXP_REALPATH, u32(1)
                                             + string(".")), log=False)
malformed("packet length 1", u32(1) + bytes([FXP_REALPATH]))
malformed("packet length 2", u32(2) + bytes([FXP_REALPATH, 0]))
malformed("no id", packet(sc.FXP_STAT, b"\x00\x00"))
malformed("EXTENDED truncated name", packet(sc.FXP_EXTENDED, u32(1)
                                            + u32(50) + b"limits"))
malformed("EXTENDED without name", packet(sc.FXP_EXTENDED, u32(1)))
malformed("posix-rename one path", packet(sc.FXP_EXTENDED, u32(1)
          + string("posix-rename@openssh.com") + string("f.txt")))
malformed("copy-data short", packet(sc.FXP_EXTENDED, u32(1)
          + string("copy-data") + string(b"\x00\x00\x00\x00") + u64(0)))
malformed("users-groups short", packet(sc.FXP_EXTENDED, u32(1)
          + string("users-groups-by-id@openssh.com") + string(b"\x00")))
malformed("SETSTAT attr ext count huge", packet(sc.FXP_SETSTAT, u32(1)
          + string("f.txt") + u32(sc.ATTR_EXTENDED) + u32(0xFFFFFFFF)))
malformed("SETSTAT attrs truncated", packet(sc.FXP_SETSTAT, u32(1)
          + string("f.txt") + u32(0x0F) + u64(1)))
malformed("MKDIR no attrs", packet(sc.FXP_MKDIR, u32(1) + string("md")))
malformed("string length 0xffffffff", packet(FXP_REALPATH, u32(1)
                                             + u32(0xFFFFFFFF) + b"abc"))
malformed("INIT without version", packet(sc.FXP_INIT, b""), init=False)
malformed("INIT short version", packet(sc.FXP_INIT, b"\x00\x03"), init=False)
malformed("EOF mid-packet", packet(FXP_REALPATH, u32(1) + string("."))[:9],
          close=True)
malformed("EOF mid-length", b"\x00\x00", close=True)
malformed("EOF after complete length", u32(100), close=True)
malformed("garbage", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", init=False)


# Every field of every request, malformed every way OpenSSH tells apart
# (issue 10 item 8): missing or cut short ("incomplete message"), a string
# longer than what is left ("incomplete message") or past sshbuf's 128 MiB
# cap ("string is too large"), a NUL inside a C string ("invalid format"),
# attributes cut short, with a huge extended count (9.2 runs out of packet:
# "incomplete message") or a NUL in an extended name ("invalid format").
# The server must exit 255 with OpenSSH's fatal line; the -e logs are
# compared line by line.
HANDLE0 = b"\x00\x00\x00\x00"
FIELD_VALID = {"path": string("f.txt"), "handle": string(HANDLE0),
               "data": string(b"\x00\x00\x00\x00"), "u32": u32(3),
               "u64": u64(5), "attrs": encode_attrs({"perm": 0o600})}
REQUEST_FIELDS = [
    ("OPEN", sc.FXP_OPEN, None, ("path", "u32", "attrs")),
    ("CLOSE", sc.FXP_CLOSE, None, ("handle",)),
    ("READ", sc.FXP_READ, None, ("handle", "u64", "u32")),
    ("WRITE", sc.FXP_WRITE, None, ("handle", "u64", "data")),
    ("LSTAT", sc.FXP_LSTAT, None, ("path",)),
    ("FSTAT", sc.FXP_FSTAT, None, ("handle",)),
    ("SETSTAT", sc.FXP_SETSTAT, None, ("path", "attrs")),
    ("FSETSTAT", sc.FXP_FSETSTAT, None, ("handle", "attrs")),
    ("OPENDIR", sc.FXP_OPENDIR, None, ("path",)),
    ("READDIR", sc.FXP_READDIR, None, ("handle",)),
    ("REMOVE", sc.FXP_REMOVE, None, ("path",)),
    ("MKDIR", sc.FXP_MKDIR, None, ("path", "attrs")),
    ("RMDIR", sc.FXP_RMDIR, None, ("path",)),
    ("REALPATH", FXP_REALPATH, None, ("path",)),
    ("STAT", sc.FXP_STAT, None, ("path",)),
    ("RENAME", sc.FXP_RENAME, None, ("path", "path")),
    ("READLINK", sc.FXP_READLINK, None, ("path",)),
    ("SYMLINK", sc.FXP_SYMLINK, None, ("path", "path")),
    ("EXTENDED", sc.FXP_EXTENDED, None, ("path",)),     # the name
    ("posix-rename", sc.FXP_EXTENDED, "posix-rename@openssh.com",
     ("path", "path")),
    ("statvfs", sc.FXP_EXTENDED, "statvfs@openssh.com", ("path",)),
    ("fstatvfs", sc.FXP_EXTENDED, "fstatvfs@openssh.com", ("handle",)),
    ("hardlink", sc.FXP_EXTENDED, "hardlink@openssh.com", ("path", "path")),
    ("fsync", sc.FXP_EXTENDED, "fsync@openssh.com", ("handle",)),
    ("lsetstat", sc.FXP_EXTENDED, "lsetstat@openssh.com",
     ("path", "attrs")),
    ("expand-path", sc.FXP_EXTENDED, "expand-path@openssh.com", ("path",)),
    ("copy-data", sc.FXP_EXTENDED, "copy-data",
     ("handle", "u64", "u64", "handle", "u64")),
    ("home-directory", sc.FXP_EXTENDED, "home-directory", ("path",)),
    ("users-groups-by-id", sc.FXP_EXTENDED,
     "users-groups-by-id@openssh.com", ("data", "data")),
]


def field_variants(kind, first):
    """(label, bytes) of one malformed field of this kind; the lengths
    that only test where "too large" starts, for a request's first field
    only (the rule is shared)."""
    out = [("missing", b"")]
    if kind in ("u32", "u64"):
        out.append(("cut", FIELD_VALID[kind][:-1]))
    if kind in ("path", "handle", "data"):
        out.append(("string too large", u32(0xFFFFFFF0) + b"abc"))
    if kind in ("path", "handle", "data") and first:
        out += [("longer than the packet", u32(1000) + b"short"),
                ("length at the cap", u32(0x8000000 - 4) + b"abc")]
    if kind == "path":
        out.append(("NUL inside", string(b"f.t\x00xt")))
    if kind == "attrs":
        out += [("flags cut", u32(sc.ATTR_SIZE)[:3]),
                ("size missing", u32(sc.ATTR_SIZE) + b"\x00\x00"),
                ("ext count huge", u32(sc.ATTR_EXTENDED) + u32(0xFFFFFFFF)),
                ("ext count past the cap", u32(sc.ATTR_EXTENDED)
                 + u32(0x100001) + string("a") + string("b")),
                ("ext name with NUL", u32(sc.ATTR_EXTENDED) + u32(1)
                 + string(b"a\x00b") + string("x")),
                ("ext name too large", u32(sc.ATTR_EXTENDED) + u32(2)
                 + string(b"a\x00") + string("x") + u32(0xFFFFFFF0)),
                ("ext data too large", u32(sc.ATTR_EXTENDED) + u32(1)
                 + string("a") + u32(0xFFFFFFF0))]
    return out


for _label, _type, _ext, _fields in REQUEST_FIELDS:
    _head = u32(1) + (string(_ext) if _ext else b"")
    for _i, _kind in enumerate(_fields):
        _prefix = b"".join(FIELD_VALID[k] for k in _fields[:_i])
        for _vname, _vbytes in field_variants(_kind, _i == 0):
            malformed("%s field %d (%s) %s" % (_label, _i + 1, _kind,
                                               _vname),
                      packet(_type, _head + _prefix + _vbytes))


# ----- unprivileged (EACCES and friends)

@scenario(setup=fx_unpriv, unpriv=True)
def sc_unpriv(s):
    for p, fl in [("secret", FXF_READ), ("secret", FXF_WRITE),
                  ("readonly", FXF_WRITE), ("readonly", FXF_READ),
                  ("rodir/new", FXF_WRITE | FXF_CREAT),
                  ("rodir/f", FXF_READ), ("locked/x", FXF_READ),
                  ("noexec/f", FXF_READ), ("wonly/f", FXF_READ),
                  ("rootfile", FXF_WRITE), ("rootfile", FXF_READ),
                  ("rootdir/new", FXF_WRITE | FXF_CREAT),
                  ("rootdir/f", FXF_WRITE), ("/etc/shadow", FXF_READ)]:
        rep = s.open(p, fl)
        if rep.type == FXP_HANDLE:
            s.close_handle(rep.handle)
    for p in ("locked", "noexec", "wonly", "rodir", "rootdir"):
        rep = s.opendir(p)
        if rep.type == FXP_HANDLE:
            s.readdir_all(rep.handle)
            s.close_handle(rep.handle)
    for p in ("locked/x", "noexec/f", "wonly/f", "secret", "locked"):
        s.stat(p)
        s.lstat(p)
        s.realpath(p)
        s.expand_path(p)
        s.statvfs(p)
    s.realpath("locked/x/y")
    s.realpath("noexec/f/..")
    s.mkdir("rodir/m")
    s.mkdir("locked/m")
    s.rmdir("rodir")
    s.hardlink("rootfile", "hl-root")   # protected_hardlinks may refuse
    s.hardlink("rodir/f", "rodir/g")
    s.remove("rodir/f")
    s.remove("rootdir/f")
    s.remove("stickydir/rootfile")
    s.rename("rodir/f", "g")
    s.rename("f.txt", "rodir/g")
    s.rename("rootdir/f", "g")
    s.posix_rename("rodir/f", "g")
    s.symlink("f.txt", "rodir/sl")
    # SETSTAT order: size fails (EISDIR: FAILURE), owner fails (EPERM:
    # PERMISSION_DENIED): the last failure is reported
    s.setstat("emptydir", {"size": 0, "perm": 0o711, "uid": 0, "gid": 0})
    s.lstat("emptydir")
    s.setstat("f.txt", {"uid": 0, "gid": 0})
    s.setstat("f.txt", {"size": 2, "uid": 0, "gid": 0, "perm": 0o600})
    s.lstat("f.txt")
    s.setstat("rootfile", {"perm": 0o600})
    s.setstat("rootfile", {"atime": 1, "mtime": 2})
    s.setstat("rootfile", {"size": 1})
    s.lsetstat("rootfile", {"perm": 0o600, "atime": 1, "mtime": 2})
    s.lsetstat("link", {"uid": 0, "gid": 0})
    h = s.h(s.open("f.txt", FXF_READ))
    s.fsetstat(h, {"uid": 0, "gid": 0})
    s.fsetstat(h, {"size": 1, "perm": 0o644})
    s.close_handle(h)
    h = s.h(s.open("rootfile", FXF_READ))
    s.fsetstat(h, {"perm": 0o600})
    s.fsetstat(h, {"atime": 1, "mtime": 2})
    s.copy_data(h, 0, 0, h, 0)
    w = s.h(s.open("cp", FXF_WRITE | FXF_CREAT))
    s.copy_data(h, 0, 0, w, 0)
    s.close_handle(w)
    s.close_handle(h)
    s.home_directory("")
    s.expand_path("~")
    s.users_groups_by_id([UNPRIV_UID, 0], [UNPRIV_UID])


@scenario()
def sc_coherence(s):
    """Bytes written by another process between two READs must be seen
    (no stale read-ahead); a truncation too."""
    big = s.abs("big.bin")
    h = s.h(s.open("big.bin", FXF_READ))
    for i in range(12):                 # sequential: may trigger read-ahead
        s.read(h, i * 32768, 32768)
    fd = os.open(big, os.O_WRONLY)
    os.pwrite(fd, b"N" * 65536, 12 * 32768)
    os.pwrite(fd, b"M" * 100, 20 * 32768 + 5)
    os.close(fd)
    for i in range(12, 24):
        s.read(h, i * 32768, 32768)
    os.truncate(big, 25 * 32768 + 7)
    for i in range(24, 28):
        s.read(h, i * 32768, 32768)
    with open(big, "r+b") as f:
        f.seek(0, 2)
        f.write(b"appended by someone else")
    s.read(h, 25 * 32768, 32768)
    s.fstat(h)
    # the same through a batch of reads after a change
    fd = os.open(big, os.O_WRONLY)
    os.pwrite(fd, b"Q" * 32768, 0)
    os.close(fd)
    s.batch([("read", h, i * 32768, 32768) for i in range(27)], "again")
    s.close_handle(h)
    # writes through the server are seen by other processes at once
    w = s.h(s.open("f.txt", FXF_WRITE))
    s.write(w, 0, b"HELLO")
    with open(s.abs("f.txt"), "rb") as f:
        s.record("file seen by another process", repr(f.read()))
    s.close_handle(w)


@scenario()
def sc_two_handles(s):
    """Overlapping requests through different handles of one file keep
    their order."""
    a = s.h(s.open("big.bin", FXF_READ | FXF_WRITE))
    b_ = s.h(s.open("big.bin", FXF_READ))
    c = s.h(s.open(s.abs("dirlink/../big.bin"), FXF_READ | FXF_WRITE))
    items = []
    for i in range(16):
        items.append(("write", a, i * 20000, bytes([i + 65]) * 30000))
        items.append(("read", b_, i * 20000 + 100, 30000))
        items.append(("write", c, i * 20000 + 50, bytes([i + 97]) * 100))
        items.append(("read", a, i * 20000, 40000))
    items.append(("fsetstat", c, {"size": 100000}))
    items.append(("read", b_, 99990, 100))
    items.append(("write", a, 200000, b"after truncate"))
    items.append(("read", b_, 99990, 200000))
    s.batch(items, "x")
    for h in (a, b_, c):
        s.close_handle(h)


@scenario()
def sc_many_handles(s):
    hs = [s.h(s.open("f.txt", FXF_READ)) for _ in range(1100)]
    hs += [s.h(s.opendir("d")) for _ in range(100)]
    s.read(hs[1050], 0, 5)
    for h in hs:
        s.close_handle(h)
    s.limits()


@scenario(nofile=64, log=False)
def sc_nofile_64(s):
    """RLIMIT_NOFILE 64: every handle up to limits' max-open-handles opens.
    Where exactly EMFILE starts beyond that is not compared (a server may
    use a few more descriptors of its own); only that it is not before."""
    rep = s.limits()
    try:
        limit = sc.parse_limits(rep.data)["max_handles"]
    except Exception:
        limit = 0
    hs = []
    for i in range(limit):
        rep = s.open("f.txt", FXF_READ)
        hs.append(s.h(rep))
    extra = 0
    while extra < 20:
        rep = s.c.open("f.txt", FXF_READ)
        if rep.type != FXP_HANDLE:
            s.record("open beyond max-open-handles fails with",
                     s.norm.reply(rep, "open", None))
            break
        hs.append(rep.handle)
        extra += 1
    s.record("max-open-handles is not more than the server can open",
             str(limit > 0 and extra < 20))
    # the log would show the extra opens: not compared for this scenario
    s.stat("f.txt")
    for h in hs:
        s.c.close_handle(h)
    rep = s.opendir("d")
    s.readdir_all(s.h(rep))


# ----- a full file system (a small tmpfs, when mounting is allowed)

def fx_small(r):
    fx_basic(r)
    D(r + b"/small")
    p = subprocess.run(["mount", "-t", "tmpfs", "-o",
                        "size=1m,nr_inodes=40,mode=0755", "difftest-tmpfs",
                        r + b"/small"], capture_output=True)
    if p.returncode != 0:
        W(r + b"/small/NOMOUNT", p.stderr)
    settimes(r)


# Log lines unordered: with writes in flight together, a request that
# fails outright may finish before an earlier one whose short write is
# being retried, so "sent status" lines can come in another order (the
# replies themselves stay in request order and are compared strictly).
@scenario(setup=fx_small, log="unordered")
def sc_enospc(s):
    if os.path.lexists(s.abs("small/NOMOUNT")):
        SKIPPED.add("enospc: a 1 MiB tmpfs cannot be mounted here (%s)" % (
            open(s.abs("small/NOMOUNT"), "rb").read().decode(
                "utf-8", "replace").strip() or "mount failed"))
        s.record("mount a 1 MiB tmpfs", "not possible here (not compared)")
        return
    h = s.h(s.open("small/fill", FXF_WRITE | FXF_CREAT | FXF_READ))
    data = rnd(8, 48 * 32768)
    # not page aligned, so one WRITE ends up partly written
    s.batch([("write", h, 0, data[:1000])]
            + [("write", h, 1000 + i * 32768, data[i * 32768:(i + 1) * 32768])
               for i in range(48)], "fill")
    s.fstat(h)
    s.write(h, 0, b"overwrite in place")
    s.write(h, 2 << 20, b"past the end")
    s.read(h, 0, 32)
    s.fsync(h)
    s.close_handle(h)
    h2 = s.h(s.open("small/g", FXF_WRITE | FXF_CREAT))
    s.write(h2, 0, b"x")
    s.close_handle(h2)
    for i in range(45):
        s.mkdir("small/d%02d" % i)
    s.symlink("x", "small/sl")
    s.remove("small/fill")
    for i in range(4):
        s.rmdir("small/d%02d" % i)
    h = s.h(s.open("small/after", FXF_WRITE | FXF_CREAT))
    s.batch([("write", h, i * 65536, data[:65536]) for i in range(20)],
            "after")
    s.close_handle(h)
    src = s.h(s.open("big.bin", FXF_READ))
    dst = s.h(s.open("small/copy", FXF_WRITE | FXF_CREAT))
    s.copy_data(src, 0, 0, dst, 0)
    s.fstat(dst)
    s.close_handle(dst)
    s.close_handle(src)


# ----- only for the server under test

def sc_copy_data_failure(s):
    """copy-data whose write fails.  OpenSSH 9.2 logs the error but
    answers OK when the failing chunk is the last one, telling the client
    that bytes were copied that were not; we answer with the error
    (deliberate difference, server only)."""
    src = s.h(s.c.open("big.bin", FXF_READ))
    ro = s.h(s.c.open("f.txt", FXF_READ))
    wo = s.h(s.c.open("wonly", FXF_WRITE | FXF_CREAT))
    for desc, a, b in (("into a read-only handle", src, ro),
                       ("from a write-only handle", wo, ro)):
        rep = s.c.copy_data(a, 0, 10, b, 0)
        code = sc.STATUS_NAMES.get(getattr(rep, "code", None))
        s.record("copy-data " + desc, "status %s" % code)
        s.expect["copy-data " + desc] = "status NO_SUCH_FILE"


def sc_copy_data_same_file(s):
    """copy-data onto its own source through another name ("./f.txt", the
    absolute path, a hard link): OpenSSH 10.4 refuses it by device and
    inode before copying anything, and so do we; 9.2 copies (to end of
    file: until the disk is full).  Deliberate difference from 9.2, so
    checked for the server under test only."""
    os.link(s.abs("f.txt"), s.abs("hl"))
    with open(s.abs("f.txt"), "rb") as f:
        before = f.read()
    src = s.h(s.c.open("f.txt", FXF_READ))
    cases = (("./f.txt", "./f.txt", FXF_WRITE),
             ("absolute path", s.abs("f.txt"), FXF_WRITE),
             ("hard link", "hl", FXF_WRITE),
             ("append handle", "./f.txt", FXF_WRITE | FXF_APPEND),
             ("read-write handle", "hl", FXF_READ | FXF_WRITE))
    for desc, name, fl in cases:
        dst = s.h(s.c.open(name, fl))
        for what, args in (("to end of file", (0, 0, len(before))),
                           ("10 bytes", (0, 10, 0))):
            rep = s.c.copy_data(src, args[0], args[1], dst, args[2])
            key = "copy-data %s onto f.txt via %s" % (what, desc)
            s.record(key, "status %s" % sc.STATUS_NAMES.get(
                getattr(rep, "code", None)))
            s.expect[key] = "status FAILURE"
        s.c.close_handle(dst)
    # the other direction, and a real copy still works
    dst = s.h(s.c.open("./f.txt", FXF_READ))
    wsrc = s.h(s.c.open("f.txt", FXF_WRITE))
    rep = s.c.copy_data(dst, 0, 0, wsrc, 0)
    s.record("copy-data from ./f.txt onto f.txt", "status %s" % (
        sc.STATUS_NAMES.get(getattr(rep, "code", None))))
    s.expect["copy-data from ./f.txt onto f.txt"] = "status FAILURE"
    out = s.h(s.c.open("copy", FXF_WRITE | FXF_CREAT))
    rep = s.c.copy_data(src, 0, 0, out, 0)
    s.record("copy-data onto another file", "status %s" % (
        sc.STATUS_NAMES.get(getattr(rep, "code", None))))
    s.expect["copy-data onto another file"] = "status OK"
    for h in (dst, wsrc, out, src):
        s.c.close_handle(h)
    with open(s.abs("f.txt"), "rb") as f:
        s.record("f.txt unchanged", str(f.read() == before))
    s.expect["f.txt unchanged"] = "True"
    with open(s.abs("copy"), "rb") as f:
        s.record("copy holds f.txt", str(f.read() == before))
    s.expect["copy holds f.txt"] = "True"
    s.c.realpath(".")
    # the whole log: the server (and anything filtering its stderr, as
    # seccomp-suite.sh does) has exited
    s.c.finish()
    log = s.c.stderr_bytes().replace(s.root, b"<ROOT>")
    n = log.count(b" are the same file\r\n")
    s.record("log lines for the refusals", str(n))
    s.expect["log lines for the refusals"] = str(2 * len(cases) + 1)
    line = (b'process_extended_copy_data: "f.txt" and "hl" are the same '
            b'file\r\n')
    s.record("log line", str(line in log))
    s.expect["log line"] = "True"


def sc_fifo_open(s):
    """A FIFO opened for reading alone or for writing alone: OpenSSH's
    open() waits for the other end (the whole server with it); ours opens
    without waiting: for reading at once, for writing FAILURE while nobody
    reads.  Nothing on the handles waits either (server only)."""
    os.mkfifo(s.abs("fifo"))

    def status_of(key, rep, want):
        if rep.type == FXP_HANDLE:
            got = "HANDLE"
        elif rep.type == FXP_NAME:
            got = "NAME"
        else:
            got = "status %s" % sc.STATUS_NAMES.get(getattr(rep, "code",
                                                            None))
        s.record(key, got)
        s.expect[key] = want
        return rep

    status_of("open for writing, no reader", s.c.open("fifo", FXF_WRITE),
              "status FAILURE")
    r = status_of("open for reading", s.c.open("fifo", FXF_READ),
                  "HANDLE").handle
    w = status_of("open for writing, with a reader",
                  s.c.open("fifo", FXF_WRITE), "HANDLE").handle
    a = status_of("open for appending", s.c.open("fifo", FXF_WRITE
                                                 | FXF_APPEND),
                  "HANDLE").handle
    status_of("READ", s.c.read(r, 0, 100), "status FAILURE")
    status_of("WRITE", s.c.write(w, 0, b"x"), "status FAILURE")
    status_of("WRITE on the append handle", s.c.write(a, 7, b"bytes"),
              "status OK")
    # more than the pipe holds: OpenSSH would wait for a reader forever
    status_of("WRITE of 200000 bytes on the append handle",
              s.c.write(a, 0, b"y" * 200000), "status FAILURE")
    src = s.h(s.c.open("f.txt", FXF_READ))
    status_of("copy-data from the FIFO", s.c.copy_data(r, 0, 0, a, 0),
              "status FAILURE")
    status_of("copy-data into the full FIFO",
              s.c.copy_data(src, 0, 0, a, 0), "status FAILURE")
    # pipelined: nothing waits behind the FIFO
    reps = s.batch([("read", r, 0, 10), ("realpath", "."),
                    ("read", src, 0, 5), ("read", r, 5, 10)], "pipelined")
    s.record("pipelined replies", repr([x.type for x in reps]))
    s.expect["pipelined replies"] = repr([sc.FXP_STATUS, FXP_NAME,
                                          sc.FXP_DATA, sc.FXP_STATUS])
    for h in (r, w, a, src):
        status_of("close", s.c.close_handle(h), "status OK")
    status_of("realpath after", s.c.realpath("."), "NAME")


def sc_eof_drain(s):
    """stdin EOF: every complete request is answered (OpenSSH drops them:
    not compared, checked for the server under test only)."""
    items = [packet(FXP_REALPATH, u32(1000 + i) + string(".")) for i in
             range(20)]
    s.c.send_raw(b"".join(items))
    s.c.close_stdin()
    got = []
    try:
        while True:
            got.append(s.c.recv(5.0))
    except sc.SFTPError:
        pass
    ids = [g.id for g in got]
    s.record("20 REALPATH then EOF", "replies %r" % ids)
    s.expect["20 REALPATH then EOF"] = "replies %r" % list(range(1000, 1020))


def sc_eof_drain_writes(s):
    h = s.h(s.c.open("drain.bin", FXF_WRITE | FXF_CREAT | FXF_TRUNC))
    data = rnd(7, 40 * 32768)
    pk = [packet(sc.FXP_WRITE, u32(2000 + i) + string(h) + u64(i * 32768)
                 + string(data[i * 32768:(i + 1) * 32768]))
          for i in range(40)]
    pk.append(packet(sc.FXP_CLOSE, u32(2040) + string(h)))
    s.c.send_raw(b"".join(pk))
    s.c.close_stdin()
    got = []
    try:
        while True:
            got.append(s.c.recv(5.0))
    except sc.SFTPError:
        pass
    res = [(g.id, sc.STATUS_NAMES.get(getattr(g, "code", None)))
           for g in got]
    s.record("40 WRITE + CLOSE then EOF", "replies %r" % res)
    s.expect["40 WRITE + CLOSE then EOF"] = "replies %r" % [
        (2000 + i, "OK") for i in range(41)]
    try:
        s.c.proc.wait(5)
    except Exception:
        pass
    with open(s.abs("drain.bin"), "rb") as f:
        ok = f.read() == data
    s.record("file complete", str(ok))
    s.expect["file complete"] = "True"


def sc_vanish(s):
    """The client vanishes mid-upload: the server must exit, and every
    acknowledged byte must be in the file (server only: OpenSSH drops
    queued requests)."""
    h = s.h(s.c.open("vanish.bin", FXF_WRITE | FXF_CREAT | FXF_TRUNC))
    data = rnd(9, 200 * 32768)
    pk = [packet(sc.FXP_WRITE, u32(3000 + i) + string(h) + u64(i * 32768)
                 + string(data[i * 32768:(i + 1) * 32768]))
          for i in range(200)]
    s.c.send_raw(b"".join(pk[:120]))
    acked = []
    try:
        while len(acked) < 40:
            rep = s.c.recv(5.0)
            if rep.is_status(sc.FX_OK):
                acked.append(rep.id - 3000)
    except sc.SFTPError:
        pass
    s.c.send_raw(b"".join(pk[120:160]))
    # vanish: close both directions without reading the rest
    s.c.close_stdin()
    if s.c.sock is not None:
        s.c.sock.shutdown(socket.SHUT_RDWR)
    else:
        s.c.proc.stdout.close()
        s.c.proc.stdout = None
    try:
        s.c.proc.wait(10)
        exited = "yes"
    except Exception:
        exited = "no (still running 10s after the client vanished)"
    s.record("server exits", exited)
    s.expect["server exits"] = "yes"
    with open(s.abs("vanish.bin"), "rb") as f:
        got = f.read()
    bad = [i for i in acked if got[i * 32768:(i + 1) * 32768]
           != data[i * 32768:(i + 1) * 32768]]
    s.record("acknowledged writes on disk", "%d acked, %d missing %r" % (
        len(acked), len(bad), bad[:10]))
    s.expect["acknowledged writes on disk"] = "%d acked, 0 missing []" % (
        len(acked))
    s.record("some writes acknowledged", str(len(acked) > 0))
    s.expect["some writes acknowledged"] = "True"


def sc_backpressure(s):
    """A client that sends ~200 MiB worth of READ requests and does not read
    the replies for a while: the server must keep its memory bounded (stop
    reading its input), then answer everything in order."""
    h = s.h(s.c.open("big.bin", FXF_READ))
    n = 800
    pk = b"".join(packet(sc.FXP_READ, u32(5000 + i) + string(h)
                         + u64((i % 4) * 261120) + u32(261120))
                  for i in range(n))
    view = memoryview(pk)
    stall = time.time()
    while view and time.time() - stall < 1.0:
        try:
            k = os.write(s.c.wfd, view)
            view = view[k:]
            stall = time.time()
        except BlockingIOError:
            time.sleep(0.01)
    time.sleep(0.5)
    rss = 0
    try:
        with open("/proc/%d/status" % s.c.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    rss = int(line.split()[1]) // 1024
    except OSError:
        pass
    s.record("peak RSS while the client reads nothing",
             "%s (%d MiB)" % ("bounded" if rss < 96 else "TOO BIG", rss))
    s.expect["peak RSS while the client reads nothing"] = \
        "bounded (%d MiB)" % rss if rss < 96 else "under 96 MiB"
    try:
        s.c.send_raw(bytes(view), timeout=60)
        bad = 0
        for i in range(n):
            rep = s.c.recv(10)
            want = min(261120, (1 << 20) - (i % 4) * 261120)
            if rep.id != 5000 + i or rep.type != sc.FXP_DATA or \
                    len(rep.data) != want:
                bad += 1
        s.record("800 replies in order", "%d bad" % bad)
    except sc.SFTPError as e:
        s.record("800 replies in order", "EXCEPTION %s" % e)
    s.expect["800 replies in order"] = "0 bad"
    if VERBOSE:
        print("NOTE backpressure: peak RSS %d MiB" % rss)


def addition_reply(rep):
    """A short summary of a reply to an addition."""
    if rep.type == FXP_STATUS:
        return "STATUS %s" % sc.STATUS_NAMES.get(rep.code, rep.code)
    if rep.type == sc.FXP_EXTENDED_REPLY:
        return "EXTREPLY %s" % rep.data.hex()
    return "TYPE %d" % rep.type


def sc_additions(s):
    """Each addition once, well formed (ADDITIONS).  Every step is recorded
    on both sides: OpenSSH must answer OP_UNSUPPORTED, ours s.expect."""
    big = rnd(1, 1 << 20)

    def check_reply(alg, digests):
        return "EXTREPLY " + (string("check-file") + string(alg)
                              + digests).hex()
    h = s.h(s.c.open("big.bin", FXF_READ))
    blocks = b"".join(hashlib.md5(big[o:o + 65536]).digest()
                      for o in range(0, len(big), 65536))
    steps = [
        ("check-file-name", s.c.check_file_name("big.bin", "x,sha256"),
         check_reply("sha256", hashlib.sha256(big).digest())),
        ("check-file-handle", s.c.check_file_handle(h, "md5", 0, 0, 65536),
         check_reply("md5", blocks)),
        ("check-file", s.c.check_file_handle(h, "sha1", 10, 100,
                                             name="check-file"),
         check_reply("sha1", hashlib.sha1(big[10:110]).digest())),
        ("copy-file", s.c.copy_file("f.txt", "f.copy", False), "STATUS OK"),
        ("copy-file onto an existing file",
         s.c.copy_file("f.txt", "big.bin", False), "STATUS FAILURE"),
        ("space-available", s.c.space_available("."), None),
        ("vendor-id", s.c.vendor_id("v", "p", "1", 1), "STATUS OK"),
    ]
    for name, rep, want in steps:
        got = addition_reply(rep)
        if want is None:    # space-available: 4 u64 and a u32
            if rep.type == sc.FXP_EXTENDED_REPLY:
                got = "EXTREPLY %d bytes" % len(rep.data)
            want = "EXTREPLY 36 bytes"
        s.record("+" + name, got)
        s.expect["+" + name] = want
    s.c.close_handle(h)


NEW_ONLY = [("eof_drain", sc_eof_drain, False),
            ("copy_data_failure", sc_copy_data_failure, False),
            ("copy_data_same_file", sc_copy_data_same_file, False),
            ("fifo_open", sc_fifo_open, False),
            ("fifo_open socketpair", sc_fifo_open, True),
            ("eof_drain socketpair", sc_eof_drain, True),
            ("eof_drain_writes", sc_eof_drain_writes, False),
            ("eof_drain_writes socketpair", sc_eof_drain_writes, True),
            ("vanish", sc_vanish, False),
            ("backpressure", sc_backpressure, False),
            ("vanish socketpair", sc_vanish, True)]


# ------------------------------------------------------------- running

def snapshot(root, norm):
    out = []
    for dp, dns, fns in os.walk(root):
        dns.sort()
        for n in sorted(dns + fns) + ([b"."] if dp == root else []):
            p = os.path.join(dp, n) if n != b"." else dp
            rel = norm.sub(p)
            try:
                st = os.lstat(p)
            except OSError as e:
                out.append("%r lstat error %s" % (rel, e.strerror))
                continue
            mt = "RECENT" if is_recent(int(st.st_mtime)) else \
                str(int(st.st_mtime))
            line = "%r mode=%o nlink=%d uid=%d gid=%d size=%d mtime=%s" % (
                rel, st.st_mode, st.st_nlink, st.st_uid, st.st_gid,
                st.st_size if not stat.S_ISDIR(st.st_mode) else -1, mt)
            if stat.S_ISLNK(st.st_mode):
                line += " -> %r" % norm.sub(os.readlink(p))
            elif stat.S_ISREG(st.st_mode) and st.st_size > (64 << 20):
                line += " (large, content not compared)"
            elif stat.S_ISREG(st.st_mode):
                try:
                    with open(p, "rb") as f:
                        h = hashlib.sha256()
                        while True:
                            chunk = f.read(1 << 20)
                            if not chunk:
                                break
                            h.update(chunk)
                        line += " sha=" + h.hexdigest()[:16]
                except OSError as e:
                    line += " unreadable(%s)" % e.strerror
            out.append(line)
    return out


def umount_below(path):
    """Unmount anything mounted at or below path (the tmpfs of sc_enospc)."""
    try:
        with open("/proc/self/mounts", "rb") as f:
            mounts = [line.split()[1] for line in f]
    except OSError:
        return
    p = os.path.realpath(sc.b(path))
    for m in sorted(mounts, key=len, reverse=True):
        m = m.replace(b"\\040", b" ")
        if m == p or m.startswith(p + b"/"):
            subprocess.run(["umount", m], capture_output=True)


def ancestors(path):
    out = []
    path = os.path.abspath(path)
    while True:
        out.append(path)
        parent = os.path.dirname(path)
        if parent == path:
            return out
        path = parent


def force_rmtree(path):
    if not os.path.lexists(path):
        return
    umount_below(path)
    for dp, dns, fns in os.walk(path):
        for n in dns:
            try:
                os.chmod(os.path.join(dp, n), 0o755)
            except OSError:
                pass
    shutil.rmtree(path, ignore_errors=True)


class Side:
    def __init__(self, tag, argv, base):
        self.tag = tag
        self.argv = argv
        self.root = os.path.join(base, tag.encode())


def run_side(side, scn, env, unpriv_prefix, fn=None):
    force_rmtree(side.root)
    os.mkdir(side.root)
    os.chmod(side.root, 0o755)
    scn_setup = scn.setup if scn else fx_basic
    scn_setup(side.root)
    if scn is None or not scn.unpriv:
        os.utime(side.root, (OLD, OLD))
    rootstr = side.root.decode("utf-8", "surrogateescape")
    extra = [a.replace("{ROOT}", rootstr) for a in (scn.args if scn else ())]
    argv = list(side.argv) + ["-e", "-l", "VERBOSE"] + extra
    if scn and scn.unpriv:
        argv = unpriv_prefix + argv
    sockp = scn.socketpair if scn else False
    pre = None
    if scn is not None and scn.nofile:
        def pre(n=scn.nofile):
            resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    if scn is not None and scn.env:
        env = dict(env, **scn.env)
    client = sc.Client(argv, cwd=side.root, env=env, socketpair=sockp,
                       timeout=(scn.timeout if scn and scn.timeout else 5.0),
                       preexec_fn=pre)
    s = Session(client, side.root, side.tag)
    s.expect = {}
    aborted = None
    try:
        if scn is None or scn.init:
            s.init(3)
        (fn or scn.fn)(s)
    except Abort as e:
        aborted = str(e)
    except Exception:
        aborted = traceback.format_exc()
        s.record("PYTHON EXCEPTION", aborted)
    try:
        if fn is None:
            rc, left = client.finish(10.0)
            s.record("stdin closed", "exit status %d, extra output %s" % (
                rc, left.hex() or "none"))
        else:
            client.close_stdin()
            rc = client.wait(10.0)
            s.record("stdin closed", "exit status %d" % rc)
    except sc.SFTPError as e:
        s.record("stdin closed", "EXCEPTION %s: %s" % (type(e).__name__, e))
    finally:
        client.kill()
    log = client.stderr_bytes()
    client.close()
    prog = os.path.basename(side.argv[0]).encode()
    lines = [s.norm.sub(line).replace(prog, b"<PROG>")
             for line in log.replace(b"\r\n", b"\n").split(b"\n")]
    if DROP_LOG is not None:
        lines = [x for x in lines if not DROP_LOG.search(x)]
    fs = snapshot(side.root, s.norm)
    umount_below(side.root)
    return s, lines, fs, aborted


class Stats:
    def __init__(self, label):
        self.label = label
        self.passed = 0
        self.failed = 0
        self.failures = []

    def ok(self, what):
        self.passed += 1
        if VERBOSE:
            print("PASS [%s] %s" % (self.label, what))

    def fail(self, what, detail):
        self.failed += 1
        self.failures.append(what)
        print("FAIL [%s] %s" % (self.label, what))
        print(detail)
        sys.stdout.flush()


def compare_transcripts(a, b, maxshow=8):
    out = []
    n = max(len(a.t), len(b.t))
    bad = 0
    for i in range(n):
        ea = a.t[i] if i < len(a.t) else ("<none>", "<no step>", b"")
        eb = b.t[i] if i < len(b.t) else ("<none>", "<no step>", b"")
        if ea[0] != eb[0] or ea[1] != eb[1]:
            bad += 1
            if bad <= maxshow:
                out.append("  step %d: %s" % (i, ea[0]))
                if ea[0] != eb[0]:
                    out.append("    (server's step: %s)" % eb[0])
                out.append("    openssh: %s" % ea[1])
                out.append("             raw %s" % hexcut(ea[2]))
                out.append("    server : %s" % eb[1])
                out.append("             raw %s" % hexcut(eb[2]))
    if bad > maxshow:
        out.append("  ... %d more differing steps" % (bad - maxshow))
    return bad, out


def udiff(a, b, name):
    d = list(difflib.unified_diff(
        [x if isinstance(x, str) else x.decode("utf-8", "backslashreplace")
         for x in a],
        [x if isinstance(x, str) else x.decode("utf-8", "backslashreplace")
         for x in b], "openssh " + name, "server " + name, n=1, lineterm=""))
    if len(d) > 60:
        d = d[:60] + ["  ... (%d more diff lines)" % (len(d) - 60)]
    return "\n".join("  " + x for x in d)


def run_additions(ref, new, st, env, unpriv_prefix):
    """The deliberate additions: OP_UNSUPPORTED from OpenSSH, answers from
    ours; each addition also left out of VERSION and -Q comparisons."""
    scn = Scenario(None, "additions", fx_basic, (), False, False, True,
                   None, False, None)
    res = {}
    for side in ref, new:
        s, _, _, ab = run_side(side, scn, env, unpriv_prefix,
                               fn=sc_additions)
        res[side.tag] = (s, ab)
    bad = []
    for tag, s_ab in res.items():
        s, ab = s_ab
        if ab:
            bad.append("  %s aborted: %s" % (tag, ab))
        for desc, got, _ in s.t:
            if not desc.startswith("+"):
                continue
            want = ("STATUS OP_UNSUPPORTED" if tag == ref.tag
                    else s.expect[desc])
            if got != want:
                bad.append("  %s %s\n    expected %s\n    got      %s" % (
                    tag, desc, want[:200], got[:200]))
    seen = {d for d, _, _ in res[new.tag][0].t if d.startswith("+")}
    if len(seen) < len(ADDITIONS):
        bad.append("  only %d of the additions were sent" % len(seen))
    if bad:
        st.fail("additions (OpenSSH: OP_UNSUPPORTED)", "\n".join(bad))
    else:
        st.ok("additions (OpenSSH: OP_UNSUPPORTED)")


def run_kernel_clients(ref, new, st, env, base):
    """OpenSSH's own clients download the kernel files (kernel_files, and
    /proc/cpuinfo) from each server: `sftp -D SERVER` with get, and
    `scp -D SERVER` (SFTP mode), each through a wrapper script that runs
    the server with its arguments.  Each download must be what read()
    gives (kernel_view) and the same from both servers, as must the
    clients' exit statuses; /proc/cpuinfo is compared by its lines and
    their keys, and every value but the clock rates.

    Where OpenSSH's pair gives other bytes than read(), the server's may
    be those or read()'s: scp 9.2 with OpenSSH's server keeps 8 KiB of
    /sys/kernel/btf/vmlinux (sysfs gives a page per read(), and OpenSSH's
    server sends what one read() gave).  /proc/kallsyms is left out: the
    clients' 64 READs in flight each cost procfs a walk from the start
    of the file (seconds per download)."""
    clients = {c: shutil.which(c) for c in ("sftp", "scp")}
    if not all(clients.values()):
        SKIPPED.add("kernel_files clients: no sftp or scp (openssh-client)")
        return
    files = [p for p in kernel_files() if p != "/proc/kallsyms"]
    wrappers = {}
    for side in ref, new:
        w = os.path.join(base, "server-%s.sh" % side.tag)
        with open(w, "w") as f:
            f.write("#!/bin/sh\nexec %s \"$@\"\n" % shlex.join(side.argv))
        os.chmod(w, 0o755)
        wrappers[side.tag] = w

    def download(tag, out):
        """{(client, path): (exit status, bytes or None)}"""
        os.mkdir(out)
        res = {}
        batch = os.path.join(out, "batch")
        with open(batch, "w") as f:
            for i, p in enumerate(files):
                f.write('get "%s" "%s/sftp.%d"\n' % (p, out, i))
        p = subprocess.run([clients["sftp"], "-q", "-b", batch, "-D",
                            wrappers[tag]], capture_output=True, env=env,
                           timeout=120, cwd=out)
        for i, path in enumerate(files):
            res[("sftp", path)] = (p.returncode, kernel_view(
                path, read_whole("%s/sftp.%d" % (out, i))))
        for i, path in enumerate(files):
            dst = "%s/scp.%d" % (out, i)
            p = subprocess.run([clients["scp"], "-q", "-D", wrappers[tag],
                                "x:" + path, dst], capture_output=True,
                               env=env, timeout=60, cwd=out)
            res[("scp", path)] = (p.returncode, kernel_view(
                path, read_whole(dst)))
        return res

    def show(r):
        rc, data = r
        if data is None:
            return "exit %d, no file" % rc
        return "exit %d, %d bytes, %d lines, sha=%s" % (
            rc, len(data), data.count(b"\n"), hb(data))
    for attempt in range(3):
        fp = kernel_fingerprint()
        truth = {p: kernel_view(p, read_whole(p)) for p in files}
        res = {}
        for side in ref, new:
            out = os.path.join(base, "clients-%s" % side.tag)
            force_rmtree(out.encode())
            res[side.tag] = download(side.tag, out)
        if kernel_fingerprint() == fp:
            break
        print("NOTE [%s] kernel_files clients: the files changed while "
              "they ran%s" % (st.label, ", again" if attempt < 2 else ""))
    for key in sorted(res[ref.tag]):
        client, path = key
        a, b_ = res[ref.tag][key], res[new.tag][key]
        what = "kernel_files clients: %s get %s" % (client, path)
        want = (0, truth[path])
        if a == want and b_ == want:
            st.ok(what)
        elif a != want and b_ in (a, want):
            st.ok(what)
            print("NOTE [%s] %s: OpenSSH's server gave %s; the server %s" % (
                st.label, what, show(a), "the same" if b_ == a else
                "what read() gives"))
        else:
            detail = ["  read() : %s" % show(want), "  openssh: %s" % show(a),
                      "  server : %s" % show(b_)]
            if path in VOLATILE_FILES and b_[1] is not None:
                keys = [ln.partition(b":")[0].strip()
                        for ln in b_[1].split(b"\n")]
                want_keys = [ln.partition(b":")[0].strip()
                             for ln in truth[path].split(b"\n")]
                detail.append("  server's lines and keys %s read()'s" % (
                    "match" if keys == want_keys else "DIFFER from"))
            st.fail(what, "\n".join(detail))


def run_options_only(ref, new, st, env, base):
    """Invocations that never serve a session: compare exit status and
    stdout; stderr after replacing each program's name."""
    cases = [["-Q", "requests"], ["-Q", "REQUESTS"], ["-Q", "Requests"],
             ["-Q", "foo"], ["-Q", ""], ["-h"], ["-z"], ["-u", "1000"],
             ["-u", "abc"], ["-u", "08"], ["-u", ""], ["-u", "-1"],
             ["-u", "0777x"], ["-l", "bogus"], ["-l", "bogus", "-e"],
             ["-f", "bogus"], ["-P", "a", "-P", "b"], ["-p", "a", "-p", "b"],
             ["-d", "~nosuchuserxyz/x"], ["-d"], ["-l"], ["extra", "args"],
             ["-e", "-l", "INFO"], ["-e", "-l", "DEBUG3"], ["-c"],
             ["-R", "-e", "-l", "info"]]
    for args in cases:
        res = []
        for side in ref, new:
            try:
                p = subprocess.run(list(side.argv) + args,
                                   stdin=subprocess.DEVNULL,
                                   capture_output=True, timeout=10, env=env,
                                   cwd=base)
                prog = os.path.basename(side.argv[0]).encode()
                # debug output is not part of the contract
                err = b"".join(
                    x for x in p.stderr.replace(prog, b"<PROG>")
                    .splitlines(True) if not x.startswith(b"debug") and
                    not (DROP_LOG is not None and DROP_LOG.search(x)))
                out = p.stdout
                if side is new and args[0] == "-Q":
                    # the additions come last, after OpenSSH's names
                    lines = out.splitlines(True)
                    tail = [x.strip().decode() for x in lines[-len(ADDITIONS):]]
                    if tail == list(ADDITIONS):
                        out = b"".join(lines[:-len(ADDITIONS)])
                res.append((p.returncode, out, err))
            except subprocess.TimeoutExpired:
                res.append(("timeout", b"", b""))
        what = "invocation %s" % " ".join(args)
        a, b_ = res
        if a[0] != b_[0] or a[1] != b_[1]:
            st.fail(what, "  openssh: exit %s stdout %r\n  server : exit %s "
                    "stdout %r" % (a[0], a[1][:300], b_[0], b_[1][:300]))
        elif a[2] != b_[2]:
            st.fail(what + " (stderr)", "  openssh: %r\n  server : %r"
                    % (a[2][:400], b_[2][:400]))
        else:
            st.ok(what)


def judge(st, scn_name, aspect, differs, what, detail, ok_what):
    """One aspect of a scenario: identical to OpenSSH, or (--variant)
    different exactly where VARIANTS documents it."""
    why = documented(scn_name, aspect)
    if why is None and differs:
        st.fail(what, detail)
    elif why is None:
        st.ok(ok_what)
    elif differs:
        st.ok("%s: %s differ%s as documented (%s)" % (
            scn_name, aspect, "s" if aspect != "replies" else "", why))
    else:
        st.fail("%s: %s: the documented difference is gone (%s)" % (
            scn_name, aspect, why), "")


def main():
    global VERBOSE, VARIANT
    ap = argparse.ArgumentParser()
    ap.add_argument("--ref", default="/usr/lib/openssh/sftp-server")
    ap.add_argument("--server", default=os.environ.get("SERVER"))
    ap.add_argument("--server-args",
                    default=os.environ.get("SERVER_ARGS", ""))
    ap.add_argument("--label", default="")
    ap.add_argument("--variant", choices=sorted(VARIANTS), default=None,
                    help="run the server with these options (VARIANTS)")
    ap.add_argument("--only", default=None,
                    help="fnmatch pattern of scenario names")
    ap.add_argument("--new-only", action="store_true",
                    help="run the checks that only apply to our server "
                    "(default: when --server is not --ref)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--workdir", default=None,
                    help="create the temporary trees below this directory")
    ap.add_argument("--dump", action="store_true",
                    help="print the reference transcript and log")
    opts = ap.parse_args()
    VERBOSE = opts.verbose
    VARIANT = opts.variant
    if not opts.server:
        print("SKIP: no server given (--server or SERVER)")
        return 77
    for p in (opts.ref, opts.server):
        if not os.access(p, os.X_OK):
            print("SKIP: %s is not executable" % p)
            return 77
    os.umask(0o022)
    env = dict(os.environ)
    env.pop("SSH_CONNECTION", None)
    unpriv_prefix = []
    if IS_ROOT:
        sp = shutil.which("setpriv")
        if sp:
            unpriv_prefix = [sp, "--reuid=%d" % UNPRIV_UID,
                             "--regid=%d" % UNPRIV_UID, "--clear-groups",
                             "--"]
    same = os.path.realpath(opts.ref) == os.path.realpath(opts.server)
    new_only = opts.new_only or not same
    if opts.workdir:
        os.chmod(opts.workdir, 0o755)   # our own temp dir: let nobody in
    base = tempfile.mkdtemp(prefix="difftest.", dir=opts.workdir)
    os.chmod(base, 0o755)
    unpriv_ok = all(os.stat(a).st_mode & 0o001 for a in ancestors(base))
    bbase = base.encode()
    ref = Side("ref", [opts.ref], bbase)
    new = Side("new", [opts.server] + shlex.split(opts.server_args) +
               (VARIANTS[VARIANT][0] if VARIANT else []), bbase)
    # both trees exist during every run, so the base looks the same to both
    os.mkdir(ref.root)
    os.mkdir(new.root)
    st = Stats(opts.label or "difftest")
    t_start = time.time()
    try:
        for scn in SCENARIOS:
            if opts.only and not fnmatch.fnmatch(scn.name, opts.only):
                continue
            if scn.unpriv and IS_ROOT and not unpriv_prefix:
                SKIPPED.add("%s: setpriv not found" % scn.name)
                continue
            if scn.unpriv and IS_ROOT and not unpriv_ok:
                SKIPPED.add("%s: uid %d cannot reach %s" % (
                    scn.name, UNPRIV_UID, base))
                continue
            t1 = time.time()
            for attempt in range(3):
                fp = scn.fingerprint() if scn.fingerprint else None
                a, la, fa, ab_a = run_side(ref, scn, env, unpriv_prefix)
                b_, lb, fb, ab_b = run_side(new, scn, env, unpriv_prefix)
                if fp is None or scn.fingerprint() == fp:
                    break
                print("NOTE [%s] %s: the files it reads changed while it "
                      "ran%s" % (st.label, scn.name, ", again" if attempt < 2
                                 else "; compared as they are"))
            if opts.dump:
                print("=== %s" % scn.name)
                for d, n_, _ in a.t:
                    print("  %s\n    -> %s" % (d, n_))
                for line in la:
                    print("  log: %r" % line)
            # A session cut short compares only its first steps: a failure
            # even when both stopped at the same step.
            for who, ab in (("openssh", ab_a), ("server", ab_b)):
                if ab:
                    st.fail("%s: the %s session aborted" % (scn.name, who),
                            "  " + ab.strip().splitlines()[-1])
            if VERBOSE:
                print("TIME %s %.2fs" % (scn.name, time.time() - t1))
            if VARIANT is not None:
                for side in a, b_:
                    side.t = [(d, masked([n])[0], r) for d, n, r in side.t]
                fa, fb, la, lb = masked(fa), masked(fb), masked(la), \
                    masked(lb)
            nbad, detail = compare_transcripts(a, b_)
            judge(st, scn.name, "replies", nbad,
                  "%s: replies differ (%d of %d steps)" % (
                      scn.name, nbad, len(a.t)), "\n".join(detail),
                  "%s: replies (%d steps)" % (scn.name, len(a.t)))
            for n in b_.notes:
                print("NOTE [%s] %s: %s" % (st.label, scn.name, n))
            judge(st, scn.name, "tree", fa != fb,
                  "%s: file tree differs" % scn.name,
                  udiff(fa, fb, "tree"), "%s: file tree" % scn.name)
            # -P/-p/-R refuse the additions too, and say so when VERSION
            # leaves them out
            lb = [x for x in lb if not ADDITION_REFUSAL.search(x)]
            if scn.log == "unordered":
                # same lines, order free (see the scenario's comment)
                la, lb = sorted(la), sorted(lb)
            if scn.log:
                judge(st, scn.name, "log", la != lb,
                      "%s: -e log differs" % scn.name, udiff(la, lb, "log"),
                      "%s: log" % scn.name)
        if not opts.only or fnmatch.fnmatch("invocations", opts.only):
            run_options_only(ref, new, st, env, base)
        if not opts.only or fnmatch.fnmatch("kernel_files_clients",
                                            opts.only):
            run_kernel_clients(ref, new, st, env, base)
        if new_only:
            for name, fn, sockp in NEW_ONLY:
                if opts.only and not fnmatch.fnmatch(name, opts.only):
                    continue
                scn = Scenario(None, name, fx_basic, (), sockp, False, True,
                               None, False, None)
                s, _, _, ab = run_side(new, scn, env, unpriv_prefix, fn=fn)
                bad = []
                for desc, got, raw in s.t:
                    if desc in s.expect and s.expect[desc] != got:
                        bad.append("  %s\n    expected %s\n    got      %s"
                                   % (desc, s.expect[desc], got))
                judge(st, name, "server only", ab or bad or not s.expect,
                      name + " (server only)", "\n".join(bad) + (
                          "\n  aborted: %s" % ab if ab else ""),
                      name + " (server only)")
            if not opts.only or fnmatch.fnmatch("additions", opts.only):
                run_additions(ref, new, st, env, unpriv_prefix)
        else:
            SKIPPED.add("eof_drain*: OpenSSH drops queued requests at stdin "
                        "EOF; only checked for the server under test")
    finally:
        if not opts.keep:
            force_rmtree(base)
        else:
            print("kept", base)
    print("[%s] difftest took %.1fs" % (st.label, time.time() - t_start))
    for what in sorted(SKIPPED):
        print("SKIP [%s] %s" % (st.label, what))
    print("%d passed, %d failed" % (st.passed, st.failed))
    if st.failed:
        return 1
    return 77 if SKIPPED else 0


if __name__ == "__main__":
    sys.exit(main())

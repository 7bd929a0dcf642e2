#!/usr/bin/python3
"""Path-level model test: pipelined metadata requests against the same
requests run one at a time (issue 21).

For each seed, two copies of one small random tree are made, and two
instances of the same server are started, one in each.  The test then
generates random requests window by window (10 to 40 requests a window)
over a small namespace: the names a, b, c, d at depth 1 to 3 (a, a/b,
a/b/c, ...), any of which may be a directory, a file, a symbolic link or
nothing, plus "." and "big", a link to a directory of 150 files that no
request changes, shared by all trees.  Each window
goes to the first server pipelined, all in one write with no wait for a
reply, and to the second one request at a time (send, wait for the reply,
send the next): the oracle.  The two must agree on every reply and, after
every window, on the whole tree.

Requests: MKDIR, RMDIR, OPEN (READ; WRITE|CREAT|TRUNC; WRITE|CREAT|EXCL;
READ|WRITE; READ|WRITE|CREAT; WRITE|CREAT|APPEND; sometimes with a
permission), WRITE and READ (small, random offsets), CLOSE, FSTAT,
FSETSTAT, fsync@openssh.com, OPENDIR, READDIR, RENAME,
posix-rename@openssh.com, hardlink@openssh.com, REMOVE, STAT, LSTAT,
SETSTAT (size, permissions), SYMLINK (relative targets without "..", so
that a link renamed anywhere stays inside the tree; some dangling, some to
directories so that later paths go through them), READLINK and REALPATH
(some with ".."), statvfs@openssh.com and fstatvfs@openssh.com.  Now
and then a change is followed at once by a request that reports state (a
WRITE, two WRITEs that follow on from each other, which our server merges
into one run, an FSETSTAT or a SETSTAT, then a READDIR of a directory
handle not listed yet, a statvfs or an fstatvfs): that request must see
the change, as it does when run one at a time.  A request that needs a handle
uses one from an earlier window (its value is only known from the reply);
handles stay open across windows, so within a window handle requests mix
with path requests on the same files and directories.  Now and then a
handle is used after its CLOSE in the same window, or with the wrong kind
(READ on a directory handle, READDIR on a file handle).  The generator
keeps a rough guess of the tree within a window and prefers paths the
window already touched, so that most windows hold requests that depend on
each other: exactly what a server that runs requests concurrently must
keep in arrival order.

Compared, step by step: the reply's id (replies must come in request
order), type, STATUS code, message and language tag, DATA bytes, ATTRS
(flags, size, uid/gid, permissions), NAME entries (file name, long name,
attributes); and after each window the trees: every entry's type, mode,
size, owner, link count, file contents and link target.  At the end each
server must exit 0 at stdin EOF with nothing unread, and nothing may have
appeared beside the trees.  Each server must also never hand out a handle
value that is still open (in request order).

With --own-fs (needs root) each tree is a tmpfs of its own, so that
statvfs and fstatvfs replies are compared whole but for the file system
id: the free blocks and inodes count what the requests before did.
Without it (the trees share a file system with the rest of the machine)
their free counts are left out of the comparison.

Normalized, because it may legitimately differ, and nothing else:
  * handle values: a handle is known by the request that opened it, so
    only "a HANDLE" is compared (the i-th handle of one run stands for the
    i-th of the other);
  * atime and mtime, in ATTRS and as the date in a long name;
  * the tree's own path (in REALPATH replies) becomes <ROOT>;
  * the order of entries within a READDIR reply (compared as sets);
  * how the listing of "big" (150 entries, more than OpenSSH sends in one
    reply) is split into READDIR replies: there, each run is checked on
    its own (no entry twice, nothing outside the directory, all of it by
    EOF) and entries seen by both runs must agree; one run may still be
    sending NAMEs when the other says EOF.  A namespace directory holds at
    most six entries (".", ".." and four names), which a server sends in
    one reply; there a different split is a difference.

A failure names the seed, the window and the request, prints the window's
requests with both replies, and a command line that replays that seed.

--ref PATH adds a second oracle: PATH (OpenSSH's sftp-server) runs the
same requests one at a time in a third copy of the tree, and must agree
with the oracle the same way, with one known difference: OpenSSH stats a
READDIR's entries by the name the directory was opened with, ours through
the open directory (doc/design.md), so a READDIR after that name stopped
naming that directory (checked on the reference's tree just before the
READDIR is sent) is not compared with the reference; their count is
printed.

--selftest reply|reorder|lexical checks the checker instead of the
server: "reply" changes one pipelined reply per seed (a status code or
message, a data byte, a size, a permission, a READDIR entry, a HANDLE
turned into a STATUS) or one file of the pipelined tree, and passes when
each change is reported at the step (or after the window) where it was
made; "reorder" sends each pipelined window with some neighbouring
requests swapped (the server then runs them in that order, as a server
that ignored the ordering rule would) and puts the replies back in
request order, and passes when at least one seed reports a difference;
"lexical" does the same with every neighbouring pair that a rule by path
names alone would let run in either order (different paths, neither
beneath the other, "." above all, different handles, a handle taken as
the path it was opened with, OPENs in order): what it finds comes through
symbolic links, handles whose directory was renamed, and handle values
freed by a CLOSE that a later request took over, which a server running
requests concurrently must keep in order too.

Usage: pathmodel.py --server PATH [--server-args "ARGS"] [--label NAME]
                    [--workdir DIR] [--seed-base N] [--seeds N | --seed S]
                    [--ops N] [--ref PATH] [--own-fs] [--selftest MODE]
                    [--keep] [-v]
Exit: 0 all passed, 1 a failure, 77 cannot run.  Last line of the output:
"N passed, N failed".
"""

import argparse
import os
import random
import shlex
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seedrun  # noqa: E402
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_READ, FXF_WRITE, FXF_APPEND, FXF_CREAT, FXF_TRUNC, FXF_EXCL,
    FXP_OPEN, FXP_CLOSE, FXP_READ, FXP_WRITE, FXP_LSTAT, FXP_FSTAT,
    FXP_SETSTAT, FXP_FSETSTAT, FXP_OPENDIR, FXP_READDIR, FXP_REMOVE,
    FXP_MKDIR, FXP_RMDIR, FXP_REALPATH, FXP_STAT, FXP_RENAME, FXP_READLINK,
    FXP_SYMLINK, FXP_EXTENDED, FXP_STATUS, FXP_HANDLE, FXP_DATA, FXP_NAME,
    FXP_ATTRS, FXP_EXTENDED_REPLY, FX_OK, FX_EOF, FX_FAILURE,
    u32, u64, string, packet, encode_attrs)

NAMES = "abcd"
MAX_DEPTH = 3
BIG = "big"                   # a symlink to BIG_SHARED
BIG_SHARED = "big-shared"     # in the work directory, made once
BIG_ENTRIES = 150


def namespace():
    out = []
    level = [""]
    for _ in range(MAX_DEPTH):
        level = [(p + "/" if p else "") + n for p in level for n in NAMES]
        out.extend(level)
    return out


PATHS = namespace()                       # 84 paths
BIG_NAMES = ["entry-%03d" % i for i in range(BIG_ENTRIES)]

OPEN_FLAGS = (
    (FXF_READ, "READ"),
    (FXF_WRITE | FXF_CREAT | FXF_TRUNC, "WRITE|CREAT|TRUNC"),
    (FXF_WRITE | FXF_CREAT | FXF_EXCL, "WRITE|CREAT|EXCL"),
    (FXF_READ | FXF_WRITE, "READ|WRITE"),
    (FXF_READ | FXF_WRITE | FXF_CREAT, "READ|WRITE|CREAT"),
    (FXF_WRITE | FXF_CREAT | FXF_APPEND, "WRITE|CREAT|APPEND"),
)
PERMS = (0o644, 0o600, 0o755, 0o700, 0o444, 0o640, 0o750)
MAX_OPEN = 10


class Mismatch(Exception):
    """The runs disagree (or a run broke a rule on its own)."""


def parent(p):
    return p.rsplit("/", 1)[0] if "/" in p else ""


def under(p, d):
    """p is d or lies beneath d."""
    return p == d or p.startswith(d + "/")


def fmt_attrs(a):
    out = []
    if "size" in a:
        out.append("size=%d" % a["size"])
    if "perm" in a:
        out.append("perm=%o" % a["perm"])
    return "{%s}" % " ".join(out)


class Op:
    """One request as generated.  Handle requests name a handle by its
    number (hid): the n-th OPEN/OPENDIR of the seed that succeeded."""

    def __init__(self, kind, **kw):
        self.kind = kind
        self.path = kw.get("path")
        self.path2 = kw.get("path2")
        self.pflags = kw.get("pflags", 0)
        self.attrs = kw.get("attrs")
        self.hid = kw.get("hid")          # handle used
        self.new_hid = kw.get("new_hid")  # handle this OPEN/OPENDIR makes
        self.off = kw.get("off", 0)
        self.data = kw.get("data", b"")
        self.length = kw.get("length", 0)
        self.big = kw.get("big", False)
        self.note = kw.get("note", "")

    def describe(self):
        k = self.kind
        if k == "OPEN":
            name = dict((f, n) for f, n in OPEN_FLAGS)[self.pflags]
            s = "OPEN %s %s%s -> h%d" % (
                self.path, name,
                " " + fmt_attrs(self.attrs) if self.attrs else "",
                self.new_hid)
        elif k == "OPENDIR":
            s = "OPENDIR %s -> h%d" % (self.path, self.new_hid)
        elif k == "WRITE":
            s = "WRITE h%d off=%d len=%d" % (self.hid, self.off,
                                             len(self.data))
        elif k == "READ":
            s = "READ h%d off=%d len=%d" % (self.hid, self.off, self.length)
        elif k in ("CLOSE", "FSTAT", "READDIR", "FSYNC", "FSTATVFS"):
            s = "%s h%d" % (k, self.hid)
        elif k == "FSETSTAT":
            s = "FSETSTAT h%d %s" % (self.hid, fmt_attrs(self.attrs))
        elif k in ("MKDIR", "SETSTAT"):
            s = "%s %s%s" % (k, self.path, " " + fmt_attrs(self.attrs)
                             if self.attrs else "")
        elif k in ("RENAME", "POSIX_RENAME", "HARDLINK"):
            s = "%s %s %s" % (k, self.path, self.path2)
        elif k == "SYMLINK":
            s = "SYMLINK %s -> %s" % (self.path, self.path2)
        else:
            s = "%s %s" % (k, self.path)
        if self.note:
            s += " (%s)" % self.note
        return s

    def request(self, side):
        """(packet type, body after the id) for this side's handles."""
        k = self.kind
        if self.hid is not None:
            h = string(side.handles[self.hid])
        if k == "OPEN":
            return FXP_OPEN, string(self.path) + u32(self.pflags) + \
                encode_attrs(self.attrs)
        if k == "OPENDIR":
            return FXP_OPENDIR, string(self.path)
        if k == "CLOSE":
            return FXP_CLOSE, h
        if k == "READ":
            return FXP_READ, h + u64(self.off) + u32(self.length)
        if k == "WRITE":
            return FXP_WRITE, h + u64(self.off) + string(self.data)
        if k == "FSTAT":
            return FXP_FSTAT, h
        if k == "FSETSTAT":
            return FXP_FSETSTAT, h + encode_attrs(self.attrs)
        if k == "READDIR":
            return FXP_READDIR, h
        if k == "FSYNC":
            return FXP_EXTENDED, string("fsync@openssh.com") + h
        if k == "FSTATVFS":
            return FXP_EXTENDED, string("fstatvfs@openssh.com") + h
        if k == "STATVFS":
            return FXP_EXTENDED, string("statvfs@openssh.com") + \
                string(self.path)
        if k == "MKDIR":
            return FXP_MKDIR, string(self.path) + encode_attrs(self.attrs)
        if k == "SETSTAT":
            return FXP_SETSTAT, string(self.path) + encode_attrs(self.attrs)
        if k == "RENAME":
            return FXP_RENAME, string(self.path) + string(self.path2)
        if k == "POSIX_RENAME":
            return FXP_EXTENDED, string("posix-rename@openssh.com") + \
                string(self.path) + string(self.path2)
        if k == "HARDLINK":
            return FXP_EXTENDED, string("hardlink@openssh.com") + \
                string(self.path) + string(self.path2)
        if k == "SYMLINK":
            # OpenSSH's order: target first, then the new link
            return FXP_SYMLINK, string(self.path2) + string(self.path)
        simple = {"RMDIR": FXP_RMDIR, "REMOVE": FXP_REMOVE,
                  "STAT": FXP_STAT, "LSTAT": FXP_LSTAT,
                  "READLINK": FXP_READLINK, "REALPATH": FXP_REALPATH}
        return simple[k], string(self.path)


# ---------------------------------------------------------------- trees

def make_big(workdir):
    """The listing too long for one READDIR reply of OpenSSH's: one
    directory that no request changes, shared by every tree (through the
    link "big") so that it is made once."""
    d = os.path.join(workdir, BIG_SHARED)
    if os.path.isdir(d):
        return
    os.mkdir(d + ".new")
    for i, n in enumerate(BIG_NAMES):
        with open(os.path.join(d + ".new", n), "wb") as f:
            f.write(b"%d" % i * (i % 7))
    os.rename(d + ".new", d)


def tree_spec(rng):
    """The initial tree of a seed: a list of (path, type, content)."""
    # from WORKDIR/seed-N/SIDE/big
    spec = [(BIG, "l", "../../" + BIG_SHARED)]
    kinds = {"": "d"}
    for p in PATHS:
        if kinds.get(parent(p)) != "d":
            continue
        r = rng.random()
        if r < 0.35:
            kinds[p] = "d"
            spec.append((p, "d", rng.choice(PERMS[2:4] + (0o755,))))
        elif r < 0.55:
            kinds[p] = "f"
            spec.append((p, "f", rng.randbytes(rng.randint(0, 40))))
        elif r < 0.62:
            kinds[p] = "l"
            spec.append((p, "l", link_target(p, rng.choice(PATHS))))
    return spec


def link_target(link, dest):
    """A relative target for `link`: `dest` when it lies beneath the link's
    directory, else dest's last names taken from that directory.  Never
    "..", so that a link renamed anywhere still points into the tree (a
    file created through a dangling link that led out would be shared by
    the runs)."""
    d = parent(link)
    if not d:
        return dest
    if dest.startswith(d + "/"):
        return dest[len(d) + 1:]
    room = MAX_DEPTH - (d.count("/") + 1)
    return "/".join(dest.split("/")[-room:])


def make_tree(root, spec):
    os.makedirs(root, exist_ok=True)    # a tmpfs may be mounted there
    for p, kind, content in spec:
        full = os.path.join(root, p)
        if kind == "d":
            os.mkdir(full)
            if content is not None:
                os.chmod(full, content)
        elif kind == "f":
            with open(full, "wb") as f:
                f.write(content)
        else:
            os.symlink(content, full)


def remove_tree(path):
    """rm -rf, also where a request left a directory without write or
    search permission (which only stops a test not run as root)."""
    for d, subdirs, _ in os.walk(path):
        for n in subdirs:
            full = os.path.join(d, n)
            if not os.path.islink(full):
                os.chmod(full, 0o700)
    shutil.rmtree(path)


def snapshot(root):
    """relative path -> what the tree comparison looks at (big is a link:
    what it names is not compared, no request changes it)."""
    out = {}

    def walk(rel):
        full = os.path.join(root, rel) if rel else root
        for name in sorted(os.listdir(full)):
            r = (rel + "/" if rel else "") + name
            st = os.lstat(os.path.join(root, r))
            fmt = stat.S_IFMT(st.st_mode)
            info = {"mode": "%o" % st.st_mode, "uid": st.st_uid,
                    "gid": st.st_gid, "nlink": st.st_nlink}
            if fmt == stat.S_IFREG:
                with open(os.path.join(root, r), "rb") as f:
                    info["data"] = f.read()
                info["size"] = st.st_size
                out[r] = ("f", info)
            elif fmt == stat.S_IFDIR:
                info["size"] = st.st_size
                out[r] = ("d", info)
                walk(r)
            elif fmt == stat.S_IFLNK:
                info["target"] = os.readlink(os.path.join(root, r))
                out[r] = ("l", info)
            else:
                out[r] = ("?", info)

    walk("")
    return out


def tree_diff(a, b):
    """First difference of two snapshots as text, or None."""
    for p in sorted(set(a) | set(b)):
        if p not in a:
            return "%s: missing in the oracle's tree, pipelined has %r" % (
                p, b[p])
        if p not in b:
            return "%s: missing in the pipelined tree, oracle has %r" % (
                p, a[p])
        if a[p] != b[p]:
            return "%s: oracle %r, pipelined %r" % (p, a[p], b[p])
    return None


# ---------------------------------------------------------------- a server

class Side:
    """One server process in its own copy of the tree."""

    def __init__(self, name, argv, root, socketpair):
        self.name = name
        self.root = root
        self.real_root = os.path.realpath(root).encode()
        self.client = sc.Client(argv, cwd=root, socketpair=socketpair)
        self.handles = {}     # hid -> handle bytes (kept after CLOSE)
        self.open = {}        # handle bytes -> hid, while open
        self.big = {}         # hid -> {name: normalized entry} seen so far
        self.big_eof = set()  # hids whose listing reached EOF
        # The reference server (OpenSSH) lists a directory handle by the
        # name it was opened with, ours by the open directory: READDIRs
        # after that name stopped naming that directory are not compared.
        self.track_dirs = False
        self.dir_paths = {}   # hid -> path given to OPENDIR
        self.dirs = {}        # hid -> (dev, ino) it named then
        self.moved = set()    # positions in the last window
        self.own_fs = False   # its tree is a file system of its own

    def run_window(self, ops, first_id, pipelined, swap=None):
        """Send ops; return the replies in request order.  swap: a list of
        positions i whose requests i and i+1 go out swapped (selftest)."""
        c = self.client
        reps = []
        if pipelined:
            order = list(range(len(ops)))
            for i in swap or ():
                order[i], order[i + 1] = order[i + 1], order[i]
            if not ops:
                return reps
            c.begin_batch()
            for i in order:
                ptype, body = ops[i].request(self)
                c.send_raw(packet(ptype, u32(first_id + i) + body))
            c.end_batch()
            for i in range(len(ops)):
                try:
                    reps.append(c.recv())
                except sc.SFTPError as e:
                    raise Mismatch("%s server: no reply for request #%d of "
                                   "the window (%s): %s; stderr: %r" % (
                                       self.name, i, ops[i].describe(), e,
                                       c.stderr_bytes()[-400:]))
            if swap:
                reps.sort(key=lambda r: r.id)
        else:
            self.moved = set()
            for i, op in enumerate(ops):
                if self.track_dirs and op.kind == "READDIR" and \
                        self.dir_id(op.hid) != self.dirs.get(op.hid):
                    self.moved.add(i)
                ptype, body = op.request(self)
                c.send_raw(packet(ptype, u32(first_id + i) + body))
                try:
                    reps.append(c.recv())
                except sc.SFTPError as e:
                    raise Mismatch("%s server: no reply for %s: %s; stderr: "
                                   "%r" % (self.name, op.describe(), e,
                                           c.stderr_bytes()[-400:]))
                if self.track_dirs and op.kind == "OPENDIR":
                    self.dir_paths[op.new_hid] = op.path
                    self.dirs[op.new_hid] = self.dir_id(op.new_hid)
        return reps

    def dir_id(self, hid):
        """What the path a directory handle was opened with names now."""
        try:
            st = os.stat(os.path.join(self.root, self.dir_paths[hid]))
        except (OSError, KeyError):
            return None
        return (st.st_dev, st.st_ino)

    # ---------------------------------------------- normalization

    def attrs(self, a):
        return tuple(sorted((k, v) for k, v in a.items()
                            if k not in ("atime", "mtime")))

    def longname(self, ln, a):
        if "mtime" in a:
            for f in ("%b %e %H:%M", "%b %e  %Y"):
                d = time.strftime(f, time.localtime(a["mtime"])).encode()
                if d in ln:
                    return ln.replace(d, b"<DATE>", 1)
        return ln

    def entry(self, e):
        name, ln, a = e
        return (name, self.longname(ln, a), self.attrs(a))

    def normalize(self, op, rep):
        t = rep.type
        if t == FXP_STATUS:
            return ("STATUS", sc.STATUS_NAMES.get(rep.code, rep.code),
                    rep.msg, rep.lang)
        if t == FXP_HANDLE:
            return ("HANDLE",)
        if t == FXP_DATA:
            return ("DATA", rep.data)
        if t == FXP_ATTRS:
            return ("ATTRS", self.attrs(rep.attrs))
        if t == FXP_NAME:
            if op.kind == "READDIR":
                return ("NAME", frozenset(self.entry(e) for e in rep.names),
                        len(rep.names))
            return ("NAME", tuple((n.replace(self.real_root, b"<ROOT>"),
                                   ln.replace(self.real_root, b"<ROOT>"),
                                   self.attrs(a))
                                  for n, ln, a in rep.names))
        if t == FXP_EXTENDED_REPLY and op.kind in ("STATVFS", "FSTATVFS"):
            return ("STATVFS",) + self.statvfs(op, rep.data)
        return ("TYPE%d" % t, rep.raw[5:])

    def statvfs(self, op, data):
        """bsize, frsize, blocks, bfree, bavail, files, ffree, favail,
        fsid, flag, namemax: the id is the file system's own; the free
        counts only say what the requests did on a tree of its own (big
        is elsewhere)."""
        if len(data) != 88:
            return ("LENGTH", data)
        v = list(struct.unpack(">11Q", data))
        v[8] = "FSID"
        if not self.own_fs or op.big or op.path == BIG:
            v[3:5] = v[6:8] = ["FREE", "FREE"]
        return tuple(v)

    def account(self, op, rep):
        """The rules one run keeps on its own: no handle value handed out
        twice while open, and the listing of big.  Returns the normalized
        reply."""
        if op.kind in ("OPEN", "OPENDIR") and rep.type == FXP_HANDLE:
            if rep.handle in self.open:
                raise Mismatch("the %s server returned handle %s, which h%d "
                               "still holds" % (self.name, rep.handle.hex(),
                                                self.open[rep.handle]))
            self.handles[op.new_hid] = rep.handle
            self.open[rep.handle] = op.new_hid
        if op.kind == "CLOSE" and rep.is_status(FX_OK):
            hb = self.handles[op.hid]
            if self.open.get(hb) == op.hid:
                del self.open[hb]
        if op.kind == "READDIR" and op.big:
            if rep.type == FXP_NAME:
                seen = self.big.setdefault(op.hid, {})
                for e in rep.names:
                    name = e[0].decode("utf-8", "replace")
                    if name in seen:
                        raise Mismatch("the %s server listed entry %s of big"
                                       " twice" % (self.name, name))
                    if name not in BIG_NAMES and name not in (".", ".."):
                        raise Mismatch("the %s server listed %r, which is "
                                       "not in big" % (self.name, name))
                    seen[name] = self.entry(e)
                return ("BIG-LISTING",)
            if rep.is_status(FX_EOF):
                seen = self.big.get(op.hid, {})
                if op.hid not in self.big_eof:
                    self.big_eof.add(op.hid)
                    missing = set(BIG_NAMES + [".", ".."]) - set(seen)
                    if missing:
                        raise Mismatch("the %s server said EOF, but its "
                                       "listing of big lacks %d entries "
                                       "(%s...)" % (self.name, len(missing),
                                                    sorted(missing)[:3]))
                return ("BIG-LISTING",)
        return self.normalize(op, rep)


def short(rep):
    """A reply on one line (a long listing cut short)."""
    if rep is None:
        return "-"
    if rep.type == FXP_NAME:
        names = sorted("%s%s" % (n.decode("utf-8", "replace"), fmt_attrs(a))
                       for n, _, a in rep.names)
        if len(names) > 8:
            names = names[:6] + ["... %d entries" % len(names)]
        return "<NAME id=%s %s>" % (rep.id, " ".join(names))
    if rep.type == FXP_DATA:
        return "<DATA id=%s %s>" % (rep.id, rep.data.hex())
    return repr(rep)


# ---------------------------------------------------------------- a seed

class Seed:
    def __init__(self, args, seed, nops):
        self.args = args
        self.seed = seed
        self.nops = nops
        self.rng = random.Random(seed)
        self.hstate = {}      # hid -> {"kind", "path", "big", "pflags"}
        self.usable = []      # hids open after the last window
        self.next_hid = 0
        self.ops_done = 0
        self.perturb = None   # selftest reply: (window, step or None)
        self.st_rng = random.Random(seed * 7 + 1)   # selftest choices
        self.tolerated = 0    # READDIRs of a moved directory (--ref)

    # ---------------------------------------------- generation

    def pick_path(self, shadow, want, hot):
        rng = self.rng
        r = rng.random()
        if r < 0.30 and hot:
            return rng.choice(hot)
        if r < 0.80:
            if want == "new":
                cands = [p for p in PATHS if p not in shadow
                         and (parent(p) == "" or
                              shadow.get(parent(p)) == "d")]
            elif want == "any":
                cands = list(shadow)
            else:
                cands = [p for p, k in shadow.items() if k in want]
            if cands:
                return rng.choice(cands)
        return rng.choice(PATHS)

    def shadow_apply(self, shadow, op):
        """Guess the effect of op on the tree, to steer what comes next
        (the guess is never used to check anything)."""
        k, p = op.kind, op.path
        par_ok = p is not None and (parent(p) == "" or
                                    shadow.get(parent(p)) == "d")
        if k == "MKDIR" and par_ok and p not in shadow:
            shadow[p] = "d"
        elif k == "RMDIR" and shadow.get(p) == "d" and not any(
                q != p and under(q, p) for q in shadow):
            del shadow[p]
        elif k == "OPEN" and op.pflags & FXF_CREAT and par_ok and \
                p not in shadow:
            shadow[p] = "f"
        elif k == "REMOVE" and shadow.get(p) in ("f", "l"):
            del shadow[p]
        elif k == "SYMLINK" and par_ok and p not in shadow:
            shadow[p] = "l"
        elif k in ("RENAME", "POSIX_RENAME") and p in shadow and \
                not under(op.path2, p):
            q = op.path2
            if k == "RENAME" and q in shadow:
                return
            for x in [x for x in shadow if under(x, q)]:
                del shadow[x]
            for x in [x for x in shadow if under(x, p)]:
                shadow[q + x[len(p):]] = shadow.pop(x)
        elif k == "HARDLINK" and shadow.get(p) == "f" and q_free(shadow,
                                                                   op.path2):
            shadow[op.path2] = "f"

    def gen_window(self, size, snap):
        rng = self.rng
        # big is never named by a request that could change it
        shadow = {p: v[0] for p, v in snap.items() if p != BIG}
        hot = []
        ops = []
        pending_open = 0
        closed_at = {}        # hid -> index of its CLOSE in this window
        last_open = -1
        live = [h for h in self.usable]
        weights = (
            ("MKDIR", 9), ("RMDIR", 5), ("OPEN", 10), ("OPENDIR", 4),
            ("CLOSE", 6), ("WRITE", 10), ("READ", 7), ("FSTAT", 4),
            ("FSETSTAT", 3), ("FSYNC", 1), ("READDIR", 7), ("RENAME", 5),
            ("POSIX_RENAME", 4), ("HARDLINK", 1), ("REMOVE", 6),
            ("STAT", 6), ("LSTAT", 4), ("SETSTAT", 4), ("SYMLINK", 5),
            ("READLINK", 3), ("REALPATH", 3), ("STATVFS", 2),
            ("FSTATVFS", 2), ("CHANGE_THEN_LOOK", 5))
        kinds = [k for k, _ in weights]
        wts = [w for _, w in weights]
        while len(ops) < size:
            k = rng.choices(kinds, wts)[0]
            files = [h for h in live if self.hstate[h]["kind"] == "file"]
            dirs = [h for h in live if self.hstate[h]["kind"] == "dir"]
            op = None
            if k == "CHANGE_THEN_LOOK":
                pair = self.gen_change_then_look(shadow, files, dirs, live)
                if pair is None:
                    continue
                ops.extend(pair)
                for op in pair:
                    if op.hid is not None and not op.big:
                        hot.append(self.hstate[op.hid]["path"])
                    self.shadow_apply(shadow, op)
                continue
            if k in ("WRITE", "READ", "FSTAT", "FSETSTAT", "FSYNC", "CLOSE",
                     "READDIR", "FSTATVFS"):
                pool = {"READDIR": dirs, "CLOSE": live,
                        "FSTATVFS": live}.get(k, files)
                # mostly handles opened for what the request does
                need = {"READ": FXF_READ, "WRITE": FXF_WRITE}.get(k)
                fit = [h for h in pool
                       if self.hstate[h]["pflags"] & (need or 0)]
                if need and fit and rng.random() < 0.85:
                    pool = fit
                elif k == "FSTAT" and dirs and rng.random() < 0.1:
                    pool = dirs
                note = ""
                stale = [h for h, at in closed_at.items() if at > last_open]
                if stale and rng.random() < 0.04:
                    hid = rng.choice(stale)
                    note = "after its CLOSE"
                elif rng.random() < 0.03 and (files if k == "READDIR"
                                              else dirs):
                    hid = rng.choice(files if k == "READDIR" else dirs)
                    note = "wrong kind"
                elif pool:
                    hid = rng.choice(pool)
                else:
                    continue
                hs = self.hstate[hid]
                op = Op(k, hid=hid, note=note, big=hs["big"])
                if k == "WRITE":
                    op.off = rng.choice((0, 0, rng.randint(0, 48)))
                    op.data = rng.randbytes(rng.randint(1, 24))
                elif k == "READ":
                    op.off = rng.choice((0, rng.randint(0, 64)))
                    op.length = rng.randint(1, 64)
                elif k == "FSETSTAT":
                    op.attrs = self.gen_attrs()
                elif k == "CLOSE" and hid in live:
                    live.remove(hid)
                    closed_at[hid] = len(ops)
                elif k == "READDIR":
                    hs["listed"] = True
                if not hs["big"]:
                    hot.append(hs["path"])
            elif k in ("OPEN", "OPENDIR"):
                if len(live) + pending_open >= MAX_OPEN:
                    continue
                if k == "OPEN":
                    flags = rng.choice(OPEN_FLAGS)[0]
                    want = "new" if flags & FXF_CREAT and \
                        rng.random() < 0.5 else "fl"
                    path = self.pick_path(shadow, want, hot)
                    attrs = {"perm": rng.choice(PERMS)} \
                        if rng.random() < 0.2 else None
                    op = Op(k, path=path, pflags=flags, attrs=attrs)
                else:
                    r = rng.random()
                    if r < 0.12:
                        path = BIG
                    elif r < 0.22:
                        path = "."
                    else:
                        path = self.pick_path(shadow, "dl", hot)
                    op = Op(k, path=path, big=path == BIG)
                op.new_hid = self.next_hid
                self.next_hid += 1
                self.hstate[op.new_hid] = {
                    "kind": "file" if k == "OPEN" else "dir",
                    "path": op.path, "big": op.big, "pflags": op.pflags}
                pending_open += 1
                last_open = len(ops)
            elif k == "MKDIR":
                op = Op(k, path=self.pick_path(shadow, "new", hot),
                        attrs={"perm": rng.choice((0o700, 0o750))}
                        if rng.random() < 0.2 else None)
            elif k == "RMDIR":
                op = Op(k, path=self.pick_path(shadow, "d", hot))
            elif k == "REMOVE":
                op = Op(k, path=self.pick_path(shadow, "fl", hot))
            elif k in ("RENAME", "POSIX_RENAME", "HARDLINK"):
                src = self.pick_path(shadow, "f" if k == "HARDLINK"
                                     else "any", hot)
                dst = self.pick_path(shadow, "new" if rng.random() < 0.6
                                     else "any", hot)
                op = Op(k, path=src, path2=dst)
            elif k == "STATVFS":
                op = Op(k, path=rng.choice(
                    (".", self.pick_path(shadow, "any", hot))))
            elif k in ("STAT", "LSTAT", "READLINK", "REALPATH"):
                want = {"READLINK": "l"}.get(k, "any")
                path = self.pick_path(shadow, want, hot)
                if k == "REALPATH" and rng.random() < 0.3:
                    path = rng.choice((".", path + "/..",
                                       path + "/../" + rng.choice(NAMES)))
                elif k in ("STAT", "LSTAT") and rng.random() < 0.05:
                    path = "."
                op = Op(k, path=path)
            elif k == "SETSTAT":
                op = Op(k, path=self.pick_path(shadow, "any", hot),
                        attrs=self.gen_attrs())
            elif k == "SYMLINK":
                link = self.pick_path(shadow, "new", hot)
                if rng.random() < 0.7 and shadow:
                    dest = rng.choice(list(shadow))
                else:
                    dest = rng.choice(PATHS)       # often dangling
                op = Op(k, path=link, path2=link_target(link, dest))
            if op is None:
                continue
            ops.append(op)
            for p in (op.path, op.path2 if k != "SYMLINK" else None):
                if p is not None and p not in (".", BIG) and \
                        not p.startswith(".") and ".." not in p:
                    hot.append(p)
            self.shadow_apply(shadow, op)
        return ops

    def gen_change_then_look(self, shadow, files, dirs, live):
        """A change, then at once a request that reports state and must
        see it: READDIR of a directory handle not listed yet (so that it
        lists every entry), statvfs or fstatvfs."""
        rng = self.rng
        writable = [h for h in files if self.hstate[h]["pflags"] & FXF_WRITE]
        r = rng.random()
        if r < 0.55 and writable:
            hid = rng.choice(writable)
            off = rng.choice((0, rng.randint(0, 48)))
            data = rng.randbytes(rng.randint(1, 24))
            change = [Op("WRITE", hid=hid, off=off, data=data)]
            if rng.random() < 0.5:
                # follows on: the two make one merged run
                change.append(Op("WRITE", hid=hid, off=off + len(data),
                                 data=rng.randbytes(rng.randint(1, 24))))
        elif r < 0.8 and files:
            change = [Op("FSETSTAT", hid=rng.choice(files),
                         attrs=self.gen_attrs())]
        else:
            change = [Op("SETSTAT", path=self.pick_path(shadow, "f", []),
                         attrs=self.gen_attrs())]
        fresh = [h for h in dirs if not self.hstate[h].get("listed")]
        r = rng.random()
        if r < 0.6 and fresh:
            # a directory handle on the changed file's directory if any
            near = [h for h in fresh if change[0].hid is not None and
                    self.hstate[h]["path"] == (parent(self.hstate[
                        change[0].hid]["path"]) or ".")]
            hid = rng.choice(near or fresh)
            self.hstate[hid]["listed"] = True
            look = Op("READDIR", hid=hid, big=self.hstate[hid]["big"])
        elif r < 0.8 and live:
            hid = rng.choice(live)
            look = Op("FSTATVFS", hid=hid, big=self.hstate[hid]["big"])
        else:
            look = Op("STATVFS", path=".")
        return change + [look]

    def names_of(self, op):
        """What a conflict rule by names alone sees of op (--selftest
        lexical): its paths, its handle and the path it was opened with;
        OPENs keep their order among themselves."""
        out = [os.path.normpath(p) for p in (
            op.path, op.path2 if op.kind != "SYMLINK" else None)
            if p is not None]
        if op.hid is not None:
            out += [os.path.normpath(self.hstate[op.hid]["path"]),
                    "#h%d" % op.hid]
        if op.kind in ("OPEN", "OPENDIR"):
            out.append("#open")
        return out

    def gen_attrs(self):
        rng = self.rng
        r = rng.random()
        if r < 0.45:
            return {"size": rng.randint(0, 64)}
        if r < 0.9:
            return {"perm": rng.choice(PERMS)}
        return {"size": rng.randint(0, 64), "perm": rng.choice(PERMS)}

    def closing_window(self):
        return [Op("CLOSE", hid=h, big=self.hstate[h]["big"])
                for h in self.usable]

    # ---------------------------------------------- checking

    def report(self, wno, ops, first_id, seq, pipe, bad, msg, label):
        lines = ["seed=%d window %d request #%d of %d (id %d) %s: %s" % (
            self.seed, wno, bad, len(ops), first_id + bad,
            ops[bad].describe(), msg)]
        lines.append("  the window (%s):" % label)
        for i, op in enumerate(ops[:bad + 4]):
            lines.append("  %s #%d %s\n        %s\n      | %s" % (
                "=>" if i == bad else "  ", i, op.describe(),
                short(seq[i] if i < len(seq) else None),
                short(pipe[i] if i < len(pipe) else None)))
        raise Mismatch("\n".join(lines))

    def account_oracle(self, wno, ops, first_id, oracle, seq):
        """The oracle's replies, normalized (each run is accounted once)."""
        out = []
        for i, op in enumerate(ops):
            if seq[i].id != first_id + i:
                self.report(wno, ops, first_id, seq, seq, i,
                            "the %s server replied with id %s" % (
                                oracle.name, seq[i].id), oracle.name)
            try:
                out.append(oracle.account(op, seq[i]))
            except Mismatch as e:
                self.report(wno, ops, first_id, seq, seq, i, str(e),
                            oracle.name)
        return out

    def compare(self, wno, ops, first_id, oracle, norms, other, seq, pipe,
                label, perturb=False):
        """Check other's replies (pipe) against the oracle's (seq, whose
        normalized forms are norms)."""
        for i, op in enumerate(ops):
            if pipe[i].id != first_id + i:
                self.report(wno, ops, first_id, seq, pipe, i,
                            "reply out of order: got id %s, expected %d" % (
                                pipe[i].id, first_id + i), label)
            if perturb and self.perturb == (wno, i):
                perturb_reply(pipe[i], self.st_rng)
            try:
                b = other.account(op, pipe[i])
            except Mismatch as e:
                self.report(wno, ops, first_id, seq, pipe, i, str(e), label)
            if i in other.moved:
                self.tolerated += 1
                continue
            if norms[i] != b:
                detail = ""
                if norms[i][0] == b[0] == "NAME" and op.kind == "READDIR":
                    detail = "".join(
                        "\n    only from the %s server: %r" % (who, e)
                        for who, d in ((oracle.name, norms[i][1] - b[1]),
                                       (other.name, b[1] - norms[i][1]))
                        for e in sorted(d))
                self.report(wno, ops, first_id, seq, pipe, i,
                            "replies differ:\n    %s: %s\n    %s: %s%s" % (
                                oracle.name, short(seq[i]), other.name,
                                short(pipe[i]), detail), label)
            if op.big and op.kind == "READDIR":
                sa, sb = oracle.big.get(op.hid, {}), other.big.get(op.hid,
                                                                   {})
                for n in set(sa) & set(sb):
                    if sa[n] != sb[n]:
                        self.report(wno, ops, first_id, seq, pipe, i,
                                    "entry %s of big differs: %r / %r" % (
                                        n, sa[n], sb[n]), label)

    # ---------------------------------------------- run

    def run(self):
        a = self.args
        rng = self.rng
        base = os.path.join(a.workdir, "seed-%d" % self.seed)
        if os.path.exists(base):
            remove_tree(base)
        os.mkdir(base)
        make_big(a.workdir)
        spec = tree_spec(rng)
        roots = {"seq": os.path.join(base, "seq"),
                 "pipe": os.path.join(base, "pipe")}
        if a.ref:
            roots["ref"] = os.path.join(base, "ref")
        mounted = []
        try:
            for r in roots.values():
                if a.own_fs:
                    os.mkdir(r)
                    subprocess.run(["mount", "-t", "tmpfs", "-o",
                                    "size=16m,nr_inodes=2000,mode=0755",
                                    "pathmodel", r], check=True)
                    mounted.append(r)
                make_tree(r, spec)
            self.run_trees(base, roots)
        finally:
            for r in mounted:
                if subprocess.run(["umount", r]).returncode != 0:
                    subprocess.run(["umount", "-l", r])
        if not a.keep:
            remove_tree(base)

    def run_trees(self, base, roots):
        a = self.args
        argv = [a.server] + shlex.split(a.server_args)
        sp = self.seed % 4 == 3
        sides = {}
        try:
            sides["seq"] = Side("one-at-a-time", argv, roots["seq"], sp)
            sides["pipe"] = Side("pipelined", argv, roots["pipe"], sp)
            for s in sides.values():
                s.own_fs = a.own_fs
            if a.ref:
                sides["ref"] = Side("reference", [a.ref], roots["ref"], sp)
                sides["ref"].track_dirs = True
                sides["ref"].own_fs = a.own_fs
            for s in sides.values():
                s.client.init()
            self.loop(sides, roots)
            for s in sides.values():
                rc, rest = s.client.finish()
                if rc != 0 or rest:
                    raise Mismatch("seed=%d: %s server exited %d at stdin EOF"
                                   " with %d unread bytes; stderr: %r" % (
                                       self.seed, s.name, rc, len(rest),
                                       s.client.stderr_bytes()[-400:]))
        finally:
            for s in sides.values():
                s.client.close()
        stray = set(os.listdir(base)) - set(os.path.basename(r)
                                             for r in roots.values())
        if stray:
            raise Mismatch("seed=%d: something was made outside the trees:"
                           " %s" % (self.seed, sorted(stray)))

    def loop(self, sides, roots):
        a = self.args
        rng = self.rng
        seq, pipe = sides["seq"], sides["pipe"]
        snap = snapshot(roots["seq"])
        wno = 0
        next_id = 1
        if a.selftest == "reply" and self.perturb is None:
            # a window every run has (windows hold at most 40 requests)
            self.perturb = (self.st_rng.randrange(max(1, self.nops // 40)),
                            None)
        final = False
        while not final:
            if self.ops_done >= self.nops:
                # close what is open; then the trees, big included
                ops = self.closing_window()
                final = True
            else:
                size = min(rng.randint(10, 40), self.nops - self.ops_done)
                ops = self.gen_window(size, snap)
            swap = None
            if a.selftest == "reorder":
                swap = [i for i in range(0, len(ops) - 1, 2)
                        if self.st_rng.random() < 0.3]
            elif a.selftest == "lexical":
                swap = [i for i in range(0, len(ops) - 1, 2)
                        if not lexically_related(self.names_of(ops[i]),
                                                 self.names_of(ops[i + 1]))]
            if self.perturb is not None and self.perturb[0] == wno and \
                    self.perturb[1] is None:
                cands = [i for i, op in enumerate(ops)
                         if not (op.big and op.kind == "READDIR")]
                self.perturb = (wno, self.st_rng.choice(cands)) if cands \
                    else (wno + 1, None)
            r_seq = seq.run_window(ops, next_id, False)
            norms = self.account_oracle(wno, ops, next_id, seq, r_seq)
            r_pipe = pipe.run_window(ops, next_id, True, swap)
            self.compare(wno, ops, next_id, seq, norms, pipe, r_seq, r_pipe,
                         "one-at-a-time | pipelined", perturb=True)
            if "ref" in sides:
                r_ref = sides["ref"].run_window(ops, next_id, False)
                self.compare(wno, ops, next_id, seq, norms, sides["ref"],
                             r_seq, r_ref, "one-at-a-time | reference")
            # the handles the next windows may use
            for op, rep in zip(ops, r_seq):
                if op.kind in ("OPEN", "OPENDIR") and rep.type == FXP_HANDLE:
                    self.usable.append(op.new_hid)
                elif op.kind == "CLOSE" and op.hid in self.usable:
                    self.usable.remove(op.hid)
            if a.selftest == "reply" and self.perturb == (wno, "tree"):
                tamper_tree(roots["pipe"], self.st_rng)
            snap = snapshot(roots["seq"])
            for name in ("pipe", "ref"):
                if name not in sides:
                    continue
                d = tree_diff(snap, snapshot(roots[name]))
                if d:
                    raise Mismatch(
                        "seed=%d: after window %d (requests #%d..#%d) the "
                        "%s tree differs from the oracle's: %s\n  the "
                        "window:\n%s" % (
                            self.seed, wno, self.ops_done,
                            self.ops_done + len(ops) - 1, sides[name].name,
                            d, "\n".join("    #%d %s -> %s" % (
                                i, op.describe(), short(r))
                                for i, (op, r) in enumerate(zip(ops,
                                                                r_seq)))))
            if a.verbose:
                print("  seed %d window %d: %d requests" % (
                    self.seed, wno, len(ops)))
            next_id += len(ops)
            if not final:
                self.ops_done += len(ops)
            wno += 1


def lexically_related(a, b):
    """Two requests' names (Seed.names_of) share a path, one beneath the
    other (the root is above everything), or a handle."""
    for p in a:
        for q in b:
            if p.startswith("#") or q.startswith("#"):
                if p == q:
                    return True
            elif p == "." or q == "." or under(p, q) or under(q, p):
                return True
    return False


def q_free(shadow, p):
    return p not in shadow and (parent(p) == "" or
                                shadow.get(parent(p)) == "d")


def perturb_reply(rep, rng):
    """Selftest: change one reply in a way the comparison must see."""
    t = rep.type
    if t == FXP_STATUS:
        if rng.random() < 0.5:
            rep.code = FX_FAILURE if rep.code != FX_FAILURE else FX_OK
        else:
            rep.msg = (rep.msg or b"") + b"!"
    elif t == FXP_DATA:
        rep.data = rep.data[:-1] + bytes([rep.data[-1] ^ 1]) \
            if rep.data else b"?"
    elif t == FXP_ATTRS:
        a = rep.attrs
        if "size" in a and rng.random() < 0.5:
            a["size"] += 1
        elif "perm" in a:
            a["perm"] ^= 0o1
        else:
            a["uid"] = a.get("uid", 0) + 1
    elif t == FXP_NAME:
        if len(rep.names) > 1 and rng.random() < 0.5:
            rep.names = rep.names[1:]
        else:
            n, ln, a = rep.names[0]
            a = dict(a)
            a["perm"] = a.get("perm", 0) ^ 0o20
            rep.names = [(n, ln, a)] + rep.names[1:]
    elif t == FXP_HANDLE:
        rep.type = FXP_STATUS
        rep.code, rep.msg, rep.lang = FX_FAILURE, b"Failure", b""
    else:
        rep.type = FXP_STATUS
        rep.code, rep.msg, rep.lang = FX_OK, b"Success", b""


def tamper_tree(root, rng):
    """Selftest: change the pipelined tree behind the server's back."""
    files = []
    for d, _, fs in os.walk(root):
        files += [os.path.join(d, f) for f in fs
                  if not os.path.islink(os.path.join(d, f))]
    if not files:
        os.mkdir(os.path.join(root, "tampered"))
        return
    with open(rng.choice(sorted(files)), "ab") as f:
        f.write(b"x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    seedrun.add_args(ap)
    ap.add_argument("--ops", type=int, default=300,
                    help="requests per seed, not counting the final CLOSEs "
                    "(default 300)")
    ap.add_argument("--ref", help="a second oracle, run one at a time")
    ap.add_argument("--own-fs", action="store_true",
                    help="each tree a tmpfs of its own (needs root): "
                    "statvfs free counts compared")
    ap.add_argument("--selftest", choices=("reply", "reorder", "lexical"))
    ap.add_argument("--keep", action="store_true",
                    help="keep each seed's trees")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    args.server = os.path.abspath(args.server)
    if args.ref:
        args.ref = os.path.abspath(args.ref)
    rc = seedrun.cannot_run([args.server] + ([args.ref] if args.ref else []))
    if rc is not None:
        return rc
    own_dir = None
    if args.workdir is None:
        own_dir = args.workdir = tempfile.mkdtemp(prefix="pathmodel.")
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    seeds = seedrun.seeds_of(args)
    label = seedrun.label_of(args)
    if args.selftest:
        rc = selftest(args, seeds, label)
        if own_dir is not None:
            remove_tree(own_dir)
        return rc
    tolerated = 0

    def count(s):
        nonlocal tolerated
        tolerated += s.tolerated
        return s.ops_done

    passed, failed = seedrun.run_seeds(
        args, __file__, seeds, lambda seed: Seed(args, seed, args.ops),
        (Mismatch, sc.SFTPError),
        lambda seed: " --ops %d%s" % (
            args.ops, " --ref " + shlex.quote(args.ref) if args.ref else ""),
        count)
    if args.ref:
        print("%s%d READDIRs of a directory whose OPENDIR name had moved "
              "were not compared with %s (it lists by that name)" % (
                  label, tolerated, args.ref))
    if own_dir is not None:
        remove_tree(own_dir)
    return seedrun.counts(passed, failed)


def selftest(args, seeds, label):
    """Run seeds with a fault put in on purpose; pass when it is seen."""
    seen = 0
    passed = failed = 0
    for seed in seeds:
        s = Seed(args, seed, args.ops)
        if args.selftest == "reply" and seed % 3 == 0:
            # a changed file instead of a changed reply
            s.perturb = ("tree",)
        try:
            if s.perturb == ("tree",):
                s.args = args
                run_tree_selftest(s)
            else:
                s.run()
            where = "nothing reported"
        except (Mismatch, sc.SFTPError) as e:
            where = str(e).split("\n")[0]
            seen += 1
            if args.selftest == "reply":
                want = s.perturb
                ok = ("window %d request #%d " % want) in where \
                    if isinstance(want[1], int) else \
                    ("after window %d " % want[0]) in where
                if not ok:
                    failed += 1
                    print("FAIL: %sseed %d: the change at %r was "
                          "reported elsewhere: %s" % (label, seed, want, e))
                    continue
        if args.selftest == "reply":
            if where == "nothing reported":
                failed += 1
                print("FAIL: %sseed %d: the change at %r went "
                      "unreported" % (label, seed, s.perturb))
            else:
                passed += 1
                print("PASS: %sseed %d: %s" % (label, seed, where))
        else:
            print("  %sseed %d: %s" % (label, seed, where))
    if args.selftest != "reply":
        if seen:
            passed += 1
            print("PASS: %s%d of %d seeds reported the swapped requests" % (
                label, seen, len(seeds)))
        else:
            failed += 1
            print("FAIL: %sno seed noticed requests run out of order"
                  % label)
    return seedrun.counts(passed, failed)


def run_tree_selftest(s):
    """Seed run whose pipelined tree is changed after a random window."""
    s.perturb = (s.st_rng.randrange(max(1, s.nops // 40)), "tree")
    s.run()


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""The requests beyond OpenSSH, against the server alone:
check-file-name, check-file-handle and paramiko's check-file (hashes
compared with Python's hashlib and zlib), copy-file, space-available,
vendor-id, and the transfer log (--xferlog).  OpenSSH's server answers these
with OP_UNSUPPORTED; the differential test checks that side.

Usage: extensions.py --server PATH [--server-args ARGS] [--label NAME]
       [--workdir DIR] [--seed N] [-v]
Prints PASS:/FAIL: lines and "N passed, N failed"; exit 0 when all passed.
"""

import argparse
import hashlib
import json
import os
import random
import re
import shlex
import socket
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_READ, FXF_WRITE, FXF_CREAT, FXF_TRUNC, FX_OK, FX_FAILURE,
    FX_NO_SUCH_FILE, FX_PERMISSION_DENIED, FX_OP_UNSUPPORTED, FXP_HANDLE,
    FXP_EXTENDED_REPLY)
import tally  # noqa: E402
from tally import say  # noqa: E402

ALGS = ["md5", "sha1", "sha224", "sha256", "sha384", "sha512", "crc32"]
HASH_NAMES = ",".join(ALGS)
DLEN = {"md5": 16, "sha1": 20, "sha224": 28, "sha256": 32, "sha384": 48,
        "sha512": 64, "crc32": 4}
# The digests of one reply: SFTP_MAX_MSG_LENGTH less the reply's own fields.
DIGEST_ROOM = 256 * 1024 - 64
ADDITIONS = ["check-file-name", "check-file-handle", "check-file",
             "copy-file", "space-available", "vendor-id"]

OPTS = None


def digest(alg, data):
    if alg == "crc32":
        return struct.pack(">I", zlib.crc32(data))
    return hashlib.new(alg, data).digest()


def expected(data, alg, start, length, block):
    """What check-file must answer: the bytes of the range that exist,
    hashed whole (block 0, one digest even when empty) or per block (the
    last one partial), at most one reply's worth of digests."""
    end = len(data) if length == 0 else min(len(data), start + length)
    part = data[start:end] if start < len(data) else b""
    if block == 0:
        return digest(alg, part)
    out = []
    for off in range(0, len(part), block):
        if len(out) == DIGEST_ROOM // DLEN[alg]:
            break
        out.append(digest(alg, part[off:off + block]))
    return b"".join(out)


def parse_check(rep, draft=True):
    """(algorithm, digests) from a check-file reply."""
    if rep.type != FXP_EXTENDED_REPLY:
        raise sc.ProtocolError("expected EXTENDED_REPLY, got %r" % rep)
    r = sc.Reader(rep.data)
    if draft:
        name = r.string()
        if name != b"check-file":
            raise sc.ProtocolError("reply names %r" % name)
    return r.string().decode(), r.rest()


def argv(*extra):
    return [OPTS.server] + shlex.split(OPTS.server_args) + list(extra)


def client(*extra, env=None, socketpair=False):
    c = sc.Client(argv(*extra), cwd=OPTS.dir, env=env, socketpair=socketpair)
    return c


def session(*extra, env=None):
    c = client(*extra, env=env)
    c.init(3)
    return c


SKIP = "skip"


def check(what, fn):
    """Run one test function; an exception is a failure.  It returns None
    when it passed, SKIP when it could not run here, else what failed."""
    try:
        res = fn()
        if res is SKIP:
            print("SKIP: [%s] %s: not possible here" % (OPTS.label, what))
        elif res is None:
            say(True, what)
        else:
            say(False, what, str(res))
    except Exception as e:  # noqa: BLE001 - any error is this test's failure
        detail = "%s: %s" % (type(e).__name__, e)
        if OPTS.verbose:
            detail += "\n" + traceback.format_exc()
        say(False, what, detail)


def path(name):
    return os.path.join(OPTS.dir, name)


def write_file(name, data, mode=0o644):
    with open(path(name), "wb") as f:
        f.write(data)
    os.chmod(path(name), mode)


def read_file(name):
    with open(path(name), "rb") as f:
        return f.read()


# ------------------------------------------------------------------ VERSION

def t_version():
    with client() as c:
        rep = c.init(3)
    ext = dict(rep.extensions)
    for n in ("check-file-name", "check-file-handle", "check-file"):
        if ext.get(n.encode()) != HASH_NAMES.encode():
            return "%s advertised as %r" % (n, ext.get(n.encode()))
    for n in ("copy-file", "space-available"):
        if ext.get(n.encode()) != b"1":
            return "%s advertised as %r" % (n, ext.get(n.encode()))
    r = sc.Reader(ext[b"vendor-id"])
    vendor, product, version = r.string(), r.string(), r.string()
    build = r.u64()
    if r.remaining():
        return "vendor-id data has trailing bytes"
    out = subprocess.run(argv("--version"), capture_output=True).stdout
    if product != b"uring-sftp-server" or version not in out or not vendor:
        return "vendor-id: %r %r %r (--version says %r)" % (
            vendor, product, version, out)
    parts = [int(x) for x in version.decode().split(".")] + [0, 0]
    if build != parts[0] * 10000 + parts[1] * 100 + parts[2]:
        return "build number %d for version %s" % (build, version)
    # Ours come after OpenSSH's, in the -Q order.
    names = [n.decode() for n, _ in rep.extensions]
    if names[-len(ADDITIONS):] != ADDITIONS:
        return "extension order %r" % names
    q = subprocess.run(argv("-Q", "requests"), capture_output=True)
    if q.stdout.decode().split()[-len(ADDITIONS):] != ADDITIONS:
        return "-Q requests: %r" % q.stdout
    return None


def t_filters():
    with client("-P", "check-file-name,vendor-id") as c:
        rep = c.init(3)
        names = [n for n, _ in rep.extensions]
        if b"check-file-name" in names or b"vendor-id" in names:
            return "-P left them in VERSION: %r" % names
        if b"check-file-handle" not in names:
            return "-P removed too much: %r" % names
        r = c.check_file_name("f0", "md5")
        if not r.is_status(FX_PERMISSION_DENIED):
            return "-P check-file-name: %r" % r
    with client("-p", "open,close,check-file-handle") as c:
        c.init(3)
        r = c.check_file_name("f0", "md5")
        if not r.is_status(FX_PERMISSION_DENIED):
            return "-p without check-file-name: %r" % r
        h = c.check_handle(c.open("f0", FXF_READ))
        alg, d = parse_check(c.check_file_handle(h, "md5"))
        if d != digest("md5", read_file("f0")):
            return "-p check-file-handle: wrong digest"
    # -R refuses copy-file (it writes), not the checksums.
    with client("-R") as c:
        c.init(3)
        alg, d = parse_check(c.check_file_name("f0", "sha1"))
        if d != digest("sha1", read_file("f0")):
            return "-R check-file-name: wrong digest"
        r = c.copy_file("f0", "f0.copy-R", False)
        if not r.is_status(FX_PERMISSION_DENIED):
            return "-R copy-file: %r" % r
        if os.path.exists(path("f0.copy-R")):
            return "-R copy-file created the destination"
    return None


# ------------------------------------------------------------------ hashes

FILES = {}


def make_files():
    rnd = random.Random(OPTS.seed)
    sizes = {"empty": 0, "one": 1, "small": 300, "f0": 4096 * 3 + 5,
             "mid": 1024 * 1024 + 17, "big": 5 * 1024 * 1024 + 123}
    for name, n in sizes.items():
        data = rnd.randbytes(n)
        write_file(name, data)
        FILES[name] = data


def t_hash_random():
    rnd = random.Random(OPTS.seed + 1)
    bad = []
    with session() as c:
        handles = {n: c.check_handle(c.open(n, FXF_READ)) for n in FILES}
        for i in range(OPTS.trials):
            name = rnd.choice(list(FILES))
            data = FILES[name]
            alg = rnd.choice(ALGS)
            size = len(data)
            start = rnd.choice([0, 0, rnd.randint(0, size + 10), size,
                                size + 1000])
            length = rnd.choice([0, 0, rnd.randint(1, size + 20),
                                 rnd.randint(1, 5000), 1 << 62])
            block = rnd.choice([0, 0, 256, rnd.randint(256, 70000),
                                1024 * 1024, rnd.randint(256, 3000)])
            # the client's preference list: unknown names are skipped
            algs = rnd.choice([alg, "blake3," + alg, alg + ",md5",
                               "x,y," + alg + ",sha1"])
            form = rnd.choice(["name", "handle", "check-file"])
            if form == "name":
                rep = c.check_file_name(name, algs, start, length, block)
            else:
                rep = c.check_file_handle(
                    handles[name], algs, start, length, block,
                    name="check-file" if form == "check-file"
                    else "check-file-handle")
            got_alg, got = parse_check(rep)
            want = expected(data, alg, start, length, block)
            if got_alg != alg or got != want:
                bad.append("%s %s(%s) start %d length %d block %d: got %s "
                           "%d bytes, want %d bytes" % (
                               form, name, algs, start, length, block,
                               got_alg, len(got), len(want)))
    return "; ".join(bad[:5]) if bad else None


def t_hash_cases():
    """Fixed corner cases: empty file, ranges past the end, the reply cap."""
    with session() as c:
        for alg in ALGS:
            a, d = parse_check(c.check_file_name("empty", alg))
            if d != digest(alg, b""):
                return "empty file, %s" % alg
            a, d = parse_check(c.check_file_name("empty", alg, 0, 0, 256))
            if d != b"":
                return "empty file per block, %s: %d bytes" % (alg, len(d))
        a, d = parse_check(c.check_file_name("small", "md5", 1000, 10))
        if d != digest("md5", b""):
            return "range past the end"
        a, d = parse_check(c.check_file_name("small", "md5", 200, 1000))
        if d != digest("md5", FILES["small"][200:]):
            return "range across the end"
        # 4096 sha512 digests of 256-byte blocks do not fit one reply: the
        # reply holds the first ones that do.
        a, d = parse_check(c.check_file_name("mid", "sha512", 0, 0, 256))
        if d != expected(FILES["mid"], "sha512", 0, 0, 256) or \
                len(d) != (DIGEST_ROOM // 64) * 64:
            return "capped reply: %d bytes" % len(d)
        a, d = parse_check(c.check_file_name("mid", "crc32", 5, 0, 256))
        if d != expected(FILES["mid"], "crc32", 5, 0, 256):
            return "crc32 per block"
        # a cold file: its pages dropped from the cache first, so the reads
        # wait for the disk (io_uring: in a worker, not EAGAIN)
        write_file("cold", FILES["big"])
        fd = os.open(path("cold"), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        a, d = parse_check(c.check_file_name("cold", "sha1"))
        if d != digest("sha1", FILES["big"]):
            return "cold file"
    return None


def libcrypto_mapped(pid):
    with open("/proc/%d/maps" % pid) as f:
        return "libcrypto" in f.read()


def t_hash_loads_libcrypto():
    """A session maps libcrypto only once a hash is asked for (its 17K
    relocations cost every session 2 ms at start otherwise); crc32 needs
    none.  A static build has it linked in: SKIP."""
    with open(OPTS.server, "rb") as f:
        if b"libcrypto.so" not in f.read():
            return SKIP
    with session() as c:
        pid = c.proc.pid
        if libcrypto_mapped(pid):
            return "libcrypto mapped at start"
        a, d = parse_check(c.check_file_name("small", "crc32"))
        if d != digest("crc32", FILES["small"]) or libcrypto_mapped(pid):
            return "crc32: libcrypto mapped, or a wrong digest"
        a, d = parse_check(c.check_file_name("small", "sha256"))
        if d != digest("sha256", FILES["small"]):
            return "sha256: a wrong digest"
        if not libcrypto_mapped(pid):
            return "sha256 answered without libcrypto mapped"
    return None


def t_hash_errors():
    os.mkfifo(path("fifo"))
    os.mkdir(path("dir"))
    with session() as c:
        cases = [
            ("block 255", c.check_file_name("small", "md5", 0, 0, 255),
             FX_FAILURE),
            ("no known algorithm", c.check_file_name("small", "md4,blake2"),
             FX_FAILURE),
            ("empty algorithm list", c.check_file_name("small", ""),
             FX_FAILURE),
            ("missing file", c.check_file_name("missing", "md5"),
             FX_NO_SUCH_FILE),
            ("directory", c.check_file_name("dir", "md5"), FX_FAILURE),
            # a FIFO would block the open or never end: refused at once
            ("FIFO", c.check_file_name("fifo", "md5"), FX_FAILURE),
            # EINVAL, as OpenSSH maps it (copy-data's bad offsets too)
            ("offset past off_t",
             c.check_file_name("small", "md5", 1 << 63), sc.FX_BAD_MESSAGE),
            ("bad handle", c.check_file_handle(b"\0\0\0\x63", "md5"),
             FX_FAILURE),
        ]
        h = c.check_handle(c.open("wonly", FXF_WRITE | FXF_CREAT))
        c.check_ok(c.write(h, 0, b"w" * 10), "write")
        # the read fails as a READ on that handle does
        code = c.read(h, 0, 10).code
        cases.append(("write-only handle", c.check_file_handle(h, "md5"),
                      code))
        hd = c.check_handle(c.opendir("dir"))
        cases.append(("directory handle", c.check_file_handle(hd, "md5"),
                      FX_FAILURE))
        for what, rep, code in cases:
            if not rep.is_status(code):
                return "%s: %r" % (what, rep)
        # still serving
        a, d = parse_check(c.check_file_name("small", "md5"))
        if d != digest("md5", FILES["small"]):
            return "after the errors"
    return None


def t_hash_order():
    """A WRITE after a check-file that overlaps its range waits for it; the
    next check-file sees the write.  Sent in one batch."""
    data = FILES["big"]
    write_file("order", data)
    with session() as c:
        h = c.check_handle(c.open("order", FXF_WRITE))
        c.begin_batch()
        a = c.check_file_name("order", "sha256", wait=False)
        w = c.write(h, 4096, b"X" * 100, wait=False)
        b_ = c.check_file_name("order", "sha256", wait=False)
        c.end_batch()
        ra, rw, rb = c.expect(a), c.expect(w), c.expect(b_)
        c.check_ok(rw, "write")
        new = data[:4096] + b"X" * 100 + data[4196:]
        if parse_check(ra)[1] != digest("sha256", data):
            return "the first hash saw the later write"
        if parse_check(rb)[1] != digest("sha256", new):
            return "the second hash missed the write"
    return None


def t_hash_beside():
    """A long hash runs in steps: a WRITE to another file sent after it is
    carried out (its reply encoded) before the hash ends."""
    write_file("long", FILES["big"] * 3)
    with session("-e", "-l", "DEBUG3") as c:
        h = c.check_handle(c.open("other", FXF_WRITE | FXF_CREAT))
        c.begin_batch()
        a = c.check_file_name("long", "sha512", wait=False)
        w = c.write(h, 0, b"beside" * 100, wait=False)
        c.end_batch()
        ra, rw = c.expect(a), c.expect(w)
        c.check_ok(rw, "write")
        if parse_check(ra)[1] != digest("sha512", FILES["big"] * 3):
            return "wrong digest"
        c.close_stdin()
        c.wait()
        log = c.stderr_bytes().decode("utf-8", "replace").splitlines()
    wdone = [i for i, x in enumerate(log)
             if "request %d: sent status" % w in x]
    hdone = [i for i, x in enumerate(log)
             if "request %d: check-file-name" % a in x and "digest" in x]
    if not wdone or not hdone:
        return "log lines not found (write %r, hash %r)" % (wdone, hdone)
    if wdone[0] > hdone[0]:
        return "the WRITE finished only after the hash"
    return None


def t_hash_changing():
    """The file changes under a running hash (another process truncates,
    extends, rewrites it): the reply is still well formed and the session
    goes on; a later hash sees the final content."""
    rnd = random.Random(OPTS.seed + 2)
    base = FILES["big"] * 4
    with session() as c:
        for what in ("truncate", "extend", "rewrite"):
            write_file("chg", base)
            c.begin_batch()
            ids = [c.check_file_name("chg", "sha256", wait=False),
                   c.check_file_name("chg", "md5", 0, 0, 65536, wait=False)]
            c.end_batch()
            with open(path("chg"), "r+b") as f:
                if what == "truncate":
                    f.truncate(rnd.randint(0, len(base)))
                elif what == "extend":
                    f.seek(0, 2)
                    f.write(rnd.randbytes(3 * 1024 * 1024))
                else:
                    f.seek(rnd.randint(0, len(base)))
                    f.write(rnd.randbytes(1024 * 1024))
            r1, r2 = c.expect(ids[0]), c.expect(ids[1])
            if len(parse_check(r1)[1]) != 32:
                return "%s: whole-file digest of %d bytes" % (
                    what, len(parse_check(r1)[1]))
            if len(parse_check(r2)[1]) % 16:
                return "%s: block digests not whole" % what
            now = read_file("chg")
            if parse_check(c.check_file_name("chg", "sha1"))[1] != \
                    digest("sha1", now):
                return "%s: the hash afterwards is wrong" % what
    return None


# ------------------------------------------------------------------ copy

def t_copy_file():
    data = FILES["big"]
    write_file("src", data, 0o640)
    with session() as c:
        c.check_ok(c.copy_file("src", "dst", False), "copy to a new file")
        if read_file("dst") != data:
            return "copy differs"
        if stat.S_IMODE(os.stat(path("dst")).st_mode) != 0o640 & ~0o022:
            return "mode %o" % os.stat(path("dst")).st_mode
        write_file("dst", b"keep me")
        r = c.copy_file("src", "dst", False)
        if not r.is_status(FX_FAILURE) or read_file("dst") != b"keep me":
            return "existing destination without overwrite: %r" % r
        c.check_ok(c.copy_file("src", "dst", True), "overwrite")
        if read_file("dst") != data:
            return "overwritten copy differs"
        # a shorter source over a longer destination leaves no tail
        c.check_ok(c.copy_file("small", "dst", True), "overwrite shorter")
        if read_file("dst") != FILES["small"]:
            return "shorter overwrite left a tail"
        # the source itself, by its name and by a hard link: refused,
        # and the source is left whole
        os.link(path("src"), path("src.link"))
        for dst in ("src", "src.link", "./src"):
            r = c.copy_file("src", dst, True)
            if not r.is_status(FX_FAILURE) or read_file("src") != data:
                return "copy onto itself (%s): %r" % (dst, r)
        r = c.copy_file("missing", "x", False)
        if not r.is_status(FX_NO_SUCH_FILE):
            return "missing source: %r" % r
        r = c.copy_file("dir", "x", False)
        if not r.is_status(FX_FAILURE) or os.path.exists(path("x")):
            return "directory source: %r" % r
        r = c.copy_file("fifo", "x", False)
        if not r.is_status(FX_FAILURE):
            return "FIFO source: %r" % r
        c.check_ok(c.copy_file("empty", "empty.copy", False), "empty")
        if read_file("empty.copy") != b"":
            return "empty copy"
        # another file system: the kernel may refuse, the loop copies
        shm = tempfile.mkdtemp(prefix="ext-copy.", dir="/dev/shm") \
            if os.path.isdir("/dev/shm") else None
        if shm:
            try:
                c.check_ok(c.copy_file("src", shm + "/x", False), "to shm")
                with open(shm + "/x", "rb") as f:
                    if f.read() != data:
                        return "copy to another file system differs"
            finally:
                for n in os.listdir(shm):
                    os.unlink(os.path.join(shm, n))
                os.rmdir(shm)
    with client("-P", "copy-file") as c:
        c.init(3)
        r = c.copy_file("src", "dst-P", False)
        if not r.is_status(FX_PERMISSION_DENIED) or \
                os.path.exists(path("dst-P")):
            return "-P copy-file: %r" % r
    return None


def t_copy_data_kernel():
    """copy-data through copy_file_range and through the read/write loop
    (an append handle) gives the same bytes and answers."""
    data = FILES["big"]
    with session() as c:
        s = c.check_handle(c.open("src", FXF_READ))
        d = c.check_handle(c.open("cd1", FXF_WRITE | FXF_CREAT | FXF_TRUNC))
        c.check_ok(c.copy_data(s, 0, 0, d, 0), "copy-data to EOF")
        c.check_ok(c.copy_data(s, 100, 5000, d, len(data)), "range")
        a = c.check_handle(c.open("cd2", FXF_WRITE | FXF_CREAT |
                                  sc.FXF_APPEND))
        c.check_ok(c.copy_data(s, 0, 0, a, 0), "copy-data to append")
        # a range past the end: EOF before the last chunk
        r = c.copy_data(s, len(data) + 10, 200000, d, 0)
        if not r.is_status(sc.FX_EOF):
            return "copy past the end: %r" % r
        for h in (s, d, a):
            c.close_handle(h)
    if read_file("cd1") != data + data[100:5100]:
        return "copy-data (kernel) differs"
    if read_file("cd2") != data:
        return "copy-data (append) differs"
    return None


def t_copy_reflink():
    """copy-file on XFS shares the source's extents (copy_file_range makes
    a reflink there): filefrag marks the copy's extents shared.  Needs the
    XFS image extensions.sh mounts (--xfs)."""
    if not OPTS.xfs:
        return SKIP
    d = tempfile.mkdtemp(prefix="reflink.", dir=OPTS.xfs)
    data = FILES["big"] * 4
    with open(os.path.join(d, "a"), "wb") as f:
        f.write(data)
    os.sync()
    c = sc.Client(argv(), cwd=d)
    with c:
        c.init(3)
        c.check_ok(c.copy_file("a", "b", False), "copy-file")
    with open(os.path.join(d, "b"), "rb") as f:
        if f.read() != data:
            return "the copy differs"
    out = subprocess.run(["filefrag", "-v", os.path.join(d, "b")],
                         capture_output=True, text=True).stdout
    ext = [x for x in out.splitlines() if re.match(r"\s*\d+:", x)]
    if not ext or not all("shared" in x for x in ext):
        return "extents not shared:\n" + out
    return None


# ------------------------------------------------------------------ extras

def t_space_available():
    with session() as c:
        rep = c.space_available(".")
        if rep.type != FXP_EXTENDED_REPLY:
            return "reply %r" % rep
        r = sc.Reader(rep.data)
        total, free, utotal, uavail = r.u64(), r.u64(), r.u64(), r.u64()
        unit = r.u32()
        if r.remaining():
            return "trailing bytes"
        r2 = c.space_available("missing/x")
        if not r2.is_status(FX_NO_SUCH_FILE):
            return "missing path: %r" % r2
    st = os.statvfs(OPTS.dir)
    if unit != st.f_frsize or total != st.f_blocks * st.f_frsize or \
            utotal != total:
        return "unit %d total %d (statvfs: %d %d)" % (
            unit, total, st.f_frsize, st.f_blocks * st.f_frsize)
    df = subprocess.run(["df", "-B1", "--output=size,avail", OPTS.dir],
                        capture_output=True, text=True).stdout.split()
    size, avail = int(df[2]), int(df[3])
    # the machine is shared: free space moves while we look
    slack = max(256 << 20, total // 50)
    if size != total or abs(avail - uavail) > slack or \
            abs(st.f_bfree * st.f_frsize - free) > slack or uavail > free:
        return "df says size %d avail %d; server %d %d free %d" % (
            size, avail, total, uavail, free)
    return None


def t_vendor_id():
    with session("-e", "-l", "VERBOSE") as c:
        c.check_ok(c.vendor_id("Some Vendor", "someclient", "1.2", 77),
                   "vendor-id")
        # the draft's reply for everyone but WinSCP
        parse_check(c.check_file_name("small", "md5"), draft=True)
        c.check_ok(c.vendor_id("Martin Prikryl", "WinSCP", "6.3.5", 5000),
                   "WinSCP's vendor-id")
        # WinSCP reads the algorithm, then the digests (as ProFTPD sends)
        a, d = parse_check(c.check_file_name("small", "md5"), draft=False)
        if a != "md5" or d != digest("md5", FILES["small"]):
            return "reply for WinSCP: %r %r" % (a, d)
        h = c.check_handle(c.open("small", FXF_READ))
        a, d = parse_check(c.check_file_handle(h, "sha1"), draft=False)
        if d != digest("sha1", FILES["small"]):
            return "check-file-handle for WinSCP"
        # paramiko's check-file keeps the draft's reply
        parse_check(c.check_file_handle(h, "sha1", name="check-file"))
        # A malformed one (it only informs) is answered "Bad message" and
        # the session goes on: a field cut short, none at all, a length
        # past the packet, a string longer than any allowed.
        for body in (sc.string("x"), b"", sc.string("v") + sc.u32(1000),
                     sc.string("v") + sc.string("p") + sc.string("1")
                     + b"\0\0", sc.u32(0xfffffff0) + b"x"):
            rep = c.extended("vendor-id", body)
            if not rep.is_status(sc.FX_BAD_MESSAGE):
                return "malformed vendor-id %r: %r" % (body, rep)
        c.check_ok(c.vendor_id("v", "p", "1", 1), "vendor-id after them")
        if c.stat("small").type != sc.FXP_ATTRS:
            return "the session does not go on after a malformed vendor-id"
        c.close_stdin()
        rc = c.wait()
        log = c.stderr_bytes().decode()
    want = 'vendor-id: client "someclient" version "1.2" build 77 by ' \
        '"Some Vendor"'
    if want not in log:
        return "no VERBOSE line %r in %r" % (want, log[-500:])
    if rc != 0 or "vendor-id: incomplete message; answered" not in log:
        return "malformed vendor-id: exit %r, log %r" % (rc, log[-500:])
    return None


# ------------------------------------------------------- a client gone

SPARSE_SIZE = 64 << 30  # hours of hashing, seconds to minutes of copying
# Seconds from the client's leaving to the exit.  The server's grace is
# 250 ms (cancel.h); the rest is room for a busy machine.  That the work
# was stopped, not finished, shows in the "Cancelled" answer and the log.
GONE_LIMIT = 5.0


def limit_file_size():
    """A guard for a server that does not stop: copy-file writes zeros for
    the sparse source, and 64 GiB of them would fill the disk."""
    import resource
    resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 30, 8 << 30))


def start_long_work(c, what):
    """Send the request named what without waiting; its id."""
    big = "sparse-64g"
    if what == "check-file-name":
        return c.check_file_name(big, "md5", wait=False)
    if what == "check-file-handle":
        h = c.check_handle(c.open(big, FXF_READ))
        return c.check_file_handle(h, "sha256", wait=False)
    if what in ("copy-data", "copy-data-file"):
        src = c.check_handle(c.open(big, FXF_READ))
        # a file beside the source: the kernel copies (copy_file_range)
        dst = c.check_handle(c.open("/dev/null", FXF_WRITE)
                             if what == "copy-data" else
                             c.open("sparse-copy", FXF_WRITE | FXF_CREAT))
        return c.copy_data(src, 0, 0, dst, 0, wait=False)
    if what == "copy-file":
        return c.copy_file(big, "sparse-copy", True, wait=False)
    raise ValueError(what)


def longest_step(pid, seconds):
    """Watch the process's written bytes (/proc/PID/io wchar, which a
    copy_file_range call adds to when it returns) for seconds: the
    longest time between two changes, i.e. the slowest call seen."""
    def wchar():
        with open("/proc/%d/io" % pid) as f:
            for line in f:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
        return 0
    last, changed, longest = wchar(), None, 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(0.005)
        now, w = time.monotonic(), wchar()
        if w != last:
            if changed is not None:
                longest = max(longest, now - changed)
            last, changed = w, now
    return longest


def long_work_then(what, how, where=None, step_limit=None):
    """Start what on the sparse file, let it run 0.2 s, then leave: "both"
    closes both pipes (the client is gone), "socket" closes a socketpair,
    "input" closes stdin only and waits for the answer.  The server must
    stop the work: exit within GONE_LIMIT of the leaving (for "input":
    answer FAILURE "Cancelled" within the grace and a look, then exit).
    where: the directory holding sparse-64g (default OPTS.dir).
    step_limit: first watch the work for 2 s: no call may take longer.
    Returns None or what went wrong."""
    where = where or OPTS.dir
    c = sc.Client(argv("-e", "-l", "INFO"), cwd=where,
                  socketpair=(how == "socket"), preexec_fn=limit_file_size)
    try:
        c.init(3)
        rid = start_long_work(c, what)
        time.sleep(0.2)
        if step_limit is not None:
            took = longest_step(c.proc.pid, 2.0)
            if took > step_limit:
                return "%s: one step took %.2fs (at most %.2fs)" % (
                    what, took, step_limit)
        if c.proc.poll() is not None:
            return "the server exited before the client left"
        t0 = time.monotonic()
        if how == "input":
            c.close_stdin()
            rep = c.recv(timeout=GONE_LIMIT + 1)
            took = time.monotonic() - t0
            if rep.id != rid or not rep.is_status(sc.FX_FAILURE) or \
                    not rep.msg.startswith(b"Cancelled"):
                return "%s: the answer after stdin's end: %r" % (what, rep)
            if took > GONE_LIMIT:
                return "%s: answered %.2fs after stdin's end" % (what, took)
        elif how == "socket":
            c.sock.close()
            c.sock = None
        else:
            c.close_stdin()
            c.proc.stdout.close()
        try:
            rc = c.proc.wait(GONE_LIMIT + 3)
        except subprocess.TimeoutExpired:
            return "%s: still running %.1fs after the client left (%s)" % (
                what, time.monotonic() - t0, how)
        took = time.monotonic() - t0
        log = c.stderr_bytes().decode(errors="replace")
        if took > GONE_LIMIT or rc != 0:
            return "%s: exit %r %.2fs after the client left (%s)" % (
                what, rc, took, how)
        if "cancelled" not in log:
            return "%s: no log line says it was cancelled: %r" % (
                what, log[-400:])
    finally:
        c.close()
        if os.path.exists(os.path.join(where, "sparse-copy")):
            os.unlink(os.path.join(where, "sparse-copy"))
    return None


def t_cancel_when_client_goes():
    """A checksum, copy-data or copy-file of a 64 GiB sparse file stops
    when the client goes away."""
    with open(path("sparse-64g"), "wb") as f:
        f.truncate(SPARSE_SIZE)
    try:
        for what, how in (("check-file-name", "both"),
                          ("check-file-handle", "both"),
                          ("copy-data", "both"), ("copy-file", "both"),
                          ("check-file-name", "socket"),
                          ("copy-data", "socket"),
                          ("check-file-name", "input"),
                          ("copy-data", "input"), ("copy-file", "input")):
            err = long_work_then(what, how)
            if err:
                return err
    finally:
        os.unlink(path("sparse-64g"))
    return None


def t_cancel_on_slow_storage():
    """The same on storage that takes 1 ms a call (a FUSE passthrough,
    --slow), where the kernel copies: each copy_file_range call is sized
    by the time the last one took (cancel.h), so copy-data into a file and
    copy-file still stop within GONE_LIMIT, and no call takes half of it
    (16 MiB calls took 0.6 to 0.9 s each there)."""
    if not OPTS.slow:
        return SKIP
    big = os.path.join(OPTS.slow, "sparse-64g")
    with open(big, "wb") as f:
        f.truncate(SPARSE_SIZE)
    try:
        for what, how in (("copy-data-file", "both"), ("copy-file", "both"),
                          ("copy-data-file", "input"),
                          ("copy-file", "input")):
            err = long_work_then(what, how, OPTS.slow, GONE_LIMIT / 2)
            if err:
                return "on slow storage: " + err
    finally:
        os.unlink(big)
    return None


def t_paramiko():
    try:
        import paramiko
    except ImportError:
        return "paramiko is not installed (deps.sh installs python3-paramiko)"
    class Sock:
        """The socket paramiko's SFTPClient wants (it names its channel)."""
        def __init__(self, s):
            self.s = s

        def send(self, d):
            return self.s.send(d)

        def recv(self, n):
            return self.s.recv(n)

        def close(self):
            self.s.close()

        def get_name(self):
            return "uring-sftp-server"

    ours, theirs = socket.socketpair()
    proc = subprocess.Popen(argv(), stdin=theirs, stdout=theirs,
                            cwd=OPTS.dir, stderr=subprocess.DEVNULL)
    theirs.close()
    try:
        sftp = paramiko.SFTPClient(Sock(ours))
        data = FILES["big"]
        with sftp.open("big", "rb") as f:
            for alg, off, ln, blk in [("sha1", 0, 0, 0), ("md5", 0, 0, 0),
                                      ("sha256", 1000, 5000, 512),
                                      ("sha512", 7, 0, 1 << 20),
                                      ("crc32", 0, 300, 256)]:
                got = f.check(alg, off, ln, blk)
                if got != expected(data, alg, off, ln, blk):
                    return "paramiko check(%s, %d, %d, %d)" % (alg, off, ln,
                                                              blk)
        # paramiko's own upload, checked by its own check()
        with sftp.open("pm-up", "wb") as f:
            f.write(data[:300000])
        with sftp.open("pm-up", "rb") as f:
            if f.check("sha256") != digest("sha256", data[:300000]):
                return "check() after a paramiko upload"
        sftp.close()
    finally:
        ours.close()
        proc.wait(timeout=20)
    return None


# ------------------------------------------------------------------ xferlog

XFERLOG_RE = re.compile(
    r"^(\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}) (\d+) (\S+) (\d+) (\S+) "
    r"b _ ([io]) r (\S+) sftp 0 \* ([ci])$")


def parse_xferlog(text):
    out = []
    for line in text.splitlines():
        m = XFERLOG_RE.match(line)
        if not m:
            raise AssertionError("not an xferlog line: %r" % line)
        out.append({"secs": int(m.group(2)), "host": m.group(3),
                    "bytes": int(m.group(4)), "path": m.group(5),
                    "dir": m.group(6), "user": m.group(7),
                    "done": m.group(8)})
    return out


def xfer_session(logfile, extra=(), env=None):
    c = client("--xferlog=" + logfile, *extra, env=env)
    c.init(3)
    return c


def t_xferlog():
    log = path("xfer.log")
    me = subprocess.run(["id", "-un"], capture_output=True,
                        text=True).stdout.strip()
    data = FILES["mid"]
    env = dict(os.environ, SSH_CONNECTION="10.1.2.3 5555 10.0.0.1 22")
    with xfer_session(log, env=env) as c:
        c.put_bytes("up file", data)                 # complete upload
        if c.get_bytes("up file") != data:           # complete download
            return "download differs"
        h = c.check_handle(c.open("bad-up", FXF_WRITE | FXF_CREAT))
        c.check_ok(c.write(h, 0, b"a" * 1000), "write")
        r = c.write(h, 1 << 63, b"b")                # the last WRITE fails
        if r.is_status(FX_OK):
            return "write at 2^63 succeeded"
        c.close_handle(h)
        h = c.check_handle(c.open("retry-up", FXF_WRITE | FXF_CREAT))
        c.write(h, 1 << 63, b"b")
        c.check_ok(c.write(h, 0, b"c" * 10), "write after a failure")
        c.close_handle(h)
        c.check_ok(c.copy_file("up file", "copied", False), "copy-file")
        h = c.check_handle(c.open("left-open", FXF_WRITE | FXF_CREAT))
        c.check_ok(c.write(h, 0, b"d" * 123), "write")
        c.close_stdin()                              # forced close
        c.wait()
    lines = parse_xferlog(read_file("xfer.log").decode())
    d = OPTS.dir.replace(" ", "_")
    want = [("i", len(data), d + "/up_file", "c"),
            ("o", len(data), d + "/up_file", "c"),
            ("i", 1000, d + "/bad-up", "i"),
            ("i", 10, d + "/retry-up", "c"),
            ("i", len(data), d + "/copied", "c"),
            ("i", 123, d + "/left-open", "i")]
    got = [(x["dir"], x["bytes"], x["path"], x["done"]) for x in lines]
    if got != want:
        return "lines %r, want %r" % (got, want)
    if any(x["host"] != "10.1.2.3" or x["user"] != me for x in lines):
        return "host or user: %r" % lines[0]
    # without SSH_CONNECTION the host is "-"
    env = dict(os.environ)
    env.pop("SSH_CONNECTION", None)
    os.unlink(log)
    with xfer_session(log, env=env) as c:
        c.get_bytes("small")
    lines = parse_xferlog(read_file("xfer.log").decode())
    if [x["host"] for x in lines] != ["-"]:
        return "host without SSH_CONNECTION: %r" % lines
    return None


def t_xferlog_json():
    log = path("xfer.json")
    with xfer_session(log, ["--xferlog-format=json"]) as c:
        c.put_bytes('q"uote\\d', FILES["small"])
        c.get_bytes("mid")
    objs = [json.loads(x) for x in read_file("xfer.json").decode()
            .splitlines()]
    if len(objs) != 2:
        return "%d lines" % len(objs)
    a, b_ = objs
    if a["path"] != OPTS.dir + '/q"uote\\d' or a["direction"] != "i" or \
            a["bytes"] != 300 or a["complete"] is not True:
        return "upload object %r" % a
    if b_["path"] != OPTS.dir + "/mid" or b_["direction"] != "o" or \
            b_["bytes"] != len(FILES["mid"]) or b_["service"] != "sftp":
        return "download object %r" % b_
    for k in ("time", "seconds", "host", "user", "mib_per_s", "type"):
        if k not in a:
            return "no %s in %r" % (k, a)
    return None


def t_xferlog_json_bytes():
    """Names that are not UTF-8 (and some that are): every line parses,
    valid UTF-8 is kept as it is, and each other byte is \\udcXX, so that
    the surrogateescape encoding gives the name's bytes back."""
    log = path("xfer-bytes.json")
    names = [b"caf\xe9", b"x\xc0\xafy", b"caf\xc3\xa9",
             b"\xe6\x97\xa5\xf0\x9f\x98\x80", b"c\x01t\x1fl\x7f",
             b"surr\xed\xa0\x80", b"over\xe0\x80\xaf", b"cut\xe2\x82",
             b"big\xf4\x90\x80\x80", b"f5\xf5\xff", b"cont\x80\xbf",
             b"tab\tnl\ncr\r", b'q"b\\', b"end\xc3"]
    # The host field comes from SSH_CONNECTION: not UTF-8 either.
    envb = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    envb[b"SSH_CONNECTION"] = b"h\xe9st 1 2 3"
    with xfer_session(log, ["--xferlog-format=json"], env=envb) as c:
        for n in names:
            c.put_bytes(n, b"y")
    raw = read_file("xfer-bytes.json")
    lines = raw.split(b"\n")
    if lines[-1] != b"" or len(lines) != len(names) + 1:
        return "%d lines for %d names" % (len(lines) - 1, len(names))
    for n, line in zip(names, lines):
        try:
            # Bytes, as a reader of the file gets them (json.loads takes
            # UTF-8): the line itself must be valid UTF-8.
            obj = json.loads(line)
        except ValueError as e:
            return "line for %r does not parse: %s: %r" % (n, e, line)
        got = obj["path"].encode("utf-8", "surrogateescape")
        if got != os.fsencode(OPTS.dir) + b"/" + n:
            return "path of %r came back as %r (line %r)" % (n, got, line)
        if any(c < 0x20 or c == 0x7f for c in line):
            return "a control byte is not escaped in %r" % line
        if obj["host"].encode("utf-8", "surrogateescape") != b"h\xe9st":
            return "host %r" % obj["host"]
    # Valid UTF-8 passes through unescaped; the bytes that are not, as
    # \\udcXX.
    if b"caf\xc3\xa9" not in lines[2] or b"caf\\udce9" not in lines[0]:
        return "escaping of caf\\xe9 / caf\\xc3\\xa9: %r %r" % (
            lines[0], lines[2])
    if b"\xf0\x9f\x98\x80" not in lines[3]:
        return "a 4-byte character was escaped: %r" % lines[3]
    return None


def t_xferlog_concurrent():
    """Sessions sharing one log: every line whole, none lost."""
    log = path("xfer.shared")
    errors = []

    def one(k):
        try:
            with xfer_session(log) as c:
                for i in range(OPTS.xfer_files):
                    c.put_bytes("conc-%d-%d" % (k, i), b"z" * (100 + i))
        except Exception as e:  # noqa: BLE001
            errors.append("%s" % e)
    th = [threading.Thread(target=one, args=(k,)) for k in range(6)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    if errors:
        return "; ".join(errors[:3])
    lines = parse_xferlog(read_file("xfer.shared").decode())
    if len(lines) != 6 * OPTS.xfer_files:
        return "%d lines" % len(lines)
    seen = {(x["path"].rsplit("/", 1)[1], x["bytes"]) for x in lines}
    want = {("conc-%d-%d" % (k, i), 100 + i) for k in range(6)
            for i in range(OPTS.xfer_files)}
    if seen != want:
        return "lines do not match the uploads"
    return None


def t_xferlog_failures():
    # a log that cannot be written: one error line, the session goes on
    with xfer_session("/dev/full", ["-e"]) as c:
        for i in range(3):
            c.put_bytes("full-%d" % i, b"x" * 10)
        if c.get_bytes("full-0") != b"x" * 10:
            return "transfer failed"
        c.close_stdin()
        rc = c.wait()
        err = c.stderr_bytes().decode()
    if rc != 0 or err.count("xferlog: write to") != 1:
        return "exit %r, stderr %r" % (rc, err)
    # a log that cannot be opened: said at start-up, the session goes on
    with xfer_session(path("no/such/dir/log"), ["-e"]) as c:
        c.put_bytes("noopen", b"x")
        c.close_stdin()
        rc = c.wait()
        err = c.stderr_bytes().decode()
    if rc != 0 or "xferlog: cannot open" not in err:
        return "exit %r, stderr %r" % (rc, err)
    r = subprocess.run(argv("--xferlog-format=csv"), capture_output=True,
                       stdin=subprocess.DEVNULL)
    if r.returncode != 1 or b"Invalid xferlog format" not in r.stderr:
        return "--xferlog-format=csv: %r" % (r,)
    return None


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", default=os.environ.get("SERVER"))
    ap.add_argument("--server-args", default="")
    ap.add_argument("--label", default="default")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--seed", type=int, default=12)
    ap.add_argument("--trials", type=int,
                    default=int(os.environ.get("EXT_TRIALS", "150")))
    ap.add_argument("--xfer-files", type=int, default=40)
    ap.add_argument("--only", default=None)
    ap.add_argument("--xfs", default=None,
                    help="a mounted XFS directory for the reflink test")
    ap.add_argument("--slow", default=None,
                    help="a directory on storage of 1 ms a call (tests/"
                    "fusepass) for the cancellation test")
    ap.add_argument("-v", "--verbose", action="store_true")
    OPTS = ap.parse_args()
    tally.label = OPTS.label
    OPTS.dir = tempfile.mkdtemp(prefix="ext.", dir=OPTS.workdir)
    os.umask(0o022)
    make_files()
    tests = [(n[2:], f) for n, f in globals().items()
             if n.startswith("t_") and callable(f)]
    for name, fn in tests:
        if OPTS.only and OPTS.only not in name:
            continue
        check(name, fn)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())

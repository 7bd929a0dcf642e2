#!/usr/bin/python3
"""Model-based test of pipelined I/O and write merging.

For each seed: start the server, open one file through two handles, then
send batches of random requests without waiting for replies (contiguous
WRITE runs of 1..64 KiB on each handle, gaps, overlapping rewrites, READs of
random ranges including at and past EOF, sequential READ streams, and now
and then an FSTAT or an FSETSTAT size change as barriers).  Every batch
goes out in one write; then every reply is read and checked against an
in-memory model that applies the requests one at a time in arrival order:

  * one reply per request, in request order, with the request's id;
  * WRITE and FSETSTAT: STATUS OK;
  * READ: DATA equal to the model's bytes at that moment (short only where
    the model's file ends), or STATUS EOF when the offset is at or past the
    model's size;
  * FSTAT: ATTRS whose size is the model's size.

At the end both handles are closed and the file on disk is compared with
the model byte for byte, and the server must exit 0 at stdin EOF.  Some
seeds open the second handle with APPEND (writes go to the end of the file
whatever their offset).

Extreme offsets: an append handle's WRITEs sometimes carry an
offset that does not fit off_t (2^64-1, 2^63, ...), alone or as the run
[2^64-1, 0, 0], and its contiguous runs then go on from there (wrapping
past 2^64): all OK, appended in request order.  A plain handle's WRITE or
READ at or past INT64_MAX is BAD_MESSAGE and changes nothing; a READ at
2^62 is EOF.  Merging must not change any of these outcomes.

A failure names the seed, the request and what differed, and prints a
command line that replays that seed alone.

Usage: model.py --server PATH [--server-args "ARGS"] [--label NAME]
                [--workdir DIR] [--seed-base N] [--seeds N | --seed S]
                [--requests N]
Exit: 0 all passed, 1 a failure, 77 cannot run.  Last line of the output:
"N passed, N failed".
"""

import argparse
import os
import random
import shlex
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import seedrun  # noqa: E402
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_READ, FXF_WRITE, FXF_APPEND, FXF_CREAT, FXF_TRUNC,
    FXP_READ, FXP_WRITE, FXP_FSTAT, FXP_FSETSTAT,
    FXP_DATA, FXP_ATTRS, FX_OK, FX_EOF,
    u32, u64, string, packet, encode_attrs)

KIB = 1024
MAX_IO = 64 * KIB
U64 = 1 << 64
I64_MAX = (1 << 63) - 1
# Offsets no off_t can hold, and INT64_MAX, where no byte fits either (the
# kernel refuses a position plus length past it).
EXTREME = (U64 - 1, 1 << 63, U64 - 2, (1 << 63) + 12345, I64_MAX)


class Mismatch(Exception):
    """A reply or the final file differs from the model."""


class Req:
    """One request as sent, and what the model says its reply must be."""

    __slots__ = ("index", "batch", "id", "kind", "hname", "offset", "length",
                 "newsize", "expect", "applied_at")

    def __init__(self, index, batch, rid, kind, hname):
        self.index = index
        self.batch = batch
        self.id = rid
        self.kind = kind
        self.hname = hname
        self.offset = None
        self.length = None
        self.newsize = None
        self.expect = None
        self.applied_at = None   # where the model put it (None: refused)

    def describe(self):
        if self.kind == "WRITE":
            s = "WRITE h=%s off=%d len=%d" % (self.hname, self.offset,
                                               self.length)
            if self.applied_at is not None and self.applied_at != self.offset:
                s += " (APPEND: model wrote it at %d)" % self.applied_at
            return s
        if self.kind == "READ":
            return "READ h=%s off=%d len=%d" % (self.hname, self.offset,
                                                 self.length)
        if self.kind == "FSETSTAT":
            return "FSETSTAT h=%s size=%d" % (self.hname, self.newsize)
        return "%s h=%s" % (self.kind, self.hname)


def pick_size(rng):
    """A WRITE/READ length in 1..64 KiB, mostly small, often 32 KiB."""
    r = rng.random()
    if r < 0.30:
        return rng.randint(1, 512)
    if r < 0.55:
        return rng.randint(513, 8 * KIB)
    if r < 0.70:
        return 32 * KIB
    if r < 0.90:
        return rng.randint(8 * KIB + 1, 32 * KIB)
    return rng.randint(32 * KIB + 1, MAX_IO)


class Session:
    """One seed: one server, one file, two handles, a model."""

    def __init__(self, args, seed, nreq):
        self.args = args
        self.seed = seed
        self.nreq = nreq
        self.rng = random.Random(seed)
        self.model = bytearray()
        self.reqs = []
        self.client = None
        self.path = None

    def fail(self, req, msg):
        where = ""
        if req is not None:
            where = " batch %d request #%d (id %d) %s:" % (
                req.batch, req.index, req.id, req.describe())
        raise Mismatch("seed=%d%s %s" % (self.seed, where, msg))

    def writers_of(self, pos, before):
        """The last few WRITEs before request index `before` that covered
        file offset pos in the model (for failure reports)."""
        out = []
        for r in reversed(self.reqs[:before]):
            if r.kind == "WRITE" and r.applied_at is not None:
                at = r.applied_at
                if at <= pos < at + r.length:
                    out.append("#%d(id %d) %s" % (r.index, r.id,
                                                  r.describe()))
                    if len(out) == 3:
                        break
            elif r.kind == "FSETSTAT" and r.newsize <= pos:
                out.append("#%d(id %d) %s cut it" % (r.index, r.id,
                                                     r.describe()))
                break
        return "; ".join(out) if out else "none (zero fill)"

    # ---------------------------------------------------------- generation

    def gen_batch(self, bno, budget, handles, cur, rcur, span, stream):
        """Build one batch of requests, applying each to the model.  A
        streaming batch is mostly one contiguous upload on one handle (runs
        that reach the merge limit); the others mix everything."""
        rng = self.rng
        c = self.client
        pkts = []
        hnames = list(handles)
        h = rng.choice(hnames)
        last_write = None
        forced = []     # offsets the next WRITEs on h take
        p_switch, p_write, p_contig = (0.01, 0.97, 0.98) if stream else \
            (0.25, 0.56, 0.66)
        for _ in range(budget):
            if rng.random() < p_switch:
                h = rng.choice(hnames)
            hd = handles[h]
            size = len(self.model)
            rid = c.next_id()
            r = rng.random()
            if r < p_write and not hd["append"] and rng.random() < 0.02:
                # past INT64_MAX on a plain handle: BAD_MESSAGE, no change
                req = Req(len(self.reqs), bno, rid, "WRITE", h)
                off, n = rng.choice(EXTREME), pick_size(rng)
                req.offset, req.length = off, n
                req.expect = ("STATUS", sc.FX_BAD_MESSAGE)
                pkts.append(packet(FXP_WRITE, u32(rid) + string(hd["h"])
                                   + u64(off) + string(rng.randbytes(n))))
            elif r < p_write:
                req = Req(len(self.reqs), bno, rid, "WRITE", h)
                q = rng.random()
                if hd["append"] and not forced and rng.random() < 0.03:
                    forced = [U64 - 1, 0, 0] if rng.random() < 0.5 \
                        else [rng.choice(EXTREME)]
                if forced:
                    off = forced.pop(0)
                elif q < p_contig:
                    off = cur[h]                       # contiguous run
                elif q < 0.76:
                    off = cur[h] + rng.randint(1, 20000)   # gap
                elif q < 0.90:
                    off = rng.randint(0, max(0, size - 1))  # overwrite
                elif q < 0.95:
                    off = size                         # at the end
                else:
                    off = rng.randint(0, span)
                if off > span and not hd["append"]:
                    off = rng.randint(0, max(0, size))
                off %= U64
                n = 32 * KIB if stream and rng.random() < 0.5 \
                    else pick_size(rng)
                data = rng.randbytes(n)
                at = size if hd["append"] else off
                if at > size:
                    self.model.extend(bytes(at - size))
                self.model[at:at + n] = data
                req.offset, req.length = off, n
                req.applied_at = at
                req.expect = ("OK",)
                cur[h] = (off + n) % U64
                last_write = (at, n)
                pkts.append(packet(FXP_WRITE, u32(rid) + string(hd["h"])
                                   + u64(off) + string(data)))
            elif r < p_write + (1 - p_write) * 0.9:
                req = Req(len(self.reqs), bno, rid, "READ", h)
                q = rng.random()
                n = pick_size(rng)
                if q < 0.02:
                    # the lseek OpenSSH does first fails past INT64_MAX
                    off = rng.choice(EXTREME + (1 << 62,))
                    req.offset, req.length = off, n
                    req.expect = ("STATUS", sc.FX_BAD_MESSAGE) \
                        if off >= I64_MAX else ("EOF",)
                    pkts.append(packet(FXP_READ, u32(rid) + string(hd["h"])
                                       + u64(off) + u32(n)))
                    self.reqs.append(req)
                    continue
                if q < 0.30 and last_write is not None:
                    at, wn = last_write                 # read back a write
                    off = rng.randint(max(0, at - 100), at + wn)
                elif q < 0.55:
                    off = rng.randint(0, max(0, size))
                elif q < 0.70:
                    off = size + rng.choice((0, 0, 1, rng.randint(2, 70000)))
                else:
                    off = rcur[h]                       # sequential stream
                    n = 32 * KIB
                    rcur[h] = off + n if off + n < size else 0
                req.offset, req.length = off, n
                if off >= size:
                    req.expect = ("EOF",)
                else:
                    req.expect = ("DATA", bytes(self.model[off:off + n]))
                pkts.append(packet(FXP_READ, u32(rid) + string(hd["h"])
                                   + u64(off) + u32(n)))
            elif r < p_write + (1 - p_write) * 0.97:
                req = Req(len(self.reqs), bno, rid, "FSTAT", h)
                req.expect = ("SIZE", size)
                pkts.append(packet(FXP_FSTAT, u32(rid) + string(hd["h"])))
            else:
                req = Req(len(self.reqs), bno, rid, "FSETSTAT", h)
                q = rng.random()
                if q < 0.6:
                    ns = rng.randint(0, size)
                elif q < 0.8:
                    ns = size + rng.randint(1, 50000)
                else:
                    ns = rng.choice((0, size))
                req.newsize = ns
                if ns < size:
                    del self.model[ns:]
                else:
                    self.model.extend(bytes(ns - size))
                req.expect = ("OK",)
                pkts.append(packet(FXP_FSETSTAT, u32(rid) + string(hd["h"])
                                   + encode_attrs({"size": ns})))
            self.reqs.append(req)
        return b"".join(pkts)

    # ---------------------------------------------------------- checking

    def check_reply(self, req, rep):
        if rep.id != req.id:
            self.fail(req, "reply out of order: expected a reply for id %d, "
                      "got %r (for request %s)" % (
                          req.id, rep, self.describe_id(rep.id)))
        kind = req.expect[0]
        if kind == "OK":
            if not rep.is_status(FX_OK):
                self.fail(req, "expected STATUS OK, got %r" % rep)
        elif kind == "STATUS":
            if not rep.is_status(req.expect[1]):
                self.fail(req, "expected STATUS %s, got %r" % (
                    sc.STATUS_NAMES.get(req.expect[1]), rep))
        elif kind == "EOF":
            if not rep.is_status(FX_EOF):
                extra = ""
                if rep.type == FXP_DATA:
                    extra = " (data %r...)" % rep.data[:16]
                self.fail(req, "expected STATUS EOF (model size %d), got "
                          "%r%s" % (self.size_at(req), rep, extra))
        elif kind == "SIZE":
            if rep.type != FXP_ATTRS or "size" not in rep.attrs:
                self.fail(req, "expected ATTRS with a size, got %r" % rep)
            if rep.attrs["size"] != req.expect[1]:
                self.fail(req, "FSTAT size: expected %d (model), got %d"
                          % (req.expect[1], rep.attrs["size"]))
        elif kind == "DATA":
            want = req.expect[1]
            if rep.type != FXP_DATA:
                self.fail(req, "expected DATA of %d bytes, got %r"
                          % (len(want), rep))
            got = rep.data
            if got != want:
                i = next((k for k in range(min(len(got), len(want)))
                          if got[k] != want[k]), min(len(got), len(want)))
                pos = req.offset + i
                if i < len(got) and i < len(want):
                    what = ("first difference at file offset %d (byte %d "
                            "of the reply): expected %s..., got %s...; "
                            "model's last writers of that offset: %s"
                            % (pos, i, want[i:i + 8].hex(),
                               got[i:i + 8].hex(),
                               self.writers_of(pos, req.index)))
                else:
                    what = ("the first %d bytes agree; model size at that "
                            "point %d" % (i, self.size_at(req)))
                self.fail(req, "DATA differs: expected %d bytes, got %d; %s"
                          % (len(want), len(got), what))
        else:
            raise AssertionError(kind)

    def size_at(self, req):
        """The model's size when req arrived (recomputed for reports)."""
        size = 0
        for r in self.reqs[:req.index]:
            if r.kind == "WRITE" and r.applied_at is not None:
                size = max(size, r.applied_at + r.length)
            elif r.kind == "FSETSTAT":
                size = r.newsize
        return size

    def describe_id(self, rid):
        for r in self.reqs:
            if r.id == rid:
                return "#%d %s" % (r.index, r.describe())
        return "unknown"

    # ---------------------------------------------------------- run

    def run(self):
        rng = self.rng
        a = self.args
        argv = [a.server] + shlex.split(a.server_args)
        self.path = "model-%d.bin" % self.seed
        full = os.path.join(a.workdir, self.path)
        if os.path.exists(full):
            os.unlink(full)
        self.client = c = sc.Client(argv, cwd=a.workdir,
                                    socketpair=(self.seed % 4 == 3))
        try:
            c.init()
            append_b = self.seed % 3 == 0
            ha = c.check_handle(c.open(self.path, FXF_READ | FXF_WRITE
                                       | FXF_CREAT | FXF_TRUNC),
                                "open handle A")
            flags_b = FXF_READ | FXF_WRITE | (FXF_APPEND if append_b else 0)
            hb = c.check_handle(c.open(self.path, flags_b), "open handle B")
            handles = {"A": {"h": ha, "append": False},
                       "B": {"h": hb, "append": append_b}}
            span = rng.choice((128 * KIB, 512 * KIB, 2048 * KIB))
            cur = {"A": 0, "B": rng.randint(0, span // 2)}
            rcur = {"A": 0, "B": 0}
            bno = 0
            while len(self.reqs) < self.nreq:
                bno += 1
                budget = min(rng.choice((8, 40, 120, 250, 400)),
                             self.nreq - len(self.reqs))
                first = len(self.reqs)
                stream = rng.random() < 0.3
                data = self.gen_batch(bno, budget, handles, cur, rcur, span,
                                      stream)
                c.send_raw(data)
                for req in self.reqs[first:]:
                    try:
                        rep = c.recv()
                    except sc.SFTPError as e:
                        self.fail(req, "no reply: %s" % e)
                    self.check_reply(req, rep)
            for name in ("A", "B"):
                rep = c.close_handle(handles[name]["h"])
                if not rep.is_status(FX_OK):
                    raise Mismatch("seed=%d: CLOSE of handle %s: %r"
                                   % (self.seed, name, rep))
            rc, rest = c.finish()
            if rc != 0 or rest:
                raise Mismatch("seed=%d: at stdin EOF the server exited %d "
                               "with %d unread output bytes; stderr: %r"
                               % (self.seed, rc, len(rest),
                                  c.stderr_bytes()[-500:]))
            with open(full, "rb") as f:
                disk = f.read()
            if disk != self.model:
                i = next((k for k in range(min(len(disk), len(self.model)))
                          if disk[k] != self.model[k]),
                         min(len(disk), len(self.model)))
                detail = ""
                if i < min(len(disk), len(self.model)):
                    detail = ("; expected %s..., got %s...; model's last "
                              "writers: %s" % (
                                  self.model[i:i + 8].hex(),
                                  disk[i:i + 8].hex(),
                                  self.writers_of(i, len(self.reqs))))
                raise Mismatch("seed=%d: final file differs from the model: "
                               "model %d bytes, file %d bytes, first "
                               "difference at offset %d%s"
                               % (self.seed, len(self.model), len(disk), i,
                                  detail))
            os.unlink(full)
        finally:
            c.close()
        return bno


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    seedrun.add_args(ap)
    ap.add_argument("--requests", type=int, default=2000,
                    help="requests per seed (default 2000)")
    args = ap.parse_args()
    rc = seedrun.cannot_run([args.server])
    if rc is not None:
        return rc
    own_dir = None
    if args.workdir is None:
        own_dir = args.workdir = tempfile.mkdtemp(prefix="model.")
    passed, failed = seedrun.run_seeds(
        args, __file__, seedrun.seeds_of(args),
        lambda seed: Session(args, seed, args.requests),
        (Mismatch, sc.SFTPError),
        lambda seed: " --requests %d" % args.requests,
        lambda s: len(s.reqs))
    if own_dir is not None:
        for f in os.listdir(own_dir):
            os.unlink(os.path.join(own_dir, f))
        os.rmdir(own_dir)
    return seedrun.counts(passed, failed)


if __name__ == "__main__":
    sys.exit(main())

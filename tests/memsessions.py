#!/usr/bin/python3
"""Memory per session at 16 sessions of one user, against OpenSSH's server
(the goal: at 16 sessions each session costs at most 4 MiB more than
OpenSSH's, RSS plus anything the kernel holds for it).

  memsessions.py --server PATH [--server-args ARGS] --openssh PATH
                 --user NAME --workdir DIR [--sessions 16] [--size 64M]
                 [--rounds 2] [--allowance 4] [--no-cgroups] [--no-flood]

Runs as root; every server runs as --user through setpriv, as sshd runs
it, on pipes.  Two files of --size bytes, read once first so that they
are in the page cache: one owned by root (mode 0644: the user may read it,
not lease it) and one owned by the user.

stalled: for each file, OpenSSH's server and the server under test in
  turn (--rounds times each, the order alternating), --sessions at once.
  Each client opens the file and keeps 64 READs of 255 KiB in flight;
  after 64 replies (a quarter of the file) every client stops reading,
  with 64 READs outstanding: every buffer between the file and the client
  fills.  Once each server's memory and pipes stop changing, measured:
    RSS-based   per server process: VmRSS plus the bytes waiting in every
                pipe it holds (stdin, stdout and any of its own, each
                counted once; FIONREAD on the pipe opened again through
                /proc/PID/fd); VmLck, VmPin and RssAnon (VmRSS
                without the pages of the program and its libraries,
                which all sessions share) are shown
    cgroup      the memory charged to a memory cgroup holding only the
                run's servers (MemCgroup: anonymous memory and the
                kernel's for them, pipe pages included, page cache left
                out), per session; left out, with a NOTE, where no memory
                cgroup can be made
  Then the clients read on to the end; every reply is checked against the
  file.  Asserted for each file: the server's mean per-session cost minus
  OpenSSH's is at most --allowance MiB, by each measure (medians over the
  rounds).  Only figures of the servers themselves are asserted, never one
  of the whole machine (MemAvailable, free memory): other programs move
  those, and the test must hold on a machine busy with other work.

flood: 4 sessions of each server each send 1000 READs of 255 KiB and
  read nothing: only what the queue admits may cost memory.  Asserted: the
  server's RSS-based cost (its peak RSS, VmHWM, plus its pipes) and its
  cgroup's exceed OpenSSH's under the same flood by at most --allowance
  MiB, and the first exceeds its own cost with 64 READs outstanding (the
  stalled runs, same file) by at most 1 MiB.  Then all 1000 replies are
  read and checked.

Prints every measurement (a table per run, MiB per session) and
"N passed, N failed" last.  Exit 0, 1 (a failure), 77 (not root).
"""

import argparse
import array
import fcntl
import os
import pwd
import select
import shlex
import statistics
import struct
import subprocess
import sys
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import procinfo  # noqa: E402
import sftpclient as sc  # noqa: E402
import tally  # noqa: E402
from tally import say as result  # noqa: E402

KiB = 1 << 10
MiB = 1 << 20
BIG = 261120            # 255 KiB: OpenSSH's largest READ
DEPTH = 64              # READs in flight, as sftp and the benchmark send
STALL_AFTER = 64        # replies read before the client stops reading
FLOOD = 1000
FLOOD_SESSIONS = 4      # each floods; means over them
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)

def mib(v):
    return "n/a" if v is None else "%.2f" % (v / MiB)


# ------------------------------------------------------------ measuring

def status_of(pid):
    """VmRSS, VmHWM, VmLck, VmPin, RssAnon of pid in bytes (0 when
    absent)."""
    keys = ("VmRSS", "VmHWM", "VmLck", "VmPin", "RssAnon")
    st = procinfo.status(pid, keys)
    return {k: st.get(k, 0) * KiB for k in keys}


def pipes_of(pid):
    """(bytes waiting, capacity) summed over the distinct pipes pid holds,
    stdin and stdout included."""
    waiting, capacity = 0, 0
    for fd in procinfo.pipes_held(pid):
        if fd is None:
            continue
        buf = array.array("i", [0])
        fcntl.ioctl(fd, termios.FIONREAD, buf)
        waiting += buf[0]
        capacity += fcntl.fcntl(fd, F_GETPIPE_SZ)
    return waiting, capacity


def measure(pid):
    st = status_of(pid)
    waiting, capacity = pipes_of(pid)
    st["pipes"] = waiting
    st["pipecap"] = capacity
    st["cost"] = st["VmRSS"] + waiting
    st["peakcost"] = st["VmHWM"] + waiting
    return st


def settle(pids, limit=8.0, quiet=0.6):
    """Wait until no server's RSS or pipe bytes changed for quiet seconds
    (at most limit seconds); returns whether they settled."""
    end = time.monotonic() + limit
    last, since = None, time.monotonic()
    while time.monotonic() < end:
        now = [(status_of(p)["VmRSS"], pipes_of(p)[0]) for p in pids]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return True
        time.sleep(0.1)
    return False


def sample(pids, n=5, gap=0.15, cg=None):
    """Per pid, the median of n measurements of each field; with cg,
    "cgroup": the median of its usage."""
    rows = {p: [] for p in pids}
    usage = []
    for i in range(n):
        if i:
            time.sleep(gap)
        for p in pids:
            rows[p].append(measure(p))
        if cg:
            usage.append(cg.usage())
    out = {p: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
           for p, rs in rows.items()}
    if cg:
        out["cgroup"] = statistics.median(usage)
    return out


class MemCgroup:
    """A memory cgroup for one run's servers: usage() is all the memory
    charged to them, their anonymous memory and what the kernel allocated
    for them (page tables, the pages of the pipes they write, io_uring
    rings, sockets, slab).  Page cache is left out (v2's "file", v1's
    "cache" in memory.stat): the file is read into it before the runs, but
    on a machine short of memory some of it may be dropped and read again
    by whichever server asks first, and charged to that server's group.
    Other processes on the machine move none of this.  cgroup v2 (a group
    below the root, memory enabled there) or v1's memory hierarchy (a
    group below our own)."""

    PARENT = None      # (kind, directory), found once; kind None: none

    @classmethod
    def find_parent(cls):
        if cls.PARENT is not None:
            return cls.PARENT
        cls.PARENT = (None, None)
        with open("/proc/self/mounts") as f:
            mounts = [line.split() for line in f]
        for _, mnt, typ, opts, *_ in mounts:
            if typ == "cgroup" and "memory" in opts.split(","):
                with open("/proc/self/cgroup") as f:
                    for line in f:
                        _, ctl, path = line.rstrip("\n").split(":", 2)
                        if "memory" in ctl.split(","):
                            cls.PARENT = ("v1", mnt + path.rstrip("/"))
                            return cls.PARENT
        for _, mnt, typ, *_ in mounts:
            if typ != "cgroup2":
                continue
            try:
                with open(os.path.join(mnt, "cgroup.subtree_control")) as f:
                    if "memory" not in f.read().split():
                        with open(os.path.join(
                                mnt, "cgroup.subtree_control"), "w") as w:
                            w.write("+memory")
                cls.PARENT = ("v2", mnt)
            except OSError:
                continue
            return cls.PARENT
        return cls.PARENT

    def __init__(self, name):
        self.kind, parent = self.find_parent()
        if self.kind is None:
            raise OSError("no memory cgroup controller to use")
        self.path = os.path.join(parent, "memsessions-%d-%s" % (
            os.getpid(), name))
        os.mkdir(self.path)
        self.usage_file = os.path.join(self.path, "memory.current"
                                       if self.kind == "v2"
                                       else "memory.usage_in_bytes")

    def enter(self):
        """For preexec_fn: move the calling (child) process in."""
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    def usage(self):
        with open(self.usage_file) as f:
            charged = int(f.read())
        cache = "file" if self.kind == "v2" else "cache"
        with open(os.path.join(self.path, "memory.stat")) as f:
            for line in f:
                k, _, v = line.partition(" ")
                if k == cache:
                    return charged - int(v)
        return charged

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(0.1)   # its processes are still exiting


# ------------------------------------------------------------ sessions

class Download:
    """One server and a client that keeps DEPTH READs of BIG bytes in
    flight over a file, checking every reply against content."""

    def __init__(self, argv, path, content, errpath, cg=None):
        self.c = sc.Client(argv, stderr=errpath, timeout=60,
                           preexec_fn=cg.enter if cg else None)
        self.pid = self.c.proc.pid
        self.content = content
        self.size = len(content)
        self.c.init()
        rep = self.c.open(path, sc.FXF_READ)
        if rep.type != sc.FXP_HANDLE:
            raise sc.ProtocolError("OPEN %s: %r" % (path, rep))
        self.h = rep.handle
        self.next_off = 0
        self.out = {}        # id -> offset
        self.replies = 0
        self.bytes = 0
        self.done = False

    def send_reads(self, n, offsets=None):
        self.c.begin_batch()
        for _ in range(n):
            if offsets is not None:
                off = next(offsets)
            elif self.next_off >= self.size:
                break
            else:
                off = self.next_off
                self.next_off += BIG
            rid = self.c.read(self.h, off, BIG, wait=False)
            self.out[rid] = off
        self.c.end_batch()

    def read_some(self):
        """At most 64 KiB, whatever the server's stdout holds: what this
        client buffers when it stalls is then the same for every
        server."""
        try:
            data = os.read(self.c.rfd, 65536)
        except BlockingIOError:
            return
        if not data:
            self.c.eof = True
        else:
            self.c.rbuf += data

    def take_replies(self, refill):
        """Decode every complete reply buffered; with refill, send a READ
        for each one taken.  Returns how many were taken."""
        rb = self.c.rbuf
        taken = 0
        while len(rb) >= 4:
            length = struct.unpack_from(">I", rb, 0)[0]
            if len(rb) < 4 + length:
                break
            ptype = rb[4]
            rid = struct.unpack_from(">I", rb, 5)[0]
            off = self.out.pop(rid, None)
            if off is None:
                raise sc.ProtocolError("reply to id %d, never sent" % rid)
            if ptype == sc.FXP_DATA:
                dlen = struct.unpack_from(">I", rb, 9)[0]
                want = min(BIG, self.size - off)
                if dlen != want or bytes(rb[13:13 + dlen]) != \
                        self.content[off:off + dlen]:
                    raise sc.ProtocolError(
                        "READ at %d: %d bytes, not the file's %d" % (
                            off, dlen, want))
                self.bytes += dlen
            elif ptype == sc.FXP_STATUS:
                code = struct.unpack_from(">I", rb, 9)[0]
                if code != sc.FX_EOF or off < self.size:
                    raise sc.ProtocolError("READ at %d: status %d" % (
                        off, code))
            else:
                raise sc.ProtocolError("READ at %d: reply type %d" % (
                    off, ptype))
            del rb[:4 + length]
            taken += 1
            self.replies += 1
        if refill and taken:
            self.send_reads(taken)
        return taken

    def finish(self):
        rep = self.c.close_handle(self.h)
        if not rep.is_status(sc.FX_OK):
            raise sc.ProtocolError("CLOSE: %r" % rep)
        rc, left = self.c.finish(30)
        if rc != 0 or left:
            raise sc.ProtocolError("exit status %r, %d bytes more; stderr "
                                   "%r" % (rc, len(left),
                                           self.c.stderr_bytes()[-300:]))


def pump(sessions, until, refill, timeout=120):
    """Read every session's replies (refilling with refill) until until(s)
    holds for each."""
    end = time.monotonic() + timeout
    while True:
        waiting = [s for s in sessions if not until(s)]
        if not waiting:
            return
        left = end - time.monotonic()
        if left <= 0:
            raise sc.Timeout("sessions stuck: %s" % ", ".join(
                "pid %d at %d replies" % (s.pid, s.replies)
                for s in waiting[:4]))
        fds = {s.c.rfd: s for s in waiting}
        r, _, _ = select.select(list(fds), [], [], min(left, 1.0))
        for fd in r:
            s = fds[fd]
            s.read_some()
            if s.c.eof and not s.c.rbuf:
                raise sc.ServerClosed("server %d closed its output (%r)" % (
                    s.pid, s.c.stderr_bytes()[-300:]))
            s.take_replies(refill)


# ------------------------------------------------------------ the runs

def server_argv(args, which):
    prefix = args.as_user
    if which == "openssh":
        return prefix + [args.openssh]
    return prefix + [args.server] + shlex.split(args.server_args)


def new_cgroup(args, name):
    if not args.cgroups:
        return None
    return MemCgroup(name)


def wind_down(downloads, cg):
    """The end of a run, however it went: every client closed (its server
    ends), the run's cgroup removed."""
    for d in downloads:
        d.c.close()
    if cg:
        cg.remove()


def stalled_run(args, which, fname, path, content, tag):
    """--sessions downloads at once, stalled with DEPTH READs outstanding.
    Returns per-session figures (per_session)."""
    n = args.sessions
    cg = new_cgroup(args, tag)
    sessions = []
    try:
        for i in range(n):
            sessions.append(Download(
                server_argv(args, which), path, content,
                os.path.join(args.workdir, "%s.%s.%d.err" % (
                    which, fname, i)), cg))
        for s in sessions:
            s.send_reads(DEPTH)
        pump(sessions, lambda s: s.replies >= STALL_AFTER, refill=True)
        # every client has stopped reading, DEPTH READs outstanding
        pids = [s.pid for s in sessions]
        if not settle(pids):
            print("NOTE: %s %s: memory still moving after 8 s; measured "
                  "anyway" % (which, fname))
        per = sample(pids, cg=cg)
        cg_usage = per.pop("cgroup", None)
        pump(sessions, lambda s: s.bytes >= s.size and not s.out,
             refill=True)
        for s in sessions:
            s.finish()
    finally:
        wind_down(sessions, cg)
    rows = list(per.values())
    out = {k: sum(r[k] for r in rows) / n for k in rows[0]}
    out["max_cost"] = max(r["cost"] for r in rows)
    out["max_peak"] = max(r["peakcost"] for r in rows)
    out["cgroup"] = None if cg_usage is None else cg_usage / n
    return out


def flood_run(args, which, fname, path, content, tag):
    """FLOOD_SESSIONS sessions each send FLOOD READs and read nothing;
    returns the means of their measurements."""
    cg = new_cgroup(args, tag)
    ds = []
    blocks = (len(content) + BIG - 1) // BIG

    def offsets():
        k = 0
        while True:
            yield (k % blocks) * BIG
            k += 1
    try:
        for i in range(FLOOD_SESSIONS):
            ds.append(Download(server_argv(args, which), path, content,
                               os.path.join(args.workdir, "%s.flood.%d.err"
                                            % (which, i)), cg))
        for d in ds:
            d.send_reads(FLOOD, offsets())
        pids = [d.pid for d in ds]
        settle(pids)
        per = sample(pids, cg=cg)
        usage = per.pop("cgroup", None)
        pump(ds, lambda s: not s.out, refill=False)
        for d in ds:
            if d.replies != FLOOD:
                raise sc.ProtocolError("%d replies to %d READs" % (
                    d.replies, FLOOD))
            d.finish()
    finally:
        wind_down(ds, cg)
    rows = list(per.values())
    m = {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
    m["cgroup"] = None if usage is None else usage / len(rows)
    return m


def med(runs, key):
    v = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(v) if v else None


def show_stalled(args, fname, res):
    print("\n%d sessions as %s, file owned by %s, %d READs of %d KiB "
          "outstanding, clients stalled.  MiB per session: means over the "
          "sessions, medians over %d round(s)" % (
              args.sessions, args.user, fname, DEPTH, BIG // KiB,
              len(res["server"])))
    print("| server | VmRSS | RssAnon | pipes held | RSS+pipes | largest "
          "RSS+pipes | VmHWM | VmLck | VmPin | pipe capacity | cgroup |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for which in ("openssh", "server"):
        runs = res[which]
        cg = med(runs, "cgroup")
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                  which, mib(med(runs, "VmRSS")), mib(med(runs, "RssAnon")),
                  mib(med(runs, "pipes")),
                  mib(med(runs, "cost")), mib(med(runs, "max_cost")),
                  mib(med(runs, "VmHWM")), mib(med(runs, "VmLck")),
                  mib(med(runs, "VmPin")), mib(med(runs, "pipecap")),
                  "n/a" if cg is None else mib(cg)))
    sys.stdout.flush()


def sanitized(server):
    """An ASan/UBSan build: its shadow memory and quarantine make its RSS
    nothing like the real server's."""
    try:
        out = subprocess.run(["ldd", server], capture_output=True,
                             text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return "libasan" in out or "libubsan" in out


SANITIZED = False


def compare(what, ours, theirs, allowance):
    """ours - theirs per session at most allowance (bytes).  In a
    sanitizer build only shown: what is asserted there is that every byte
    arrives and that a flood costs no more than READs in flight."""
    if SANITIZED:
        print("NOTE: %s: %s MiB per session, OpenSSH's %s (sanitizer build: "
              "not compared)" % (what, mib(ours), mib(theirs)), flush=True)
        return
    result(ours - theirs <= allowance,
           "%s: %s MiB per session, OpenSSH's %s: %+.2f MiB, at most "
           "%+.2f" % (what, mib(ours), mib(theirs), (ours - theirs) / MiB,
                        allowance / MiB))


def warm(path):
    with open(path, "rb") as f:
        while f.read(4 * MiB):
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--openssh", default="/usr/lib/openssh/sftp-server")
    ap.add_argument("--user", default="nobody")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--size", default="64M")
    ap.add_argument("--rounds", type=int, default=2,
                    help="runs of each server per file, the order "
                    "alternating (medians over the rounds)")
    ap.add_argument("--allowance", type=float, default=4.0,
                    help="MiB per session the server may cost more")
    ap.add_argument("--no-cgroups", dest="cgroups", action="store_false")
    ap.add_argument("--no-flood", dest="flood", action="store_false",
                    help="only the stalled sessions (a run at another "
                    "session count has done the floods)")
    args = ap.parse_args()
    global SANITIZED
    SANITIZED = sanitized(args.server)
    if os.geteuid() != 0:
        print("SKIP: needs root (the servers run as %s; their pipes are "
              "read through /proc)" % args.user)
        return 77
    pw = pwd.getpwnam(args.user)
    args.as_user = ["setpriv", "--reuid=%d" % pw.pw_uid,
                    "--regid=%d" % pw.pw_gid, "--init-groups",
                    "--inh-caps=-all", "--"]
    size = procinfo.parse_size(args.size)
    allowance = args.allowance * MiB
    if args.cgroups:
        kind, parent = MemCgroup.find_parent()
        if kind is None:
            print("NOTE: no memory cgroup can be made here: the cgroup "
                  "measure is left out (RSS+pipes remains)")
            args.cgroups = False
        else:
            print("memory cgroups: %s, below %s" % (kind, parent))
    os.chmod(args.workdir, 0o755)
    content = os.urandom(size)
    files = {}
    for fname, owner, mode in (("root", 0, 0o644), (args.user, pw.pw_uid,
                                                     0o600)):
        path = os.path.join(args.workdir, "file.%s" % fname)
        with open(path, "wb") as f:
            f.write(content)
            os.fsync(f.fileno())
        os.chown(path, owner, pw.pw_gid if owner else 0)
        os.chmod(path, mode)
        warm(path)
        files[fname] = path
    print("%d sessions of %s, a %d MiB file, Linux %s, %d CPUs" % (
        args.sessions, args.user, size // MiB, os.uname().release,
        os.cpu_count() or 0))
    print("server: %s %s" % (args.server, args.server_args))
    print("openssh: %s" % args.openssh, flush=True)
    t0 = time.monotonic()
    stalled = {}
    for fname, path in files.items():
        res = {"openssh": [], "server": []}
        try:
            for rnd in range(args.rounds):
                order = ("openssh", "server") if rnd % 2 == 0 else \
                    ("server", "openssh")
                for which in order:
                    res[which].append(stalled_run(
                        args, which, fname, path, content,
                        "%s-%s-%d" % (which, fname, rnd)))
        except (sc.SFTPError, OSError) as e:
            result(False, "%d stalled sessions of %s, file owned by %s: %s"
                   % (args.sessions, which, fname, e))
            continue
        result(True, "%d sessions of each server downloaded the file owned "
               "by %s, %d round(s), stalled with %d READs outstanding, "
               "every byte checked" % (args.sessions, fname, args.rounds,
                                       DEPTH))
        show_stalled(args, fname, res)
        stalled[fname] = res
        o, u = res["openssh"], res["server"]
        compare("file owned by %s, RSS+pipes" % fname, med(u, "cost"),
                med(o, "cost"), allowance)
        if args.cgroups:
            compare("file owned by %s, cgroup (kernel memory included)"
                    % fname, med(u, "cgroup"), med(o, "cgroup"), allowance)
    for fname, path in files.items():
        if not args.flood:
            break
        res = {}
        for which in ("openssh", "server"):
            try:
                res[which] = flood_run(args, which, fname, path, content,
                                       "flood-%s-%s" % (which, fname))
            except (sc.SFTPError, OSError) as e:
                result(False, "%s, %d READs unread, file owned by %s: %s" % (
                    which, FLOOD, fname, e))
        if len(res) < 2:
            continue
        o, u = res["openssh"], res["server"]
        print("\n%d sessions, each sent %d READs of %d KiB and read none, "
              "file owned by %s: MiB per session" % (
                  FLOOD_SESSIONS, FLOOD, BIG // KiB, fname))
        print("| server | VmRSS | RssAnon | VmHWM | pipes held | "
              "VmHWM+pipes | VmLck | VmPin | cgroup |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for which in ("openssh", "server"):
            m = res[which]
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                which, mib(m["VmRSS"]), mib(m["RssAnon"]), mib(m["VmHWM"]),
                mib(m["pipes"]), mib(m["peakcost"]), mib(m["VmLck"]),
                mib(m["VmPin"]), mib(m["cgroup"])))
        compare("%d unread READs, file owned by %s, peak RSS+pipes" % (
            FLOOD, fname), u["peakcost"], o["peakcost"], allowance)
        if args.cgroups:
            compare("%d unread READs, file owned by %s, cgroup" % (
                FLOOD, fname), u["cgroup"], o["cgroup"], allowance)
        if fname in stalled:
            s64 = max(r["max_peak"] for r in stalled[fname]["server"])
            result(u["peakcost"] <= s64 + MiB,
                   "%d unread READs, file owned by %s: peak RSS+pipes %s "
                   "MiB, with %d outstanding %s MiB (the stalled sessions' "
                   "largest): only the queue's READs cost memory"
                   % (FLOOD, fname, mib(u["peakcost"]), DEPTH, mib(s64)))
    print("\ntook %.1f s" % (time.monotonic() - t0))
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())

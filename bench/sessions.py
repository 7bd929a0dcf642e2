#!/usr/bin/python3
"""Concurrent sessions of one user: N sessions at once, OpenSSH's
sftp-server against ours.  Part of `make bench` (compare.sh runs
it after compare.py); see bench/README.md.  Standard library only.

Each session is one `sftp-load` (client and server on pipes, as sshd gives
them), all started together through a gate, all run as one unprivileged
user: when this runs as root, RUN_AS (default nobody) through setpriv, so
that the user's pipe quota (fs.pipe-user-pages-soft) applies as it does
under sshd; otherwise the invoking user.  Downloads read one warm file,
uploads write one file per session.  Measured per run:

  aggregate MiB/s   all bytes / wall time from the gate to the last exit
  server CPU        the servers' user+system time, summed (from wait4)
  RSS               each server's peak resident set (VmHWM), averaged
                    (n/a: the run ended before a sample)
  pipes             the pipe buffer capacity each server holds at its peak
                    (stdin and stdout included; what the quota counts),
                    averaged; needs root (the servers are not dumpable)
  ring              io_uring ring memory from fdinfo, plus 16 KiB per
                    io-wq worker thread (its kernel stack), averaged
  charged           the memory charged to a memory cgroup holding the
                    run's sessions (servers and load clients; page cache
                    left out: anonymous memory, pipe pages, io_uring
                    rings, page tables, slab), sampled every 50 ms, its
                    peak over the session count; the clients are the same
                    for every server, so the difference between servers is
                    theirs (as root, where a memory cgroup can be made)
  MemAvailable      drop during the run (the whole machine: noisy, two
                    rounds of one server differed by 300 MiB at 64
                    sessions; "charged" is the figure to compare)
  new pipe          while the sessions run, a new pipe made by the same
                    user: its default size and whether it grows to 1 MiB

Environment (sizes take K, M or G):
  SERVER [./uring-sftp-server]  OURS_ARGS [--backend=uring]
  OPENSSH [/usr/lib/openssh/sftp-server]  LOAD [bench/sftp-load]
  SESSIONS     comma list of session counts [1,4,16,64]; compare.sh
               skips this with SESSIONS=none
  DIRECTIONS   [download,download-shared,upload]: download-shared reads
               a file root owns (readable), download the user's own
  SESSION_SIZE bytes per download session [1G]: a run of 4 sessions at
               10 GB/s must outlast their start-up
  UPLOAD_SIZE  bytes per upload session [1 GiB / sessions, 64M at least]
  DISTINCT_SIZE  bytes per download session with distinct users, each a
               file of its own [4 GiB / sessions, 256M at least]
  SESSION_ROUNDS [2]  DEPTH [64]  RUN_AS [nobody, when root]
  DISTINCT_SESSIONS  comma list of session counts run once more with
               each session as a different user, on a file of its own
               (as root only) [16]; none skips it
  BENCH_USERS  comma list of the users for that [the first accounts in
               the passwd database with uids 1 to 64999: daemon, bin,
               sys, ... on Debian]; only files in BENCH_TMPDIR are theirs
  BENCH_OUT [bench/out]  BENCH_TMPDIR [/var/tmp]  STALL_TIMEOUT [60]
  BASELINE     another build of ours, run in the same rounds as a third
               server ("before" in the log and sessions.json)
"""

import fcntl
import json
import os
import pwd
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
from compare import as_user, env, give_to_user, log, parse_kv  # noqa: E402
from procinfo import children, parse_size, pipes_held, status  # noqa: E402
from memsessions import MemCgroup  # noqa: E402
MiB = 1 << 20
GiB = 1 << 30
BIG = 261120
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)


class Cfg:
    server = os.path.abspath(env("SERVER", "./uring-sftp-server"))
    ours_args = shlex.split(env("OURS_ARGS", "--backend=uring"))
    openssh = env("OPENSSH", "/usr/lib/openssh/sftp-server")
    load = os.path.abspath(env("LOAD", os.path.join(HERE, "sftp-load")))
    counts = [int(n) for n in env("SESSIONS", "1,4,16,64").split(",") if n]
    directions = [d for d in env("DIRECTIONS",
                                 "download,download-shared,upload").split(",")
                  if d]
    size = parse_size(env("SESSION_SIZE", "1G"))
    upload_size = parse_size(env("UPLOAD_SIZE", "0"))
    distinct_size = parse_size(env("DISTINCT_SIZE", "0"))
    rounds = int(env("SESSION_ROUNDS", "2"))
    depth = int(env("DEPTH", "64"))
    out = os.path.abspath(env("BENCH_OUT", os.path.join(HERE, "out")))
    tmpdir = env("BENCH_TMPDIR", "/var/tmp")
    stall = int(env("STALL_TIMEOUT", "60"))
    distinct = [int(n) for n in env("DISTINCT_SESSIONS", "16").split(",")
                if n.isdigit()]
    users = [u for u in env("BENCH_USERS", "").split(",") if u]


def meminfo_available():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def children_of(pids):
    """{pid: its child's pid} for the pids that have one."""
    kids = children()
    return {p: kids[p][0] for p in pids if p in kids}


def kernel_side(pid):
    """(pipe capacity, ring bytes) the kernel holds for the server: its
    pipes (each counted once) by F_GETPIPE_SZ, its io_uring rings from
    fdinfo.  None for the pipes without root."""
    pipes, ring = 0, 0
    for fd in pipes_held(pid):
        if fd is None:
            if os.getuid() != 0:
                pipes = None  # not root: cannot look
            continue  # root: exiting meanwhile
        if pipes is not None:
            pipes += fcntl.fcntl(fd, F_GETPIPE_SZ)
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        names = []
    for name in names:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, name)) == \
                    "anon_inode:[io_uring]":
                ring += ring_bytes(pid, name)
        except OSError:
            continue
    return pipes, ring


def ring_bytes(pid, fd):
    """Submission entries (64 B) and completion entries (16 B) plus the
    ring headers and the index array, each area page-rounded."""
    sq = cq = 0
    try:
        with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
            for line in f:
                if line.startswith("SqMask:"):
                    sq = int(line.split()[1], 16) + 1
                elif line.startswith("CqMask:"):
                    cq = int(line.split()[1], 16) + 1
    except OSError:
        return 0

    def pages(n):
        return (n + 4095) // 4096 * 4096
    return pages(sq * 64) + pages(cq * 16 + sq * 4 + 512)


class Sampler:
    """Every 50 ms: each server's VmHWM, threads, pipes and ring; the
    lowest MemAvailable.  Also runs the new-pipe probe once, as the user,
    once every server has been seen running (and its pipes made: they are
    made as its first READs start)."""

    def __init__(self, loads, n, cg=None):
        self.loads = loads
        self.n = n
        self.cg = cg
        self.charged = 0
        self.per = {}  # server pid -> dict of peaks
        self.mem0 = meminfo_available()
        self.mem_min = self.mem0
        self.probe = None
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        all_seen = None
        server_of = {}
        while not self.stop.is_set():
            if len(server_of) < self.n:
                server_of.update(children_of(
                    {p.pid for p in self.loads} - set(server_of)))
            servers = list(server_of.values())
            for s in servers:
                st = status(s, ("VmHWM", "VmRSS", "Threads"))
                if not st:
                    continue
                pipes, ring = kernel_side(s)
                d = self.per.setdefault(s, {"hwm": 0, "threads": 0,
                                            "pipes": 0, "ring": 0})
                d["hwm"] = max(d["hwm"], st.get("VmHWM", 0) * 1024)
                d["threads"] = max(d["threads"], st.get("Threads", 1))
                d["ring"] = max(d["ring"], ring)
                if pipes is None:
                    d["pipes"] = None
                elif d["pipes"] is not None:
                    d["pipes"] = max(d["pipes"], pipes)
            self.mem_min = min(self.mem_min, meminfo_available())
            if self.cg is not None:
                self.charged = max(self.charged, self.cg.usage())
            if len(self.per) >= self.n and all_seen is None:
                all_seen = time.monotonic()
            if all_seen is not None and self.probe is None and \
                    all(os.path.exists("/proc/%d" % s) for s in servers):
                self.probe = new_pipe_probe()
            self.stop.wait(0.05)

    def done(self):
        self.stop.set()
        self.thread.join()


# A new pipe: its default size, and its size after asking for 1 MiB (0:
# refused).  perl starts in a few ms; Python's start may outlast a run.
PROBE_PERL = ("pipe(R,W) or die; $d=fcntl(W,1032,0); $g=fcntl(W,1031,1<<20);"
              " print $d+0, ' ', ($g||0)+0, \"\\n\"")
PROBE_PY = ("import fcntl,os\n"
            "r,w=os.pipe()\n"
            "d=fcntl.fcntl(w,1032)\n"
            "try:\n g=fcntl.fcntl(w,1031,1<<20)\n"
            "except OSError:\n g=0\n"
            "print(d,g)\n")


def new_pipe_probe():
    """A new pipe made by the user now: (default size, size after asking
    for 1 MiB, 0 if refused)."""
    cmd = ["perl", "-e", PROBE_PERL] if shutil.which("perl") else \
        [sys.executable, "-c", PROBE_PY]
    p = subprocess.run(as_user() + cmd, capture_output=True, text=True,
                       timeout=30)
    try:
        d, g = p.stdout.split()
        return int(d), int(g)
    except ValueError:
        return None


def user_prefix(pw):
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
            "--init-groups", "--inh-caps=-all"]


def distinct_users(n):
    """n accounts to run one session each, with their own pipe quotas."""
    if Cfg.users:
        pws = [pwd.getpwnam(u) for u in Cfg.users]
    else:
        pws = sorted((p for p in pwd.getpwall()
                      if 0 < p.pw_uid < 65000), key=lambda p: p.pw_uid)
    seen, out = set(), []
    for p in pws:
        if p.pw_uid not in seen:
            seen.add(p.pw_uid)
            out.append(p)
    return out[:n] if len(out) >= n else None


def run_size(direction, n, users=None):
    """Bytes per session: enough in all that the run outlasts the
    sessions' start, little enough that distinct users' own files fit in
    memory."""
    if direction == "upload":
        return Cfg.upload_size or max(64 * MiB, GiB // n)
    if users:
        return Cfg.distinct_size or max(256 * MiB, 4 * GiB // n)
    return Cfg.size


# What each download direction reads: the sessions' user's own file, and
# one root owns and shares readable (both must be as fast).
SOURCES = {"download": "src", "download-shared": "src-shared"}


def warm(path):
    """Read path through the page cache.  Before every run, not once at
    the start: on this VM pages nobody touched for a minute or so leave
    the cache with gigabytes free (a 256 MiB file kept 90 MiB), so the
    rows run later found part of their file cold."""
    with open(path, "rb") as f:
        while f.read(4 * MiB):
            pass


def run_cgroup(name):
    """A memory cgroup for one run's sessions, or None (not root, or none
    can be made here)."""
    if os.geteuid() != 0:
        return None
    try:
        return MemCgroup("sessions-%s" % name)
    except OSError:
        return None


def one_run(w, direction, n, cmd, users=None):
    """n sessions of one server at once; returns the measurements.  With
    users, session i runs as users[i] on its own file, src.<uid>."""
    size = run_size(direction, n, users)
    cg = run_cgroup("%s-%d" % (direction, n))
    # Each session's shell moves itself into the run's group as root,
    # before it becomes the user and starts client and server.
    enter = "" if cg is None else "echo $$ > %s && " % shlex.quote(
        os.path.join(cg.path, "cgroup.procs"))
    if direction != "upload":
        for path in ([os.path.join(w, "src.%d" % u.pw_uid) for u in users]
                     if users and direction == "download"
                     else [os.path.join(w, SOURCES[direction])]):
            warm(path)
    loads = []
    for i in range(n):
        path = os.path.join(w, "up.%d" % i)
        if direction != "upload":
            path = os.path.join(w, SOURCES[direction])
        prefix = as_user()
        if users:
            prefix = user_prefix(users[i])
            if direction == "download":
                path = os.path.join(w, "src.%d" % users[i].pw_uid)
        argv = prefix + [Cfg.load, "-t", str(Cfg.stall), "-s", str(size),
                            "-b", str(BIG), "-q", str(Cfg.depth),
                            "upload" if direction == "upload" else "download",
                            path, "--"] + cmd
        # Each waits for a line on its stdin: the start of all at once.
        loads.append(subprocess.Popen(
            ["sh", "-c", enter + "read -r go && exec " + shlex.join(argv)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    sampler = Sampler(loads, n, cg)
    t0 = time.monotonic()
    for p in loads:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=600) for p in loads]
    wall = time.monotonic() - t0
    sampler.done()
    if cg is not None:
        cg.remove()
    cpu, errors = 0.0, []
    for p, (out, err) in zip(loads, outs):
        res = [parse_kv(line) for line in out.splitlines()
               if line.startswith("RESULT ")]
        if p.returncode or not res:
            errors.append("exit %d: %s" % (p.returncode, err.strip()[-300:]))
            continue
        cpu += float(res[0]["server_cpu"])
    if direction == "upload":
        for i in range(n):
            try:
                os.unlink(os.path.join(w, "up.%d" % i))
            except OSError:
                pass
    per = list(sampler.per.values())
    pipes = [d["pipes"] for d in per]

    def avg(v):
        return sum(v) / len(v) if v else 0
    return {
        "sessions": n, "bytes": n * size, "wall": wall,
        "mib_s": n * size / MiB / wall, "server_cpu": cpu,
        "cpu_s_per_gib": cpu / (n * size / GiB),
        "rss": avg([d["hwm"] for d in per if d["hwm"]]) or None,
        "pipes": None if None in pipes or not pipes else avg(pipes),
        "ring": avg([d["ring"] + 16384 * (d["threads"] - 1) for d in per])
        if per else None,
        "mem_drop": max(0, sampler.mem0 - sampler.mem_min),
        "charged": sampler.charged / n if cg is not None else None,
        "probe": sampler.probe, "errors": errors,
    }


def mib(v, digits=1):
    return "n/a" if v is None else "%.*f" % (digits, v / MiB)


def probe_text(p):
    if p is None:
        return "n/a"
    d, g = p
    ok = d >= 65536 and g >= MiB
    return "%d KiB%s" % (d // 1024, "" if ok else " **small**" if d < 65536
                         else ", 1 MiB refused")


def table(results):
    lines = ["| sessions | direction | OpenSSH MiB/s | ours MiB/s | ratio | "
             "OpenSSH CPU s | ours CPU s | CPU ratio | RSS/session MiB "
             "(OpenSSH, ours) | pipes/session MiB (OpenSSH, ours) | "
             "ring/session KiB (ours) | charged/session MiB (OpenSSH, "
             "ours) | MemAvailable drop MiB (OpenSSH, ours) | user's new "
             "pipe (OpenSSH, ours) |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---|---|---:|---|---|"
             "---|"]
    for key in sorted(results, key=lambda k: (k[1], k[0])):
        direction, n = key
        o, u = results[key]["openssh"], results[key]["ours"]
        if not o or not u:
            continue

        def med(runs, f):
            v = [r.get(f) for r in runs if r.get(f) is not None]
            return statistics.median(v) if v else None
        om, um = med(o, "mib_s"), med(u, "mib_s")
        oc, uc = med(o, "server_cpu"), med(u, "server_cpu")
        lines.append("| %d | %s | %.0f | %.0f | **%.2f** | %.2f | %.2f | "
                     "%.2f | %s, %s | %s, %s | %.0f | %s, %s | %s, %s | "
                     "%s, %s |" % (
                         n, direction, om, um, um / om, oc, uc,
                         uc / oc if oc else 0, mib(med(o, "rss")),
                         mib(med(u, "rss")), mib(med(o, "pipes"), 2),
                         mib(med(u, "pipes"), 2), (med(u, "ring") or 0) / 1024,
                         mib(med(o, "charged"), 2),
                         mib(med(u, "charged"), 2),
                         mib(med(o, "mem_drop"), 0),
                         mib(med(u, "mem_drop"), 0),
                         probe_text(o[-1]["probe"]),
                         probe_text(u[-1]["probe"])))
    return lines


def main():
    for p, what in ((Cfg.load, "load client"), (Cfg.server, "server"),
                    (Cfg.openssh, "OpenSSH's sftp-server")):
        if not os.access(p, os.X_OK):
            sys.exit("no %s at %s" % (what, p))
    os.makedirs(Cfg.out, exist_ok=True)
    w = tempfile.mkdtemp(prefix="sftp-sessions.", dir=Cfg.tmpdir)
    try:
        return bench(w)
    finally:
        shutil.rmtree(w, ignore_errors=True)


def run_rounds(w, direction, n, servers, results, users=None):
    """Cfg.rounds runs of n sessions of each server, the order rotated
    each round, into results[(direction, n)] (direction + " (users)" with
    users).  Returns whether a run failed."""
    key = (direction + (" (users)" if users else ""), n)
    results[key] = {name: [] for name, _ in servers}
    failed = False
    for rnd in range(Cfg.rounds):
        order = servers[rnd % len(servers):] + servers[:rnd % len(servers)]
        for name, cmd in order:
            r = one_run(w, direction, n, cmd, users)
            if r["errors"]:
                failed = True
                log("  %s x%d %s: FAILED: %s" % (
                    key[0], n, name, r["errors"][0]))
                continue
            results[key][name].append(r)
            log("  %-16s x%-3d %-8s %8.0f MiB/s  server CPU %6.2f s"
                "  RSS %5s MiB  pipes %5s MiB  new pipe %s" % (
                    key[0], n, name, r["mib_s"], r["server_cpu"],
                    mib(r["rss"]), mib(r["pipes"], 2),
                    probe_text(r["probe"])))
    return failed


def copy_head(src, dst, size):
    """The first size bytes of src into a new dst."""
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while size > 0:
            buf = fi.read(min(size, 4 * MiB))
            if not buf:
                break
            fo.write(buf)
            size -= len(buf)


def distinct_runs(w, src, servers, results):
    """The DISTINCT_SESSIONS counts, each session a different user on its
    own copy of src: keys ("download
    (users)", n).  Returns whether a run failed."""
    failed = False
    if os.getuid() != 0:
        return False
    for n in Cfg.distinct:
        users = distinct_users(n)
        if users is None:
            log("  %d distinct users: too few accounts (BENCH_USERS)" % n)
            continue
        copies = []
        if "download" in Cfg.directions:
            for pw in users:
                dst = os.path.join(w, "src.%d" % pw.pw_uid)
                copy_head(src, dst, run_size("download", n, users))
                os.chown(dst, pw.pw_uid, pw.pw_gid)
                os.chmod(dst, 0o600)
                with open(dst, "rb") as f:  # warm
                    while f.read(4 * MiB):
                        pass
                copies.append(dst)
        # Each user downloads a file of its own: no shared one here.
        for direction in Cfg.directions:
            if direction == "download-shared":
                continue
            failed = run_rounds(w, direction, n, servers, results,
                                users) or failed
        for c in copies:
            os.unlink(c)
    return failed


def bench(w):
    # Others may rebuild the server meanwhile: one copy throughout, where
    # the user can run it.
    os.chmod(w, 0o755)
    server = os.path.join(w, "uring-sftp-server")
    shutil.copy2(Cfg.server, server)
    load = os.path.join(w, "sftp-load")
    shutil.copy2(Cfg.load, load)
    Cfg.load = load
    give_to_user(w)
    who = pwd.getpwuid(int(as_user()[1].split("=")[1]) if as_user()
                       else os.getuid()).pw_name
    servers = [("openssh", [Cfg.openssh]), ("ours", [server] + Cfg.ours_args)]
    if os.environ.get("BASELINE"):
        # Another build of ours in the same rounds ("before" in
        # sessions.json and the log; the table stays OpenSSH's and ours).
        before = os.path.join(w, "uring-sftp-server-before")
        shutil.copy2(os.environ["BASELINE"], before)
        servers.append(("before", [before] + Cfg.ours_args))
    src = os.path.join(w, "src")
    subprocess.run([load, "-s", str(Cfg.size), "mkfile", src], check=True)
    os.chmod(src, 0o644)
    # The user's own file, as users mostly download theirs, and root's
    # readable copy, as a file another user shares.
    shared = os.path.join(w, SOURCES["download-shared"])
    if "download-shared" in Cfg.directions:
        shutil.copyfile(src, shared)
        os.chmod(shared, 0o644)
    give_to_user(src)
    for path in (src, shared):
        if os.path.exists(path):
            with open(path, "rb") as f:  # warm
                while f.read(4 * MiB):
                    pass
    os.chmod(w, 0o1777)  # every user's uploads land here
    soft = open("/proc/sys/fs/pipe-user-pages-soft").read().strip()
    log("sessions as %s (uid %d), fs.pipe-user-pages-soft %s" % (
        who, pwd.getpwnam(who).pw_uid, soft))
    results, failed = {}, False
    for direction in Cfg.directions:
        for n in Cfg.counts:
            failed = run_rounds(w, direction, n, servers, results) or failed
    failed = distinct_runs(w, src, servers, results) or failed
    head = ["## Concurrent sessions: %s" % time.strftime("%Y-%m-%d %H:%M"),
            "",
            "All sessions at once as user %s (fs.pipe-user-pages-soft %s), "
            "%d KiB READs and WRITEs, %d in flight; downloads %d MiB per "
            "session of one warm file, uploads %s per session; medians "
            "of %d rounds. %d CPUs, Linux %s. Server CPU is the sum over "
            "the sessions; RSS, pipes and ring are per session at its "
            "peak. Rows marked (users): each session a different user, on "
            "a warm file of its own (%s per session; the user's new pipe "
            "is still %s's)." % (
                who, soft, BIG // 1024, Cfg.depth, Cfg.size // MiB,
                "%d MiB" % (Cfg.upload_size // MiB) if Cfg.upload_size
                else "1 GiB in all (64 MiB at least)", Cfg.rounds,
                os.cpu_count() or 0, os.uname().release,
                "%d MiB" % (Cfg.distinct_size // MiB) if Cfg.distinct_size
                else "4 GiB in all, 256 MiB at least", who), ""]
    text = "\n".join(head + table(results)) + "\n"
    print(text)
    with open(os.path.join(Cfg.out, "sessions.md"), "w") as f:
        f.write(text)
    with open(os.path.join(Cfg.out, "sessions.json"), "w") as f:
        json.dump({"%s-%d" % k: v for k, v in results.items()}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

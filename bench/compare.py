#!/usr/bin/python3
"""Compare uring-sftp-server with OpenSSH's sftp-server in one run.

Every scenario runs R rounds; in each round every server runs once. The
order rotates: round r starts with server r mod n and goes on in list
order, so each server takes each place equally often (OpenSSH and ours
alone: A B, B A, A B, ...; with a third server C: A B C, B C A, C A B),
and drift hits all alike. The table gives medians and ours/OpenSSH ratios
with the lowest and highest per-round ratio; every transfer's data is
verified. bench/out/readme-table.md has doc/benchmarks.md's table, each ratio
with its per-round spread.
See bench/README.md. Standard library only.

Environment (sizes take K, M or G):
  SERVER        our server            [./uring-sftp-server]
  OURS_ARGS     its arguments         [--backend=uring]
  VARIANTS      extra columns: plain (ours --backend=plain), ges
                (/usr/libexec/gesftpserver)   [plain,ges]
  BASELINE      another build of ours (e.g. the last release), run with
                OURS_ARGS as one more column, "before", to see what a
                change cost or gained in the same run   [none]
  OPENSSH       [/usr/lib/openssh/sftp-server]
  GES           [/usr/libexec/gesftpserver]
  LOAD          the load client       [bench/sftp-load, next to this file]
  ROUNDS [5]  SIZE [256M]  SSHD_SIZE [SIZE]  PARAMIKO_SIZE [64M]
  RAND_COUNT [4096]  DEPTH [64]  SMALL_COUNT [1000]  SMALL_SIZE [4096]
  DIR_ENTRIES [20000]
  SLOW_DELAY_US [1000]  SLOW_SMALL_COUNT [300]  SLOW_DIR_ENTRIES [20000]
  SLOW_LIST_SECONDS [5]  SLOW_RAND_COUNT [1024]
                the slow-storage scenarios (tests/fusepass, as root)
  SCENARIOS     comma list of scenario names to run [all]
  PINNED        comma list of scenarios also run pinned, "none" for none
                [the sftp-load and sftp -D ones]
  PIN_CPU       the CPU for pinned runs [the last one]
  BENCH_OUT     [bench/out]   BENCH_TMPDIR [/var/tmp]
  STALL_TIMEOUT seconds without any reply before sftp-load fails [30]
  SNAPSHOT      0: run SERVER in place, not a copy taken at the start [1]
  RUN_AS        when run as root, the servers run as this user, as sshd
                would run them [nobody]; empty: as root
"""

import concurrent.futures
import datetime
import getpass
import json
import os
import pwd
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "tests"))
from procinfo import parse_size  # noqa: E402
GiB = 1 << 30
MiB = 1 << 20
BIG = 261120  # OpenSSH's largest read and write (256 KiB - 1024)


def env(name, default):
    return os.environ.get(name, default)


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def parse_kv(line):
    return {k: v for k, v in (w.split("=", 1) for w in line.split() if "=" in w)}


# --- paramiko client (run as a child: compare.py --paramiko-put ...) -------

class Channel:
    """What paramiko's SFTPClient needs of a channel, over a socket. Like
    paramiko's Transport, a thread reads whatever the server sends, so the
    server never blocks writing replies while paramiko is still sending (a
    pipelined put over a bare socket deadlocks otherwise)."""

    def __init__(self, sock, stall):
        self.sock = sock
        self.stall = stall
        self.buf = bytearray()
        self.eof = False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._reader, daemon=True)
        self.thread.start()

    def _reader(self):
        while True:
            try:
                data = self.sock.recv(1 << 20)
            except OSError:
                data = b""
            with self.cond:
                if data:
                    self.buf += data
                else:
                    self.eof = True
                self.cond.notify_all()
            if not data:
                return

    def recv(self, n):
        with self.cond:
            if not self.cond.wait_for(lambda: self.buf or self.eof,
                                      self.stall):
                raise RuntimeError("no reply from the server for %d s"
                                   % self.stall)
            data = bytes(self.buf[:n])
            del self.buf[:n]
            return data

    def recv_ready(self):
        with self.cond:
            return bool(self.buf)

    def send(self, data):
        return self.sock.send(data)

    def get_name(self):
        return "socketpair"

    def close(self):
        self.sock.shutdown(socket.SHUT_WR)


def paramiko_put(src, dst, cmd):
    import paramiko

    a, b = socket.socketpair()
    proc = subprocess.Popen(cmd, stdin=b.fileno(), stdout=b.fileno())
    b.close()
    sock = Channel(a, int(env("STALL_TIMEOUT", "30")))
    size = os.path.getsize(src)
    t0 = time.monotonic()
    client = paramiko.SFTPClient(sock)
    client.put(src, dst)
    secs = time.monotonic() - t0
    client.close()  # the server sees EOF
    _, status, ru = os.wait4(proc.pid, 0)
    a.close()
    if status:
        sys.exit("server exited with status %d" % status)
    cpu = ru.ru_utime + ru.ru_stime
    print("RESULT mode=paramiko-put bytes=%d seconds=%.6f mib_s=%.2f "
          "server_user=%.4f server_sys=%.4f server_cpu=%.4f "
          "cpu_s_per_gib=%.4f" % (size, secs, size / MiB / secs, ru.ru_utime,
                                  ru.ru_stime, cpu, cpu / (size / GiB)))


if len(sys.argv) > 1 and sys.argv[1] == "--paramiko-put":
    paramiko_put(sys.argv[2], sys.argv[3], sys.argv[5:])
    sys.exit(0)


# --- configuration ----------------------------------------------------------

class Cfg:
    rounds = int(env("ROUNDS", "5"))
    size = parse_size(env("SIZE", "256M"))
    sshd_size = parse_size(env("SSHD_SIZE", env("SIZE", "256M")))
    paramiko_size = parse_size(env("PARAMIKO_SIZE", "64M"))
    rand_count = parse_size(env("RAND_COUNT", "4096"))
    depth = int(env("DEPTH", "64"))
    small_count = parse_size(env("SMALL_COUNT", "1000"))
    small_size = parse_size(env("SMALL_SIZE", "4096"))
    dir_entries = parse_size(env("DIR_ENTRIES", "20000"))
    # Slow storage: tests/fusepass with this delay on every call.
    fusepass = env("FUSEPASS", os.path.join(HERE, "..", "tests", "fusepass"))
    slow_delay_us = int(env("SLOW_DELAY_US", "1000"))
    slow_small_count = parse_size(env("SLOW_SMALL_COUNT", "300"))
    slow_dir_entries = parse_size(env("SLOW_DIR_ENTRIES", "20000"))
    # Each slow listing stops asking for names after this many seconds
    # (0: never): OpenSSH's server, one lookup at a time, would take half
    # a minute for 20,000; the rate is of what was listed.
    slow_list_seconds = int(env("SLOW_LIST_SECONDS", "5"))
    slow_rand_count = parse_size(env("SLOW_RAND_COUNT", "1024"))
    stall = int(env("STALL_TIMEOUT", "30"))
    pin_cpu = int(env("PIN_CPU", str((os.cpu_count() or 1) - 1)))
    out = os.path.abspath(env("BENCH_OUT", os.path.join(HERE, "out")))
    tmpdir = env("BENCH_TMPDIR", "/var/tmp")
    load = os.path.abspath(env("LOAD", os.path.join(HERE, "sftp-load")))
    openssh = env("OPENSSH", "/usr/lib/openssh/sftp-server")
    ges = env("GES", "/usr/libexec/gesftpserver")
    server = os.path.abspath(env("SERVER", "./uring-sftp-server"))
    ours_args = shlex.split(env("OURS_ARGS", "--backend=uring"))
    variants = [v for v in env("VARIANTS", "plain,ges").split(",") if v]
    baseline = env("BASELINE", "")
    python = "/usr/bin/python3"


def as_user():
    """The prefix that runs a server as RUN_AS (default nobody) when this
    runs as root: sshd runs the subsystem as the logged-in user, whose
    pipe quota (fs.pipe-user-pages-soft) applies; root is exempt.  [] when
    not root or RUN_AS is empty."""
    name = env("RUN_AS", "nobody")
    if os.getuid() != 0 or not name:
        return []
    pw = pwd.getpwnam(name)
    return ["setpriv", "--reuid=%d" % pw.pw_uid, "--regid=%d" % pw.pw_gid,
            "--init-groups", "--inh-caps=-all"]


def give_to_user(path):
    """Let the servers' user write in path (uploads land there)."""
    prefix = as_user()
    if prefix:
        uid, gid = (int(a.split("=")[1]) for a in prefix[1:3])
        os.chown(path, uid, gid)


def servers():
    u = as_user()
    s = [("openssh", "OpenSSH", u + [Cfg.openssh]),
         ("ours", "ours", u + [Cfg.server] + Cfg.ours_args)]
    if "plain" in Cfg.variants:
        s.append(("plain", "ours plain",
                  u + [Cfg.server, "--backend=plain"]))
    if "ges" in Cfg.variants and os.access(Cfg.ges, os.X_OK):
        s.append(("ges", "gesftpserver", u + [Cfg.ges]))
    if Cfg.baseline:
        s.append(("before", "ours before",
                  u + [os.path.abspath(Cfg.baseline)] + Cfg.ours_args))
    return s


# --- the machine ------------------------------------------------------------

def drop_caches():
    """Drops the page cache; returns False where that is not allowed."""
    subprocess.run(["sync"], check=False)
    try:
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def prewarm(path):
    with open(path, "rb", buffering=0) as f:
        while f.read(4 * MiB):
            pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sshd:
    """A throwaway sshd on 127.0.0.1 whose sftp subsystem is one server."""

    def __init__(self, work, key, name, cmd):
        self.dir = work
        self.port = free_port()
        self.rusage = os.path.join(work, "rusage-sshd-" + name)
        cfg = os.path.join(work, "sshd_config-" + name)
        sub = "%s wrap %s -- %s" % (Cfg.load, self.rusage, shlex.join(cmd))
        with open(cfg, "w") as f:
            f.write("\n".join([
                "Port %d" % self.port,
                "ListenAddress 127.0.0.1",
                "HostKey %s/hostkey" % work,
                "PidFile %s/sshd-%s.pid" % (work, name),
                "AuthorizedKeysFile %s/authorized_keys" % work,
                "UsePAM no",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "StrictModes no",
                "LogLevel ERROR",
                "Subsystem sftp %s" % sub,
                ""]))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        subprocess.run(["/usr/sbin/sshd", "-t", "-f", cfg], check=True)
        self.log = open(os.path.join(work, "sshd-%s.log" % name), "w")
        self.proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", cfg],
                                     stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("sshd for %s did not start (see %s)"
                                       % (name, self.log.name))
                time.sleep(0.05)
        self.key = key

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


# --- running one transfer ---------------------------------------------------

class RunError(Exception):
    pass


def run_cmd(cmd, timeout=600):
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=timeout)
    if p.returncode:
        raise RunError("%s: exit %d: %s" % (shlex.join(cmd[:6]), p.returncode,
                                            (p.stderr or p.stdout).strip()[-800:]))
    return p.stdout


def load_result(out):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return parse_kv(line)
    raise RunError("no RESULT line in: " + out[-400:])


def check_file(path, size):
    run_cmd([Cfg.load, "-s", str(size), "check", path])


def read_rusage(path, wait=10.0):
    deadline = time.monotonic() + wait
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise RunError("the server's rusage never appeared in " + path)
        time.sleep(0.01)
    with open(path) as f:
        r = parse_kv(f.read())
    if r.get("status") != "0":
        raise RunError("server exited with status %s" % r.get("status"))
    return float(r["server_user"]) + float(r["server_sys"])


def timed_client(cmd, rusage, nbytes):
    """Runs a client (sftp) that starts the server through 'sftp-load wrap'."""
    if os.path.exists(rusage):
        os.unlink(rusage)
    t0 = time.monotonic()
    run_cmd(cmd)
    secs = time.monotonic() - t0
    cpu = read_rusage(rusage)
    return {"bytes": nbytes, "seconds": secs, "mib_s": nbytes / MiB / secs,
            "server_cpu": cpu, "cpu_s_per_gib": cpu / (nbytes / GiB)}


# --- scenarios --------------------------------------------------------------

class Scenario:
    def __init__(self, name, title, metric, run, before=None, cpu_unit="s/GiB",
                 pinnable=True, skip=None, option=False):
        self.name = name
        self.title = title
        self.metric = metric          # "MiB/s", "IOPS", "files/s", ...
        self.run = run                # run(server key, cmd, pin) -> dict
        self.before = before          # before() each run
        self.cpu_unit = cpu_unit
        self.pinnable = pinnable
        self.skip = skip or {}        # server key -> why it is not run
        self.option = option          # ours with an option OpenSSH lacks
        self.limit = None             # (value, how): limit_of()
        self.limit_buf = None         # (value, how): buffered_limit_of()
        self.replayed = None          # a session of ours recorded: its
                                      # files, in RECORDED's order; the
                                      # replay's rate is the limit
        self.replays = None           # the replay's results, per round


# Every download runs on the servers' user's own file and again on one
# another user (root) owns and shares readable: both must be as fast.
OTHERS = "of a file another user owns"
# The columns the upload options' scenarios give the option: ours and
# ours plain.  "ours before" (BASELINE) runs without it, so BASELINE set to
# the same build gives the option's cost in the same rounds.  gesftpserver
# has none of these options.
OURS_KEYS = ("ours", "plain")
NO_OPTION = {"ges": "skip: no such option"}


# The scenarios that need the throwaway sshds.
SSHD_NAMES = {"sshd-put", "sshd-get", "sshd-get-chacha", "sshd-get-32k"}


def make_scenarios(w, cold):
    src = os.path.join(w, "src")
    src_shared = os.path.join(w, "src-shared")
    up = os.path.join(w, "up")
    got = os.path.join(w, "got")
    small = os.path.join(w, "small")
    bigdir = os.path.join(w, "dir")
    src_sshd = os.path.join(w, "src-sshd") if Cfg.sshd_size != Cfg.size else src
    src_pm = os.path.join(w, "src-paramiko")
    rus = os.path.join(w, "rusage-direct")
    D = Cfg.depth
    temp = "cold" if cold else "warm"

    def load(mode, path, *args):
        def run(key, cmd, pin):
            out = run_cmd(pin + [Cfg.load, "-t", str(Cfg.stall)] +
                          list(args) + [mode, path, "--"] + cmd)
            return load_result(out)
        return run

    def unlink_up():
        for p in (up, got):
            if os.path.exists(p):
                os.unlink(p)

    def uncache():
        unlink_up()
        drop_caches()

    def warm():
        unlink_up()
        prewarm(src)

    def warm_shared():
        unlink_up()
        prewarm(src_shared)

    def warm_dir():
        for e in os.scandir(bigdir):
            e.stat(follow_symlinks=False)

    # Slow storage (SLOW, mounted by bench()): every run of small files in
    # a directory of its own, made beside the mount, so that no name the
    # kernel has cached from an earlier run is reused.
    slow = os.path.join(w, "slow")
    slow_runs = [0]

    def slow_small(key, cmd, pin):
        slow_runs[0] += 1
        name = "small.%d" % slow_runs[0]
        os.mkdir(os.path.join(w, "slow-src", name), 0o777)
        os.chmod(os.path.join(w, "slow-src", name), 0o777)
        out = run_cmd(pin + [Cfg.load, "-t", str(Cfg.stall), "-n",
                             str(Cfg.slow_small_count), "-k",
                             str(Cfg.small_size), "-q", str(D), "smallfiles",
                             os.path.join(slow, name), "--"] + cmd)
        return load_result(out)
    slow_title = "on storage with %d us per call (FUSE)" % Cfg.slow_delay_us
    list_limit = (["-T", str(Cfg.slow_list_seconds)]
                  if Cfg.slow_list_seconds > 0 else [])
    list_note = (" (at most %d s)" % Cfg.slow_list_seconds
                 if Cfg.slow_list_seconds > 0 else "")

    slow_listed = [False]

    def slow_list_warm():
        # Names in the kernel's cache (from a first pass, many lookups at
        # a time, then the runs before), none of them still valid:
        # libfuse's 1 s timeouts have passed, so each costs a LOOKUP, as
        # in the cold run, but without the directory's lock.  The first
        # pass is made here, not at mount time: the cold scenarios before
        # drop the caches.
        if not slow_listed[0]:
            d = os.path.join(slow, "dir")
            with concurrent.futures.ThreadPoolExecutor(32) as ex:
                for _ in ex.map(lambda n: os.lstat(os.path.join(d, n)),
                                os.listdir(d)):
                    pass
            slow_listed[0] = True
        time.sleep(ENTRY_TIMEOUT + 0.5)

    def slow_list_cold(key, cmd, pin):
        # A fresh mount: nothing of it in the kernel's caches.
        cold_mnt = remount_slow_cold(w)
        try:
            r = load("listdir", os.path.join(cold_mnt, "dir"), "-n",
                     str(Cfg.slow_dir_entries), *list_limit)(key, cmd, pin)
        finally:
            stats = unmount_slow_cold(w)
        log("    %s: fusepass %s" % (key, stats))
        return r

    def fresh_small():
        shutil.rmtree(small, ignore_errors=True)
        os.mkdir(small)
        give_to_user(small)

    def verified(fn, path, size):
        def run(key, cmd, pin):
            r = fn(key, cmd, pin)
            check_file(path, size)
            os.unlink(path)
            return r
        return run

    def sftp_direct(op):
        def run(key, cmd, pin):
            batch = os.path.join(w, "batch")
            with open(batch, "w") as f:
                f.write("put %s %s\n" % (src, up) if op == "put"
                        else "get %s %s\n" % (src, got))
            direct = "%s wrap %s -- %s" % (Cfg.load, rus, shlex.join(cmd))
            c = pin + ["sftp", "-q", "-B", str(BIG), "-R", str(D), "-b", batch,
                       "-D", direct]
            return timed_client(c, rus, Cfg.size)
        return verified(run, up if op == "put" else got, Cfg.size)

    def via_sshd(op, cipher="aes128-gcm@openssh.com", block=BIG):
        def run(key, cmd, pin):
            sshd = SSHDS[key]
            batch = os.path.join(w, "batch")
            with open(batch, "w") as f:
                f.write("put %s %s\n" % (src_sshd, up) if op == "put"
                        else "get %s %s\n" % (src_sshd, got))
            c = pin + ["sftp", "-q", "-F", "/dev/null",
                       "-o", "IdentityFile=" + sshd.key,
                       "-o", "IdentitiesOnly=yes",
                       "-o", "UserKnownHostsFile=/dev/null",
                       "-o", "StrictHostKeyChecking=no",
                       "-o", "BatchMode=yes", "-o", "LogLevel=ERROR",
                       "-c", cipher,
                       "-P", str(sshd.port), "-B", str(block), "-R", str(D),
                       "-b", batch, getpass.getuser() + "@127.0.0.1"]
            return timed_client(c, sshd.rusage, Cfg.sshd_size)
        return verified(run, up if op == "put" else got, Cfg.sshd_size)

    def ours_with(extra, fn):
        """fn with extra options for our server (every column of ours);
        OpenSSH's server, which has none of them, runs as it is."""
        def run(key, cmd, pin):
            return fn(key, cmd + extra if key in OURS_KEYS else cmd, pin)
        return run

    def with_options(name, title, metric, run, **kw):
        """The scenario again with ours given each upload option."""
        return [Scenario("%s-%s" % (name, short), "%s, ours with --%s"
                         % (title, opt), metric, ours_with(["--" + opt], run),
                         pinnable=False, skip=NO_OPTION, option=True, **kw)
                for short, opt in (("atomic", "atomic-uploads"),
                                   ("fsync", "fsync-on-close"))]

    def src_uncached():
        # This file only, never the machine's cache: a cold download
        # without root too.
        unlink_up()
        fd = os.open(src, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

    def nocache_checked(path, fn, verify_size=None):
        """fn, then for ours the --nocache target: at most 5% of path in
        the page cache (fincore); then the data checked (an upload's is
        read back only now, which caches it)."""
        def run(key, cmd, pin):
            r = fn(key, cmd, pin)
            res, size = run_cmd(["fincore", "-nb", "-o", "RES,SIZE",
                                 path]).split()[:2]
            pct = 100.0 * int(res) / max(1, int(size))
            log("    %s: %.1f%% of %s cached after" % (
                key, pct, os.path.basename(path)))
            if key in OURS_KEYS and pct > 5:
                raise RunError("--nocache left %.1f%% of %s cached (the "
                               "target: at most 5%%)" % (pct, path))
            if verify_size:
                check_file(path, verify_size)
                os.unlink(path)
            return r
        return run

    def paramiko(key, cmd, pin):
        out = run_cmd(pin + [Cfg.python, os.path.abspath(__file__),
                             "--paramiko-put", src_pm, up, "--"] + cmd)
        return load_result(out)

    S = Scenario
    size = "%d MiB" % (Cfg.size // MiB)
    sc = [
        S("cold-download", "%s download %s, 255 KiB x %d" % (temp, size, D),
          "MiB/s", load("download", src, "-b", str(BIG), "-q", str(D),
                        "-s", str(Cfg.size)),
          before=uncache if cold else warm),
        S("cold-download-shared", "%s download %s, 255 KiB x %d, %s"
          % (temp, size, D, OTHERS), "MiB/s",
          load("download", src_shared, "-b", str(BIG), "-q", str(D),
               "-s", str(Cfg.size)),
          before=uncache if cold else warm_shared, pinnable=False),
        S("cold-randread-32k", "%s random reads 32 KiB x %d (%d reads)"
          % (temp, D, Cfg.rand_count), "IOPS",
          load("randread", src, "-b", "32768", "-q", str(D), "-s",
               str(Cfg.size), "-n", str(Cfg.rand_count)),
          before=uncache if cold else warm),
        S("cold-randread-32k-shared", "%s random reads 32 KiB x %d (%d "
          "reads), %s" % (temp, D, Cfg.rand_count, OTHERS), "IOPS",
          load("randread", src_shared, "-b", "32768", "-q", str(D), "-s",
               str(Cfg.size), "-n", str(Cfg.rand_count)),
          before=uncache if cold else warm_shared, pinnable=False),
        S("upload-32k", "upload %s, 32 KiB x %d" % (size, D), "MiB/s",
          load("upload", up, "-b", "32768", "-q", str(D), "-s", str(Cfg.size)),
          before=unlink_up),
        S("upload-255k", "upload %s, 255 KiB x %d" % (size, D), "MiB/s",
          load("upload", up, "-b", str(BIG), "-q", str(D), "-s", str(Cfg.size)),
          before=unlink_up),
        S("nocache-download", "cold download %s, 255 KiB x %d, ours with "
          "--nocache" % (size, D), "MiB/s",
          ours_with(["--nocache"], nocache_checked(src, load(
              "download", src, "-b", str(BIG), "-q", str(D), "-s",
              str(Cfg.size)))),
          before=src_uncached, pinnable=False, skip=NO_OPTION, option=True),
        S("nocache-upload", "upload %s, 255 KiB x %d, ours with --nocache"
          % (size, D), "MiB/s",
          ours_with(["--nocache"], nocache_checked(up, load(
              "upload", up, "--no-verify", "-b", str(BIG), "-q", str(D),
              "-s", str(Cfg.size)), Cfg.size)),
          before=unlink_up, pinnable=False, skip=NO_OPTION, option=True),
        S("download-32k", "warm download %s, 32 KiB x %d" % (size, D), "MiB/s",
          load("download", src, "-b", "32768", "-q", str(D), "-s",
               str(Cfg.size)), before=warm),
        S("download-32k-shared", "warm download %s, 32 KiB x %d, %s"
          % (size, D, OTHERS), "MiB/s",
          load("download", src_shared, "-b", "32768", "-q", str(D), "-s",
               str(Cfg.size)), before=warm_shared, pinnable=False),
        S("download-255k", "warm download %s, 255 KiB x %d" % (size, D),
          "MiB/s", load("download", src, "-b", str(BIG), "-q", str(D), "-s",
                        str(Cfg.size)), before=warm),
        S("download-255k-shared", "warm download %s, 255 KiB x %d, %s"
          % (size, D, OTHERS), "MiB/s",
          load("download", src_shared, "-b", str(BIG), "-q", str(D),
               "-s", str(Cfg.size)), before=warm_shared, pinnable=False),
        *with_options("upload-255k", "upload %s, 255 KiB x %d" % (size, D),
                      "MiB/s", load("upload", up, "-b", str(BIG), "-q",
                                    str(D), "-s", str(Cfg.size)),
                      before=unlink_up),
        S("devnull-32k", "upload %s to /dev/null, 32 KiB x %d" % (size, D),
          "MiB/s", load("upload", "/dev/null", "-b", "32768", "-q", str(D),
                        "-s", str(Cfg.size))),
        S("devnull-255k", "upload %s to /dev/null, 255 KiB x %d" % (size, D),
          "MiB/s", load("upload", "/dev/null", "-b", str(BIG), "-q", str(D),
                        "-s", str(Cfg.size))),
        S("smallfiles", "%d files of %d B: create, then read back (%d in "
          "flight)" % (Cfg.small_count, Cfg.small_size, D), "files/s",
          load("smallfiles", small, "-n", str(Cfg.small_count), "-k",
               str(Cfg.small_size), "-q", str(D)),
          before=fresh_small, cpu_unit="us/file", pinnable=False),
        *with_options("smallfiles", "%d files of %d B: create, then read "
                      "back (%d in flight)" % (Cfg.small_count,
                                               Cfg.small_size, D), "files/s",
                      load("smallfiles", small, "-n", str(Cfg.small_count),
                           "-k", str(Cfg.small_size), "-q", str(D)),
                      before=fresh_small, cpu_unit="us/file"),
        S("listdir", "list a directory of %d entries" % Cfg.dir_entries,
          "entries/s", load("listdir", bigdir, "-n", str(Cfg.dir_entries)),
          before=warm_dir, cpu_unit="us/entry", pinnable=False),
        S("slow-smallfiles", "%d files of %d B: create, then read back (%d "
          "in flight), %s" % (Cfg.slow_small_count, Cfg.small_size, D,
                               slow_title), "files/s", slow_small,
          cpu_unit="us/file", pinnable=False),
        S("slow-listdir", "list a directory of %d entries, %s, warm%s"
          % (Cfg.slow_dir_entries, slow_title, list_note),
          "entries/s", load("listdir", os.path.join(slow, "dir"), "-n",
                            str(Cfg.slow_dir_entries), *list_limit),
          before=slow_list_warm, cpu_unit="us/entry", pinnable=False),
        S("slow-listdir-cold", "list a directory of %d entries, %s, cold "
          "(a fresh mount)%s" % (Cfg.slow_dir_entries, slow_title,
                                 list_note),
          "entries/s", slow_list_cold, cpu_unit="us/entry", pinnable=False),
        S("slow-randread-32k", "random reads 32 KiB x %d (%d reads), %s"
          % (D, Cfg.slow_rand_count, slow_title), "IOPS",
          load("randread", os.path.join(slow, "rand"), "-b", "32768", "-q",
               str(D), "-s", str(64 * MiB), "-n", str(Cfg.slow_rand_count)),
          pinnable=False),
        S("sftp-D-put", "sftp -D put %s (-B %d -R %d)" % (size, BIG, D),
          "MiB/s", sftp_direct("put"), before=warm),
        S("sftp-D-get", "sftp -D get %s (-B %d -R %d)" % (size, BIG, D),
          "MiB/s", sftp_direct("get"), before=warm),
        S("paramiko-put", "paramiko put %d MiB (32 KiB writes, socketpair)"
          % (Cfg.paramiko_size // MiB), "MiB/s", paramiko, before=unlink_up,
          pinnable=False,
          # paramiko 2.12's pipelined write drops replies that come out of
          # order and then waits for them forever; gesftpserver answers
          # out of order.
          skip={"ges": "skip: paramiko hangs on out-of-order replies"}),
        S("sshd-put", "sshd put %d MiB (aes128-gcm)" % (Cfg.sshd_size // MiB),
          "MiB/s", via_sshd("put"), before=warm, pinnable=False),
        S("sshd-get", "sshd get %d MiB (aes128-gcm)" % (Cfg.sshd_size // MiB),
          "MiB/s", via_sshd("get"), before=warm, pinnable=False),
        S("sshd-get-chacha",
          "sshd get %d MiB (chacha20-poly1305)" % (Cfg.sshd_size // MiB),
          "MiB/s", via_sshd("get", "chacha20-poly1305@openssh.com"),
          before=warm, pinnable=False),
        # 32 KiB READs, as paramiko, rclone and OpenSSH's sftp (where the
        # server states no limits) ask: 64 of them are about the ssh
        # client's 2 MiB channel window, so the window does not bound
        # them as it bounds 255 KiB ones (doc/benchmarks.md)
        S("sshd-get-32k",
          "sshd get %d MiB, 32 KiB requests (aes128-gcm)"
          % (Cfg.sshd_size // MiB),
          "MiB/s", via_sshd("get", block=32768), before=warm,
          pinnable=False),
    ]
    want = env("SCENARIOS", "")
    if want:
        names = want.split(",")
        unknown = set(names) - {s.name for s in sc}
        if unknown:
            sys.exit("unknown scenarios: %s (known: %s)" % (
                ",".join(sorted(unknown)), ",".join(s.name for s in sc)))
        sc = [s for s in sc if s.name in names]
    return sc


SSHDS = {}


# --- device and copy limits -------------------------------------------------
# Beside every row, what the machine gives without any SFTP at all, so
# each rate also says how close to the limit it is: fio with O_DIRECT at
# the scenario's depth and block size for cold reads (the device), a pipe
# copy (cat | cat) of the warm file for warm rows (the two copies every
# server makes at the least).  Cold rows also get fio's buffered figure
# (the page cache's limit: what any server reading through the page cache
# can reach), from a cold file each time.  Measured once per run, before
# the rounds.

def fio_run(path, rw, bs, depth, direct=True, engine="io_uring"):
    """fio rw of path, bs bytes at depth: MiB/s (read) or IOPS (randread).
    O_DIRECT: 5 s, time-based.  Buffered: the file's pages dropped first
    (invalidate), read once (sequential) or half of it at random offsets,
    none twice, so that no read finds a page an earlier one cached."""
    size = os.path.getsize(path)
    args = ["fio", "--name=limit", "--filename=" + path, "--readonly",
            "--ioengine=" + engine, "--rw=" + rw, "--bs=%d" % bs,
            "--size=%d" % size, "--output-format=json"]
    if engine == "io_uring":
        args.append("--iodepth=%d" % depth)
    if direct:
        args += ["--direct=1", "--runtime=5", "--time_based"]
    else:
        args += ["--direct=0", "--invalidate=1"]
        if rw == "randread":
            args.append("--io_size=%d" % (size // 2))
    out = run_cmd(args)
    job = json.loads(out[out.index("{"):])["jobs"][0]["read"]
    return job["iops"] if rw == "randread" else job["bw_bytes"] / MiB


def fio_limit(path, rw, bs, depth):
    """fio O_DIRECT at the scenario's depth: the device's limit."""
    return fio_run(path, rw, bs, depth)


def fio_buffered_limit(path, rw, bs, depth, runs=3):
    """fio buffered (through the page cache), cold: the median of runs,
    each the better of io_uring at depth and, for sequential reads, psync
    (one read at a time, the kernel's read-ahead giving the depth).
    (value, how)."""
    engines = ["io_uring"] + (["psync"] if rw == "read" else [])
    best = {}
    for _ in range(runs):
        for e in engines:
            best.setdefault(e, []).append(
                fio_run(path, rw, bs, depth, direct=False, engine=e))
    e = max(engines, key=lambda k: med(best[k]))
    return med(best[e]), "fio buffered %s %s" % (
        "io_uring QD%d" % depth if e == "io_uring" else "psync", "cold")


def pipe_limit(path, dest):
    """A warm pipe copy, cat path | cat >dest: MiB/s."""
    prewarm(path)
    t0 = time.monotonic()
    subprocess.run("cat %s | cat >%s" % (shlex.quote(path), shlex.quote(dest)),
                   shell=True, check=True)
    took = time.monotonic() - t0
    if dest != "/dev/null":
        os.unlink(dest)
    return os.path.getsize(path) / MiB / took


def cold_fio(sc, cold):
    """(rw, bs) of fio for a cold read row, or None."""
    if sc.name.startswith("cold-randread") and cold:
        return "randread", 32768
    if sc.name == "nocache-download" or (
            sc.name.startswith("cold-download") and cold):
        return "read", BIG
    return None


# Through sshd, the limit is what sshd and the client reach with a server
# that does nothing but hand sshd the replies: one session of ours with the
# scenario's client is recorded before the rounds (sshd "record": ours
# with its stdin and stdout copied by tee), then, in every round beside
# the servers, `sftp-load replay` sends the recorded replies without
# copying them (splice) and checks that the requests were the recorded
# ones (sshd "replay").  The client asks the same requests in the
# same order every time (OpenSSH's sftp sends its next READs only as
# replies come in, its ids in order), so the recorded replies answer them;
# a request that differed would fail the run, and the file the client
# writes is checked as after every run.  The limit is the replay's median
# over the rounds.
REPLAY = "replay"
RECORDED = ("replies", "requests")


def script(w, name, text):
    """A shell script in w (sshd runs a Subsystem line through the user's
    shell, which quoting in it would not survive)."""
    path = os.path.join(w, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + text + "\n")
    os.chmod(path, 0o755)
    return [path]


def record_cmd(w, ours):
    replies, requests = (shlex.quote(os.path.join(w, n)) for n in RECORDED)
    return script(w, "record.sh", "tee %s | %s | tee %s" % (
        requests, shlex.join(ours), replies))


def replay_cmd(w):
    return [Cfg.load, "replay"] + [os.path.join(w, n) for n in RECORDED]


def record_replies(sc, w):
    """Records a session of ours with sc's client into files of sc's own
    (sc.replayed); the rounds run the replay beside the servers
    (run_scenario)."""
    try:
        if sc.before:
            sc.before()
        sc.run("record", None, [])
        files = [os.path.join(w, "%s-%s" % (n, sc.name)) for n in RECORDED]
        for n, f in zip(RECORDED, files):
            os.replace(os.path.join(w, n), f)
        sc.replayed = files
    except (RunError, subprocess.TimeoutExpired, OSError, ValueError,
            KeyError) as e:
        log("  limit of %s: recording a session failed: %s" % (sc.name, e))


def replay_these(files):
    """The replay answers with this recording from now on (its replies
    read once, so that no round finds them cold)."""
    for n, f in zip(RECORDED, files):
        path = os.path.join(os.path.dirname(f), n)
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(f, path)
    prewarm(files[0])


def replay_how(cpu):
    """The limit's label, with the replay's own CPU per GiB: what feeding
    sshd's reads from a pipe costs with no copy of the bytes."""
    return ("sshd, with a server that only hands it recorded replies "
            "(no copy, %.2f s/GiB), in the same rounds" % cpu)


def limit_of(sc, w, cold):
    """(value, how) for sc's row, or None where no plain copy compares."""
    if sc.name.startswith("sshd-get") and REPLAY in SSHDS:
        record_replies(sc, w)
        return None
    src = os.path.join(w, "src")
    io = cold_fio(sc, cold)
    try:
        if io:
            return fio_limit(src, io[0], io[1], Cfg.depth), \
                "fio O_DIRECT %s %s QD%d" % (
                    io[0], "32 KiB" if io[1] == 32768 else "255 KiB",
                    Cfg.depth)
    except (RunError, OSError, ValueError, KeyError) as e:
        log("  limit of %s: fio failed: %s" % (sc.name, e))
        return None
    if sc.name.startswith(("upload-", "sftp-D-put", "nocache-upload")):
        return pipe_limit(src, os.path.join(w, "limit-copy")), \
            "pipe copy into a file"
    if sc.name.startswith(("download-", "sftp-D-get", "devnull-",
                           "cold-download")):
        return pipe_limit(src, "/dev/null"), "pipe copy"
    return None


def buffered_limit_of(sc, w, cold):
    """(value, how) of fio through the page cache for a cold read row, or
    None."""
    io = cold_fio(sc, cold)
    if not io:
        return None
    try:
        return fio_buffered_limit(os.path.join(w, "src"), io[0], io[1],
                                  Cfg.depth)
    except (RunError, OSError, ValueError, KeyError) as e:
        log("  buffered limit of %s: fio failed: %s" % (sc.name, e))
        return None


def metric_of(sc, r):
    if sc.metric == "MiB/s":
        return float(r["mib_s"])
    return float(r["ops_s"])


def cpu_of(sc, r):
    if sc.cpu_unit == "s/GiB":
        return float(r["cpu_s_per_gib"])
    return float(r["server_cpu"]) / max(1.0, float(r["ops"])) * 1e6


# --- the run ----------------------------------------------------------------

def run_scenario(sc, srv, pin, results):
    """Runs sc R rounds over all servers; fills results[server] lists."""
    tag = " pinned" if pin else ""
    if sc.replayed and not pin:
        replay_these(sc.replayed)
        srv = srv + [(REPLAY, REPLAY, None)]
    for s in srv:
        results[s[0]] = {"rate": [], "cpu": [], "error": None,
                         "skip": sc.skip.get(s[0])}
    for rnd in range(Cfg.rounds):
        # rotated: every server in every place equally often (see the top)
        k = rnd % len(srv)
        for key, label, cmd in srv[k:] + srv[:k]:
            res = results[key]
            if res["error"] or res["skip"]:
                continue
            try:
                if sc.before:
                    sc.before()
                r = sc.run(key, cmd, pin)
            except (RunError, subprocess.TimeoutExpired, OSError) as e:
                res["error"] = str(e)
                log("  %s%s round %d %s: FAILED: %s" % (sc.name, tag, rnd + 1,
                                                         label, e))
                continue
            res["rate"].append(metric_of(sc, r))
            res["cpu"].append(cpu_of(sc, r))
            log("  %-18s%s round %d %-12s %10.1f %s  cpu %.3f %s" % (
                sc.name, tag, rnd + 1, label, res["rate"][-1], sc.metric,
                res["cpu"][-1], sc.cpu_unit))
    # The replay is the row's limit, not a server of the table; a round
    # it failed (a request not the recorded one, say) fails the bench
    # (bench()), and a limit is given only over all the rounds.
    replay = results.pop(REPLAY, None)
    if replay:
        sc.replays = replay
        if len(replay["rate"]) == Cfg.rounds:
            sc.limit = (med(replay["rate"]), replay_how(med(replay["cpu"])))


def med(v):
    return statistics.median(v) if v else None


def fmt(v, digits=None, skip=None):
    if v is None:
        return skip or "FAIL"
    if digits is None:
        digits = 0 if v >= 100 else 1 if v >= 10 else 2 if v >= 1 else 3
    return "%.*f" % (digits, v)


def ratio(a, b):
    if a is None or b is None or b == 0:
        return None
    return a / b


def fmt_ratio(r):
    return "n/a" if r is None else "%.2f" % r


def table(rows, srv, title):
    lines = ["### " + title, "",
             "| scenario | metric | OpenSSH | ours | ratio | rounds | "
             "OpenSSH CPU | ours CPU | CPU ratio | limit | ours/limit | "
             "buffered limit | ours/buffered |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for sc, res in rows:
        o, u = res["openssh"], res["ours"]
        rr = round_ratios(o["rate"], u["rate"])
        lines.append("| %s | %s | %s | %s | **%s** | %s | %s | %s %s | %s | "
                     "%s | %s | %s | %s |" % (
            sc.title, sc.metric, fmt(med(o["rate"])), fmt(med(u["rate"])),
            fmt_ratio(ratio(med(u["rate"]), med(o["rate"]))),
            "%.2f-%.2f" % (min(rr), max(rr)) if rr else "-",
            fmt(med(o["cpu"])), fmt(med(u["cpu"])), sc.cpu_unit,
            fmt_ratio(ratio(med(u["cpu"]), med(o["cpu"]))),
            limit_cell(sc), fmt_ratio(ratio(med(u["rate"]), limit_value(sc))),
            limit_cell(sc, True),
            fmt_ratio(ratio(med(u["rate"]), limit_value(sc, True)))))
    lines.append("")
    lines.append("ratio: ours/OpenSSH of the medians (higher is better); "
                 "rounds: the lowest and highest per-round ratio. CPU: the "
                 "server's own user+system time from its rusage, per GiB or "
                 "per file or entry; CPU ratio: lower is better. limit: "
                 "the same work without SFTP, measured once before the "
                 "rounds (fio O_DIRECT at the scenario's depth and block "
                 "size for cold reads, a pipe copy `cat FILE | cat` of the "
                 "warm file for warm ones), or for a get through sshd the "
                 "median of a server that only hands sshd a recorded "
                 "session's replies, run in the same rounds; "
                 "ours/limit: how much of it ours reached. buffered limit: "
                 "fio through the page cache, cold, the same depth and "
                 "block size (what any server that reads through the page "
                 "cache can reach), the median of 3.")
    lines.append("")
    extra = [s for s in srv if s[0] not in ("openssh", "ours")]
    if extra:
        head = "| scenario | " + " | ".join(
            "%s | ratio | CPU ratio" % s[1] for s in extra) + " |"
        lines += ["Other servers against OpenSSH in the same rounds:", "",
                  head, "|---|" + "---:|---:|---:|" * len(extra)]
        for sc, res in rows:
            o = res["openssh"]
            cells = []
            for s in extra:
                x = res[s[0]]
                cells.append("%s | %s | %s" % (
                    fmt(med(x["rate"]), skip=x["skip"]),
                    fmt_ratio(ratio(med(x["rate"]), med(o["rate"]))),
                    fmt_ratio(ratio(med(x["cpu"]), med(o["cpu"])))))
            lines.append("| %s | %s |" % (sc.title, " | ".join(cells)))
        lines.append("")
    return lines


def limit_value(sc, buffered=False):
    lim = sc.limit_buf if buffered else sc.limit
    return lim[0] if lim else None


def limit_cell(sc, buffered=False):
    lim = sc.limit_buf if buffered else sc.limit
    if not lim:
        return "-"
    return "%s %s (%s)" % (fmt(lim[0]), sc.metric, lim[1])


def round_ratios(o, u):
    return [b / a for a, b in zip(o, u) if a]


def spread_cell(o, u):
    """A README cell: ratio of the medians, then the lowest and highest
    per-round ratio in parentheses."""
    r = ratio(med(u), med(o))
    rr = round_ratios(o, u)
    if r is None:
        return ""
    if len(rr) < 2:
        return fmt_ratio(r)
    return "%.2f (%.2f-%.2f)" % (r, min(rr), max(rr))


def readme_table(unpinned, pinned):
    """doc/benchmarks.md's benchmark table: ratio and CPU ratio, unpinned and
    pinned, each with its per-round spread."""
    lines = ["| scenario | ratio | CPU ratio | pinned ratio | "
             "pinned CPU ratio | limit | ours/limit | buffered limit | "
             "ours/buffered |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    pin = {sc.name: res for sc, res in pinned}
    for sc, res in unpinned:
        cells = [sc.title]
        for r in (res, pin.get(sc.name)):
            for m in ("rate", "cpu"):
                cells.append(spread_cell(r["openssh"][m], r["ours"][m])
                             if r else "")
        cells.append(limit_cell(sc))
        cells.append(fmt_ratio(ratio(med(res["ours"]["rate"]),
                                     limit_value(sc))))
        cells.append(limit_cell(sc, True))
        cells.append(fmt_ratio(ratio(med(res["ours"]["rate"]),
                                     limit_value(sc, True))))
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Each cell: ours/OpenSSH of the medians, then (lowest-"
                 "highest) of the per-round ratios; limit: fio O_DIRECT at "
                 "the same depth and block size (cold reads), a pipe copy "
                 "(warm) or, for a get through sshd, a server that only "
                 "hands sshd recorded replies, and the fraction of it "
                 "ours reached unpinned; "
                 "buffered limit: fio through the page cache, cold (the "
                 "page cache's limit), and ours' fraction of it.")
    return lines


def per_round(rows, title):
    lines = ["#### Per-round ratios ours/OpenSSH, " + title, ""]
    for sc, res in rows:
        o, u = res["openssh"], res["ours"]
        rr = " ".join("%.2f" % x for x in round_ratios(o["rate"], u["rate"]))
        cr = " ".join("%.2f" % x for x in round_ratios(o["cpu"], u["cpu"]))
        err = "; ".join("%s: %s" % (k, v["error"][-200:])
                        for k, v in res.items() if v["error"])
        lines.append("- %s: rate %s; CPU %s%s" % (
            sc.name, rr or "-", cr or "-", ("; FAILED " + err) if err else ""))
    lines.append("")
    return lines


TARGETS = [
    # (scenario, pinned?, minimum rate ratio, maximum CPU ratio, source)
    ("cold-randread-32k", False, 3.0, None, "reads"),
    ("cold-download", False, 2.0, None, "reads (1 GiB)"),
    ("upload-32k", True, 1.5, 0.5, "uploads"),
    ("paramiko-put", False, 1.3, None, "uploads"),
    ("upload-255k", False, 1.0, None, "uploads"),
    ("sftp-D-get", True, 1.3, 0.3, "pipes"),
    ("sftp-D-put", True, 1.3, 0.5, "pipes"),
    ("devnull-32k", False, 1.5, None, "pipes"),
    ("devnull-255k", False, 1.5, None, "pipes"),
    ("sshd-put", False, 1.1, None, "pipes (1 GiB)"),
    ("sshd-get", False, 1.1, None, "pipes (1 GiB)"),
    ("sshd-get-chacha", False, 1.1, None, "pipes (1 GiB)"),
    ("slow-listdir", False, 10.0, None, "listings"),
    ("slow-listdir-cold", False, 10.0, None, "listings"),
]


def targets(unpinned, pinned):
    lines = ["### Targets", "",
             "| target | goal for | ratio | CPU ratio | met |",
             "|---|---|---:|---:|---|"]
    by = {False: {sc.name: res for sc, res in unpinned},
          True: {sc.name: res for sc, res in pinned}}
    for name, pin, rmin, cmax, src in TARGETS:
        res = by[pin].get(name) or by[False].get(name)
        if res is None:
            continue
        used_pin = name in by[pin] and pin
        o, u = res["openssh"], res["ours"]
        r = ratio(med(u["rate"]), med(o["rate"]))
        c = ratio(med(u["cpu"]), med(o["cpu"]))
        ok = r is not None and r >= rmin and (
            cmax is None or (c is not None and c <= cmax))
        want = ">= %.1fx" % rmin + (", CPU <= %.1fx" % cmax if cmax else "")
        lines.append("| %s%s %s | %s | %s | %s | %s |" % (
            name, " (pinned)" if used_pin else "", want, src, fmt_ratio(r),
            fmt_ratio(c), "yes" if ok else "**no**"))
    # an upload option buys a guarantee OpenSSH does not give: its cost
    # is the column without it (BASELINE), not OpenSSH's
    slower = [sc.name for sc, res in unpinned if not sc.option and
              (ratio(med(res["ours"]["rate"]),
                     med(res["openssh"]["rate"])) or 0) < 1.0]
    lines.append("| no scenario slower than OpenSSH | every scenario | | | %s |" % (
        "yes" if not slower else "**no**: " + ", ".join(slower)))
    lines.append("")
    return lines


def sanity(srv, w):
    """A quick upload and download with each server; drops variants that
    fail, and gives up when OpenSSH's or ours fails."""
    ok = []
    for key, label, cmd in srv:
        p = os.path.join(w, "sanity")
        try:
            run_cmd([Cfg.load, "-s", "1M", "upload", p, "--"] + cmd, 60)
            run_cmd([Cfg.load, "-s", "1M", "download", p, "--"] + cmd, 60)
            ok.append((key, label, cmd))
        except (RunError, subprocess.TimeoutExpired, OSError) as e:
            if key in ("openssh", "ours"):
                sys.exit("sanity check of %s failed: %s" % (label, e))
            log("dropping %s: sanity check failed: %s" % (label, e))
    return ok


def git_rev():
    try:
        rev = subprocess.run(["git", "-C", TOP, "describe", "--always",
                              "--dirty"], capture_output=True, text=True,
                             timeout=10).stdout.strip()
        return rev or "?"
    except OSError:
        return "?"


def main():
    if not os.access(Cfg.load, os.X_OK):
        sys.exit("no load client at %s (make bench/sftp-load)" % Cfg.load)
    if not os.access(Cfg.server, os.X_OK):
        sys.exit("no server at %s (set SERVER)" % Cfg.server)
    os.makedirs(Cfg.out, exist_ok=True)
    w = tempfile.mkdtemp(prefix="sftp-bench.", dir=Cfg.tmpdir)
    os.chmod(w, 0o755)
    give_to_user(w)
    t_start = time.monotonic()
    try:
        return bench(w)
    finally:
        for s in SSHDS.values():
            s.stop()
        for m in MOUNTS:
            subprocess.run(["umount", m], check=False)
        shutil.rmtree(w, ignore_errors=True)
        log("bench took %.0f s" % (time.monotonic() - t_start))


# libfuse's default entry_timeout and attr_timeout (fusepass keeps them).
ENTRY_TIMEOUT = 1.0


def fusepass_cmd(src, mnt, stats=None):
    """fusepass with SLOW_DELAY_US per call; stats: where it writes what
    it counted when unmounted."""
    return [Cfg.fusepass, "-o",
            "allow_other,hard_remove,max_threads=64,delay_us=%d%s"
            % (Cfg.slow_delay_us, ",stats=" + stats if stats else ""),
            src, mnt]


def mount_slow(w):
    """tests/fusepass over w/slow-src at w/slow, SLOW_DELAY_US per call,
    with the slow scenarios' files made in slow-src (directly, not through
    the delay): whether it mounted (it needs root and libfuse3)."""
    src, mnt = os.path.join(w, "slow-src"), os.path.join(w, "slow")
    if os.getuid() != 0 or not os.access(Cfg.fusepass, os.X_OK):
        log("no %s, or not root: slow-storage scenarios skipped"
            % Cfg.fusepass)
        return False
    os.makedirs(src, 0o777)
    os.makedirs(mnt)
    os.makedirs(os.path.join(w, "slow-cold"))
    os.chmod(src, 0o777)
    run_cmd([Cfg.load, "-n", str(Cfg.slow_dir_entries), "mkdir",
             os.path.join(src, "dir")])
    run_cmd([Cfg.load, "-s", str(64 * MiB), "mkfile",
             os.path.join(src, "rand")])
    os.chmod(os.path.join(src, "rand"), 0o644)
    try:
        run_cmd(fusepass_cmd(src, mnt))
    except RunError as e:
        log("cannot mount the slow storage: %s" % e)
        return False
    MOUNTS.append(mnt)
    return True


def remount_slow_cold(w):
    """A fresh fusepass mount of slow-src at w/slow-cold (the cold
    listing's): its path."""
    mnt = os.path.join(w, "slow-cold")
    stats = os.path.join(w, "slow-cold.stats")
    if os.path.exists(stats):
        os.unlink(stats)
    run_cmd(fusepass_cmd(os.path.join(w, "slow-src"), mnt, stats))
    MOUNTS.append(mnt)
    return mnt


def unmount_slow_cold(w):
    """Unmounts w/slow-cold: what fusepass counted (calls, the most at
    once), or "" when it wrote nothing."""
    mnt = os.path.join(w, "slow-cold")
    stats = os.path.join(w, "slow-cold.stats")
    subprocess.run(["umount", mnt], check=False)
    MOUNTS.remove(mnt)
    # fusepass writes its counts as it ends, after the unmount returns
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if os.path.exists(stats):
            with open(stats) as f:
                text = f.read().strip()
            if text:
                return text
        time.sleep(0.05)
    return ""


MOUNTS = []


def bench(w):
    # Others may rebuild the server while this runs: use one copy throughout.
    if env("SNAPSHOT", "1") != "0":
        copy = os.path.join(w, os.path.basename(Cfg.server))
        shutil.copy2(Cfg.server, copy)
        log("using a copy of %s (%s)" % (Cfg.server, time.strftime(
            "%H:%M:%S", time.localtime(os.path.getmtime(Cfg.server)))))
        Cfg.server = copy
    srv = sanity(servers(), w)
    cold = drop_caches()
    if not cold:
        log("cannot drop the page cache (needs root): cold scenarios run warm")
    scs = make_scenarios(w, cold)
    names = {s.name for s in scs}
    pin_env = env("PINNED", "")
    if pin_env == "none":
        pin_names = set()
    elif pin_env:
        pin_names = set(pin_env.split(","))
    else:
        pin_names = {s.name for s in scs if s.pinnable}

    log("preparing files in %s" % w)
    run_cmd([Cfg.load, "-s", str(Cfg.size), "mkfile", os.path.join(w, "src")])
    # The user's own file, as users mostly download theirs; src-shared
    # stays root's, readable, as a file another user shares.
    give_to_user(os.path.join(w, "src"))
    if any(n.endswith("-shared") for n in names):
        shutil.copyfile(os.path.join(w, "src"), os.path.join(w, "src-shared"))
        os.chmod(os.path.join(w, "src-shared"), 0o644)
    if Cfg.sshd_size != Cfg.size and names & SSHD_NAMES:
        run_cmd([Cfg.load, "-s", str(Cfg.sshd_size), "mkfile",
                 os.path.join(w, "src-sshd")])
    if "paramiko-put" in names:
        try:
            subprocess.run([Cfg.python, "-c", "import paramiko"], check=True,
                           capture_output=True)
            run_cmd([Cfg.load, "-s", str(Cfg.paramiko_size), "mkfile",
                     os.path.join(w, "src-paramiko")])
        except subprocess.CalledProcessError:
            log("no paramiko for %s: skipping paramiko-put" % Cfg.python)
            scs = [s for s in scs if s.name != "paramiko-put"]
    if "listdir" in names:
        run_cmd([Cfg.load, "-n", str(Cfg.dir_entries), "mkdir",
                 os.path.join(w, "dir")])
    slow_names = {n for n in names if n.startswith("slow-")}
    if slow_names and not mount_slow(w):
        scs = [s for s in scs if s.name not in slow_names]
    if names & SSHD_NAMES:
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        os.path.join(w, "hostkey")], check=True)
        key = os.path.join(w, "userkey")
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f",
                        key], check=True)
        shutil.copy(key + ".pub", os.path.join(w, "authorized_keys"))
        for k, label, cmd in srv:
            SSHDS[k] = Sshd(w, key, k, cmd)
        ours = [cmd for k, _, cmd in srv if k == "ours"][0]
        SSHDS["record"] = Sshd(w, key, "record", record_cmd(w, ours))
        SSHDS[REPLAY] = Sshd(w, key, REPLAY, replay_cmd(w))

    for sc in scs:
        sc.limit = limit_of(sc, w, cold)
        if sc.limit:
            log("%s: limit %.1f %s (%s)" % (sc.name, sc.limit[0], sc.metric,
                                           sc.limit[1]))
        sc.limit_buf = buffered_limit_of(sc, w, cold)
        if sc.limit_buf:
            log("%s: buffered limit %.1f %s (%s)" % (
                sc.name, sc.limit_buf[0], sc.metric, sc.limit_buf[1]))
    unpinned, pinned = [], []
    for sc in scs:
        log("%s: %s" % (sc.name, sc.title))
        t0 = time.monotonic()
        res = {}
        run_scenario(sc, srv, [], res)
        unpinned.append((sc, res))
        log("  (%.0f s)" % (time.monotonic() - t0))
    pin = ["taskset", "-c", str(Cfg.pin_cpu)]
    for sc in scs:
        if sc.name not in pin_names:
            continue
        log("%s (pinned to CPU %d): %s" % (sc.name, Cfg.pin_cpu, sc.title))
        t0 = time.monotonic()
        res = {}
        run_scenario(sc, srv, pin, res)
        pinned.append((sc, res))
        log("  (%.0f s)" % (time.monotonic() - t0))

    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    head = [
        "## Benchmark: %s (%s)" % (now, git_rev()), "",
        "%d rounds, server order rotated each round (A B, B A, ...); "
        "medians. %d CPUs, Linux %s. "
        "Page cache %s before the cold scenarios." % (
            Cfg.rounds, os.cpu_count() or 0, os.uname().release,
            "dropped" if cold else "NOT dropped (warm)"), "",
        "Servers: " + "; ".join("%s = `%s`" % (label, shlex.join(cmd))
                                for _, label, cmd in srv), "",
    ]
    lines = head + table(unpinned, srv, "Unpinned")
    if pinned:
        lines += table(pinned, srv, "Pinned: client and server on CPU %d "
                       "(use these CPU figures)" % Cfg.pin_cpu)
    lines += targets(unpinned, pinned)
    lines += per_round(unpinned, "unpinned")
    if pinned:
        lines += per_round(pinned, "pinned")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(Cfg.out, "results.md"), "w") as f:
        f.write(text)
    with open(os.path.join(Cfg.out, "readme-table.md"), "w") as f:
        f.write("\n".join(readme_table(unpinned, pinned)) + "\n")
    raw = {"unpinned": {sc.name: r for sc, r in unpinned},
           "pinned": {sc.name: r for sc, r in pinned},
           "servers": {k: cmd for k, _, cmd in srv}, "cold": cold,
           "limits": {sc.name: sc.limit for sc in scs},
           "buffered_limits": {sc.name: sc.limit_buf for sc in scs},
           "replays": {sc.name: sc.replays for sc in scs if sc.replays},
           "rounds": Cfg.rounds}
    with open(os.path.join(Cfg.out, "results.json"), "w") as f:
        json.dump(raw, f, indent=1)
    failed = any(v["error"] for _, res in unpinned + pinned
                 for v in res.values()) or any(
                     sc.replays["error"] for sc in scs if sc.replays)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

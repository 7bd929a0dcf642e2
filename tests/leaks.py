#!/usr/bin/python3
"""Descriptor leaks: drive every request and extension, including
failing ones, and compare the server's open descriptors (/proc/PID/fd)
before and after: they must be the same, with no tolerance.  Then leave handles open and close stdin, so the forced
close at exit runs too (a memory checker wrapped around the server, e.g.
valgrind via --prefix, checks that path for leaks).

Usage: leaks.py --server PATH [--server-args ARGS] [--prefix CMD]
                [--workdir DIR]
Prints PASS/FAIL lines; exit 0 (all passed) or 1.
"""

import argparse
import os
import shlex
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_APPEND, FXF_CREAT, FXF_EXCL, FXF_READ, FXF_TRUNC, FXF_WRITE,
    FXP_HANDLE, string)

FAILED = []
# Under valgrind the server runs far slower: wait up to this long for it
# to finish what it was sent.
IDLE_WAIT = 10.0


def fds(pid):
    out = {}
    d = "/proc/%d/fd" % pid
    for name in os.listdir(d):
        try:
            out[int(name)] = os.readlink(os.path.join(d, name))
        except OSError:
            pass
    return out


def handle(rep):
    return rep.handle if rep.type == FXP_HANDLE else None


def workload(c):
    """Every request type and extension, successes and failures."""
    w = FXF_WRITE | FXF_CREAT | FXF_TRUNC
    rw = FXF_READ | FXF_WRITE | FXF_CREAT
    c.put_bytes("a", os.urandom(100000))
    for _ in range(50):
        h = handle(c.open("a", FXF_READ))
        c.read(h, 0, 32768)
        c.fstat(h)
        c.close_handle(h)
    c.open("missing/x", FXF_READ)
    c.open("a", FXF_WRITE | FXF_CREAT | FXF_EXCL)
    c.open("", FXF_READ)
    h = handle(c.open("b", rw | FXF_APPEND))
    c.write(h, 0, b"appended")
    c.fsetstat(h, {"perm": 0o600, "atime": 1, "mtime": 2})
    c.extended("fsync@openssh.com", string(h))
    c.extended("fstatvfs@openssh.com", string(h))
    src = handle(c.open("a", FXF_READ))
    dst = handle(c.open("c", w))
    c.copy_data(src, 0, 0, dst, 0)
    c.copy_data(src, 0, 10, src, 0)
    c.copy_data(dst, 0, 10, src, 0)
    c.close_handle(src)
    c.close_handle(dst)
    c.close_handle(h)
    c.close_handle(h)
    c.read(h, 0, 10)
    c.write(h, 0, b"x")
    c.mkdir("d", {"perm": 0o755})
    for i in range(5):
        c.put_bytes("d/f%d" % i, b"x" * i)
    for _ in range(20):
        h = handle(c.opendir("d"))
        c.readdir_all(h)
        c.close_handle(h)
    c.opendir("missing")
    c.opendir("a")
    h = handle(c.opendir("d"))
    c.readdir(h)
    c.close_handle(h)  # in the middle of the listing
    c.stat("a")
    c.lstat("a")
    c.stat("missing")
    c.setstat("a", {"size": 5000, "perm": 0o644})
    c.lsetstat("a", {"perm": 0o640})
    c.realpath(".")
    c.realpath("missing/../a")
    c.symlink("a", "l")
    c.readlink("l")
    c.readlink("a")
    c.rename("c", "c2")
    c.posix_rename("c2", "c3")
    c.hardlink("c3", "c4")
    c.hardlink("missing", "c5")
    c.statvfs(".")
    c.statvfs("missing")
    c.limits()
    c.expand_path("~")
    c.expand_path("~root/x")
    c.expand_path("~nosuchuser/x")
    c.home_directory("root")
    c.home_directory("nosuchuser")
    c.users_groups_by_id([0, 1, os.getuid(), 4242424], [0, os.getgid(), 9999])
    c.extended("nosuch@example.com")
    c.request(99, wait=False)  # no reply, as in OpenSSH
    c.remove("l")
    c.remove("missing")
    for i in range(5):
        c.remove("d/f%d" % i)
    c.rmdir("d")
    c.rmdir("missing")
    # many handles at once, then all closed
    hs = [handle(c.open("a", FXF_READ)) for _ in range(300)]
    for h in hs:
        c.close_handle(h)
    # a READ far past the end and a zero-length one
    h = handle(c.open("a", FXF_READ))
    c.read(h, 1 << 40, 100)
    c.read(h, 0, 0)
    c.close_handle(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--log-level", default="ERROR")
    ap.add_argument("--server-log", default=None,
                    help="keep the server's stderr in this file")
    args = ap.parse_args()
    argv = (shlex.split(args.prefix) + [os.path.abspath(args.server)]
            + shlex.split(args.server_args) + ["-e", "-l", args.log_level])
    work = tempfile.mkdtemp(prefix="leaks.", dir=args.workdir)
    timeout = 60 if args.prefix else 15
    with sc.Client(argv, cwd=work, timeout=timeout,
                   stderr=args.server_log) as c:
        c.init()
        before = fds(c.proc.pid)
        workload(c)
        c.stat(".")  # everything before it has finished
        # Nothing may be left over once the session is idle.
        deadline = time.monotonic() + IDLE_WAIT
        while True:
            after = fds(c.proc.pid)
            if after == before or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        new = {fd: t for fd, t in after.items() if before.get(fd) != t}
        gone = {fd: t for fd, t in before.items() if fd not in after}
        if new or gone:
            FAILED.append("descriptors")
            print("FAIL: after the workload %d new descriptors %s, %d "
                  "closed %s" % (len(new), sorted(new.items())[:5],
                                 len(gone), sorted(gone.items())[:5]))
        else:
            print("PASS: no descriptor leaked by the workload (%d open, "
                  "the same as before it)" % len(after))
        # handles left open at EOF: the forced close runs at exit
        for name in ("a", "b"):
            c.open(name, FXF_READ)
        c.opendir(".")
        h = handle(c.open("e", FXF_WRITE | FXF_CREAT))
        c.write(h, 0, b"unfinished", wait=False)
        rc, _ = c.finish()
        if rc != 0:
            FAILED.append("exit")
            print("FAIL: exit status %d with handles open at EOF; stderr: %r"
                  % (rc, c.stderr_bytes()[-500:]))
        else:
            print("PASS: exit 0 with handles open at EOF")
        errors = c.stderr_bytes()
        if b"Sanitizer" in errors:
            FAILED.append("sanitizer")
            print("FAIL: sanitizer report:\n%s" % errors.decode(
                "utf-8", "replace"))
    with open(os.path.join(work, "e"), "rb") as f:
        if f.read() != b"unfinished":
            FAILED.append("eof write")
            print("FAIL: the WRITE before EOF is not in the file")
    shutil.rmtree(work, ignore_errors=True)
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())

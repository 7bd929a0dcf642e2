#!/usr/bin/python3
"""Many sessions of one user at once, run as that user.

  sessions.py --server PATH --workdir DIR [--sessions N] [--many M]

pipe-quota: N sessions (16) each open a file and send 64 READs of 255 KiB
  at once, and stop reading after the first reply, so that every session
  holds all the pipes it will use (they are made when its READs start,
  before any reply is written).  Then a new pipe of this user must still
  get the default 64 KiB buffer and grow to 1 MiB with F_SETPIPE_SZ, as
  any program of the user would expect.  Finally every reply is read and
  compared with the file.
stdout-reader: one session as sshd starts it (SSH_CONNECTION set) and one
  as a local client does; each reads the file with all its READs in
  flight.  Under sshd stdout must keep the size it was given (the pipe's
  default) the whole time, never grown or shrunk, and block (O_NONBLOCK
  clear) while stdin does not; a local client's grows at start, and
  neither blocks.  Every reply is compared with the file.
many: M sessions (256) started one after the other and all kept open, each
  reading a few blocks and checking them; then all are ended.  None may
  fail for want of a ring, locked memory or descriptors.

Prints one line per check and "N passed, N failed" last; exits 77 (skip)
when the user's pipe quota is used up before the test starts.
"""

import argparse
import fcntl
import os
import resource
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402
import tally  # noqa: E402
from tally import say as result  # noqa: E402

BIG = 261120
DEPTH = 64
MiB = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)

def block(i, size=BIG):
    """The bytes of block i of the test file: every block differs."""
    head = b"block %08d " % i
    return (head * (size // len(head) + 1))[:size]


def pipe_probe():
    """(default size of a new pipe, size after asking for 1 MiB or the
    error)."""
    r, w = os.pipe()
    try:
        default = fcntl.fcntl(w, F_GETPIPE_SZ)
        try:
            grown = fcntl.fcntl(w, F_SETPIPE_SZ, MiB)
        except OSError as e:
            grown = e.strerror
        return default, grown
    finally:
        os.close(r)
        os.close(w)


def start(args, i, name, env=None, keep_child_ends=False):
    """A session with the data file open; with keep_child_ends, its
    stdin's and stdout's flags as the server set them are c.stdio_flags."""
    c = sc.Client([args.server, "-e", "-l", "VERBOSE"],
                  stderr=os.path.join(args.workdir, "%s.%d.err" % (name, i)),
                  timeout=60, env=env, keep_child_ends=keep_child_ends)
    try:
        # While our copies of its ends are open, a server that dies at
        # once shows as init()'s timeout, not as end of file.
        c.init()
        if keep_child_ends:
            c.stdio_flags = c.child_flags()
    except BaseException:
        c.close()
        raise
    rep = c.open(os.path.join(args.workdir, "data"), sc.FXF_READ)
    if rep.type != sc.FXP_HANDLE:
        raise sc.ProtocolError("OPEN: %r" % rep)
    return c, rep.handle


def read_replies(c, ids, first=0):
    for k, rid in enumerate(ids):
        rep = c.expect(rid)
        if rep.type != sc.FXP_DATA or rep.data != block(first + k):
            raise sc.ProtocolError("READ of block %d: %r" % (first + k, rep))


def end(c, handle):
    rep = c.close_handle(handle)
    if not rep.is_status(sc.FX_OK):
        raise sc.ProtocolError("CLOSE: %r" % rep)
    rc, _ = c.finish()
    if rc != 0:
        raise sc.ProtocolError("exit status %r; stderr %r"
                               % (rc, c.stderr_bytes()[-300:]))


def check_pipe_quota(args):
    default, grown = pipe_probe()
    print("before: a new pipe gets %d bytes, asked for 1 MiB %r"
          % (default, grown), flush=True)
    if default < 65536 or grown != MiB:
        print("SKIP: this user's pipe quota is used up before the test "
              "(fs.pipe-user-pages-soft; other processes of uid %d)"
              % os.getuid())
        return False
    sessions = []
    try:
        for i in range(args.sessions):
            c, h = start(args, i, "quota")
            c.begin_batch()
            ids = [c.read(h, k * BIG, BIG, wait=False) for k in range(DEPTH)]
            c.end_batch()
            # Its READs have started, and took their pipes, before the
            # first reply was written.
            read_replies(c, ids[:1])
            sessions.append((c, h, ids))
        default, grown = pipe_probe()
        print("with %d sessions loaded: a new pipe gets %d bytes, asked "
              "for 1 MiB %r" % (args.sessions, default, grown), flush=True)
        result(default >= 65536, "a new pipe of the user still gets the "
               "default 64 KiB while %d sessions hold theirs"
               % args.sessions)
        result(grown == MiB, "and grows to 1 MiB (F_SETPIPE_SZ)")
        for c, h, ids in sessions:
            read_replies(c, ids[1:], 1)
            end(c, h)
        result(True, "%d sessions read %d blocks each, all correct"
               % (args.sessions, DEPTH))
    except (sc.SFTPError, OSError) as e:
        result(False, "%d loaded sessions: %s" % (args.sessions, e))
    finally:
        for c, _, _ in sessions:
            c.close()
    return True


def stdout_sizes(env, name, args):
    """Sizes of a session's stdout pipe: after INIT, and the largest and
    smallest seen while the file is read twice, all READs in flight; and
    whether its stdin and stdout are non-blocking."""
    c, h = start(args, 0, name, env, keep_child_ends=True)
    try:
        first = fcntl.fcntl(c.rfd, F_GETPIPE_SZ)
        flags = tuple(bool(f & os.O_NONBLOCK) for f in c.stdio_flags)
        seen = {first}
        for _ in range(2):
            c.begin_batch()
            ids = [c.read(h, k * BIG, BIG, wait=False) for k in range(DEPTH)]
            c.end_batch()
            for k, rid in enumerate(ids):
                seen.add(fcntl.fcntl(c.rfd, F_GETPIPE_SZ))
                read_replies(c, [rid], k)
        end(c, h)
        return first, min(seen), max(seen), flags
    finally:
        c.close()


def check_stdout_reader(args):
    default, grown = pipe_probe()
    if default < 65536 or grown != MiB:
        print("SKIP stdout-reader: the pipe quota is used up", flush=True)
        return
    try:
        env = dict(os.environ, SSH_CONNECTION="127.0.0.1 50000 127.0.0.1 22")
        env.pop("SSH_TTY", None)  # as sshd starts a subsystem
        first, least, most, flags = stdout_sizes(env, "sshd", args)
        print("under sshd: stdout %d bytes at start, %d-%d during the reads"
              % (first, least, most), flush=True)
        result(first == default and least == most == default,
               "under sshd (SSH_CONNECTION) stdout keeps the %d bytes it "
               "was given" % default)
        result(flags == (True, False),
               "under sshd stdin is non-blocking and stdout blocks "
               "(O_NONBLOCK on stdin, stdout: %s, %s)" % flags)
        env = dict(os.environ)
        env.pop("SSH_CONNECTION", None)
        first, least, most, flags = stdout_sizes(env, "local", args)
        print("local client: stdout %d bytes at start, %d-%d during the "
              "reads" % (first, least, most), flush=True)
        result(first > default, "a local client's stdout grows at start")
        result(flags == (True, True),
               "a local client's stdin and stdout are non-blocking "
               "(O_NONBLOCK on stdin, stdout: %s, %s)" % flags)
    except (sc.SFTPError, OSError) as e:
        result(False, "stdout-reader: %s" % e)


def check_many(args):
    sessions = []
    try:
        for i in range(args.many):
            c, h = start(args, i, "many")
            ids = [c.read(h, k * BIG, BIG, wait=False) for k in range(4)]
            read_replies(c, ids)
            sessions.append((c, h))
        # All of them are still open: a few more READs on each.
        for k, (c, h) in enumerate(sessions):
            first = 4 + k % 32
            ids = [c.read(h, (first + j) * BIG, BIG, wait=False)
                   for j in range(4)]
            read_replies(c, ids, first)
        for c, h in sessions:
            end(c, h)
        result(True, "%d sessions open at once, each read 8 blocks"
               % args.many)
    except (sc.SFTPError, OSError) as e:
        result(False, "%d sessions at once (%d started): %s"
               % (args.many, len(sessions), e))
    finally:
        for c, _ in sessions:
            c.close()
    fallback = [i for i in range(args.many) if os.path.exists(
        os.path.join(args.workdir, "many.%d.err" % i)) and
        b"io_uring unavailable" in open(os.path.join(
            args.workdir, "many.%d.err" % i), "rb").read()]
    print("sessions that fell back to plain system calls: %d%s"
          % (len(fallback), " (logged)" if fallback else ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--sessions", type=int, default=16)
    ap.add_argument("--many", type=int, default=256)
    args = ap.parse_args()
    # Three descriptors per session here.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4 * args.many + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (
            want if hard == resource.RLIM_INFINITY else min(want, hard),
            hard))
    with open(os.path.join(args.workdir, "data"), "wb") as f:
        for i in range(DEPTH):
            f.write(block(i))
    print("uid %d; fs.pipe-user-pages-soft %s" % (os.getuid(), open(
        "/proc/sys/fs/pipe-user-pages-soft").read().strip()), flush=True)
    ran = check_pipe_quota(args)
    check_stdout_reader(args)
    check_many(args)
    sys.exit(tally.summary(skipped=not ran))


if __name__ == "__main__":
    main()

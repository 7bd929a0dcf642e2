# SPDX-License-Identifier: ISC
# Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE.
"""What the tests and benchmarks that watch servers read about a process
(tests/memsessions.py, tests/uploads.py, bench/sessions.py, tests/hostile.py,
tests/readsafety.py): its /proc/PID/status figures, the pipes it holds, the
files it holds open with O_DIRECT, the processes below it; and
sizes written as 64M, as their options and environment give them.
Standard library only.
"""

import os


def parse_size(s):
    """"64M" -> 67108864; K, M and G (powers of 1024), any case, or a
    plain number."""
    s = s.strip()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:].upper())
    return int(s[:-1]) * mult if mult else int(s)


def status(pid, keys):
    """{key: the number /proc/PID/status gives} for those of keys it has
    (sizes in kB, as the file gives them); {} when pid is gone."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in keys:
                    out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


def o_direct_files(pid):
    """The files (st_dev, st_ino) pid holds descriptors of open with
    O_DIRECT (/proc/PID/fdinfo's flags)."""
    found = set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            st = os.stat("/proc/%d/fd/%s" % (pid, fd))
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                flags = [line for line in f if line.startswith("flags:")]
        except OSError:
            continue
        if flags and int(flags[0].split()[1], 8) & os.O_DIRECT:
            found.add((st.st_dev, st.st_ino))
    return found


def pipes_held(pid):
    """Each distinct pipe pid holds (stdin and stdout included, each pipe
    once), opened again through /proc/PID/fd: yields a descriptor, closed
    when the caller moves on, or None for a pipe that could not be opened
    (only root may open another user's; or pid is exiting)."""
    seen = set()
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        yield None
        return
    for name in names:
        path = "/proc/%d/fd/%s" % (pid, name)
        try:
            target = os.readlink(path)
        except OSError:
            continue
        if not target.startswith("pipe:") or target in seen:
            continue
        seen.add(target)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            yield None
            continue
        try:
            yield fd
        finally:
            os.close(fd)


def children():
    """{pid: [its children's pids]} over the whole of /proc (no
    /proc/PID/task/PID/children on every kernel)."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(name))
    return kids

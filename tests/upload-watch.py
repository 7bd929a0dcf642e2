#!/usr/bin/python3
"""A second process that watches one name in a directory while an upload
runs (tests/uploads.py), as a consumer of an upload directory would: with
inotify (through ctypes) and by stat(2) in a tight loop.  Every time it
sees the name it checks that the file there is whole: the upload's size
and, once per inode, its SHA-256; the file that was there before the
upload (--old-size, --old-sha256) counts as whole too.

Usage: upload-watch.py DIR NAME --size N --sha256 HEX [--old-size N
       --old-sha256 HEX] --ready FILE --out FILE
It writes FILE --ready once it watches, and runs until SIGTERM; then it
writes a JSON summary to --out:
  observations   how many times stat found the name
  partial        observations of anything else (at most 10: what was seen)
  events         inotify events on the name, in order (mask names)
  bad_events     of those, the ones that mean the name was written through
                 (IN_MODIFY, IN_CLOSE_WRITE)
  whole_seen     whether the upload's file was seen whole under the name
"""

import argparse
import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import select
import signal
import struct
import sys
import time

IN_MODIFY = 0x002
IN_ATTRIB = 0x004
IN_CLOSE_WRITE = 0x008
IN_MOVED_FROM = 0x040
IN_MOVED_TO = 0x080
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_NONBLOCK = 0o4000
IN_CLOEXEC = 0o2000000
NAMES = [(IN_MODIFY, "IN_MODIFY"), (IN_ATTRIB, "IN_ATTRIB"),
         (IN_CLOSE_WRITE, "IN_CLOSE_WRITE"), (IN_MOVED_FROM, "IN_MOVED_FROM"),
         (IN_MOVED_TO, "IN_MOVED_TO"), (IN_CREATE, "IN_CREATE"),
         (IN_DELETE, "IN_DELETE")]
WATCHED = (IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM |
           IN_MOVED_TO | IN_CREATE | IN_DELETE)
BAD = IN_MODIFY | IN_CLOSE_WRITE

stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            h.update(b)
    return st.st_ino, h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("name")
    ap.add_argument("--size", type=int, required=True)
    ap.add_argument("--sha256", required=True)
    ap.add_argument("--old-size", type=int, default=-1)
    ap.add_argument("--old-sha256", default="")
    ap.add_argument("--ready", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)

    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    ifd = libc.inotify_init1(IN_NONBLOCK | IN_CLOEXEC)
    if ifd < 0 or libc.inotify_add_watch(
            ifd, os.fsencode(a.dir), WATCHED) < 0:
        print("inotify: %s" % os.strerror(ctypes.get_errno()))
        return 2
    target = os.path.join(a.dir, a.name)
    name = os.fsencode(a.name)
    whole = {(a.size, a.sha256)}
    if a.old_size >= 0:
        whole.add((a.old_size, a.old_sha256))
    out = {"observations": 0, "partial": [], "events": [], "bad_events": [],
           "whole_seen": False}
    hashed = {}     # inode -> sha256, once per inode
    last = None

    def look():
        nonlocal last
        try:
            st = os.stat(target)
        except FileNotFoundError:
            last = None
            return
        out["observations"] += 1
        key = (st.st_ino, st.st_size, st.st_mtime_ns)
        if key == last:
            return
        last = key
        seen = None
        if st.st_size not in {s for s, _ in whole}:
            seen = "size %d" % st.st_size
        else:
            try:
                if st.st_ino not in hashed:
                    ino, digest = sha256_of(target)
                    if ino != st.st_ino:
                        return  # replaced meanwhile: looked at again
                    hashed[st.st_ino] = digest
                digest = hashed[st.st_ino]
                if (st.st_size, digest) not in whole:
                    seen = "size %d, other bytes" % st.st_size
                elif digest == a.sha256:
                    out["whole_seen"] = True
            except FileNotFoundError:
                return
        if seen is not None and len(out["partial"]) < 10:
            out["partial"].append(seen)

    def events():
        while True:
            try:
                buf = os.read(ifd, 65536)
            except BlockingIOError:
                return
            off = 0
            while off < len(buf):
                _wd, mask, _cookie, ln = struct.unpack_from("iIII", buf, off)
                ev_name = buf[off + 16:off + 16 + ln].rstrip(b"\0")
                off += 16 + ln
                if ev_name != name:
                    continue
                names = [n for bit, n in NAMES if mask & bit]
                out["events"].append("|".join(names))
                if mask & BAD:
                    out["bad_events"].append("|".join(names))
                look()

    with open(a.ready, "w") as f:
        f.write("%d\n" % os.getpid())
    while not stop:
        try:
            select.select([ifd], [], [], 0.001)
        except InterruptedError:
            pass
        events()
        look()
    events()
    look()
    with open(a.out, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except OSError as e:
        if e.errno != errno.EINTR:
            raise

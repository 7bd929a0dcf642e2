#!/usr/bin/python3
"""Write the seed corpus of tests/fuzz_packets: valid SFTP request streams.

Each file is exactly what a client writes to the server's stdin: INIT, then
requests covering every request type and extension, well formed, with the
handles the server hands out (slot numbers from 0, as it allocates them).
The fuzzer mutates these; the hostile tests also replay them against the
real binary.

    tests/fuzz-corpus-gen.py [DIR]     (default: tests/fuzz-corpus)

The output is deterministic: running it again gives the same files.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from sftpclient import (  # noqa: E402
    FXF_APPEND, FXF_CREAT, FXF_EXCL, FXF_READ, FXF_TRUNC, FXF_WRITE,
    FXP_CLOSE, FXP_EXTENDED, FXP_FSETSTAT, FXP_FSTAT, FXP_INIT, FXP_LSTAT,
    FXP_MKDIR, FXP_OPEN, FXP_OPENDIR, FXP_READ, FXP_READDIR, FXP_READLINK,
    FXP_REALPATH, FXP_REMOVE, FXP_RENAME, FXP_RMDIR, FXP_SETSTAT, FXP_STAT,
    FXP_SYMLINK, FXP_WRITE, encode_attrs, packet, string, u32, u64)


def handle(n):
    """The wire form of the server's handle number n."""
    return string(u32(n))


class Stream:
    def __init__(self, version=3):
        self.data = packet(FXP_INIT, u32(version))
        self.rid = 0

    def req(self, ptype, payload=b""):
        self.rid += 1
        self.data += packet(ptype, u32(self.rid) + payload)
        return self

    def ext(self, name, payload=b""):
        return self.req(FXP_EXTENDED, string(name) + payload)

    def raw(self, data):
        self.data += data
        return self


def pattern(n, seed=1):
    """n deterministic bytes."""
    out = bytearray()
    x = seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append(x >> 16 & 0xFF)
    return bytes(out)


def corpus():
    w = FXF_WRITE | FXF_CREAT | FXF_TRUNC
    rw = FXF_READ | FXF_WRITE | FXF_CREAT
    files = {}

    files["init-only"] = Stream().data
    files["init-v2"] = Stream(version=2).data

    # Upload, download, close: the common case.
    s = Stream()
    s.req(FXP_OPEN, string("f") + u32(w) + encode_attrs({"perm": 0o644}))
    for i in range(4):
        s.req(FXP_WRITE, handle(0) + u64(i * 512) + string(pattern(512, i)))
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_OPEN, string("f") + u32(FXF_READ) + encode_attrs())
    for i in range(5):
        s.req(FXP_READ, handle(0) + u64(i * 512) + u32(512))
    s.req(FXP_FSTAT, handle(0))
    s.req(FXP_CLOSE, handle(0))
    files["upload-download"] = s.data

    # Overlapping and out of order writes, reads that race them.
    s = Stream()
    s.req(FXP_OPEN, string("o") + u32(rw) + encode_attrs())
    s.req(FXP_WRITE, handle(0) + u64(100) + string(pattern(300, 7)))
    s.req(FXP_READ, handle(0) + u64(0) + u32(1000))
    s.req(FXP_WRITE, handle(0) + u64(0) + string(pattern(200, 8)))
    s.req(FXP_WRITE, handle(0) + u64(150) + string(pattern(10, 9)))
    s.req(FXP_READ, handle(0) + u64(50) + u32(100))
    s.req(FXP_READ, handle(0) + u64(1 << 40) + u32(100))
    s.req(FXP_READ, handle(0) + u64(0) + u32(0xFFFFFFFF))
    s.req(FXP_WRITE, handle(0) + u64(1 << 63) + string(b"x"))
    s.req(FXP_CLOSE, handle(0))
    files["overlap"] = s.data

    # Append mode and a second handle on the same file.
    s = Stream()
    s.req(FXP_OPEN, string("a") + u32(FXF_WRITE | FXF_CREAT | FXF_APPEND)
          + encode_attrs())
    s.req(FXP_OPEN, string("a") + u32(FXF_READ) + encode_attrs())
    s.req(FXP_WRITE, handle(0) + u64(0) + string(b"hello "))
    s.req(FXP_WRITE, handle(0) + u64(0) + string(b"world\n"))
    s.req(FXP_READ, handle(1) + u64(0) + u32(64))
    s.req(FXP_READ, handle(0) + u64(0) + u32(64))
    s.req(FXP_WRITE, handle(1) + u64(0) + string(b"ro"))
    s.req(FXP_CLOSE, handle(1))
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_OPEN, string("a") + u32(FXF_WRITE | FXF_CREAT | FXF_EXCL)
          + encode_attrs())
    files["append"] = s.data

    # Directories.
    s = Stream()
    s.req(FXP_MKDIR, string("d") + encode_attrs({"perm": 0o755}))
    s.req(FXP_MKDIR, string("d/e") + encode_attrs())
    s.req(FXP_OPEN, string("d/x") + u32(w) + encode_attrs())
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_OPENDIR, string("d"))
    s.req(FXP_READDIR, handle(0))
    s.req(FXP_READDIR, handle(0))
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_OPENDIR, string("/"))
    s.req(FXP_READDIR, handle(0))
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_RMDIR, string("d"))
    s.req(FXP_REMOVE, string("d/x"))
    s.req(FXP_RMDIR, string("d/e"))
    s.req(FXP_RMDIR, string("d"))
    s.req(FXP_OPENDIR, string("nonexistent"))
    files["dirs"] = s.data

    # Attributes.
    s = Stream()
    s.req(FXP_OPEN, string("s") + u32(w) + encode_attrs())
    s.req(FXP_FSETSTAT, handle(0) + encode_attrs(
        {"size": 1000, "perm": 0o600, "atime": 1, "mtime": 1000000000}))
    s.req(FXP_FSETSTAT, handle(0) + encode_attrs({"uid": 0, "gid": 0}))
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_SETSTAT, string("s") + encode_attrs(
        {"size": 10, "perm": 0o4755, "atime": 5, "mtime": 6}))
    s.req(FXP_SETSTAT, string("s") + encode_attrs(
        {"extended": [(b"a@b", b"c"), (b"d@e", b"")]}))
    s.req(FXP_STAT, string("s"))
    s.req(FXP_LSTAT, string("s"))
    s.req(FXP_STAT, string("missing"))
    s.req(FXP_SETSTAT, string("missing") + encode_attrs({"size": 1}))
    files["attrs"] = s.data

    # Names: realpath, links, renames.
    s = Stream()
    s.req(FXP_REALPATH, string("."))
    s.req(FXP_REALPATH, string(""))
    s.req(FXP_REALPATH, string("a/../b/./c"))
    s.req(FXP_OPEN, string("t") + u32(w) + encode_attrs())
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_SYMLINK, string("t") + string("l"))
    s.req(FXP_READLINK, string("l"))
    s.req(FXP_REALPATH, string("l"))
    s.req(FXP_SYMLINK, string("l2") + string("l2"))
    s.req(FXP_REALPATH, string("l2"))
    s.req(FXP_RENAME, string("t") + string("u"))
    s.req(FXP_RENAME, string("u") + string("l"))
    s.req(FXP_STAT, string("l"))
    s.req(FXP_LSTAT, string("l"))
    s.req(FXP_REMOVE, string("l"))
    s.req(FXP_REMOVE, string("u"))
    files["names"] = s.data

    # Every extension.
    s = Stream()
    s.req(FXP_OPEN, string("x") + u32(rw) + encode_attrs())
    s.req(FXP_WRITE, handle(0) + u64(0) + string(pattern(4000, 3)))
    s.req(FXP_OPEN, string("y") + u32(rw) + encode_attrs())
    s.ext("copy-data", handle(0) + u64(0) + u64(0) + handle(1) + u64(10))
    s.ext("copy-data", handle(0) + u64(100) + u64(50) + handle(1) + u64(0))
    s.ext("copy-data", handle(0) + u64(0) + u64(0) + handle(0) + u64(0))
    s.ext("fsync@openssh.com", handle(0))
    s.ext("fstatvfs@openssh.com", handle(1))
    s.req(FXP_CLOSE, handle(1))
    s.req(FXP_CLOSE, handle(0))
    s.ext("statvfs@openssh.com", string("."))
    s.ext("posix-rename@openssh.com", string("x") + string("z"))
    s.ext("hardlink@openssh.com", string("z") + string("h"))
    s.ext("hardlink@openssh.com", string("z") + string("h"))
    s.ext("lsetstat@openssh.com", string("h") + encode_attrs(
        {"perm": 0o600, "atime": 2, "mtime": 3}))
    s.ext("limits@openssh.com")
    s.ext("expand-path@openssh.com", string("~/a/b"))
    s.ext("expand-path@openssh.com", string("~root"))
    s.ext("expand-path@openssh.com", string("~nosuchuser/x"))
    s.ext("home-directory", string("root"))
    s.ext("home-directory", string("nosuchuser"))
    s.ext("users-groups-by-id@openssh.com",
          string(u32(0) + u32(1) + u32(65534)) + string(u32(0) + u32(4242)))
    s.ext("no-such-extension@example.com", b"payload")
    files["extensions"] = s.data

    # Beyond OpenSSH: checksums by name and by handle (whole,
    # per block, ranges past the end, the reply cap, bad parameters),
    # copy-file with and without overwrite, space-available, vendor-id
    # (WinSCP's changes the checksum reply).
    s = Stream()
    s.req(FXP_OPEN, string("c") + u32(rw) + encode_attrs())
    s.req(FXP_WRITE, handle(0) + u64(0) + string(pattern(70000, 5)))
    s.ext("check-file-name", string("c") + string("sha256") + u64(0)
          + u64(0) + u32(0))
    s.ext("check-file-handle", handle(0) + string("x,md5,sha1") + u64(100)
          + u64(5000) + u32(256))
    s.ext("check-file", handle(0) + string("crc32") + u64(0) + u64(0)
          + u32(1024))
    s.ext("check-file-name", string("c") + string("sha512") + u64(69000)
          + u64(1 << 40) + u32(256))
    s.ext("check-file-name", string("c") + string("md5") + u64(1 << 63)
          + u64(0) + u32(0))
    s.ext("check-file-name", string("c") + string("sha384") + u64(0)
          + u64(0) + u32(255))
    s.ext("check-file-name", string(".") + string("sha224") + u64(0)
          + u64(0) + u32(0))
    s.ext("check-file-handle", handle(9) + string("md5") + u64(0) + u64(0)
          + u32(0))
    s.req(FXP_WRITE, handle(0) + u64(10) + string(b"changed"))
    s.ext("copy-file", string("c") + string("c2") + b"\x00")
    s.ext("copy-file", string("c") + string("c2") + b"\x00")
    s.ext("copy-file", string("c") + string("c2") + b"\x01")
    s.ext("copy-file", string("c") + string("c") + b"\x01")
    s.ext("space-available", string("."))
    s.ext("vendor-id", string("Martin Prikryl") + string("WinSCP")
          + string("6.3") + u64(1))
    s.ext("check-file-name", string("c2") + string("sha1") + u64(0)
          + u64(0) + u32(0))
    s.req(FXP_CLOSE, handle(0))
    files["beyond-openssh"] = s.data

    # Bad handles and unknown types in between good requests.
    s = Stream()
    s.req(FXP_OPEN, string("b") + u32(w) + encode_attrs())
    s.req(FXP_READ, handle(7) + u64(0) + u32(10))
    s.req(FXP_WRITE, string(b"") + u64(0) + string(b"x"))
    s.req(FXP_FSTAT, string(b"\x00\x00\x00\x00\x00"))
    s.req(FXP_READDIR, handle(0))
    s.req(99, b"unknown")
    s.req(FXP_CLOSE, handle(0))
    s.req(FXP_CLOSE, handle(0))
    s.req(0, b"")
    s.req(FXP_READ, handle(0) + u64(0) + u32(1))
    files["bad-handles"] = s.data

    # A pipelined download of a file bigger than one READ.
    s = Stream()
    s.req(FXP_OPEN, string("big") + u32(rw) + encode_attrs())
    s.req(FXP_FSETSTAT, handle(0) + encode_attrs({"size": 300000}))
    for i in range(20):
        s.req(FXP_READ, handle(0) + u64(i * 16384) + u32(16384))
    s.req(FXP_READ, handle(0) + u64(0) + u32(262144))
    s.req(FXP_CLOSE, handle(0))
    files["pipelined-read"] = s.data

    # Large WRITEs (used in place, without a copy) that merge into runs,
    # a gap that ends a run, appends that merge regardless of offset.
    s = Stream()
    s.req(FXP_OPEN, string("z") + u32(rw) + encode_attrs())
    for i in range(3):
        s.req(FXP_WRITE, handle(0) + u64(i * 8192)
              + string(pattern(8192, 20 + i)))
    s.req(FXP_WRITE, handle(0) + u64(100000) + string(pattern(5000, 30)))
    s.req(FXP_READ, handle(0) + u64(8000) + u32(300))
    s.req(FXP_OPEN, string("z") + u32(FXF_WRITE | FXF_APPEND)
          + encode_attrs())
    s.req(FXP_WRITE, handle(1) + u64(0) + string(pattern(4096, 31)))
    s.req(FXP_WRITE, handle(1) + u64(7) + string(pattern(4100, 32)))
    s.req(FXP_CLOSE, handle(1))
    s.req(FXP_READ, handle(0) + u64(0) + u32(200000))
    s.req(FXP_CLOSE, handle(0))
    files["large-writes"] = s.data

    # Requests cut short: every one is a fatal parse error in OpenSSH.
    s = Stream()
    s.req(FXP_OPEN, string("p") + u32(w) + encode_attrs())
    s.req(FXP_WRITE, handle(0) + u64(0) + u32(100) + b"short")
    files["short-write"] = s.data
    s = Stream()
    s.req(FXP_OPEN, string("q") + u32(w) + u32(0x80000000) + u32(3))
    files["short-attrs"] = s.data
    s = Stream()
    s.req(FXP_MKDIR, string("m") + encode_attrs())
    s.raw(packet(FXP_STAT, b"\x00\x00"))
    files["short-id"] = s.data

    # Before INIT, and a second INIT.
    files["before-init"] = packet(FXP_STAT, u32(1) + string(".")) + \
        Stream().data
    s = Stream()
    s.raw(packet(FXP_INIT, u32(3)))
    s.req(FXP_STAT, string("."))
    files["init-twice"] = s.data
    return files


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here,
                                                             "fuzz-corpus")
    os.makedirs(out, exist_ok=True)
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print("%d files in %s" % (len(corpus()), out))


if __name__ == "__main__":
    main()

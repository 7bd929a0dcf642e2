"""A small raw SFTP version 3 client for the tests.

It speaks draft-ietf-secsh-filexfer-02 plus OpenSSH's extensions straight to
a server process (no ssh in between): it spawns the server with two pipes, or
with one socketpair for stdin and stdout as upstream sshd does, sends packets
(well formed or raw bytes), and decodes the replies.  Every wait has a
timeout, so a hung server fails a test instead of hanging it.

Only the Python standard library is used.  Paths may be str or bytes; str is
encoded as UTF-8 with surrogateescape, replies carry bytes.
"""

import fcntl
import os
import select
import socket
import struct
import subprocess
import tempfile
import time

# Packet types.
FXP_INIT = 1
FXP_VERSION = 2
FXP_OPEN = 3
FXP_CLOSE = 4
FXP_READ = 5
FXP_WRITE = 6
FXP_LSTAT = 7
FXP_FSTAT = 8
FXP_SETSTAT = 9
FXP_FSETSTAT = 10
FXP_OPENDIR = 11
FXP_READDIR = 12
FXP_REMOVE = 13
FXP_MKDIR = 14
FXP_RMDIR = 15
FXP_REALPATH = 16
FXP_STAT = 17
FXP_RENAME = 18
FXP_READLINK = 19
FXP_SYMLINK = 20
FXP_STATUS = 101
FXP_HANDLE = 102
FXP_DATA = 103
FXP_NAME = 104
FXP_ATTRS = 105
FXP_EXTENDED = 200
FXP_EXTENDED_REPLY = 201

TYPE_NAMES = {
    1: "INIT", 2: "VERSION", 3: "OPEN", 4: "CLOSE", 5: "READ", 6: "WRITE",
    7: "LSTAT", 8: "FSTAT", 9: "SETSTAT", 10: "FSETSTAT", 11: "OPENDIR",
    12: "READDIR", 13: "REMOVE", 14: "MKDIR", 15: "RMDIR", 16: "REALPATH",
    17: "STAT", 18: "RENAME", 19: "READLINK", 20: "SYMLINK", 101: "STATUS",
    102: "HANDLE", 103: "DATA", 104: "NAME", 105: "ATTRS", 200: "EXTENDED",
    201: "EXTENDED_REPLY",
}

# Status codes.
FX_OK = 0
FX_EOF = 1
FX_NO_SUCH_FILE = 2
FX_PERMISSION_DENIED = 3
FX_FAILURE = 4
FX_BAD_MESSAGE = 5
FX_NO_CONNECTION = 6
FX_CONNECTION_LOST = 7
FX_OP_UNSUPPORTED = 8

STATUS_NAMES = {
    0: "OK", 1: "EOF", 2: "NO_SUCH_FILE", 3: "PERMISSION_DENIED",
    4: "FAILURE", 5: "BAD_MESSAGE", 6: "NO_CONNECTION", 7: "CONNECTION_LOST",
    8: "OP_UNSUPPORTED",
}

# OPEN pflags.
FXF_READ = 0x01
FXF_WRITE = 0x02
FXF_APPEND = 0x04
FXF_CREAT = 0x08
FXF_TRUNC = 0x10
FXF_EXCL = 0x20

# Attribute flags.
ATTR_SIZE = 0x00000001
ATTR_UIDGID = 0x00000002
ATTR_PERMISSIONS = 0x00000004
ATTR_ACMODTIME = 0x00000008
ATTR_EXTENDED = 0x80000000

MAX_PACKET = 256 * 1024

DEFAULT_TIMEOUT = float(os.environ.get("SFTP_TEST_TIMEOUT", "15"))


class SFTPError(Exception):
    """Base class of the errors raised here."""


class Timeout(SFTPError):
    """The server did not answer (or accept input) in time."""


class ServerClosed(SFTPError):
    """The server closed its output (usually: it exited)."""


class ProtocolError(SFTPError):
    """A reply could not be decoded or was not the one expected."""


# ---------------------------------------------------------------- encoding

def b(s):
    """str or bytes to bytes."""
    if isinstance(s, bytes):
        return s
    if isinstance(s, bytearray):
        return bytes(s)
    return s.encode("utf-8", "surrogateescape")


def u8(v):
    return struct.pack(">B", v & 0xFF)


def u32(v):
    return struct.pack(">I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack(">Q", v & 0xFFFFFFFFFFFFFFFF)


def string(s):
    s = b(s)
    return u32(len(s)) + s


def encode_attrs(attrs=None):
    """Encode an ATTRS block from a dict.

    Keys: size, uid, gid, perm, atime, mtime, extended (list of
    (type, data)).  uid/gid and atime/mtime go together; a missing partner
    is sent as 0.  An explicit 'flags' key overrides the computed flags (the
    fields present are still chosen by the keys), for malformed input."""
    if attrs is None:
        attrs = {}
    flags = 0
    body = b""
    if "size" in attrs:
        flags |= ATTR_SIZE
        body += u64(attrs["size"])
    if "uid" in attrs or "gid" in attrs:
        flags |= ATTR_UIDGID
        body += u32(attrs.get("uid", 0)) + u32(attrs.get("gid", 0))
    if "perm" in attrs:
        flags |= ATTR_PERMISSIONS
        body += u32(attrs["perm"])
    if "atime" in attrs or "mtime" in attrs:
        flags |= ATTR_ACMODTIME
        body += u32(attrs.get("atime", 0)) + u32(attrs.get("mtime", 0))
    if "extended" in attrs:
        flags |= ATTR_EXTENDED
        ext = attrs["extended"]
        body += u32(len(ext))
        for name, data in ext:
            body += string(name) + string(data)
    flags = attrs.get("flags", flags)
    return u32(flags) + body


def packet(ptype, payload=b""):
    """A whole packet: uint32 length, byte type, payload."""
    return u32(len(payload) + 1) + u8(ptype) + payload


# ---------------------------------------------------------------- decoding

class Reader:
    """Sequential reader over a reply body (ProtocolError on underrun)."""

    def __init__(self, data):
        self.data = data
        self.pos = 0

    def remaining(self):
        return len(self.data) - self.pos

    def _take(self, n):
        if self.remaining() < n:
            raise ProtocolError("truncated reply: need %d bytes, have %d"
                                % (n, self.remaining()))
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return v

    def u8(self):
        return self._take(1)[0]

    def u32(self):
        return struct.unpack(">I", self._take(4))[0]

    def u64(self):
        return struct.unpack(">Q", self._take(8))[0]

    def string(self):
        return self._take(self.u32())

    def attrs(self):
        flags = self.u32()
        a = {"flags": flags}
        if flags & ATTR_SIZE:
            a["size"] = self.u64()
        if flags & ATTR_UIDGID:
            a["uid"] = self.u32()
            a["gid"] = self.u32()
        if flags & ATTR_PERMISSIONS:
            a["perm"] = self.u32()
        if flags & ATTR_ACMODTIME:
            a["atime"] = self.u32()
            a["mtime"] = self.u32()
        if flags & ATTR_EXTENDED:
            n = self.u32()
            a["extended"] = [(self.string(), self.string()) for _ in range(n)]
        return a

    def rest(self):
        return self._take(self.remaining())


class Reply:
    """A decoded server packet.

    type: packet type number; raw: the whole packet as received (length
    included); id: request id (None for VERSION).  Per type:
      STATUS: code, msg, lang (msg/lang None when left out)
      HANDLE: handle; DATA: data; NAME: names [(name, longname, attrs)]
      ATTRS: attrs; EXTENDED_REPLY: data (the rest of the body)
      VERSION: version, extensions [(name, data)]
      anything else: body"""

    def __init__(self, ptype, body, raw):
        self.type = ptype
        self.raw = raw
        self.id = None
        r = Reader(body)
        if ptype == FXP_VERSION:
            self.version = r.u32()
            self.extensions = []
            while r.remaining():
                self.extensions.append((r.string(), r.string()))
            return
        if ptype not in TYPE_NAMES or ptype < 100:
            self.body = body
            if len(body) >= 4:
                self.id = r.u32()
            return
        self.id = r.u32()
        if ptype == FXP_STATUS:
            self.code = r.u32()
            self.msg = self.lang = None
            if r.remaining():
                self.msg = r.string()
                self.lang = r.string()
        elif ptype == FXP_HANDLE:
            self.handle = r.string()
        elif ptype == FXP_DATA:
            self.data = r.string()
        elif ptype == FXP_NAME:
            n = r.u32()
            self.names = []
            for _ in range(n):
                self.names.append((r.string(), r.string(), r.attrs()))
        elif ptype == FXP_ATTRS:
            self.attrs = r.attrs()
        elif ptype == FXP_EXTENDED_REPLY:
            self.data = r.rest()
        if ptype != FXP_EXTENDED_REPLY and r.remaining():
            raise ProtocolError("%d trailing bytes in %s reply"
                                % (r.remaining(), TYPE_NAMES[ptype]))

    @property
    def type_name(self):
        return TYPE_NAMES.get(self.type, "TYPE%d" % self.type)

    def is_status(self, code=None):
        return self.type == FXP_STATUS and (code is None or self.code == code)

    def __repr__(self):
        t = self.type_name
        if self.type == FXP_STATUS:
            return "<STATUS id=%s %s %r>" % (
                self.id, STATUS_NAMES.get(self.code, self.code), self.msg)
        if self.type == FXP_HANDLE:
            return "<HANDLE id=%s %s>" % (self.id, self.handle.hex())
        if self.type == FXP_DATA:
            return "<DATA id=%s len=%d>" % (self.id, len(self.data))
        if self.type == FXP_NAME:
            return "<NAME id=%s %r>" % (self.id, self.names)
        if self.type == FXP_ATTRS:
            return "<ATTRS id=%s %r>" % (self.id, self.attrs)
        if self.type == FXP_VERSION:
            return "<VERSION %d %r>" % (self.version, self.extensions)
        return "<%s id=%s raw=%s>" % (t, self.id, self.raw[:64].hex())


def parse_statvfs(data):
    """EXTENDED_REPLY of statvfs/fstatvfs -> dict."""
    keys = ("bsize", "frsize", "blocks", "bfree", "bavail", "files", "ffree",
            "favail", "fsid", "flag", "namemax")
    r = Reader(data)
    d = {k: r.u64() for k in keys}
    if r.remaining():
        raise ProtocolError("trailing bytes in statvfs reply")
    return d


def parse_limits(data):
    r = Reader(data)
    d = {k: r.u64() for k in ("max_packet", "max_read", "max_write",
                              "max_handles")}
    if r.remaining():
        raise ProtocolError("trailing bytes in limits reply")
    return d


def parse_users_groups(data):
    """EXTENDED_REPLY of users-groups-by-id -> (user names, group names)."""
    r = Reader(data)
    out = []
    for _ in range(2):
        sub = Reader(r.string())
        names = []
        while sub.remaining():
            names.append(sub.string())
        out.append(names)
    if r.remaining():
        raise ProtocolError("trailing bytes in users-groups-by-id reply")
    return tuple(out)


# ---------------------------------------------------------------- client

class Client:
    """One server process and the client side of its stdin/stdout.

    argv: the server command.  socketpair: give the server one AF_UNIX
    socket as stdin and stdout (as upstream sshd does) instead of two pipes.
    stderr: a path to write the server's stderr to (default: a private temp
    file, see stderr_bytes()).  timeout: default seconds to wait for I/O.
    preexec_fn: run in the child before exec (e.g. to set rlimits)."""

    def __init__(self, argv, cwd=None, env=None, socketpair=False,
                 stderr=None, timeout=None, start_new_session=True,
                 preexec_fn=None, keep_child_ends=False):
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self.rbuf = bytearray()
        self.eof = False
        self._next_id = 0
        self.client_version = 3
        self._own_stderr = stderr is None
        if stderr is None:
            fd, stderr = tempfile.mkstemp(prefix="sftp-stderr.")
            os.close(fd)
        self.stderr_path = stderr
        errf = open(stderr, "wb")
        self.sock = None
        self.child_ends = ()
        try:
            if socketpair:
                ours, theirs = socket.socketpair()
                try:
                    self.proc = subprocess.Popen(
                        argv, stdin=theirs, stdout=theirs, stderr=errf,
                        cwd=cwd, env=env, start_new_session=start_new_session,
                        preexec_fn=preexec_fn)
                finally:
                    theirs.close()
                self.sock = ours
                self.rfd = self.wfd = ours.fileno()
            elif keep_child_ends:
                self.proc = self._popen_keeping_ends(
                    argv, errf, cwd, env, start_new_session, preexec_fn)
                self.rfd = self.proc.stdout.fileno()
                self.wfd = self.proc.stdin.fileno()
            else:
                self.proc = subprocess.Popen(
                    argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                    stderr=errf, cwd=cwd, env=env,
                    start_new_session=start_new_session,
                    preexec_fn=preexec_fn)
                self.rfd = self.proc.stdout.fileno()
                self.wfd = self.proc.stdin.fileno()
        finally:
            errf.close()
        os.set_blocking(self.rfd, False)
        os.set_blocking(self.wfd, False)
        self.wclosed = False
        self.held = None

    def _popen_keeping_ends(self, argv, errf, cwd, env, new_session,
                            preexec_fn):
        """Popen on pipes of our own, keeping the server's ends open here
        too (same open files: the flags it sets on its stdin and stdout
        show here) until child_flags()."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            proc = subprocess.Popen(
                argv, stdin=in_r, stdout=out_w, stderr=errf, cwd=cwd,
                env=env, start_new_session=new_session,
                preexec_fn=preexec_fn)
        except BaseException:
            for fd in (in_r, in_w, out_r, out_w):
                os.close(fd)
            raise
        proc.stdin = os.fdopen(in_w, "wb", buffering=0)
        proc.stdout = os.fdopen(out_r, "rb", buffering=0)
        self.child_ends = (in_r, out_w)
        return proc

    def child_flags(self):
        """The file status flags (F_GETFL) of the server's stdin and
        stdout, as it set them (before its first reply); then our copies
        of its ends are closed, so that its stdout's end is seen when it
        exits."""
        if len(self.child_ends) != 2:
            raise ValueError("the server's ends were not kept, or were "
                             "read already (child_flags() works once)")
        try:
            return tuple(fcntl.fcntl(fd, fcntl.F_GETFL)
                         for fd in self.child_ends)
        finally:
            self._close_child_ends()

    def _close_child_ends(self):
        for fd in self.child_ends:
            os.close(fd)
        self.child_ends = ()

    def begin_batch(self):
        """Hold everything sent until end_batch(), which sends it all in
        one write (so the server sees many requests at once)."""
        self.held = bytearray()

    def end_batch(self, timeout=None):
        data, self.held = self.held, None
        if data:
            self.send_raw(bytes(data), timeout)

    # -------------------------------------------------- low level I/O

    def _read_some(self):
        try:
            data = os.read(self.rfd, 1 << 20)
        except BlockingIOError:
            return
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
        else:
            self.rbuf += data

    def send_raw(self, data, timeout=None):
        """Write bytes to the server's stdin, reading its output meanwhile
        (so a large batch cannot deadlock on full pipes)."""
        if self.held is not None:
            self.held += data
            return
        if self.wclosed:
            raise SFTPError("stdin already closed")
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        view = memoryview(bytes(data))
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("server did not accept input within %.1fs "
                              "(%d bytes left)" % (timeout, len(view)))
            rl = [] if self.eof else [self.rfd]
            if self.rfd == self.wfd:
                # one socket: poll it for both directions
                poller = select.poll()
                ev = select.POLLOUT | (0 if self.eof else select.POLLIN)
                poller.register(self.wfd, ev)
                res = poller.poll(left * 1000)
                readable = any(e & (select.POLLIN | select.POLLHUP)
                               for _, e in res) and not self.eof
                writable = any(e & (select.POLLOUT | select.POLLERR)
                               for _, e in res)
            else:
                r, w, _ = select.select(rl, [self.wfd], [], left)
                readable, writable = bool(r), bool(w)
            if readable:
                self._read_some()
            if writable:
                try:
                    n = os.write(self.wfd, view)
                except BlockingIOError:
                    continue
                except (BrokenPipeError, ConnectionResetError):
                    raise ServerClosed("server closed its input (%d bytes "
                                       "unsent)" % len(view))
                view = view[n:]

    def close_stdin(self):
        """Signal EOF to the server."""
        if self.wclosed:
            return
        self.wclosed = True
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
        else:
            try:
                self.proc.stdin.close()
            except (BrokenPipeError, OSError):
                pass

    def _fill(self, need, deadline):
        while len(self.rbuf) < need:
            if self.eof:
                raise ServerClosed("server closed its output (%d of %d "
                                   "bytes buffered)" % (len(self.rbuf), need))
            left = deadline - time.monotonic()
            if left <= 0:
                raise Timeout("no complete reply within the timeout "
                              "(%d bytes buffered)" % len(self.rbuf))
            r, _, _ = select.select([self.rfd], [], [], left)
            if r:
                self._read_some()

    def recv_packet(self, timeout=None):
        """Next packet as (type, body, raw).  Raises Timeout/ServerClosed."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        self._fill(4, deadline)
        length = struct.unpack(">I", self.rbuf[:4])[0]
        if length < 1 or length > 16 * MAX_PACKET:
            raise ProtocolError("reply with bad length %d" % length)
        self._fill(4 + length, deadline)
        raw = bytes(self.rbuf[:4 + length])
        del self.rbuf[:4 + length]
        return raw[4], raw[5:], raw

    def recv(self, timeout=None):
        """Next reply, decoded."""
        ptype, body, raw = self.recv_packet(timeout)
        return Reply(ptype, body, raw)

    def poll_reply(self, timeout):
        """A reply if one arrives within timeout, else None."""
        try:
            return self.recv(timeout)
        except Timeout:
            return None

    def pending_bytes(self, wait=0.0):
        """Bytes the server has sent that were not consumed yet."""
        deadline = time.monotonic() + wait
        while not self.eof:
            left = max(0.0, deadline - time.monotonic())
            r, _, _ = select.select([self.rfd], [], [], left)
            if not r:
                break
            self._read_some()
            if time.monotonic() >= deadline:
                break
        return bytes(self.rbuf)

    def wait(self, timeout=None):
        """Wait for the server to exit; kill it and raise Timeout if it
        does not.  Returns the exit status (negative: killed by signal)."""
        timeout = self.timeout if timeout is None else timeout
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Timeout("server did not exit within %.1fs" % timeout)

    def finish(self, timeout=None):
        """Close stdin, drain output, wait for exit; returns
        (exit status, unread output bytes)."""
        self.close_stdin()
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while not self.eof and time.monotonic() < deadline:
            r, _, _ = select.select([self.rfd], [], [],
                                    max(0.0, deadline - time.monotonic()))
            if r:
                self._read_some()
        rc = self.wait(max(0.5, deadline - time.monotonic()))
        return rc, bytes(self.rbuf)

    def kill(self):
        if self.proc.poll() is None:
            try:
                self.proc.kill()
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self):
        """Kill if still running and release everything."""
        self.kill()
        self._close_child_ends()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        if self._own_stderr:
            try:
                os.unlink(self.stderr_path)
            except OSError:
                pass

    def stderr_bytes(self):
        with open(self.stderr_path, "rb") as f:
            return f.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -------------------------------------------------- requests

    def next_id(self):
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF
        return self._next_id

    def send_packet(self, ptype, payload=b""):
        self.send_raw(packet(ptype, payload))

    def init(self, version=3, extensions=(), timeout=None):
        """Send INIT and return the VERSION reply."""
        self.client_version = version
        body = u32(version)
        for name, data in extensions:
            body += string(name) + string(data)
        self.send_packet(FXP_INIT, body)
        rep = self.recv(timeout)
        if rep.type != FXP_VERSION:
            raise ProtocolError("expected VERSION, got %r" % rep)
        return rep

    def expect(self, rid, timeout=None):
        rep = self.recv(timeout)
        if rep.id != rid:
            raise ProtocolError("reply for id %s while waiting for id %d: %r"
                                % (rep.id, rid, rep))
        return rep

    def request(self, ptype, payload=b"", wait=True, rid=None):
        """Send a request with a fresh id (or rid).  wait=True returns the
        reply (checking its id); wait=False returns the id."""
        if rid is None:
            rid = self.next_id()
        self.send_packet(ptype, u32(rid) + payload)
        if not wait:
            return rid
        return self.expect(rid)

    def extended(self, name, payload=b"", wait=True, rid=None):
        return self.request(FXP_EXTENDED, string(name) + payload, wait, rid)

    # Plain requests; each returns the reply (or the id with wait=False).
    def open(self, path, pflags, attrs=None, **kw):
        return self.request(FXP_OPEN, string(path) + u32(pflags)
                            + encode_attrs(attrs), **kw)

    def close_handle(self, handle, **kw):
        return self.request(FXP_CLOSE, string(handle), **kw)

    def read(self, handle, offset, length, **kw):
        return self.request(FXP_READ, string(handle) + u64(offset)
                            + u32(length), **kw)

    def write(self, handle, offset, data, **kw):
        return self.request(FXP_WRITE, string(handle) + u64(offset)
                            + string(data), **kw)

    def lstat(self, path, **kw):
        return self.request(FXP_LSTAT, string(path), **kw)

    def fstat(self, handle, **kw):
        return self.request(FXP_FSTAT, string(handle), **kw)

    def setstat(self, path, attrs, **kw):
        return self.request(FXP_SETSTAT, string(path) + encode_attrs(attrs),
                            **kw)

    def fsetstat(self, handle, attrs, **kw):
        return self.request(FXP_FSETSTAT, string(handle)
                            + encode_attrs(attrs), **kw)

    def opendir(self, path, **kw):
        return self.request(FXP_OPENDIR, string(path), **kw)

    def readdir(self, handle, **kw):
        return self.request(FXP_READDIR, string(handle), **kw)

    def remove(self, path, **kw):
        return self.request(FXP_REMOVE, string(path), **kw)

    def mkdir(self, path, attrs=None, **kw):
        return self.request(FXP_MKDIR, string(path) + encode_attrs(attrs),
                            **kw)

    def rmdir(self, path, **kw):
        return self.request(FXP_RMDIR, string(path), **kw)

    def realpath(self, path, **kw):
        return self.request(FXP_REALPATH, string(path), **kw)

    def stat(self, path, **kw):
        return self.request(FXP_STAT, string(path), **kw)

    def rename(self, old, new, **kw):
        return self.request(FXP_RENAME, string(old) + string(new), **kw)

    def readlink(self, path, **kw):
        return self.request(FXP_READLINK, string(path), **kw)

    def symlink(self, target, linkpath, **kw):
        """OpenSSH order: the first string is the target, the second the
        new link (the reverse of draft-02)."""
        return self.request(FXP_SYMLINK, string(target) + string(linkpath),
                            **kw)

    # OpenSSH extensions.
    def posix_rename(self, old, new, **kw):
        return self.extended("posix-rename@openssh.com",
                             string(old) + string(new), **kw)

    def statvfs(self, path, **kw):
        return self.extended("statvfs@openssh.com", string(path), **kw)

    def fstatvfs(self, handle, **kw):
        return self.extended("fstatvfs@openssh.com", string(handle), **kw)

    def hardlink(self, old, new, **kw):
        return self.extended("hardlink@openssh.com",
                             string(old) + string(new), **kw)

    def fsync(self, handle, **kw):
        return self.extended("fsync@openssh.com", string(handle), **kw)

    def lsetstat(self, path, attrs, **kw):
        return self.extended("lsetstat@openssh.com",
                             string(path) + encode_attrs(attrs), **kw)

    def limits(self, **kw):
        return self.extended("limits@openssh.com", b"", **kw)

    def expand_path(self, path, **kw):
        return self.extended("expand-path@openssh.com", string(path), **kw)

    def copy_data(self, rhandle, roff, rlen, whandle, woff, **kw):
        return self.extended("copy-data", string(rhandle) + u64(roff)
                             + u64(rlen) + string(whandle) + u64(woff), **kw)

    def home_directory(self, user, **kw):
        return self.extended("home-directory", string(user), **kw)

    def users_groups_by_id(self, uids, gids, **kw):
        ub = b"".join(u32(x) for x in uids)
        gb = b"".join(u32(x) for x in gids)
        return self.extended("users-groups-by-id@openssh.com",
                             string(ub) + string(gb), **kw)

    # -------------------------------------------------- conveniences

    def readdir_all(self, handle):
        """READDIR until a STATUS; returns (list of NAME replies, status)."""
        names = []
        while True:
            rep = self.readdir(handle)
            if rep.type != FXP_NAME:
                return names, rep
            names.append(rep)

    # Beyond OpenSSH: draft-ietf-secsh-filexfer-extensions-00
    # and paramiko's check-file.
    def check_file_name(self, path, algs, start=0, length=0, block=0, **kw):
        return self.extended("check-file-name", string(path) + string(algs)
                             + u64(start) + u64(length) + u32(block), **kw)

    def check_file_handle(self, handle, algs, start=0, length=0, block=0,
                          name="check-file-handle", **kw):
        return self.extended(name, string(handle) + string(algs)
                             + u64(start) + u64(length) + u32(block), **kw)

    def copy_file(self, src, dst, overwrite, **kw):
        return self.extended("copy-file", string(src) + string(dst)
                             + u8(1 if overwrite else 0), **kw)

    def space_available(self, path, **kw):
        return self.extended("space-available", string(path), **kw)

    def vendor_id(self, vendor, product, version, build, **kw):
        return self.extended("vendor-id", string(vendor) + string(product)
                             + string(version) + u64(build), **kw)

    def check_handle(self, rep, what=""):
        if rep.type != FXP_HANDLE:
            raise ProtocolError("%s: expected HANDLE, got %r" % (what, rep))
        return rep.handle

    def check_ok(self, rep, what=""):
        if not rep.is_status(FX_OK):
            raise ProtocolError("%s: expected OK, got %r" % (what, rep))

    def put_bytes(self, path, data, chunk=32768):
        """Create/truncate path and write data (pipelined)."""
        h = self.check_handle(self.open(path, FXF_WRITE | FXF_CREAT
                                        | FXF_TRUNC), "open " + repr(path))
        ids = []
        for off in range(0, len(data), chunk):
            ids.append(self.write(h, off, data[off:off + chunk], wait=False))
        for rid in ids:
            self.check_ok(self.expect(rid), "write")
        self.check_ok(self.close_handle(h), "close")

    def get_bytes(self, path, chunk=32768):
        h = self.check_handle(self.open(path, FXF_READ), "open " + repr(path))
        out = bytearray()
        off = 0
        while True:
            rep = self.read(h, off, chunk)
            if rep.is_status(FX_EOF):
                break
            if rep.type != FXP_DATA:
                raise ProtocolError("read: %r" % rep)
            out += rep.data
            off += len(rep.data)
        self.check_ok(self.close_handle(h), "close")
        return bytes(out)

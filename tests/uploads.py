#!/usr/bin/python3
"""--atomic-uploads, -m/-M and --fsync-on-close (issue 23), against the
server alone (the raw client and OpenSSH's sftp -D), on each file system
given with --fs, and through sshd with real clients ("clients" mode) while
a second process (tests/upload-watch.py) watches the target directory.

Usage: uploads.py --server PATH [--server-args ARGS] [--label NAME]
       --workdir DIR [--fs NAME=DIR]... [--sim PATH]
       [--clients --port N --key FILE --user NAME --args-file FILE
        --sshd-pid PID --local DIR]
Prints PASS:/FAIL:/SKIP: lines and "N passed, N failed"; exit 0 when all
passed, 77 when nothing failed but some checks could not run.
"""

import argparse
import hashlib
import json
import os
import pwd
import random
import re
import resource
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402
from sftpclient import (  # noqa: E402
    FXF_READ, FXF_WRITE, FXF_APPEND, FXF_CREAT, FXF_TRUNC, FXF_EXCL, FX_OK,
    FX_FAILURE, FX_NO_SUCH_FILE, FX_PERMISSION_DENIED, FXP_HANDLE)
import kernelrules  # noqa: E402
import tally  # noqa: E402
from tally import say  # noqa: E402

OPTS = None
N_SKIPPED = 0
IS_ROOT = os.geteuid() == 0
NOBODY = 65534
OLD = 1000000000
WCT = FXF_WRITE | FXF_CREAT | FXF_TRUNC
HIDDEN = re.compile(r"^\..+\.uring-sftp\.[A-Za-z0-9]{6}$")
TESTS = os.path.dirname(os.path.abspath(__file__))


def skip(what):
    global N_SKIPPED
    N_SKIPPED += 1
    print("SKIP: [%s] %s" % (OPTS.label, what))


def rnd(seed, n):
    return random.Random(seed).randbytes(n)


def sha(data):
    return hashlib.sha256(data).hexdigest()


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data, mode=0o644):
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)


def listing(d):
    return sorted(os.listdir(d))


def fresh(base, name):
    d = os.path.join(base, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    os.mkdir(d)
    os.chmod(d, 0o777)
    return d


NOBODY_PRE = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY,
              "--clear-groups", "--"]


def serve(args, cwd, pre=(), level="INFO"):
    argv = (list(pre) + [OPTS.server] + shlex.split(OPTS.server_args) +
            ["-e", "-l", level] + list(args))
    c = sc.Client(argv, cwd=cwd, timeout=20)
    c.init()
    return c


def status(rep):
    return rep.code if rep.type == sc.FXP_STATUS else "type %d" % rep.type


def fs_kind(d):
    """'tmpfile' where O_TMPFILE works in d, else 'named'."""
    try:
        fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o600)
    except OSError:
        return "named"
    os.close(fd)
    return "tmpfile"


def upload_parts(c, h, data, parts=4, start=0):
    step = (len(data) + parts - 1) // parts
    for off in range(0, len(data), step):
        rep = c.write(h, start + off, data[off:off + step])
        if rep.code != FX_OK:
            return rep
    return rep


def finish(c):
    c.close_stdin()
    return c.wait(20)


# ------------------------------------------------------------ every fs

def check_new(tag, base, kind):
    d = fresh(base, "new")
    data = rnd(1, 1 << 20)
    c = serve(["--atomic-uploads"], d)
    h = c.open("t", WCT, {"perm": 0o640}).handle
    c.write(h, 0, data[:4096])
    st = c.stat("t")
    say(status(st) == FX_NO_SUCH_FILE,
        "%s new: STAT of the target during the upload says no such file" %
        tag, status(st))
    names = listing(d)
    if kind == "tmpfile":
        say(names == [], "%s new: nothing in the directory during the "
            "upload (O_TMPFILE)" % tag, names)
    else:
        say(len(names) == 1 and HIDDEN.match(names[0]),
            "%s new: only a hidden .t.uring-sftp.XXXXXX during the upload "
            "(no O_TMPFILE)" % tag, names)
    rep = c.fstat(h)
    say(rep.type == sc.FXP_ATTRS and rep.attrs["size"] == 4096,
        "%s new: FSTAT of the handle sees the upload" % tag)
    upload_parts(c, h, data[4096:], start=4096)
    c.fsetstat(h, {"atime": OLD, "mtime": OLD})
    rep = c.close_handle(h)
    say(rep.code == FX_OK, "%s new: CLOSE OK" % tag, status(rep))
    say(listing(d) == ["t"] and read(os.path.join(d, "t")) == data,
        "%s new: the target appears whole at CLOSE, nothing else" % tag,
        listing(d))
    st = os.stat(os.path.join(d, "t"))
    say(int(st.st_mtime) == OLD, "%s new: FSETSTAT's times kept" % tag)
    if kind == "tmpfile":
        say(stat.S_IMODE(st.st_mode) == 0o640,
            "%s new: the requested mode less the umask" % tag,
            oct(st.st_mode))
    finish(c)


def check_replace(tag, base, kind):
    d = fresh(base, "replace")
    old, new = rnd(2, 300000), rnd(3, 1 << 20)
    t = os.path.join(d, "t")
    write(t, old, 0o604)
    perms = kind == "tmpfile"   # vfat has one mode and owner for all
    if IS_ROOT and perms:
        os.chown(t, NOBODY, NOBODY)
    os.link(t, os.path.join(d, "hl")) if perms else None
    c = serve(["--atomic-uploads"], d)
    h = c.open("t", WCT, {"perm": 0o600}).handle
    upload_parts(c, h, new[:500000])
    say(read(t) == old, "%s replace: the old file is whole during the "
        "upload" % tag)
    rep = c.stat("t")
    say(rep.type == sc.FXP_ATTRS and rep.attrs["size"] == len(old),
        "%s replace: STAT by path shows the old file" % tag)
    upload_parts(c, h, new[500000:], start=500000)
    rep = c.close_handle(h)
    say(rep.code == FX_OK and read(t) == new,
        "%s replace: new contents at CLOSE" % tag, status(rep))
    if perms:
        st = os.stat(t)
        say(stat.S_IMODE(st.st_mode) == 0o604,
            "%s replace: the old file's mode kept (not the OPEN's)" % tag,
            oct(st.st_mode))
        if IS_ROOT:
            say((st.st_uid, st.st_gid) == (NOBODY, NOBODY),
                "%s replace: the old file's owner and group kept" % tag,
                (st.st_uid, st.st_gid))
        say(read(os.path.join(d, "hl")) == old,
            "%s replace: a hard link keeps the old contents (a new file "
            "under the name, as posix-rename)" % tag)
    say(sorted(set(listing(d)) - {"hl"}) == ["t"],
        "%s replace: nothing left beside it" % tag, listing(d))
    finish(c)


def with_old(base, case, seed, pre=()):
    """A fresh directory holding "g" (an old file, returned), and a server
    with --atomic-uploads there."""
    d = fresh(base, case)
    old = rnd(seed, 5000 + seed)
    write(os.path.join(d, "g"), old)
    return d, old, serve(["--atomic-uploads"], d, pre=pre)


def check_failed_write(tag, base):
    d, old, c = with_old(base, "failed", 4)
    for name in ("f", "g"):
        h = c.open(name, WCT).handle
        c.write(h, 0, rnd(5, 70000))
        bad = c.write(h, 2 ** 63, b"x")
        c.write(h, 70000, b"more")
        rep = c.close_handle(h)
        say(bad.code != FX_OK and rep.code == FX_FAILURE,
            "%s failed WRITE, then CLOSE: FAILURE (%s target)" %
            (tag, "new" if name == "f" else "old"), status(rep))
    say(listing(d) == ["g"] and read(os.path.join(d, "g")) == old,
        "%s failed WRITE: the target unchanged, nothing left" % tag,
        listing(d))
    finish(c)
    log = c.stderr_bytes()
    say(b'close "g": upload discarded after a failed write' in log,
        "%s failed WRITE: logged" % tag)


def check_no_close(tag, base):
    d, old, c = with_old(base, "noclose", 6)
    for name in ("f", "g"):
        h = c.open(name, WCT).handle
        upload_parts(c, h, rnd(7, 200000))
    rc = finish(c)
    say(rc == 0 and listing(d) == ["g"] and
        read(os.path.join(d, "g")) == old,
        "%s session ends without CLOSE: targets unchanged, nothing left" %
        tag, (rc, listing(d)))


def check_kill_server(tag, base, kind, pre=()):
    d, old, c = with_old(base, "killserver", 8, pre)
    for name in ("f", "g"):
        h = c.open(name, WCT).handle
        upload_parts(c, h, rnd(9, 300000))
    os.kill(c.proc.pid, signal.SIGKILL)
    c.proc.wait()
    names = listing(d)
    visible = [n for n in names if not HIDDEN.match(n)]
    say(visible == ["g"] and read(os.path.join(d, "g")) == old,
        "%s kill -9 of the server mid-upload: no partial target" % tag,
        names)
    if kind == "tmpfile":
        say(names == ["g"], "%s kill -9 of the server: no temporary file "
            "left (O_TMPFILE)" % tag, names)
    else:
        hidden = [n for n in names if HIDDEN.match(n)]
        say(len(hidden) == 2 and
            sorted(n.split(".uring-sftp.")[0] for n in hidden) ==
            [".f", ".g"],
            "%s kill -9 of the server: the documented leftovers "
            "(.NAME.uring-sftp.XXXXXX, one per open upload)" % tag, names)
    c.close()


def check_resume(tag, base):
    d = fresh(base, "resume")
    data = rnd(10, 700001)
    r = os.path.join(d, "r")
    write(r, data[:300000])
    c = serve(["--atomic-uploads"], d)
    h = c.open("r", FXF_WRITE | FXF_CREAT).handle
    c.write(h, 300000, data[300000:400000])
    say(len(read(r)) == 400000, "%s resume (no TRUNCATE) writes in place" %
        tag)
    upload_parts(c, h, data[400000:], start=400000)
    say(c.close_handle(h).code == FX_OK and read(r) == data,
        "%s resume: byte for byte" % tag)
    h = c.open("r", FXF_WRITE | FXF_APPEND).handle
    c.write(h, 0, b"appended")
    c.write(h, 12345, b" twice")
    say(c.close_handle(h).code == FX_OK and
        read(r) == data + b"appended twice", "%s append: byte for byte" % tag)
    finish(c)
    # OpenSSH's sftp: reput (resume an upload), byte for byte
    if not shutil.which("sftp"):
        return skip("%s sftp reput: no OpenSSH sftp" % tag)
    local = os.path.join(OPTS.workdir, "reput.src")
    write(local, data)
    write(r, data[:123457])
    batch = os.path.join(OPTS.workdir, "reput.batch")
    with open(batch, "w") as f:
        f.write("reput %s r\n" % local)
    cmd = " ".join(shlex.quote(x) for x in [OPTS.server] + shlex.split(
        OPTS.server_args) + ["--atomic-uploads"])
    p = subprocess.run(["sftp", "-q", "-D", cmd, "-b", batch], cwd=d,
                       capture_output=True, timeout=60)
    say(p.returncode == 0 and read(r) == data,
        "%s sftp -D reput: byte for byte" % tag,
        p.stderr.decode(errors="replace")[-300:])


def check_symlink(tag, base):
    d = fresh(base, "symlink")
    write(os.path.join(d, "tgt"), b"old")
    os.symlink("tgt", os.path.join(d, "ln"))
    os.symlink("absent", os.path.join(d, "dangling"))
    c = serve(["--atomic-uploads"], d)
    for name in ("ln", "dangling"):
        h = c.open(name, WCT).handle
        c.write(h, 0, b"new " + name.encode())
        c.close_handle(h)
    finish(c)
    say(os.readlink(os.path.join(d, "ln")) == "tgt" and
        read(os.path.join(d, "tgt")) == b"new ln" and
        read(os.path.join(d, "absent")) == b"new dangling",
        "%s through a symlink: the file it leads to is replaced, the link "
        "stays" % tag, listing(d))


def fs_checks(name, base):
    kind = fs_kind(base)
    tag = "%s (%s)" % (name, "O_TMPFILE" if kind == "tmpfile" else
                       "no O_TMPFILE")
    check_new(tag, base, kind)
    check_replace(tag, base, kind)
    check_failed_write(tag, base)
    check_no_close(tag, base)
    check_kill_server(tag, base, kind)
    check_resume(tag, base)
    if kind == "tmpfile":
        check_symlink(tag, base)


# ------------------------------------------------------------ one fs

def check_excl_and_races(base):
    d = fresh(base, "excl")
    write(os.path.join(d, "e"), b"exists")
    c = serve(["--atomic-uploads"], d)
    say(status(c.open("e", FXF_WRITE | FXF_CREAT | FXF_EXCL)) == FX_FAILURE,
        "EXCL on an existing name: FAILURE at OPEN, as OpenSSH")
    h = c.open("x", FXF_WRITE | FXF_CREAT | FXF_EXCL).handle
    c.write(h, 0, b"upload")
    write(os.path.join(d, "x"), b"theirs")
    rep = c.close_handle(h)
    say(rep.code == FX_FAILURE and read(os.path.join(d, "x")) == b"theirs",
        "EXCL: a file made meanwhile by another process is not replaced "
        "(CLOSE: FAILURE)", status(rep))
    h = c.open("y", WCT).handle
    c.write(h, 0, b"upload")
    write(os.path.join(d, "y"), b"theirs")
    rep = c.close_handle(h)
    say(rep.code == FX_OK and read(os.path.join(d, "y")) == b"upload",
        "without EXCL: the last CLOSE wins", status(rep))
    h = c.open("z", WCT | FXF_READ).handle
    c.write(h, 0, b"0123456789")
    rep = c.read(h, 2, 5)
    say(rep.type == sc.FXP_DATA and rep.data == b"23456",
        "READ through the upload's handle")
    rep = c.open("z", FXF_READ)
    say(status(rep) == FX_NO_SUCH_FILE,
        "a second OPEN of the name during the upload finds no file yet")
    c.close_handle(h)
    # CLOSE and a STAT of the name sent together: the STAT sees the file
    # (CLOSE changes paths here, so it runs first, as OpenSSH's would)
    seen = []
    for i in range(20):
        h = c.open("p", WCT).handle
        c.write(h, 0, b"x" * (i + 1))
        c.begin_batch()
        rid_close = c.close_handle(h, wait=False)
        rid_stat = c.stat("p", wait=False)
        c.end_batch()
        reps = {r.id: r for r in (c.recv(), c.recv())}
        st = reps[rid_stat]
        seen.append(reps[rid_close].code == FX_OK and
                    st.type == sc.FXP_ATTRS and st.attrs["size"] == i + 1)
    say(all(seen), "CLOSE and STAT of the name pipelined: the STAT sees "
        "the upload, every time (%d of %d)" % (sum(seen), len(seen)))
    say(listing(d) == ["e", "p", "x", "y", "z"], "nothing else left",
        listing(d))
    finish(c)


def check_permissions(base):
    if not IS_ROOT:
        return skip("refusals as another user: needs root")
    d = fresh(base, "perm")
    os.chown(d, NOBODY, NOBODY)
    ro = os.path.join(d, "ro")
    write(ro, b"read only", 0o444)
    os.chown(ro, NOBODY, NOBODY)
    rodir = os.path.join(d, "rodir")
    os.mkdir(rodir)
    write(os.path.join(rodir, "w"), b"writable", 0o644)
    os.chown(os.path.join(rodir, "w"), NOBODY, NOBODY)
    os.chown(rodir, NOBODY, NOBODY)
    os.chmod(rodir, 0o555)
    sticky = os.path.join(d, "sticky")
    os.mkdir(sticky)
    os.chmod(sticky, 0o1777)
    write(os.path.join(sticky, "shared"), b"root's", 0o666)
    for args, what in ((["--atomic-uploads"], "atomic"), ([], "in place")):
        c = serve(args, d, pre=NOBODY_PRE)
        got = [status(c.open(p, WCT)) for p in ("ro", "rodir/w",
                                                "sticky/shared")]
        finish(c)
        if what == "atomic":
            say(got == [FX_PERMISSION_DENIED] * 3,
                "atomic: a read-only file, a file in a read-only "
                "directory, another user's file in a sticky directory: "
                "PERMISSION_DENIED", got)
            log = c.stderr_bytes()
            say(b"cannot create a new file beside it" in log and
                b"sticky directory cannot be replaced" in log,
                "atomic: those refusals are logged")
        else:
            say(got[0] == FX_PERMISSION_DENIED and
                got[1:] == ["type %d" % FXP_HANDLE] * 2,
                "in place (no --atomic-uploads): the last two open", got)


def check_confined(base):
    if not IS_ROOT:
        return skip("--confine as nobody: needs root")
    # --confine refuses a directory below one that others may write (the
    # file systems' roots here are 0777): the work directory is root's
    d = fresh(OPTS.workdir, "confined")
    os.chmod(d, 0o755)
    os.chown(d, NOBODY, NOBODY)
    write(os.path.join(d, "old"), b"old")
    os.chown(os.path.join(d, "old"), NOBODY, NOBODY)
    try:
        c = serve(["--atomic-uploads", "--confine", "-m", "0640", "-M",
                   "0750"], d, pre=NOBODY_PRE)
    except sc.SFTPError as e:
        return skip("--confine: the server did not start (%s)" % e)
    for name in ("new", "old"):
        h = c.open(name, WCT).handle
        c.write(h, 0, b"confined " + name.encode())
        during = listing(d)
        before = read(os.path.join(d, "old"))
        rep = c.close_handle(h)
        say(rep.code == FX_OK and
            read(os.path.join(d, name)) == b"confined " + name.encode() and
            ("new" not in during if name == "new" else before == b"old"),
            "--confine (Landlock) as nobody: atomic upload of a %s file" %
            name, (status(rep), during))
    c.mkdir("sub")
    finish(c)
    modes = [stat.S_IMODE(os.stat(os.path.join(d, n)).st_mode)
             for n in ("new", "old", "sub")]
    say(modes == [0o640, 0o644, 0o750], "--confine: -m for the new file, "
        "the replaced one keeps its mode, -M for the directory",
        [oct(m) for m in modes])


def check_sim(base):
    if not OPTS.sim or not os.access(OPTS.sim, os.X_OK):
        return skip("tests/upload-sim not built: the fallbacks are tried "
                    "only on a file system without O_TMPFILE")
    p = subprocess.run([OPTS.sim, "--no-tmpfile", "true"])
    if p.returncode != 0:
        return skip("seccomp not usable here: upload-sim")
    for flags, kind, how in (
            (["--no-tmpfile"], "named", "named temporary files"),
            (["--no-flink"], "tmpfile", "linked through /proc"),
            (["--no-flink", "--no-proc-link"], "named",
             "named temporary files")):
        pre = [OPTS.sim] + flags
        tag = "upload-sim %s" % " ".join(flags)
        d = fresh(base, "sim")
        write(os.path.join(d, "g"), b"old")
        c = serve(["--atomic-uploads"], d, pre=pre, level="DEBUG")
        h = c.open("n", WCT).handle
        c.write(h, 0, b"new")
        during = listing(d)
        c.close_handle(h)
        h = c.open("g", WCT).handle
        c.write(h, 0, b"replaced")
        c.close_handle(h)
        finish(c)
        ok = (listing(d) == ["g", "n"] and read(os.path.join(d, "n")) ==
              b"new" and read(os.path.join(d, "g")) == b"replaced")
        if kind == "tmpfile":
            ok = ok and during == ["g"]
        else:
            ok = ok and len(during) == 2 and HIDDEN.match(during[0])
        say(ok, "%s: %s, new and replaced targets" % (tag, how), during)
        say(how.encode() in c.stderr_bytes() or
            kind == "named" and b"writing .n.uring-sftp." in
            c.stderr_bytes(), "%s: the way is logged at DEBUG" % tag)
        check_kill_server(tag, base, kind, pre=pre)


def check_readonly(base):
    d = fresh(base, "readonly")
    c = serve(["--atomic-uploads", "-R"], d)
    say(status(c.open("t", WCT)) == FX_PERMISSION_DENIED and
        listing(d) == [], "-R refuses an atomic upload as any write")
    finish(c)


def check_xferlog(base):
    d = fresh(base, "xferlog")
    log = os.path.join(OPTS.workdir, "xfer.json")
    if os.path.exists(log):
        os.unlink(log)
    c = serve(["--atomic-uploads", "--xferlog=" + log,
               "--xferlog-format=json"], d)
    h = c.open("ok", WCT).handle
    c.write(h, 0, b"12345")
    c.close_handle(h)
    h = c.open("lost", WCT).handle
    c.write(h, 2 ** 63, b"x")
    c.close_handle(h)
    finish(c)
    lines = [json.loads(x) for x in read(log).splitlines()]
    got = [(os.path.basename(x["path"]), x["complete"]) for x in lines]
    say(got == [("ok", True), ("lost", False)],
        "--xferlog names the target; a discarded upload is incomplete", got)


# ------------------------------------------------------------ -m, -M

def check_modes(base):
    for umask in ("0", "077"):
        d = fresh(base, "modes")
        write(os.path.join(d, "exists"), b"e", 0o600)
        write(os.path.join(d, "src"), b"source", 0o777)
        os.symlink("exists", os.path.join(d, "sl"))
        for atomic in ([], ["--atomic-uploads"]):
            c = serve(["-m", "0640", "-M", "2750", "-u", umask] + atomic, d)
            sfx = "-a" if atomic else ""
            made = []
            for i, (fl, attrs) in enumerate((
                    (WCT, {"perm": 0o777}), (WCT, {"perm": 0}),
                    (FXF_WRITE | FXF_CREAT, None),
                    (FXF_WRITE | FXF_CREAT | FXF_EXCL, {"perm": 0o4777}),
                    (FXF_READ | FXF_CREAT, {"perm": 0o666}),
                    (FXF_READ | FXF_WRITE | FXF_CREAT, {"perm": 0o200}))):
                n = "f%d%s" % (i, sfx)
                h = c.open(n, fl, attrs).handle
                c.close_handle(h)
                made.append(n)
            for n, attrs, slash in (("d1", {"perm": 0o777}, ""),
                                    ("d2", {"perm": 0}, ""),
                                    ("d3", None, "/")):
                c.mkdir(n + sfx + slash, attrs)
                made.append(n + sfx)
            c.copy_file("src", "copy" + sfx, 0)
            made.append("copy" + sfx)
            src = c.open("src", FXF_READ).handle
            dst = c.open("cd" + sfx, FXF_WRITE | FXF_CREAT).handle
            c.copy_data(src, 0, 0, dst, 0)
            c.close_handle(src)
            c.close_handle(dst)
            made.append("cd" + sfx)
            bad = []
            for n in made:
                m = os.stat(os.path.join(d, n)).st_mode
                want = 0o2750 if stat.S_ISDIR(m) else 0o640
                if stat.S_IMODE(m) != want:
                    bad.append("%s %o" % (n, stat.S_IMODE(m)))
            say(not bad, "-m 0640 -M 2750, umask %s%s: every file and "
                "directory created (OPEN in every way, MKDIR, copy-file, "
                "copy-data's destination) has exactly the forced mode" %
                (umask, " with --atomic-uploads" if atomic else ""), bad)
            # permission changes of such files and directories are ignored,
            # the rest of the request applies
            h = c.open("f0" + sfx, FXF_WRITE).handle
            r1 = c.fsetstat(h, {"perm": 0o777, "atime": OLD, "mtime": OLD})
            c.close_handle(h)
            r2 = c.setstat("d1" + sfx, {"perm": 0o700})
            r3 = c.setstat("sl", {"perm": 0o606})
            r4 = c.lsetstat("d2" + sfx, {"perm": 0o777})
            finish(c)
            st = os.stat(os.path.join(d, "f0" + sfx))
            say([r.code for r in (r1, r2, r3, r4)] == [FX_OK] * 4 and
                stat.S_IMODE(st.st_mode) == 0o640 and
                int(st.st_mtime) == OLD and
                stat.S_IMODE(os.stat(os.path.join(d, "d1" + sfx)).st_mode)
                == 0o2750 and
                stat.S_IMODE(os.stat(os.path.join(d, "exists")).st_mode)
                == 0o600,
                "-m/-M: FSETSTAT, SETSTAT, lsetstat of the mode of a file "
                "or directory are ignored (answered OK, times still set)")
            say(c.stderr_bytes().count(b" ignored: -m 0640") == 2 and
                b'set "d1%s" mode 0700 ignored: -M 2750' % sfx.encode()
                in c.stderr_bytes(), "-m/-M: ignored changes are logged")
    # without -m the same requests give other modes: the test can fail
    d = fresh(base, "modes-control")
    c = serve(["-u", "0"], d)
    c.close_handle(c.open("f", WCT, {"perm": 0o777}).handle)
    c.mkdir("d", {"perm": 0o777})
    finish(c)
    say(stat.S_IMODE(os.stat(os.path.join(d, "f")).st_mode) == 0o777 and
        stat.S_IMODE(os.stat(os.path.join(d, "d")).st_mode) == 0o777,
        "without -m/-M the client's modes apply (control)")


# ------------------------------------------------------------ fsync

def strace_session(d, args, backend):
    trace = os.path.join(OPTS.workdir, "strace.out")
    pre = ["strace", "-f", "-qq", "-x", "-s", "64", "-o", trace, "-e",
           "trace=fsync,fdatasync,syncfs,writev,write,linkat,renameat,"
           "renameat2"]
    argv = pre + [OPTS.server, "--backend=" + backend, "-e"] + args
    c = sc.Client(argv, cwd=d, timeout=30)
    c.init()
    ids = {}
    h = c.open("new", WCT).handle
    c.write(h, 0, b"n" * 70000)
    rep = c.close_handle(h)
    ids["new"] = rep.id
    write(os.path.join(d, "resumed"), b"r" * 10)
    h = c.open("resumed", FXF_WRITE).handle
    c.write(h, 10, b"more")
    ids["resumed"] = c.close_handle(h).id
    h = c.open("new", FXF_READ).handle
    ids["read"] = c.close_handle(h).id
    finish(c)
    return read(trace).decode(errors="replace").splitlines(), ids


def status_bytes(rid):
    """The start of a STATUS reply to rid as strace -x prints it."""
    raw = b"\x65" + rid.to_bytes(4, "big")
    return "".join("\\x%02x" % x for x in raw)


def reply_line(lines, rid):
    pat = status_bytes(rid)
    for i, ln in enumerate(lines):
        if ("writev(1," in ln or "write(1," in ln) and pat in ln:
            return i
    return -1


def syncs_before(lines, end, start):
    return [ln for ln in lines[start:end] if re.search(
        r"\b(fsync|fdatasync|syncfs)\(", ln)]


def check_fsync(base):
    if not shutil.which("strace"):
        return skip("--fsync-on-close: strace is not installed")
    for backend in ("uring", "plain"):
        for atomic in ([], ["--atomic-uploads"]):
            d = fresh(base, "fsync")
            lines, ids = strace_session(d, ["--fsync-on-close"] + atomic,
                                        backend)
            r_new = reply_line(lines, ids["new"])
            r_res = reply_line(lines, ids["resumed"])
            r_read = reply_line(lines, ids["read"])
            tag = "--fsync-on-close (%s%s)" % (
                backend, ", --atomic-uploads" if atomic else "")
            if min(r_new, r_res, r_read) < 0:
                say(False, tag + ": replies found in the trace",
                    "\n  ".join(lines[-20:]))
                continue
            s_new = syncs_before(lines, r_new, 0)
            link = [i for i, ln in enumerate(lines[:r_new])
                    if "linkat(" in ln and '"new"' in ln]
            say(len(s_new) == 2 and
                (not atomic or (link and
                                lines.index(s_new[0]) < link[0] <
                                lines.index(s_new[1]))),
                tag + ": CLOSE of a new file is answered after fsync of "
                "the file and of its directory" +
                (" (file, link, directory)" if atomic else ""),
                "\n  ".join(lines[:r_new + 1][-8:]))
            s_res = syncs_before(lines, r_res, r_new + 1)
            say(len(s_res) == 1, tag + ": CLOSE of a resumed file: its "
                "fsync alone before the answer", s_res)
            say(not syncs_before(lines, r_read, r_res + 1),
                tag + ": CLOSE of a handle opened to read: no fsync")
    d = fresh(base, "fsync")
    lines, ids = strace_session(d, [], "plain")
    say(not syncs_before(lines, len(lines), 0),
        "without --fsync-on-close no fsync at all (control)")


# ------------------------------------------------------------ copy-file

def check_copy_file(base):
    d = fresh(base, "copyfile")
    write(os.path.join(d, "src"), rnd(11, 100000))
    write(os.path.join(d, "dst"), b"old destination", 0o604)
    os.link(os.path.join(d, "src"), os.path.join(d, "src-link"))
    c = serve(["--atomic-uploads"], d)
    r1 = c.copy_file("src", "dst", 1)
    r2 = c.copy_file("src", "src-link", 1)
    r3 = c.copy_file("src", "new", 0)
    finish(c)
    say(r1.code == FX_OK and read(os.path.join(d, "dst")) ==
        read(os.path.join(d, "src")) and
        stat.S_IMODE(os.stat(os.path.join(d, "dst")).st_mode) == 0o604,
        "copy-file with overwrite, atomic: the destination replaced, its "
        "mode kept")
    say(r2.code == FX_FAILURE and os.path.samefile(
        os.path.join(d, "src"), os.path.join(d, "src-link")),
        "copy-file onto its source through a hard link: still refused")
    say(r3.code == FX_OK and listing(d) == ["dst", "new", "src",
                                            "src-link"],
        "copy-file: nothing left beside the copies", listing(d))
    # copy-data that fails into an atomic upload discards it
    c = serve(["--atomic-uploads"], d)
    src = c.open("src", FXF_READ).handle
    dst = c.open("cd", WCT).handle
    c.write(dst, 0, b"written")
    c.copy_data(src, 0, 100, dst, 2 ** 63 - 10)
    say(c.close_handle(dst).code == FX_FAILURE and
        not os.path.exists(os.path.join(d, "cd")),
        "copy-data that fails into an upload: discarded at CLOSE")
    finish(c)


def raw_checks():
    for spec in OPTS.fs:
        name, base = spec.split("=", 1)
        try:
            fs_checks(name, base)
        except Exception:
            say(False, "%s: the checks ran" % name, traceback.format_exc())
    base = OPTS.fs[0].split("=", 1)[1] if OPTS.fs else fresh(
        OPTS.workdir, "fs")
    for fn in (check_excl_and_races, check_permissions, check_confined,
               check_sim, check_readonly, check_xferlog, check_modes,
               check_fsync, check_copy_file, check_kernel_rules,
               check_mount_point, check_long_path, check_long_link_target,
               check_handle_limit):
        try:
            fn(base)
        except Exception:
            say(False, "%s ran" % fn.__name__, traceback.format_exc())


# ------------------------------------------------------------ OpenSSH's answers

def ours_and_openssh(args=("--atomic-uploads",)):
    """The command lines of our server (with args) and OpenSSH's."""
    return [[OPTS.server] + shlex.split(OPTS.server_args) +
            ["-e", "-l", "ERROR"] + list(args), [kernelrules.OPENSSH]]


def run_one(argv, d, fn, pre=None):
    """fn(client) with the server argv in d."""
    c = sc.Client(argv, cwd=d, timeout=20, preexec_fn=pre)
    try:
        c.init()
        got = fn(c)
        finish(c)
    finally:
        c.close()
    return got


def check_kernel_rules(base):
    why = kernelrules.available()
    if why:
        return skip("planted-link attacks: %s" % why)
    for ok, what in kernelrules.attacks(OPTS.server, OPTS.server_args,
                                        os.path.join(OPTS.workdir, "rules"),
                                        "atomic"):
        say(ok, what)


def put(c, name, data):
    """OPEN (CREATE|TRUNCATE), WRITE, CLOSE: the statuses."""
    rep = c.open(name, WCT)
    if rep.type != FXP_HANDLE:
        return [status(rep)]
    return ["handle", c.write(rep.handle, 0, data).code,
            c.close_handle(rep.handle).code]


def check_mount_point(base):
    if not IS_ROOT or not os.access(kernelrules.OPENSSH, os.X_OK):
        return skip("a bind-mounted target: needs root and OpenSSH's "
                    "sftp-server")
    d = fresh(OPTS.workdir, "mountpoint")
    src = os.path.join(OPTS.workdir, "mountpoint.src")
    hosts = os.path.join(d, "hosts")
    got = []
    for argv in ours_and_openssh():
        write(src, b"127.0.0.1 localhost\n")
        write(hosts, b"under the mount\n")
        subprocess.run(["mount", "--bind", src, hosts], check=True)
        try:
            got.append((run_one(argv, d,
                                lambda c: put(c, "hosts", b"uploaded\n")),
                        read(src), listing(d)))
        finally:
            subprocess.run(["umount", hosts], check=True)
    say(got[0] == got[1] and got[0][0] == ["handle", FX_OK, FX_OK] and
        got[0][1] == b"uploaded\n" and got[0][2] == ["hosts"],
        "a bind-mounted target (as containers mount /etc/hosts): written "
        "in place as OpenSSH's server writes it, nothing left beside it",
        got)


def check_long_path(base):
    if not os.access(kernelrules.OPENSSH, os.X_OK):
        return skip("a path longer than PATH_MAX: no OpenSSH sftp-server")
    d = fresh(base, "longpath")
    # 4106 bytes: cut at PATH_MAX it would name "abcdefghijklmno"
    name = "./" * 2040 + "abcdefghijklmnopqrstuvwxyz"
    ours, theirs = [run_one(argv, d, lambda c: put(c, name, b"data"))
                    for argv in ours_and_openssh()]
    say(ours == theirs and ours != ["handle", FX_OK, FX_OK] and
        listing(d) == [],
        "a path longer than PATH_MAX: OpenSSH's answer, nothing created",
        (ours, theirs, listing(d)))


def check_long_link_target(base):
    d = fresh(base, "longlink")
    t = os.path.join(d, "target")
    write(t, b"old")
    # 13 directories of 250-byte names, and a link there whose target
    # (885 bytes: short enough for a 1 KiB-block ext4) pasted after them
    # is longer than PATH_MAX; the kernel follows it all the same.
    deep = "/".join(["x" * 250] * 13)
    os.makedirs(os.path.join(d, deep))
    os.symlink("../" * 13 + "./" * 420 + "target",
               os.path.join(d, deep, "link"))
    c = serve(["--atomic-uploads"], d)
    rep = c.open(deep + "/link", WCT)
    during = read(t)
    if rep.type == FXP_HANDLE:
        c.write(rep.handle, 0, b"new")
        got = [c.close_handle(rep.handle).code]
    else:
        got = [status(rep)]
    finish(c)
    say(during == b"old" and got == [FX_OK] and read(t) == b"new" and
        os.path.islink(os.path.join(d, deep, "link")),
        "a link whose target is long: followed by the kernel, an atomic "
        "upload all the same (the target whole until CLOSE)",
        (during, got, read(t)))


def nofile(n):
    return lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))


def check_handle_limit(base):
    d = fresh(base, "limit")
    for i in range(80):
        write(os.path.join(d, "f%02d" % i), b"old")

    def fill(c):
        advertised = sc.parse_limits(c.limits().data)["max_handles"]
        return advertised, [status(c.open("f%02d" % i, WCT))
                            for i in range(80)]
    advertised, got = run_one(ours_and_openssh()[0], d, fill, nofile(64))
    opened = got.count("type %d" % FXP_HANDLE)
    say(0 < advertised <= opened and
        got[:advertised] == ["type %d" % FXP_HANDLE] * advertised,
        "RLIMIT_NOFILE 64: limits@openssh.com advertises %d atomic "
        "uploads, and that many open (%d did)" % (advertised, opened))
    say(set(got[opened:]) == {FX_FAILURE},
        "past the limit: FAILURE at OPEN, as OpenSSH's server answers",
        got[opened:opened + 3])
    say(all(read(os.path.join(d, "f%02d" % i)) == b"old"
            for i in range(80)),
        "no target truncated: neither the uploads left open nor those "
        "refused were written in place")


# ------------------------------------------------------------ clients

class Watch:
    """tests/upload-watch.py on DIR/NAME, as a second process."""

    def __init__(self, d, name, data, old=None):
        self.out = os.path.join(OPTS.workdir, "watch.json")
        ready = os.path.join(OPTS.workdir, "watch.ready")
        for f in (self.out, ready):
            if os.path.exists(f):
                os.unlink(f)
        argv = [sys.executable, os.path.join(TESTS, "upload-watch.py"), d,
                name, "--size", str(len(data)), "--sha256", sha(data),
                "--ready", ready, "--out", self.out]
        if old is not None:
            argv += ["--old-size", str(len(old)), "--old-sha256", sha(old)]
        self.p = subprocess.Popen(argv)
        end = time.monotonic() + 10
        while not os.path.exists(ready) and time.monotonic() < end:
            time.sleep(0.01)

    def result(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(20)
        with open(self.out) as f:
            return json.load(f)


SSHOPTS = ["-F", "/dev/null", "-o", "IdentitiesOnly=yes", "-o",
           "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o",
           "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]


def client_cmd(which, src, dest, limit=None):
    port, key, user = str(OPTS.port), OPTS.key, OPTS.user
    if which == "sftp":
        batch = os.path.join(OPTS.workdir, "put.batch")
        with open(batch, "w") as f:
            f.write("put %s %s\n" % (src, dest))
        return (["sftp", "-q", "-P", port, "-i", key] + SSHOPTS +
                (["-l", str(limit)] if limit else []) +
                ["-b", batch, "%s@127.0.0.1" % user])
    if which == "paramiko":
        prog = ("import paramiko, sys\n"
                "t = paramiko.Transport(('127.0.0.1', %s))\n"
                "t.connect(username=%r, pkey=paramiko.Ed25519Key."
                "from_private_key_file(%r))\n"
                "s = paramiko.SFTPClient.from_transport(t)\n"
                "s.put(%r, %r)\n"
                "s.close(); t.close()\n" % (port, user, key, src, dest))
        return [sys.executable, "-c", prog]
    if which == "lftp":
        conn = "ssh -a -x -i %s %s" % (key, " ".join(SSHOPTS))
        return ["lftp", "-c",
                "set sftp:connect-program '%s'; set net:max-retries 1; "
                "set net:timeout 20; set cmd:fail-exit yes; "
                "open -u %s, -p %s sftp://127.0.0.1; put %s -o %s" % (
                    conn, user, port, src, dest)]
    if which == "rclone":
        remote = ":sftp,host=127.0.0.1,port=%s,user=%s,key_file=%s," \
                 "shell_type=none,disable_hashcheck=true:%s" % (
                     port, user, key, dest)
        return ["rclone", "copyto", "--config", "/dev/null",
                "--retries", "1", "--low-level-retries", "1", src, remote]
    raise ValueError(which)


def set_server_args(args, prefix=()):
    with open(OPTS.args_file, "w") as f:
        f.write(" ".join(args) + "\n")
    with open(os.path.join(os.path.dirname(OPTS.args_file),
                           "server-prefix"), "w") as f:
        f.write(" ".join(prefix) + "\n")


def descendants(pid):
    kids = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % p) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(p))
    out, todo = [], [pid]
    while todo:
        for k in kids.get(todo.pop(), []):
            out.append(k)
            todo.append(k)
    return out


def server_pids():
    real = os.path.realpath(OPTS.server)
    pids = []
    for p in descendants(OPTS.sshd_pid):
        try:
            if os.path.realpath("/proc/%d/exe" % p) == real:
                pids.append(p)
        except OSError:
            pass
    return pids


def upload_fd_size(pid, d):
    """Bytes in the file the server (pid) writes in directory d, or -1."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return -1
    for fd in fds:
        p = "/proc/%d/fd/%s" % (pid, fd)
        try:
            link = os.readlink(p)
            if not link.startswith(d + "/"):
                continue
            st = os.stat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            return st.st_size
    return -1


def wait_gone(pids, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not any(os.path.exists("/proc/%d" % p) for p in pids):
            return True
        time.sleep(0.05)
    return False


def client_upload(which, d, data, name="target", old=None, atomic=True):
    """One upload by a real client while the watcher looks on."""
    src = os.path.join(OPTS.local, "upload.bin")
    write(src, data)
    set_server_args(["--atomic-uploads"] if atomic else [])
    w = Watch(d, name, data, old)
    p = subprocess.run(client_cmd(which, src, os.path.join(d, name)),
                       capture_output=True, timeout=300,
                       stdin=subprocess.DEVNULL)
    res = w.result()
    return p, res


def check_clients(fsname, d):
    data = rnd(20, 24 << 20)
    old = rnd(21, 3 << 20)
    clients = ["sftp", "paramiko", "lftp", "rclone"]
    for which in clients:
        if which == "rclone" and not shutil.which("rclone"):
            skip("rclone is not installed")
            continue
        if which == "lftp" and not shutil.which("lftp"):
            skip("lftp is not installed")
            continue
        for case in ("new", "replace"):
            sub = fresh(d, "%s-%s" % (which, case))
            if case == "replace":
                write(os.path.join(sub, "target"), old)
            p, res = client_upload(which, sub, data,
                                   old=old if case == "replace" else None)
            ok = (p.returncode == 0 and not res["partial"] and
                  not res["bad_events"] and res["whole_seen"] and
                  read(os.path.join(sub, "target")) == data)
            say(ok, "%s: %s through sshd, %s target: the watcher never "
                "saw it partial (%d looks, inotify %s)" % (
                    fsname, which, case, res["observations"],
                    ",".join(sorted(set(res["events"])))),
                "client exit %d: %s\n  watcher: %s" % (
                    p.returncode, p.stderr.decode(errors="replace")[-300:],
                    res))
            left = [n for n in listing(sub) if n != "target"]
            say(not left, "%s: %s, %s target: nothing left beside it" % (
                fsname, which, case), left)
    # the controls: without the option the watcher does see a partial
    # upload, and a killed client leaves a partial target, so the checks
    # above and below can fail
    sub = fresh(d, "control-kill")
    src = os.path.join(OPTS.local, "upload.bin")
    write(src, data)
    set_server_args([])
    before = set(server_pids())
    cl = subprocess.Popen(client_cmd("sftp", src, os.path.join(sub, "t"),
                                     limit=20000),
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL,
                          stdin=subprocess.DEVNULL, start_new_session=True)
    end = time.monotonic() + 20
    while time.monotonic() < end:
        if os.path.exists(os.path.join(sub, "t")) and \
                os.path.getsize(os.path.join(sub, "t")) > (1 << 20):
            break
        time.sleep(0.02)
    os.killpg(cl.pid, signal.SIGKILL)
    cl.wait(30)
    wait_gone([x for x in server_pids() if x not in before])
    size = os.path.getsize(os.path.join(sub, "t"))
    say(0 < size < len(data), "%s: without --atomic-uploads a client killed "
        "mid-upload leaves a partial target (control: %d bytes)" % (
            fsname, size))
    sub = fresh(d, "control")
    p, res = client_upload("sftp", sub, data, atomic=False)
    say(p.returncode == 0 and (res["partial"] or res["bad_events"]),
        "%s: without --atomic-uploads the watcher sees the upload partial "
        "(control: %s)" % (fsname, (res["partial"][:2],
                                    res["bad_events"][:2])))


def kill_checks(fsname, d, kind, prefix=()):
    data = rnd(22, 48 << 20)
    old = rnd(23, 1 << 20)
    src = os.path.join(OPTS.local, "upload.bin")
    write(src, data)
    set_server_args(["--atomic-uploads"], prefix)
    for victim in ("client", "server"):
        for case in ("new", "replace"):
            sub = fresh(d, "kill-%s-%s" % (victim, case))
            if case == "replace":
                write(os.path.join(sub, "target"), old)
            before = set(server_pids())
            cl = subprocess.Popen(
                client_cmd("sftp", src, os.path.join(sub, "target"),
                           limit=60000),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                stdin=subprocess.DEVNULL, start_new_session=True)
            srv, end = [], time.monotonic() + 20
            while time.monotonic() < end:
                srv = [x for x in server_pids() if x not in before]
                if srv and upload_fd_size(srv[0], sub) >= (2 << 20):
                    break
                time.sleep(0.02)
            mid = srv and 0 < upload_fd_size(srv[0], sub) < len(data)
            if victim == "client":
                os.killpg(cl.pid, signal.SIGKILL)
            elif srv:
                os.kill(srv[0], signal.SIGKILL)
            cl.wait(30)
            gone = wait_gone(srv)
            names = listing(sub)
            visible = [n for n in names if not HIDDEN.match(n)]
            target = os.path.join(sub, "target")
            unchanged = (visible == [] if case == "new" else
                         visible == ["target"] and read(target) == old)
            say(bool(mid) and gone and unchanged,
                "%s: kill -9 of the %s mid-upload (%s target): no partial "
                "target" % (fsname, victim, case),
                "mid-upload %s, server gone %s, left %s" % (mid, gone,
                                                            names))
            hidden = [n for n in names if HIDDEN.match(n)]
            if kind == "tmpfile" or victim == "client":
                say(not hidden, "%s: kill -9 of the %s (%s target): no "
                    "temporary file left" % (fsname, victim, case), names)
            else:
                say(len(hidden) == 1 and hidden[0].startswith(".target."),
                    "%s: kill -9 of the server (%s target): the documented "
                    "leftover, one .target.uring-sftp.XXXXXX (no O_TMPFILE "
                    "here)" % (fsname, case), names)


def clients_mode():
    for i, spec in enumerate(OPTS.fs):
        name, base = spec.split("=", 1)
        kind = fs_kind(base)
        tag = "%s (%s)" % (name, "O_TMPFILE" if kind == "tmpfile" else
                           "no O_TMPFILE")
        try:
            if i == 0:
                check_clients(tag, base)
            kill_checks(tag, base, kind)
            if i == 0 and OPTS.sim:
                kill_checks(name + " (upload-sim --no-tmpfile)", base,
                            "named", [OPTS.sim, "--no-tmpfile"])
                set_server_args([])
        except Exception:
            say(False, "%s: the client checks ran" % tag,
                traceback.format_exc())


def main():
    global OPTS
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--label", default="uploads")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--fs", action="append", default=[])
    ap.add_argument("--sim", default="")
    ap.add_argument("--clients", action="store_true")
    ap.add_argument("--port", type=int)
    ap.add_argument("--key")
    ap.add_argument("--user", default=pwd.getpwuid(os.getuid()).pw_name)
    ap.add_argument("--args-file")
    ap.add_argument("--sshd-pid", type=int)
    ap.add_argument("--local")
    OPTS = ap.parse_args()
    tally.label = OPTS.label
    os.umask(0o022)
    if OPTS.clients:
        clients_mode()
    else:
        raw_checks()
    print("%d passed, %d failed" % (tally.passed, tally.failed))
    if tally.failed:
        return 1
    return 77 if N_SKIPPED else 0


if __name__ == "__main__":
    sys.exit(main())

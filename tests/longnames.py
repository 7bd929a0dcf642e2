#!/usr/bin/python3
"""READDIR replies stay within their bound (64 KiB, length field
included) when owners and groups have long names, as LDAP and Active
Directory give them: the long name of every entry carries both.

The server runs in a mount namespace of its own (unshare -m) where
/etc/passwd and /etc/group are copies with one user and one group more,
whose names are NAME_LEN characters (default 200); nothing outside that
namespace sees them.  A directory of 1500 files owned by them is listed:
every NAME reply must be at most 65536 bytes, carry those names in its
long names (as far as the server prints them: libbsd's user_from_uid, as
OpenSSH's, keeps 32 characters), and the listing must hold every file
exactly once.  Then the same with the files' own names 200 bytes long.

Usage: longnames.py --server PATH [--server-args "ARGS"] [--label NAME]
                    [--workdir DIR]
Exit: 0 passed, 1 a failure, 77 cannot run (not root, no unshare).
Last line: "N passed, N failed".
"""

import argparse
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sftpclient as sc  # noqa: E402

REPLY_MAX = 65536
UID = GID = 64242            # an id no one on the machine should have


def passwd_copies(tmp, name_len):
    user = ("u" + "x" * name_len)[:name_len]
    group = ("g" + "y" * name_len)[:name_len]
    with open("/etc/passwd") as f:
        pw = f.read()
    with open("/etc/group") as f:
        gr = f.read()
    if not pw.endswith("\n"):
        pw += "\n"
    if not gr.endswith("\n"):
        gr += "\n"
    pw += "%s:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (user, UID, GID)
    gr += "%s:x:%d:\n" % (group, GID)
    paths = (os.path.join(tmp, "passwd"), os.path.join(tmp, "group"))
    for p, text in zip(paths, (pw, gr)):
        with open(p, "w") as f:
            f.write(text)
    return user, group, paths


def run_case(args, tmp, name_len, file_len, nfiles, counts):
    label = "owner/group names of %d, file names of %d, %d files" % (
        name_len, file_len, nfiles)
    user, group, paths = passwd_copies(tmp, name_len)
    root = os.path.join(tmp, "tree")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "dir"))
    names = set()
    for i in range(nfiles):
        n = ("%05d-" % i + "n" * file_len)[:max(file_len, 6)]
        p = os.path.join(root, "dir", n)
        with open(p, "wb"):
            pass
        os.chown(p, UID, GID)
        names.add(n.encode())
    wrapper = ("mount --bind %s /etc/passwd && mount --bind %s /etc/group"
               " && exec \"$@\"" % (shlex.quote(paths[0]),
                                     shlex.quote(paths[1])))
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c",
            wrapper, "sh", args.server] + shlex.split(args.server_args)
    c = sc.Client(argv, cwd=root)
    problems = []
    sizes = []
    seen = []
    try:
        c.init()
        rep = c.opendir("dir")
        if rep.type != sc.FXP_HANDLE:
            raise sc.ProtocolError("OPENDIR dir: %r" % rep)
        h = rep.handle
        while True:
            rep = c.readdir(h)
            if rep.type != sc.FXP_NAME:
                if not rep.is_status(sc.FX_EOF):
                    problems.append("READDIR ended with %r" % rep)
                break
            sizes.append(len(rep.raw))
            if len(rep.raw) > REPLY_MAX:
                problems.append("a NAME reply of %d bytes (%d names)" % (
                    len(rep.raw), len(rep.names)))
            for n, ln, _ in rep.names:
                if n in (b".", b".."):
                    continue
                seen.append(n)
                if user[:16].encode() not in ln or \
                        group[:16].encode() not in ln:
                    problems.append("long name without the owner's or "
                                    "group's name: %r" % ln[:120])
                    break
            if len(sizes) > 10000:
                problems.append("READDIR never ends")
                break
        c.close_handle(h)
        rc, rest = c.finish()
        if rc != 0 or rest:
            problems.append("server exited %d with %d bytes unread" % (
                rc, len(rest)))
    except sc.SFTPError as e:
        problems.append("%s: %s; stderr: %r" % (type(e).__name__, e,
                                                 c.stderr_bytes()[-300:]))
    finally:
        c.close()
    if len(seen) != len(set(seen)):
        problems.append("%d names listed twice" % (len(seen) - len(set(seen))))
    if set(seen) != names:
        problems.append("%d names missing, %d not in the directory" % (
            len(names - set(seen)), len(set(seen) - names)))
    detail = "%d replies, largest %d bytes" % (len(sizes), max(sizes or [0]))
    if problems:
        print("FAIL: %s%s: %s (%s)" % (args.label, label,
                                        "; ".join(problems[:4]), detail))
        counts[1] += 1
    else:
        print("PASS: %s%s: %s" % (args.label, label, detail))
        counts[0] += 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--server-args", default="")
    ap.add_argument("--label", default="")
    ap.add_argument("--workdir")
    ap.add_argument("--name-len", type=int, default=200)
    args = ap.parse_args()
    if args.label:
        args.label = "[%s] " % args.label
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        print("SKIP: needs root and unshare (a private /etc/passwd)")
        print("0 passed, 0 failed")
        return 77
    tmp = tempfile.mkdtemp(prefix="longnames.", dir=args.workdir)
    os.chmod(tmp, 0o755)
    counts = [0, 0]
    try:
        run_case(args, tmp, args.name_len, 8, 1500, counts)
        run_case(args, tmp, args.name_len, 200, 600, counts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d passed, %d failed" % tuple(counts))
    return 1 if counts[1] else 0


if __name__ == "__main__":
    sys.exit(main())

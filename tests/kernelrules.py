"""The kernel's link and sticky-directory rules where the server follows a
link or replaces a file itself (--atomic-uploads' target lookup,
--confine's resolver), tried as an attack: one unprivileged user plants
links, a FIFO and a file in a sticky world-writable directory, another
(the server's user) uploads, truncates and chmods through them.  Each case
runs with fs.protected_symlinks, fs.protected_regular and
fs.protected_fifos at 0 and at 1, against our server and OpenSSH's
sftp-server on identical trees: same statuses, same files after.  The
sysctls are restored whatever happens (and by the calling suite's trap).

Used by tests/uploads.py (--atomic-uploads) and tests/confine.py
(--confine); needs root (sysctls, two users).
"""

import os
import shlex
import shutil
import stat
import subprocess

import sftpclient as sc

VICTIM = 65534     # nobody: the server's user
ATTACKER = 65533   # another unprivileged uid, no passwd entry needed
SYSCTLS = ("protected_symlinks", "protected_regular", "protected_fifos")
OPENSSH = os.environ.get("OPENSSH_SFTP_SERVER",
                         "/usr/lib/openssh/sftp-server")
WCT = sc.FXF_WRITE | sc.FXF_CREAT | sc.FXF_TRUNC
SECRET = b"the victim's secret\n"


def as_user(uid):
    return ["setpriv", "--reuid=%d" % uid, "--regid=%d" % uid,
            "--clear-groups", "--"]


def available():
    """None, or why the attacks cannot run here."""
    if os.geteuid() != 0:
        return "needs root (sysctls, two users)"
    if not os.access(OPENSSH, os.X_OK):
        return "no OpenSSH sftp-server at %s" % OPENSSH
    for name in SYSCTLS:
        if not os.path.exists("/proc/sys/fs/" + name):
            return "no fs.%s here" % name
    return None


def set_levels(level):
    for name in SYSCTLS:
        with open("/proc/sys/fs/" + name, "w") as f:
            f.write("%d\n" % level)


def levels_now():
    out = {}
    for name in SYSCTLS:
        with open("/proc/sys/fs/" + name) as f:
            out[name] = f.read().strip()
    return out


def restore(saved):
    for name, value in saved.items():
        with open("/proc/sys/fs/" + name, "w") as f:
            f.write(value + "\n")


def build(base):
    """base (root's, 0755) holds victim/secret (the victim's, 0600) and
    tmp (root's, 1777), where the attacker planted report.csv ->
    ../victim/secret, dangling -> ../victim/planted, a FIFO and a file
    of theirs that anyone may write."""
    if os.path.exists(base):
        shutil.rmtree(base)
    os.mkdir(base, 0o755)
    victim = os.path.join(base, "victim")
    os.mkdir(victim, 0o755)
    os.chown(victim, VICTIM, VICTIM)
    secret = os.path.join(victim, "secret")
    with open(secret, "wb") as f:
        f.write(SECRET)
    os.chmod(secret, 0o600)
    os.chown(secret, VICTIM, VICTIM)
    tmp = os.path.join(base, "tmp")
    os.mkdir(tmp)
    os.chmod(tmp, 0o1777)
    # A sticky directory of the victim's own: renaming over the planted
    # file is allowed there, protected_regular still refuses.
    vtmp = os.path.join(base, "vtmp")
    os.mkdir(vtmp)
    os.chmod(vtmp, 0o1777)
    os.chown(vtmp, VICTIM, VICTIM)
    plant = ("cd %s && ln -s ../victim/secret report.csv && "
             "ln -s ../victim/planted dangling && mkfifo -m 666 fifo && "
             "printf theirs > shared && chmod 666 shared && "
             "printf theirs > %s/shared && chmod 666 %s/shared"
             % (shlex.quote(tmp), shlex.quote(vtmp), shlex.quote(vtmp)))
    subprocess.run(as_user(ATTACKER) + ["sh", "-c", plant], check=True)


def snapshot(base):
    """Every name under base: type, mode, owner and contents or target."""
    out = {}
    for d, dirs, files in os.walk(base):
        for n in dirs + files:
            p = os.path.join(d, n)
            st = os.lstat(p)
            what = None
            if stat.S_ISLNK(st.st_mode):
                what = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    what = f.read()
            out[os.path.relpath(p, base)] = (
                stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode),
                st.st_uid, what)
    return out


def code(rep):
    return rep.code if rep.type == sc.FXP_STATUS else rep.type_name


def upload(c, name):
    """OPEN with CREATE|TRUNCATE, a WRITE, CLOSE: the statuses."""
    rep = c.open(name, WCT)
    if rep.type != sc.FXP_HANDLE:
        return (code(rep),)
    w = c.write(rep.handle, 0, b"uploaded by the victim\n")
    return ("handle", w.code, c.close_handle(rep.handle).code)


def run(argv, base, cases, env):
    """The cases (name, fn(client)) by a server as the victim in base."""
    c = sc.Client(as_user(VICTIM) + argv, cwd=base, env=env, timeout=20)
    try:
        c.init()
        got = [(name, fn(c)) for name, fn in cases]
        c.close_stdin()
        c.wait(20)
    finally:
        c.close()
    return got


def cases_for(mode, level):
    """What the victim's client does: mode names the options, "atomic"
    (--atomic-uploads), "confine" (--confine: also chmod through the link)
    or both ("confine+atomic")."""
    cases = [("upload through a planted link",
              lambda c: upload(c, "tmp/report.csv")),
             ("upload through a planted dangling link",
              lambda c: upload(c, "tmp/dangling")),
             ("stat through a planted link",
              lambda c: (code(c.stat("tmp/report.csv")),))]
    if "confine" in mode:
        cases.append(("SETSTAT 0644 through a planted link",
                      lambda c: (c.setstat("tmp/report.csv",
                                           {"perm": 0o644}).code,)))
    # At 0, OpenSSH truncates another user's file in a sticky directory,
    # which an atomic upload refuses to replace or replaces with a file of
    # its own user's (doc/uploads.md), and
    # opens a FIFO waiting for a reader forever (ours does not wait).
    if "atomic" not in mode or level >= 1:
        cases.append(("upload over another user's file (protected_regular)",
                      lambda c: upload(c, "tmp/shared")))
        cases.append(("upload over another user's file in the victim's "
                      "sticky directory (protected_regular)",
                      lambda c: upload(c, "vtmp/shared")))
    if level >= 1:
        cases.append(("upload into another user's FIFO (protected_fifos)",
                      lambda c: upload(c, "tmp/fifo")))
    return cases


def attacks(server, server_args, base, mode, env=None):
    """[(ok, what)]: each level, ours against OpenSSH's on equal trees
    (env: the servers' environment)."""
    ours = [server] + shlex.split(server_args) + ["-e", "-l", "ERROR"]
    ours += ["--atomic-uploads"] if "atomic" in mode else []
    ours += ["--confine"] if "confine" in mode else []
    results = []
    saved = levels_now()
    try:
        for level in (1, 0):
            set_levels(level)
            got = {}
            for who, argv in (("ours", ours), ("openssh", [OPENSSH])):
                build(base)
                got[who] = (run(argv, base, cases_for(mode, level), env),
                            snapshot(base))
            (a, sa), (b, sb) = got["ours"], got["openssh"]
            for (name, x), (_, y) in zip(a, b):
                results.append((x == y, "%s, fs.protected_*=%d: %s: %r as "
                                "OpenSSH's %r" % (mode, level, name, x, y)))
            diff = sorted(k for k in set(sa) | set(sb)
                          if sa.get(k) != sb.get(k))
            results.append((not diff, "%s, fs.protected_*=%d: the same files "
                            "after as after OpenSSH's (differ: %r)"
                            % (mode, level, [(k, sa.get(k), sb.get(k))
                                             for k in diff])))
            if level == 1:
                sec = sa.get("victim/secret")
                results.append((
                    sec is not None and sec[1] == 0o600 and
                    sec[3] == SECRET and "victim/planted" not in sa,
                    "%s, fs.protected_*=1: the victim's file is untouched "
                    "and nothing is created where the attacker pointed"
                    % mode))
    finally:
        restore(saved)
    return results

#!/usr/bin/env python3
"""Check what `uring-sftp-server --check` printed against what a test
knows of the host it ran on (tests/kernel-matrix.sh, seccomp-suite.sh).

    hostcheck.py TEXT JSON [--usable 0|1] [--setup-error NAME|none]
        [--listed 0|1] [--missing OP,...|none] [--abi N|none]
        [--landlock-error NAME] [--test-kernel V|none] [--seccomp N]
        [--user NAME] [--confine 0|1] [--start-dir PATH]
        [--fallback-log LOG] [--dontcache 0|1]

TEXT and JSON are the outputs of --check and --check=json.  The JSON must
parse and have every key; each fact named by an option must be as given;
--fallback-log is a session's log under the same conditions, at VERBOSE:
the server fell back to plain system calls there exactly when --check
says --backend=auto would; --dontcache: whether RWF_DONTCACHE works in the
start directory (--nocache works either way there).  The text must say what the JSON says, line by
line.  Prints what differs; exit status 1 when anything does.
"""

import argparse
import json
import sys

KEYS = {
    "": ["program", "version", "uid", "user", "kernel", "io_uring",
         "backend_auto", "landlock", "pipes", "start_directory", "options"],
    "kernel": ["release", "test_kernel"],
    "io_uring": ["usable", "reason", "setup_error", "lists_operations",
                 "operations", "io_uring_disabled", "io_uring_group",
                 "in_io_uring_group", "seccomp", "memlock_bytes"],
    "landlock": ["abi", "error", "gaps"],
    "pipes": ["page_size", "soft_pages", "hard_pages", "max_pages", "exempt",
              "sessions", "session_budget_pages", "stdin_pages",
              "stdout_pages", "sshd_stdin_pages", "sshd_stdout_blocks"],
    "start_directory": ["path", "requested", "chdir_error", "fs_type",
                        "probe_file_error", "o_tmpfile", "o_tmpfile_error",
                        "o_direct", "o_direct_error", "rwf_dontcache",
                        "rwf_dontcache_error", "fadv_dontneed",
                        "fadv_dontneed_error"],
    "options": ["confine", "atomic_uploads", "nocache"],
}
OPS = ["READ", "FSYNC", "FADVISE", "STATX", "UNLINKAT", "MKDIRAT",
       "SYMLINKAT", "LINKAT", "RENAMEAT", "CLOSE"]


def row(name, value):
    """A top-level line of the text report."""
    return "%-26s %s" % (name, value)


def sub(name, value):
    return "  %-24s %s" % (name, value)


def expected_text(j):
    """Lines the text report must hold, from the JSON: a line that ends
    in "no (" must start so (the reason follows, in the C library's
    words)."""
    u = j["io_uring"]
    lines = [
        "%s %s: what this host gives the server, as user %s (uid %d)"
        % (j["program"], j["version"], j["user"], j["uid"]),
        row("kernel", j["kernel"]["release"]),
        row("io_uring", ("yes: " if u["usable"] else "no: ") + u["reason"]),
        row("--backend=auto uses",
            "io_uring" if j["backend_auto"] == "io_uring"
            else "plain system calls"),
    ]
    if u["setup_error"] is None and u["lists_operations"]:
        have = [op for op in OPS if u["operations"][op]]
        lack = [op for op in OPS if not u["operations"][op]]
        lines.append(sub("operations", " ".join(have) or "none").rstrip())
        lines.append(sub("operations missing", " ".join(lack) or "none"))
    ll = j["landlock"]
    if ll["abi"] is None:
        lines.append(row("Landlock", "no ("))
    else:
        lines.append(row("Landlock", "ABI %d" % ll["abi"]))
    lines += ["  " + gap for gap in ll["gaps"]]
    p = j["pipes"]
    lines.append(row(
        "a session's stdio pipes",
        "budget %d pages, with %d session%s of this server running (this "
        "one counted): stdin grows to %d pages, stdout up to %d as a local "
        "reader's rate asks; under sshd stdout keeps its size, %s, and "
        "stdin grows to %d (pages of %d bytes)"
        % (p["session_budget_pages"], p["sessions"],
           "" if p["sessions"] == 1 else "s", p["stdin_pages"],
           p["stdout_pages"],
           "its writes block" if p["sshd_stdout_blocks"] else "never blocks",
           p["sshd_stdin_pages"], p["page_size"])))
    d = j["start_directory"]
    lines.append(row("start directory", "%s (%s)" % (d["path"], d["fs_type"])))
    for key, name in (("o_tmpfile", "O_TMPFILE"), ("o_direct", "O_DIRECT"),
                      ("rwf_dontcache", "RWF_DONTCACHE"),
                      ("fadv_dontneed", "POSIX_FADV_DONTNEED")):
        if d[key] is True:
            lines.append(sub(name, "yes"))
        elif d[key] is None:
            lines.append(sub(name, "not probed (no file to try it on)"))
        else:
            lines.append(sub(name, "no ("))
    for key, name in (("confine", "--confine"),
                      ("atomic_uploads", "--atomic-uploads"),
                      ("nocache", "--nocache")):
        o = j["options"][key]
        lines.append(row(name, ("works: " if o["works"]
                                else "would not work: ") + o["reason"]))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("text")
    ap.add_argument("json")
    for opt in ("usable", "setup-error", "listed", "missing", "abi",
                "landlock-error", "test-kernel", "seccomp", "user",
                "confine", "start-dir", "fallback-log", "dontcache"):
        ap.add_argument("--" + opt)
    a = ap.parse_args()
    bad = []

    with open(a.json, encoding="utf-8") as f:
        try:
            j = json.load(f)
        except ValueError as e:
            print("  --check=json is no JSON: %s" % e)
            return 1
    for section, keys in KEYS.items():
        have = j if section == "" else j.get(section, {})
        for k in keys:
            if k not in have:
                bad.append("key %s.%s missing" % (section or "(top)", k))
    if bad:
        print("\n".join("  " + b for b in bad))
        return 1
    u, ll = j["io_uring"], j["landlock"]

    def want(what, got, expected):
        if got != expected:
            bad.append("%s: %r, expected %r" % (what, got, expected))

    def name_or_none(v):
        return None if v == "none" else v

    if a.usable is not None:
        want("io_uring.usable", u["usable"], a.usable == "1")
        want("backend_auto", j["backend_auto"],
             "io_uring" if a.usable == "1" else "plain")
    if a.setup_error is not None:
        want("io_uring.setup_error", u["setup_error"],
             name_or_none(a.setup_error))
    if a.listed is not None:
        want("io_uring.lists_operations", u["lists_operations"],
             a.listed == "1")
    if a.missing is not None:
        lack = sorted(op for op in OPS if not u["operations"][op])
        named = [] if a.missing == "none" else a.missing.split(",")
        want("operations missing", lack, sorted(named))
    if a.seccomp is not None:
        want("io_uring.seccomp", u["seccomp"], int(a.seccomp))
    if a.abi is not None:
        want("landlock.abi", ll["abi"],
             None if a.abi == "none" else int(a.abi))
    if a.landlock_error is not None:
        want("landlock.error", ll["error"], name_or_none(a.landlock_error))
    if a.test_kernel is not None:
        want("kernel.test_kernel", j["kernel"]["test_kernel"],
             name_or_none(a.test_kernel))
    if a.user is not None:
        want("user", j["user"], a.user)
    if a.confine is not None:
        want("options.confine.works", j["options"]["confine"]["works"],
             a.confine == "1")
    if a.dontcache is not None:
        want("start_directory.rwf_dontcache",
             j["start_directory"]["rwf_dontcache"], a.dontcache == "1")
        want("options.nocache.works", j["options"]["nocache"]["works"],
             True)
    if a.start_dir is not None:
        want("start_directory.path", j["start_directory"]["path"],
             a.start_dir)
    if a.fallback_log is not None:
        with open(a.fallback_log, encoding="utf-8", errors="replace") as f:
            fell_back = "io_uring unavailable (" in f.read()
        want("backend_auto against the session's log", j["backend_auto"],
             "plain" if fell_back else "io_uring")

    with open(a.text, encoding="utf-8", errors="replace") as f:
        text = f.read().splitlines()
    for line in expected_text(j):
        if not any(t == line or (line.endswith(" no (") and
                                 t.startswith(line)) for t in text):
            bad.append("the text lacks %r" % line)
    if bad:
        print("\n".join("  " + b for b in bad))
        print("  the text report:")
        print("\n".join("    " + t for t in text))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

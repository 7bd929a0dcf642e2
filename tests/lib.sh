# shellcheck shell=bash
# Shared helpers for the script tests (difftest.sh, integration.sh,
# sshd-test.sh).  Source it after `set -eu`.
#
# Environment:
#   SERVER       the server under test (default: ../uring-sftp-server next
#                to this directory).  /usr/lib/openssh/sftp-server works too:
#                then no --backend option is passed.
#   SERVER_ARGS  extra arguments for every run of the server (word-split).
#   BACKENDS     the passes to run (default "uring plain", see
#                setup_passes); OpenSSH's server gets no extra option.
#   PYTHON3      Python with the standard library (default /usr/bin/python3).
#   KEEP_WORK=1  keep the temporary directory.

: "${PYTHON3:=/usr/bin/python3}"
export PYTHON3
OPENSSH_SFTP_SERVER=/usr/lib/openssh/sftp-server
# A test never runs inside someone's ssh session as far as the server knows.
unset SSH_CONNECTION SSH_CLIENT SSH_TTY SSH_ORIGINAL_COMMAND
export LC_ALL=C

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N_PASSED=0
N_FAILED=0
N_SKIPPED=0
WORK=
CLEANUP_PIDS=()
LOOP_DEVS=() # loop devices to detach at exit (after umount_below)

pass() {
	N_PASSED=$((N_PASSED + 1))
	echo "PASS: $*"
}

fail() {
	N_FAILED=$((N_FAILED + 1))
	echo "FAIL: $*"
}

note() {
	echo "NOTE: $*"
}

# skip_part WHY: some checks of this suite cannot run here; the others go
# on, and finish reports the suite as SKIP (exit 77) unless one failed, so
# the gap is visible (test.sh lists it; CI refuses it).
skip_part() {
	N_SKIPPED=$((N_SKIPPED + 1))
	echo "SKIP: $*"
}

# check DESCRIPTION COMMAND...: run the command, count a pass or a failure.
check() {
	local desc=$1
	shift
	if "$@"; then
		pass "$desc"
	else
		fail "$desc"
	fi
}

# same_file A B: byte-for-byte equal (cmp says where they differ).
same_file() {
	if [ ! -f "$1" ]; then
		echo "  missing: $1"
		return 1
	fi
	if [ ! -f "$2" ]; then
		echo "  missing: $2"
		return 1
	fi
	cmp "$1" "$2"
}

# same_tree A B: same regular files with the same bytes, same directories.
same_tree() {
	diff -r --no-dereference "$1" "$2"
}

# has_line FILE TEXT: FILE has a line equal to TEXT (after removing \r).
has_line() {
	if tr -d '\r' <"$1" | grep -qxF -- "$2"; then
		return 0
	fi
	echo "  no line '$2' in $1"
	return 1
}

skip_all() {
	echo "SKIP: $*"
	echo "0 passed, 0 failed"
	exit 77
}

# finish: print the summary line and exit 0 (all passed), 1 (a failure,
# or nothing tested at all) or 77 (passed, but some checks did not run:
# see skip_part).  The counts stay the last line (read_counts).
finish() {
	if [ "$N_FAILED" -eq 0 ] && [ "$N_PASSED" -eq 0 ] &&
		[ "$N_SKIPPED" -eq 0 ]; then
		echo "FAIL: nothing was tested"
		N_FAILED=1
	fi
	if [ "$N_FAILED" -eq 0 ] && [ "$N_SKIPPED" -gt 0 ]; then
		echo "SKIP: $N_SKIPPED part(s) of this suite did not run (see above)"
	fi
	echo "$N_PASSED passed, $N_FAILED failed"
	if [ "$N_FAILED" -gt 0 ]; then
		exit 1
	fi
	if [ "$N_SKIPPED" -gt 0 ]; then
		exit 77
	fi
	exit 0
}

# umount_below DIR: unmount file systems a test mounted below DIR.
umount_below() {
	local m
	# /proc/self/mounts escapes spaces as \040; our paths have none.
	awk '{ print $2 }' /proc/self/mounts | sort -r | while read -r m; do
		case $m in
		"$1"/*) umount "$m" 2>/dev/null || true ;;
		esac
	done
}

# save_sysctls NAME...: the sysctls a test changes (fs.protected_symlinks,
# ...), restored at exit whatever happens (they are the whole VM's).
SAVED_SYSCTLS=()
save_sysctls() {
	local name value
	[ "$(id -u)" = 0 ] || return 0
	for name in "$@"; do
		value=$(sysctl -n "$name" 2>/dev/null) || continue
		SAVED_SYSCTLS+=("$name=$value")
	done
}

cleanup() {
	local pid saved
	for saved in ${SAVED_SYSCTLS[@]+"${SAVED_SYSCTLS[@]}"}; do
		sysctl -q -w "$saved" >/dev/null 2>&1 || true
	done
	for pid in ${CLEANUP_PIDS[@]+"${CLEANUP_PIDS[@]}"}; do
		if kill -0 "$pid" 2>/dev/null; then
			kill "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	if [ -n "$WORK" ] && [ -d "$WORK" ]; then
		umount_below "$WORK"
		for pid in ${LOOP_DEVS[@]+"${LOOP_DEVS[@]}"}; do
			losetup -d "$pid" 2>/dev/null || true
		done
		if [ "${KEEP_WORK:-0}" = 1 ]; then
			echo "kept $WORK"
		else
			chmod -R u+rwx "$WORK" 2>/dev/null || true
			rm -rf "$WORK"
		fi
	fi
}

# make_workdir NAME: WORK=a fresh temporary directory, removed at exit.
make_workdir() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXXXX")
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# find_server: set SERVER (absolute) or skip the whole test.
find_server() {
	if [ -z "${SERVER:-}" ]; then
		SERVER=$TESTS_DIR/../uring-sftp-server
	fi
	case $SERVER in
	/*) ;;
	*) SERVER=$PWD/$SERVER ;;
	esac
	if [ ! -x "$SERVER" ]; then
		skip_all "server $SERVER is not built (set SERVER=)"
	fi
	export SERVER
	if [ ! -x "$PYTHON3" ]; then
		skip_all "no Python at $PYTHON3"
	fi
}

# kernel_at_least MAJOR MINOR: the kernel the server sees (the test hook
# URING_SFTP_TEST_KERNEL, doc/design.md "The kernel matrix", or the
# running one) is MAJOR.MINOR or later.
kernel_at_least() {
	local v=${URING_SFTP_TEST_KERNEL:-$(uname -r)} major minor
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%[!0-9]*}
	[[ $major =~ ^[0-9]+$ && $minor =~ ^[0-9]+$ ]] || return 0
	((major > $1 || (major == $1 && minor >= $2)))
}

is_openssh_server() {
	[ "${SERVER_IS_OPENSSH:-}" = 1 ] && return 0
	[ "$(readlink -f "$SERVER")" = "$(readlink -f "$OPENSSH_SFTP_SERVER")" ]
}

# read_counts FILE RC NAME: P and F from the "N passed, N failed" line that
# FILE (a sub-test's output) ends with.  No such line, or a non-zero exit
# status RC with no failure counted, is one failure; RC 77 (the sub-test
# skipped some of its checks) counts as a skipped part.
# shellcheck disable=SC2034 # P and F are for the caller
read_counts() {
	local line
	line=$(tail -n 1 "$1")
	case $line in
	*" passed, "*" failed")
		P=${line%% passed,*}
		F=${line#*passed, }
		F=${F%% failed}
		;;
	*)
		P=0
		F=1
		;;
	esac
	if [ "$2" = 77 ] && [ "$F" = 0 ]; then
		skip_part "$3 did not run all of its checks (see its SKIP lines)"
	elif [ "$2" != 0 ] && [ "$F" = 0 ]; then
		echo "FAIL: $3 exited $2"
		F=1
	fi
}

# run_counted NAME OUT COMMAND...: run a sub-test, its output to OUT and
# then to ours, and add its counts (read_counts) to this suite's.
run_counted() {
	local name=$1 out=$2 rc=0
	shift 2
	"$@" >"$out" 2>&1 || rc=$?
	cat "$out"
	read_counts "$out" "$rc" "$name"
	N_PASSED=$((N_PASSED + P))
	N_FAILED=$((N_FAILED + F))
}

# finish_run OUT RC NAME: the end of a suite that is one run of the Python
# test NAME, which printed OUT and exited RC: OUT shown; 77 skips the whole
# suite; else its counts are ours (read_counts).
finish_run() {
	cat "$1"
	if [ "$2" = 77 ]; then
		skip_all "see above"
	fi
	read_counts "$1" "$2" "$3"
	N_PASSED=$P
	N_FAILED=$F
	finish
}

# run_passes SCRIPT [ARGS...]: run the Python test tests/SCRIPT once per
# pass of setup_passes, with --server, --server-args, --label and --workdir
# and then ARGS, counted as run_counted does.  Exit status 77 from it skips
# the whole test.
run_passes() {
	local script=$1 i rc
	shift
	for i in "${!PASS_NAMES[@]}"; do
		echo "=== pass ${PASS_NAMES[$i]}: $SERVER ${PASS_ARGS[$i]}"
		rc=0
		"$PYTHON3" "$TESTS_DIR/$script" --server "$SERVER" \
			--server-args="${PASS_ARGS[$i]}" \
			--label "${PASS_NAMES[$i]}" --workdir "$WORK" "$@" \
			>"$WORK/out.$i" 2>&1 || rc=$?
		cat "$WORK/out.$i"
		if [ "$rc" = 77 ]; then
			skip_all "$script could not run"
		fi
		read_counts "$WORK/out.$i" "$rc" "$script"
		N_PASSED=$((N_PASSED + P))
		N_FAILED=$((N_FAILED + F))
	done
}

# setup_passes: PASS_NAMES[i] and PASS_ARGS[i] (a string of extra server
# arguments) for each pass: the io_uring and plain back ends ("auto", with
# --backend=auto, is for seccomp-suite.sh, where io_uring is denied), and
# "nomerge", io_uring without write merging, for suites that want the path
# the default skips.
setup_passes() {
	local b args
	PASS_NAMES=()
	PASS_ARGS=()
	for b in ${BACKENDS:-uring plain}; do
		PASS_NAMES+=("$b")
		case $b in
		nomerge) args="--backend=uring --write-merge=0" ;;
		*) args="--backend=$b" ;;
		esac
		if is_openssh_server; then
			PASS_ARGS+=("${SERVER_ARGS:-}")
		else
			PASS_ARGS+=("${SERVER_ARGS:+$SERVER_ARGS }$args")
		fi
	done
	if is_openssh_server; then
		note "SERVER is OpenSSH's sftp-server: passes run without --backend"
	fi
}

# setup_merge_configs: CONFIG_NAMES[i] and CONFIG_ARGS[i] for suites that
# test write merging (model.sh, fullfs.sh): each pass of setup_passes, and
# each pass that leaves merging on once more with --write-merge=0.  A pass
# whose server does not start (a back end the kernel refuses) is a skipped
# part, reported and refused by CI, never a silent pass.
setup_merge_configs() {
	local i args
	setup_passes
	CONFIG_NAMES=()
	CONFIG_ARGS=()
	for i in "${!PASS_NAMES[@]}"; do
		args=${PASS_ARGS[$i]}
		# shellcheck disable=SC2086 # args is a list of options
		if ! "$SERVER" $args </dev/null >/dev/null 2>"$WORK/probe.err"; then
			skip_part "pass ${PASS_NAMES[$i]}: the server does not" \
				"start: $(head -c 300 "$WORK/probe.err")"
			continue
		fi
		CONFIG_NAMES+=("${PASS_NAMES[$i]}")
		CONFIG_ARGS+=("$args")
		case " $args " in
		*" --write-merge="*) ;;
		*)
			CONFIG_NAMES+=("${PASS_NAMES[$i]}-nomerge")
			CONFIG_ARGS+=("$args --write-merge=0")
			;;
		esac
	done
}

# free_port: print a TCP port on 127.0.0.1 that was free a moment ago.
free_port() {
	"$PYTHON3" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# wait_port PORT SECONDS: wait until something accepts on 127.0.0.1:PORT.
wait_port() {
	"$PYTHON3" - "$1" "$2" <<'EOF'
import socket, sys, time
port, limit = int(sys.argv[1]), float(sys.argv[2])
end = time.time() + limit
while time.time() < end:
    try:
        socket.create_connection(("127.0.0.1", port), 0.5).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.05)
sys.exit(1)
EOF
}

# need_sshd WHY: skip the whole test unless sshd ($SSHD, default
# /usr/sbin/sshd) can run here: installed, we are root (WHY says what for),
# and its privilege separation directory exists or can be made.
need_sshd() {
	SSHD=${SSHD:-/usr/sbin/sshd}
	[ -x "$SSHD" ] || skip_all "$SSHD is not installed (openssh-server)"
	if [ "$(id -u)" != 0 ]; then
		skip_all "needs root ($1)"
	fi
	if [ ! -d /run/sshd ]; then
		# Debian's service creates it.
		mkdir -m 0755 /run/sshd 2>/dev/null ||
			skip_all "cannot create /run/sshd (privilege separation directory)"
		note "created /run/sshd"
	fi
}

# launch_sshd NAME: start sshd (-D, $SSHD, default /usr/sbin/sshd) on a
# free port of 127.0.0.1 with $WORK/sshd_config.NAME: the port, host key
# $WORK/host_ed25519, public keys only, no PAM, no forwarding, then what
# the caller's function sshd_config_body prints.  Sets
# PORT and SSHD_PID (stopped at exit); sshd's log is $WORK/sshd.NAME.log.
# Tries three ports; a configuration that sshd -t rejects skips the whole
# test.
launch_sshd() {
	local cfg=$WORK/sshd_config.$1 sshd=${SSHD:-/usr/sbin/sshd}
	for _ in 1 2 3; do
		PORT=$(free_port)
		{
			cat <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $WORK/host_ed25519
PidFile $WORK/sshd.$1.pid
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding no
X11Forwarding no
PrintMotd no
EOF
			sshd_config_body
		} >"$cfg"
		if ! "$sshd" -t -f "$cfg" >"$WORK/sshd-t.log" 2>&1; then
			cat "$WORK/sshd-t.log"
			skip_all "sshd rejects the test configuration"
		fi
		"$sshd" -D -e -f "$cfg" 2>"$WORK/sshd.$1.log" &
		SSHD_PID=$!
		CLEANUP_PIDS+=("$SSHD_PID")
		if wait_port "$PORT" 10; then
			return 0
		fi
		kill "$SSHD_PID" 2>/dev/null || true
		wait "$SSHD_PID" 2>/dev/null || true
		tail -n 5 "$WORK/sshd.$1.log"
	done
	return 1
}

# mkrandom FILE BYTES: a file of random bytes.
mkrandom() {
	head -c "$2" /dev/urandom >"$1"
}

# make_tree DIR: a small directory tree with odd sizes and names.
make_tree() {
	mkdir -p "$1/sub/deeper" "$1/empty-dir" "$1/other"
	mkrandom "$1/top.bin" 100000
	: >"$1/empty"
	mkrandom "$1/sub/one" 1
	mkrandom "$1/sub/deeper/a 32767" 32767
	mkrandom "$1/sub/deeper/b" 32768
	mkrandom "$1/other/c" 261121
	printf 'text\n' >"$1/other/t.txt"
	chmod 600 "$1/other/t.txt"
	chmod 750 "$1/sub/deeper"
}

# stat_session LOG TIMEOUT LIMITS ARGV...: a short session with the server
# ARGV: INIT, a limits@openssh.com when LIMITS is 1, a STAT of "." and
# stdin's end, each reply within TIMEOUT seconds; the server's stderr goes
# to LOG.  Prints its exit status, or "failed".
stat_session() {
	"$PYTHON3" - "$TESTS_DIR" "$@" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1])
import sftpclient as sc
log, timeout, limits, argv = sys.argv[2], sys.argv[3], sys.argv[4], \
    sys.argv[5:]
out = "failed"
with sc.Client(argv, stderr=log, timeout=float(timeout)) as c:
    try:
        c.init()
        if limits == "1":
            c.limits()
        if c.stat(".").type == sc.FXP_ATTRS:
            out = str(c.finish()[0])
    except sc.SFTPError as e:
        print("session: %s" % e, file=sys.stderr)
print(out)
EOF
}

# served LOG TIMEOUT LIMITS ARGV...: stat_session; true when the server
# exited 0, else false after saying how the session ended, LOG's lines
# below.
served() {
	local out
	out=$(stat_session "$@")
	[ "$out" = 0 ] && return 0
	echo "  session: $out"
	sed 's/^/    /' "$1"
	return 1
}

# host_check DIR LOG WRAPPER... -- EXPECT...: --check and --check=json
# of the server run through WRAPPER (a command and its options: a
# simulated kernel or seccomp profile), in DIR/start, as us and (when we
# are root) as nobody: both parse and agree, and say what
# tests/hostcheck.py's EXPECT options say (io_uring or why not, the
# operations the profile hides, the Landlock ABI, ...); --backend=auto
# falls back exactly where the session whose log is LOG did.
host_check() {
	local d=$1 log=$2 who user wrap=()
	shift 2
	while [ "$1" != -- ]; do
		wrap+=("$1")
		shift
	done
	shift
	mkdir -p "$d/start"
	chmod 777 "$d/start"
	for who in self nobody; do
		local as=()
		user=$(id -un)
		if [ "$who" = nobody ]; then
			[ "$(id -u)" = 0 ] || continue
			user=nobody
			as=(setpriv --reuid=nobody --regid="$(id -g nobody)"
				--init-groups)
		fi
		if ! (cd "$d/start" &&
			"${as[@]}" "${wrap[@]}" "$SERVER" --check \
				>"$d/$who.txt" 2>"$d/$who.err" &&
			"${as[@]}" "${wrap[@]}" "$SERVER" --check=json \
				>"$d/$who.json" 2>>"$d/$who.err"); then
			echo "  --check failed as $user"
			sed 's/^/    /' "$d/$who.err"
			return 1
		fi
		"$PYTHON3" "$TESTS_DIR/hostcheck.py" "$d/$who.txt" \
			"$d/$who.json" --user "$user" --fallback-log "$log" \
			--start-dir "$(cd "$d/start" && pwd -P)" "$@" || return 1
	done
}

# need_seccomp WRAPPER [ARGS...]: the suite skips where the seccomp test
# wrapper (tests/no-uring, tests/oldkernel) cannot install its filter (it
# exits 125), and fails at once where `WRAPPER ARGS true` fails otherwise.
need_seccomp() {
	local rc=0
	"$@" true 2>/dev/null || rc=$?
	if [ "$rc" = 125 ]; then
		skip_all "seccomp filters cannot be installed here"
	elif [ "$rc" != 0 ]; then
		echo "FAIL: $* true exited $rc"
		echo "0 passed, 1 failed"
		exit 1
	fi
}

# wrap_server BIN WHAT <<EOF: BIN/uring-sftp-server, a bash script whose
# body is stdin (its "$@" are the server's arguments), for a suite run
# with SERVER set to it; WHAT says how it runs $SERVER, in its comment.
# BIN and the script are 755, so that another user (confine.sh's) can run
# it.
wrap_server() {
	mkdir -p "$1"
	{
		echo '#!/bin/bash'
		echo "# $SERVER $2 (generated by ${0##*/})"
		cat
	} >"$1/uring-sftp-server"
	chmod 755 "$1" "$1/uring-sftp-server"
}

# page_cache_drop FILE [OFF LEN]: FILE's pages (or the range's) out of the
# page cache, written back first (posix_fadvise DONTNEED: this file only,
# never the machine's cache).
page_cache_drop() {
	"$PYTHON3" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fdatasync(fd)
off, n = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (0, 0)
os.posix_fadvise(fd, off, n, os.POSIX_FADV_DONTNEED)
os.close(fd)' "$@"
}

# page_cache_warm FILE [OFF LEN]: FILE's pages (or the range's) read into
# the page cache, and no more (no read-ahead past them).
page_cache_warm() {
	"$PYTHON3" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
off, n = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (0, os.fstat(fd).st_size)
while n > 0:
    got = len(os.pread(fd, min(n, 1 << 20), off))
    if got == 0:
        break
    off += got
    n -= got
os.close(fd)' "$@"
}

# page_cache_pct FILE: the percentage of FILE's pages in the page cache
# (fincore, util-linux).
page_cache_pct() {
	local line
	line=$(fincore -nb -o RES,SIZE "$1")
	# shellcheck disable=SC2086 # two numbers
	set -- $line
	echo $(($1 * 100 / ($2 > 0 ? $2 : 1)))
}

# cached_between LO HI FILE WHAT: LO% to HI% of FILE is in the page
# cache, passed or failed as WHAT.
cached_between() {
	local pct
	pct=$(page_cache_pct "$3")
	if [ "$pct" -ge "$1" ] && [ "$pct" -le "$2" ]; then
		pass "$4: $pct% cached"
	else
		fail "$4: $pct% cached, not $1..$2%"
	fi
}

# droppable_dir DIR MB: DROP_DIR=DIR when its file system drops the pages
# DONTNEED asks to drop (not tmpfs), else, as root, a fresh ext4 of MB MiB
# on a loop device under WORK (undone at exit); else skip the test.
droppable_dir() {
	local dir=$1 mb=$2 dev
	mkdir -p "$dir"
	head -c 1048576 /dev/urandom >"$dir/.probe"
	page_cache_drop "$dir/.probe"
	if [ "$(page_cache_pct "$dir/.probe")" -le 5 ]; then
		rm -f "$dir/.probe"
		DROP_DIR=$dir
		return 0
	fi
	rm -f "$dir/.probe"
	[ "$(id -u)" = 0 ] ||
		skip_all "$dir keeps the pages DONTNEED drops (tmpfs?)"
	note "$dir keeps the pages DONTNEED drops: using a loop ext4"
	truncate -s "${mb}M" "$WORK/disk.img"
	mkfs.ext4 -q -F "$WORK/disk.img"
	dev=$(losetup --find --show "$WORK/disk.img")
	LOOP_DEVS+=("$dev")
	mkdir "$WORK/disk"
	mount "$dev" "$WORK/disk"
	DROP_DIR=$WORK/disk
}

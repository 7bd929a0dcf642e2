#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# The kernel matrix (issue 22): the server on the kernels and containers
# users run, emulated on this one by tests/oldkernel (doc/design.md, "The
# kernel matrix"):
#
#   6.1     Debian 12          system calls after 6.1 fail with ENOSYS;
#   5.15    Ubuntu 22.04       the server hides the io_uring operations
#   5.14    RHEL 9             and Landlock ABI that kernel lacked
#   docker  Docker's default seccomp profile on this kernel (io_uring
#           denied with EPERM, its other denials, its capabilities)
#
# For each profile:
#  - at start, each feature the profile lacks is logged exactly once (at
#    VERBOSE), unconfined and under --confine, and nothing else is said
#    missing (the expected lines are listed below, per profile);
#  - io_uring is used where the kernel has it (--backend=uring serves);
#  - --check and --check=json say what the profile gives (io_uring or why
#    not, the operations it hides, its Landlock ABI, whether --confine
#    would work), as us and as nobody, and --backend=auto falls back
#    exactly where the session did (tests/hostcheck.py);
#  - the suites KMATRIX_SUITES (default: difftest integration confine
#    extensions) pass with the server under the profile.  Kernels run
#    difftest with the io_uring back end and the others with both;
#    docker runs all with --backend=auto (which falls back to plain).
#
# Then two kernels the server copes with less well, briefly: 5.10 (Debian
# 11: no Landlock, so --confine refuses to start) and 5.4 (Ubuntu 20.04:
# io_uring without the operations the back end needs: plain system calls),
# and --check on each.
#
# The server runs as a wrapper script per profile; the difftest leaves
# the lines listed here out of its log comparison (DIFFTEST_DROP_LOG:
# OpenSSH's server cannot have them), which are checked on their own.
# tests/no-uring sits beside it and tests/confine-probe runs under the
# profile too.
#
#   KMATRIX_PROFILES="6.1 5.15 5.14 docker"   the profiles
#   KMATRIX_SUITE_PROFILES   those that run the suites (default: all, and
#                            "5.14 docker" in a sanitizer build)
#   KMATRIX_SUITES="difftest integration confine extensions"
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
if is_openssh_server; then
	skip_all "OpenSSH's sftp-server has no kernel-dependent features"
fi
BUILT_TESTS=$(dirname "$SERVER")/tests
OLDKERNEL=${OLDKERNEL:-$BUILT_TESTS/oldkernel}
if [ ! -x "$OLDKERNEL" ]; then
	skip_all "the seccomp wrapper $OLDKERNEL is not built"
fi
need_seccomp "$OLDKERNEL" --kernel=5.14
make_workdir kmatrix
# The confine suite's user (nobody when we are root) runs the wrappers.
chmod 755 "$WORK"
export TESTS_DIR

# What the server says about the kernel: every such line starts so.
FEATURE_LINES='^(URING_SFTP_TEST_KERNEL=|io_uring unavailable \(|io_uring has no |io_uring cannot list |Landlock ABI [0-9]+: no )'
TEST_MODE="io_uring operations and Landlock as in Linux"
URING_EPERM="io_uring unavailable (Operation not permitted); using plain system calls"
URING_ENOSYS="io_uring unavailable (Function not implemented); using plain system calls"
LL_REFER="no LANDLOCK_ACCESS_FS_REFER (Linux 5.19): renames and links between directories fail"
LL_TRUNCATE="no LANDLOCK_ACCESS_FS_TRUNCATE (Linux 6.2): truncation is confined by path resolution alone"
LL_NET="no network rules (Linux 6.7): TCP bind and connect are not restricted"
LL_IOCTL="no LANDLOCK_ACCESS_FS_IOCTL_DEV (Linux 6.10): device ioctls are not restricted"
LL_SCOPE="no scopes (Linux 6.12): signals and abstract sockets are not restricted"

# The host's Landlock ABI (for docker, which keeps the host's kernel).
HOST_ABI=$("$PYTHON3" -c 'import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print(libc.syscall(ctypes.c_long(444), None, ctypes.c_size_t(0),
                   ctypes.c_uint32(1)))')

# profile_setup NAME: OPTS (oldkernel's options), ABI (the Landlock ABI
# the profile has, 0: none) and BACKENDS_* for the suites.
profile_setup() {
	case $1 in
	docker)
		OPTS=--docker
		# Docker's capabilities have no CAP_SYSLOG: kallsyms gives the
		# server zeros for its addresses (kptr_restrict).
		export DIFFTEST_SKIP_FILES=/proc/kallsyms
		ABI=$HOST_ABI
		DIFF_BACKENDS=auto
		OTHER_BACKENDS=auto
		;;
	*)
		OPTS=--kernel=$1
		unset DIFFTEST_SKIP_FILES
		case $1 in # the Landlock ABI each release brought
		5.1[3-8]) ABI=1 ;;
		5.19 | 6.[01]) ABI=2 ;;
		6.[2-6]) ABI=3 ;;
		6.[7-9]) ABI=4 ;;
		6.1[01]) ABI=5 ;;
		6.1[2-4]) ABI=6 ;;
		5.*) ABI=0 ;;
		*) ABI=$HOST_ABI ;;
		esac
		DIFF_BACKENDS=uring
		OTHER_BACKENDS="uring plain"
		;;
	esac
}

# expected NAME CONFINED: the feature lines the server must log, once
# each, in a session of profile NAME (CONFINED=1: with --confine).
expected() {
	local abi=$ABI
	case $1 in
	docker) echo "$URING_EPERM" ;;
	*) echo "URING_SFTP_TEST_KERNEL=$1: $TEST_MODE $1 (a test mode)" ;;
	esac
	[ "$2" = 1 ] || return 0
	[ "$abi" -ge 2 ] || echo "Landlock ABI $abi: $LL_REFER"
	[ "$abi" -ge 3 ] || echo "Landlock ABI $abi: $LL_TRUNCATE"
	[ "$abi" -ge 4 ] || echo "Landlock ABI $abi: $LL_NET"
	[ "$abi" -ge 5 ] || echo "Landlock ABI $abi: $LL_IOCTL"
	[ "$abi" -ge 6 ] || echo "Landlock ABI $abi: $LL_SCOPE"
}

# session LOG ARGV...: INIT, a STAT and EOF; the server's stderr to LOG.
# Prints the exit status, or "failed".
session() {
	stat_session "$1" 20 0 "${@:2}"
}

# logged_once LOG EXPECTED: LOG's feature lines are EXPECTED's lines, each
# exactly once.
logged_once() {
	local got want
	got=$(tr -d '\r' <"$1" | grep -E "$FEATURE_LINES" | sort || true)
	want=$(sort <"$2")
	if [ "$got" != "$want" ]; then
		echo "  feature lines logged:"
		printf '%s\n' "$got" | sed 's/^/    /'
		echo "  expected, once each:"
		printf '%s\n' "$want" | sed 's/^/    /'
		return 1
	fi
}

# start_logs NAME: the feature lines of a session, unconfined and
# confined, against the list.
start_logs() {
	local d=$WORK/$1 out confined
	for confined in 0 1; do
		local args=(-e -l VERBOSE) asan=${ASAN_OPTIONS:-}
		if [ "$confined" = 1 ]; then
			mkdir -p "$d/jail"
			args+=(-d "$d/jail" --confine)
			asan=$NO_LEAK_CHECK
		fi
		out=$(ASAN_OPTIONS=$asan session \
			"$d/start.$confined.log" \
			"$OLDKERNEL" "$OPTS" "$SERVER" "${args[@]}")
		if [ "$out" != 0 ]; then
			echo "  session ($confined): $out"
			sed 's/^/    /' "$d/start.$confined.log"
			return 1
		fi
		expected "$1" "$confined" >"$d/expected.$confined"
		logged_once "$d/start.$confined.log" "$d/expected.$confined" ||
			return 1
	done
	has_line "$d/start.1.log" \
		"confined to \"$(readlink -f "$d/jail")\" (Landlock ABI $ABI)"
}

# check_args NAME: hostcheck.py's expectations for profile NAME.
check_args() {
	local confine=1 abi=$ABI
	[ "$ABI" != 0 ] || { confine=0 abi=none; }
	echo "--seccomp 2 --abi $abi --confine $confine"
	case $1 in
	docker) echo "--usable 0 --setup-error EPERM --test-kernel none" ;;
	*)
		# Every simulated kernel is older than RWF_DONTCACHE (6.14).
		echo "--usable 1 --setup-error none --listed 1 --test-kernel $1"
		echo "--dontcache 0"
		case $1 in
		5.1[1-4]) echo "--missing MKDIRAT,SYMLINKAT,LINKAT" ;;
		*) echo "--missing none" ;;
		esac
		;;
	esac
}

# uring_serves NAME OPTS...: --backend=uring starts and serves under
# oldkernel OPTS.
uring_serves() {
	local name=$1 out
	shift
	out=$(session "$WORK/$name/uring.log" "$OLDKERNEL" "$@" "$SERVER" \
		--backend=uring -e -l VERBOSE)
	if [ "$out" != 0 ]; then
		echo "  session: $out"
		sed 's/^/    /' "$WORK/$name/uring.log"
		return 1
	fi
}

# wrap NAME: the server under the profile as one executable for the
# suites, in $WORK/NAME/bin, with tests/no-uring beside it and
# tests/confine-probe under the profile too.
wrap() {
	local bin=$WORK/$1/bin
	wrap_server "$bin" "under oldkernel $OPTS" <<EOF
exec '$OLDKERNEL' $OPTS '$SERVER' "\$@"
EOF
	mkdir -p "$bin/tests"
	cat >"$bin/tests/confine-probe" <<EOF
#!/bin/bash
exec '$OLDKERNEL' $OPTS '$BUILT_TESTS/confine-probe' "\$@"
EOF
	ln -s "$BUILT_TESTS/no-uring" "$bin/tests/no-uring"
	chmod 755 "$WORK/$1" "$bin/tests" "$bin/tests/confine-probe"
}

# run_suite NAME SUITE BACKENDS: tests/SUITE.sh with the wrapped server;
# its counts are added to ours.
run_suite() {
	local t0=$SECONDS
	echo "=== [$1] $2 (BACKENDS=$3)"
	# The upload options' variants (difftest.sh) ran once already, on
	# this kernel; what a profile takes away shows in the base run.
	SERVER=$WORK/$1/bin/uring-sftp-server BACKENDS=$3 \
		DIFFTEST_VARIANTS=none DIFFTEST_DROP_LOG=$FEATURE_LINES \
		run_counted "[$1] $2" "$WORK/$1/$2.out" "$TESTS_DIR/$2.sh"
	echo "=== [$1] $2 took $((SECONDS - t0)) s"
}

# A sanitizer build (CI's second pass) runs the suites on the oldest
# kernel and under Docker's profile, where the most falls back; the
# start-up checks on all.  The first pass runs everything everywhere.
# Confined processes run without leak checking there: LeakSanitizer
# needs /proc, which Landlock denies them (confine.py does the same, but
# cannot tell a sanitizer build through the wrapper).
PROFILES=${KMATRIX_PROFILES:-6.1 5.15 5.14 docker}
NO_LEAK_CHECK=${ASAN_OPTIONS:-}
if ldd "$SERVER" 2>/dev/null | grep -Eq 'libasan|libubsan'; then
	SUITE_PROFILES=${KMATRIX_SUITE_PROFILES:-5.14 docker}
	NO_LEAK_CHECK=${NO_LEAK_CHECK:+$NO_LEAK_CHECK:}detect_leaks=0
else
	SUITE_PROFILES=${KMATRIX_SUITE_PROFILES:-$PROFILES}
fi
note "suites under: $SUITE_PROFILES"
for name in $PROFILES; do
	echo "===== profile $name"
	profile_setup "$name"
	mkdir -p "$WORK/$name"
	rc=0
	"$OLDKERNEL" "$OPTS" true 2>"$WORK/$name/probe.err" || rc=$?
	if [ "$rc" = 125 ]; then
		skip_part "profile $name: $(cat "$WORK/$name/probe.err")"
		continue
	fi
	check "[$name] each missing feature logged once at start" \
		start_logs "$name"
	# shellcheck disable=SC2046 # check_args gives words
	check "[$name] --check says what the profile gives" \
		host_check "$WORK/$name/check" "$WORK/$name/start.0.log" \
		"$OLDKERNEL" "$OPTS" -- $(check_args "$name")
	if [ "$name" != docker ]; then
		check "[$name] --backend=uring serves" uring_serves "$name" "$OPTS"
	fi
	case " $SUITE_PROFILES " in
	*" $name "*) ;;
	*)
		note "[$name] suites not run in this build (KMATRIX_SUITE_PROFILES)"
		continue
		;;
	esac
	wrap "$name"
	for suite in ${KMATRIX_SUITES:-difftest integration confine extensions}; do
		case $suite in
		difftest) run_suite "$name" "$suite" "$DIFF_BACKENDS" ;;
		confine)
			ASAN_OPTIONS=$NO_LEAK_CHECK \
				run_suite "$name" "$suite" "$OTHER_BACKENDS"
			;;
		*) run_suite "$name" "$suite" "$OTHER_BACKENDS" ;;
		esac
	done
done

# --- kernels the server copes with less well -------------------------------
# 5.10: io_uring as on 5.14; no Landlock, so --confine refuses to start.
no_landlock() {
	local d=$WORK/5.10 rc=0
	mkdir -p "$d/jail"
	"$OLDKERNEL" --kernel=5.10 "$SERVER" -e -d "$d/jail" --confine \
		</dev/null >/dev/null 2>"$d/confine.log" || rc=$?
	if [ "$rc" != 1 ]; then
		echo "  exit status $rc"
		sed 's/^/    /' "$d/confine.log"
		return 1
	fi
	has_line "$d/confine.log" "--confine: Landlock is not available: Function not implemented; refusing to run unconfined"
}
check "[5.10] --confine refuses to start without Landlock" no_landlock
uring_510() {
	mkdir -p "$WORK/5.10"
	uring_serves 5.10 --kernel=5.10
}
check "[5.10] --backend=uring serves" uring_510
check "[5.10] --check: no Landlock, --confine would not work" \
	host_check "$WORK/5.10/check" "$WORK/5.10/uring.log" \
	"$OLDKERNEL" --kernel=5.10 -- \
	--usable 1 --listed 1 --test-kernel 5.10 --abi none --dontcache 0 \
	--landlock-error ENOSYS --confine 0 \
	--missing UNLINKAT,MKDIRAT,SYMLINKAT,LINKAT,RENAMEAT

# 5.4: io_uring cannot list its operations (IORING_REGISTER_PROBE came in
# 5.6, with IORING_OP_READ): plain system calls, said once; a forced
# io_uring back end refuses.
old_uring() {
	local d=$WORK/5.4 out rc=0
	mkdir -p "$d"
	out=$(session "$d/auto.log" "$OLDKERNEL" --kernel=5.4 "$SERVER" \
		-e -l VERBOSE)
	if [ "$out" != 0 ]; then
		echo "  session: $out"
		sed 's/^/    /' "$d/auto.log"
		return 1
	fi
	{
		echo "URING_SFTP_TEST_KERNEL=5.4: $TEST_MODE 5.4 (a test mode)"
		echo "io_uring cannot list its operations"
		echo "$URING_ENOSYS"
	} >"$d/expected"
	logged_once "$d/auto.log" "$d/expected" || return 1
	"$OLDKERNEL" --kernel=5.4 "$SERVER" --backend=uring -e </dev/null \
		>/dev/null 2>"$d/forced.log" || rc=$?
	if [ "$rc" = 0 ]; then
		echo "  --backend=uring started"
		return 1
	fi
	has_line "$d/forced.log" \
		"cannot start the io_uring back end: Function not implemented"
}
check "[5.4] io_uring without its operations: plain calls, said once" \
	old_uring
check "[5.4] --check: io_uring cannot list its operations, plain calls" \
	host_check "$WORK/5.4/check" "$WORK/5.4/auto.log" \
	"$OLDKERNEL" --kernel=5.4 -- \
	--usable 0 --setup-error none --listed 0 --test-kernel 5.4 --dontcache 0

finish

#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# io_uring denied as in Docker 25 and later (issue 6): run the server under
# tests/no-uring, a seccomp filter that makes io_uring_setup, _enter and
# _register fail with EPERM.
#
#  - --backend=uring refuses to start, with a clear message;
#  - --backend=auto (and no --backend at all) logs the fallback at VERBOSE
#    and serves; ENOSYS (a kernel without io_uring) falls back the same way;
#  - --check and --check=json say io_uring is denied (EPERM) or absent
#    (ENOSYS) under a seccomp filter, and that --backend=auto uses plain
#    system calls, as us and as nobody (tests/hostcheck.py);
#  - under the filter with --backend=auto: an `sftp -D` transfer, the
#    differential test against OpenSSH's server (tests/difftest.py) and
#    the integration suite (tests/integration.sh) all pass with
#    --backend=auto, which is the plain back end there.
#
# For the difftest the fallback line is taken out of the server's log (a
# wrapper filters it): it is the one line OpenSSH's server cannot have, and
# its presence is checked on its own above.
#
#   NO_URING   the wrapper (default: tests/no-uring next to the server)
#   SECCOMP_SUITES="difftest integration"   the suites to run under it
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
: "${NO_URING:=$(dirname "$SERVER")/tests/no-uring}"
if [ ! -x "$NO_URING" ]; then
	skip_all "the seccomp wrapper $NO_URING is not built"
fi
need_seccomp "$NO_URING"
make_workdir seccomp
chmod 755 "$WORK"

FALLBACK_EPERM="io_uring unavailable (Operation not permitted); using plain system calls"
FALLBACK_ENOSYS="io_uring unavailable (Function not implemented); using plain system calls"

# session LOG ARGS...: a short session (INIT, limits, a STAT) under the
# wrapper; the server's stderr goes to LOG.  Prints the exit status.
session() {
	stat_session "$1" 10 1 "${@:2}"
}

# --- the forced io_uring back end refuses to run -----------------------
forced_uring() {
	local rc=0
	"$NO_URING" "$SERVER" --backend=uring -e -l VERBOSE \
		</dev/null >"$WORK/forced.out" 2>"$WORK/forced.log" || rc=$?
	if [ "$rc" = 0 ]; then
		echo "  exited 0"
		return 1
	fi
	echo "  exit $rc, log:"
	tr -d '\r' <"$WORK/forced.log" | sed 's/^/    /'
	has_line "$WORK/forced.log" \
		"cannot start the io_uring back end: Operation not permitted"
}
check "--backend=uring under the filter exits non-zero with a clear message" \
	forced_uring

# --- automatic fallback ---------------------------------------------------
fallback() {
	local log=$1 line=$2 out
	shift 2
	out=$(session "$log" "$@")
	if [ "$out" != 0 ]; then
		echo "  session: $out"
		sed 's/^/    /' "$log"
		return 1
	fi
	has_line "$log" "$line"
}
check "--backend=auto falls back and logs it at VERBOSE" \
	fallback "$WORK/auto.log" "$FALLBACK_EPERM" \
	"$NO_URING" "$SERVER" --backend=auto -e -l VERBOSE
check "no --backend option falls back too" \
	fallback "$WORK/default.log" "$FALLBACK_EPERM" \
	"$NO_URING" "$SERVER" -e -l VERBOSE
check "ENOSYS (no io_uring in the kernel) falls back too" \
	fallback "$WORK/enosys.log" "$FALLBACK_ENOSYS" \
	"$NO_URING" --errno=38 "$SERVER" --backend=auto -e -l VERBOSE
# At INFO (sshd_config's usual -l INFO) the fallback stays out of the log.
quiet_at_info() {
	fallback "$WORK/info.log" \
		"session closed for local user $(id -un) from [UNKNOWN]" \
		"$NO_URING" "$SERVER" --backend=auto -e -l INFO || return 1
	if tr -d '\r' <"$WORK/info.log" | grep -q "io_uring unavailable"; then
		echo "  the fallback is logged at INFO"
		return 1
	fi
}
check "the fallback is not logged at INFO" quiet_at_info
once() {
	local n
	n=$(tr -d '\r' <"$WORK/auto.log" | grep -cxF "$FALLBACK_EPERM" || true)
	if [ "$n" != 1 ]; then
		echo "  logged $n times"
		return 1
	fi
}
check "the fallback is logged exactly once" once

# --check says io_uring is denied, and why, as us and as nobody.
check "--check: io_uring denied (EPERM) under a seccomp filter, plain calls" \
	host_check "$WORK/check-eperm" "$WORK/auto.log" "$NO_URING" -- \
	--usable 0 --setup-error EPERM --seccomp 2
check "--check: io_uring absent (ENOSYS), plain calls" \
	host_check "$WORK/check-enosys" "$WORK/enosys.log" \
	"$NO_URING" --errno=38 -- --usable 0 --setup-error ENOSYS --seccomp 2

# The server under the filter, as one executable for the suites: stderr
# passes through a filter that drops the fallback line.
WRAPPED=$WORK/bin/uring-sftp-server
wrap_server "$WORK/bin" "with io_uring denied" <<EOF
{
	'$NO_URING' '$SERVER' "\$@" 2>&1 1>&3 3>&- |
		grep -v '^io_uring unavailable (' >&2
	rc=\${PIPESTATUS[0]}
} 3>&1
exit "\$rc"
EOF

# --- a transfer through sftp -D ---------------------------------------------
transfer() {
	local d=$WORK/transfer
	mkdir -p "$d/remote"
	mkrandom "$d/up.bin" $((5 * 1024 * 1024 + 4321))
	cat >"$d/batch" <<EOF
mkdir remote/sub
put up.bin remote/sub/file.bin
ls -l remote/sub
get remote/sub/file.bin down.bin
rm remote/sub/file.bin
rmdir remote/sub
EOF
	if ! (cd "$d" && sftp -D "$NO_URING $SERVER --backend=auto -e -l VERBOSE" \
		-b batch >out 2>log); then
		echo "  sftp failed:"
		sed 's/^/    /' "$d/log" | tail -n 20
		return 1
	fi
	same_file "$d/up.bin" "$d/down.bin" &&
		has_line "$d/log" "$FALLBACK_EPERM" &&
		[ ! -e "$d/remote/sub" ]
}
if command -v sftp >/dev/null; then
	check "sftp -D put/get under the filter" transfer
else
	skip_part "sftp is not installed: no sftp -D transfer"
fi

# --- whole suites under the filter --------------------------------------------
# run_suite NAME SCRIPT: SCRIPT with SERVER=the wrapper, in the passes
# auto (see lib.sh); its counts are added to ours, and a skip
# in it is a skipped part of this suite.
run_suite() {
	echo "=== $1 under the filter"
	SERVER=$WRAPPED BACKENDS="auto" DIFFTEST_VARIANTS=none \
		run_counted "$1 under the filter" "$WORK/$1.out" "$2"
}
for suite in ${SECCOMP_SUITES:-difftest integration}; do
	run_suite "$suite" "$TESTS_DIR/$suite.sh"
done

finish

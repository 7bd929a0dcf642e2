#!/bin/bash
# Memory per session at 16 and 64 sessions of one user against OpenSSH's
# server: tests/memsessions.py, run as root, with every server run as
# MEMSESSIONS_USER (default nobody) through setpriv.  Needs root: skipped
# otherwise.  The first run (16) also floods; the second (64: stalled
# sessions only, a smaller file, one round) holds the server to the
# tighter MEMSESSIONS_ALLOWANCE_MANY.
#
#   SERVER_ARGS           extra arguments for the server under test
#   MEMSESSIONS_N (16), MEMSESSIONS_MANY (64; 0: none)  sessions at once
#   MEMSESSIONS_SIZE (64M), MEMSESSIONS_MANY_SIZE (20M)  the file each
#                         session downloads
#   MEMSESSIONS_ROUNDS (2)  runs of each server per file, first run
#   MEMSESSIONS_ALLOWANCE (4), MEMSESSIONS_ALLOWANCE_MANY (2)  MiB per
#                         session the server may cost more
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
if [ "$(id -u)" != 0 ]; then
	skip_all "needs root (servers run as another user, their pipes and" \
		"memory are read through /proc)"
fi
if [ ! -x "$OPENSSH_SFTP_SERVER" ]; then
	skip_all "reference server $OPENSSH_SFTP_SERVER not installed (openssh-sftp-server)"
fi
user=${MEMSESSIONS_USER:-nobody}
if ! command -v setpriv >/dev/null || ! id "$user" >/dev/null 2>&1; then
	skip_all "no setpriv or no user $user"
fi
make_workdir memsessions
chmod 755 "$WORK"
for f in "$SERVER" "$OPENSSH_SFTP_SERVER"; do
	if ! setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups \
		test -x "$f"; then
		skip_all "$f cannot be run by $user"
	fi
done
server_args=${SERVER_ARGS:-}
if is_openssh_server; then
	note "SERVER is OpenSSH's sftp-server: it is compared with itself"
fi
# One run of memsessions.py per session count, each counted.
passed=0 failed=0
run_memsessions() {
	local out=$WORK/out.$1 rc=0
	shift
	"$PYTHON3" "$TESTS_DIR/memsessions.py" --server "$SERVER" \
		--server-args="$server_args" --openssh "$OPENSSH_SFTP_SERVER" \
		--user "$user" --workdir "$WORK" "$@" >"$out" 2>&1 || rc=$?
	cat "$out"
	if [ "$rc" = 77 ]; then
		skip_all "see above"
	fi
	read_counts "$out" "$rc" memsessions.py
	passed=$((passed + P))
	failed=$((failed + F))
}
run_memsessions few --sessions "${MEMSESSIONS_N:-16}" \
	--size "${MEMSESSIONS_SIZE:-64M}" --rounds "${MEMSESSIONS_ROUNDS:-2}" \
	--allowance "${MEMSESSIONS_ALLOWANCE:-4}"
many=${MEMSESSIONS_MANY:-64}
if [ "$many" != 0 ]; then
	run_memsessions many --sessions "$many" \
		--size "${MEMSESSIONS_MANY_SIZE:-20M}" --rounds 1 --no-flood \
		--allowance "${MEMSESSIONS_ALLOWANCE_MANY:-2}"
fi
N_PASSED=$passed
N_FAILED=$failed
finish

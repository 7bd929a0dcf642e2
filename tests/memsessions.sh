#!/bin/bash
# Memory per session at 16 sessions of one user against OpenSSH's server:
# tests/memsessions.py, run as root, with every server run as
# MEMSESSIONS_USER (default nobody) through setpriv.  Needs root: skipped
# otherwise.
#
#   SERVER_ARGS           extra arguments for the server under test
#   MEMSESSIONS_N (16)    sessions at once
#   MEMSESSIONS_SIZE (64M)  the file each session downloads
#   MEMSESSIONS_ROUNDS (2)  runs of each server per file
#   MEMSESSIONS_ALLOWANCE (4)  MiB per session the server may cost more
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
rc=0
"$PYTHON3" "$TESTS_DIR/memsessions.py" --server "$SERVER" \
	--server-args="$server_args" --openssh "$OPENSSH_SFTP_SERVER" \
	--user "$user" --workdir "$WORK" \
	--sessions "${MEMSESSIONS_N:-16}" --size "${MEMSESSIONS_SIZE:-64M}" \
	--rounds "${MEMSESSIONS_ROUNDS:-2}" \
	--allowance "${MEMSESSIONS_ALLOWANCE:-4}" >"$WORK/out" 2>&1 || rc=$?
finish_run "$WORK/out" "$rc" memsessions.py

#!/bin/sh
# compare.sh: what `make bench` runs. Compares ./uring-sftp-server with
# OpenSSH's sftp-server (and gesftpserver when installed), one session at a
# time (compare.py), then with many sessions at once (sessions.py; skipped
# with SESSIONS=none); see README.md here for the environment variables.
# Builds the load client when run outside make.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

if [ -z "${LOAD:-}" ]; then
	LOAD=$here/sftp-load
	if [ ! -x "$LOAD" ] || [ "$here/sftp-load.c" -nt "$LOAD" ]; then
		mkdir -p "$here/out"
		LOAD=$here/out/sftp-load
		${CC:-cc} -O2 -Wall -Wextra -o "$LOAD" "$here/sftp-load.c"
	fi
fi
export LOAD

rc=0
/usr/bin/python3 "$here/compare.py" "$@" || rc=$?
if [ "${SESSIONS:-}" != none ]; then
	/usr/bin/python3 "$here/sessions.py" || rc=$?
fi
exit "$rc"

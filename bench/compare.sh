#!/bin/sh
# compare.sh: what `make bench` runs. Compares ./uring-sftp-server with
# OpenSSH's sftp-server (and gesftpserver when installed), one session at a
# time (compare.py), then with many sessions at once (sessions.py; skipped
# with SESSIONS=none), then ls -lR and find -ls through sshfs on slow
# storage (sshfs-tree.sh; skipped with SSHFS_TREE=none); see README.md here
# for the environment variables.
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

# The chart (ratios.svg beside results.json, bench/chart.py) is drawn from
# what this run's compare.py wrote, also when a transfer failed; an old
# results.json is never drawn, and a missing gnuplot only costs the chart.
# Then the concurrent-sessions scenario (bench/sessions.py; SESSIONS=none
# skips it).
out=${BENCH_OUT:-$here/out}
mkdir -p "$out"
stamp=$out/.run-started
: >"$stamp"
status=0
/usr/bin/python3 "$here/compare.py" "$@" || status=$?
if [ "$out/results.json" -nt "$stamp" ]; then
	/usr/bin/python3 "$here/chart.py" "$out/results.json" "$out/ratios.svg" ||
		echo "compare.sh: no chart drawn" >&2
fi
rm -f "$stamp"
if [ "${SESSIONS:-}" != none ]; then
	/usr/bin/python3 "$here/sessions.py" || status=$?
fi
# ls -lR and find -ls through sshfs on slow storage (SSHFS_TREE=none skips
# it; its own ROUNDS default, 3, unless SSHFS_TREE_ROUNDS is set).
if [ "${SSHFS_TREE:-}" != none ]; then
	BENCH_OUT=$out ROUNDS=${SSHFS_TREE_ROUNDS:-3} \
		SERVER=${SERVER:-$here/../uring-sftp-server} \
		"$here/sshfs-tree.sh" || status=$?
fi
exit "$status"

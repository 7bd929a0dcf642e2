#!/bin/bash
# Write failures and vanishing clients (tests/fullfs.py; issue 4).
#
# Mounts a small tmpfs (FULLFS_SIZE, default 2m) in a temporary directory
# and uploads more than it holds in one pipelined batch: OK exactly for the
# WRITEs whose bytes are in the file, FAILURE for the rest, the file holds
# exactly what was acknowledged, the close log line counts it.  Then clients
# that vanish mid-upload (on the ordinary temporary directory): the server
# exits 0 and every acknowledged byte is in the file.  Each with both back
# ends, write merging on (default) and off.
#
# Where mounting is not permitted (not root, no CAP_SYS_ADMIN) the full file
# system checks are skipped: the vanishing client checks still run, and the
# script exits 77 unless one of them failed.
#
# Environment: SERVER, PYTHON3, BACKENDS (default "uring plain"),
# FULLFS_SIZE, FULLFS_SEED (default 4), KEEP_WORK=1.
set -eu

: "${PYTHON3:=/usr/bin/python3}"
TESTS_DIR=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/lib.sh
. "$TESTS_DIR/lib.sh" # for read_counts
: "${SERVER:=$TESTS_DIR/../uring-sftp-server}"
case $SERVER in
/*) ;;
*) SERVER=$PWD/$SERVER ;;
esac
export LC_ALL=C
unset SSH_CONNECTION SSH_CLIENT SSH_TTY SSH_ORIGINAL_COMMAND
FS_SIZE=${FULLFS_SIZE:-2m}

skip() {
	echo "SKIP: $*"
	echo "0 passed, 0 failed"
	exit 77
}

if [ ! -x "$SERVER" ]; then
	skip "server $SERVER is not built (set SERVER=)"
fi
if ! command -v "$PYTHON3" >/dev/null 2>&1; then
	skip "no Python at $PYTHON3 (set PYTHON3=)"
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fullfs.XXXXXXXX")
FS=$WORK/fs
MOUNTED=0
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ "$MOUNTED" = 1 ]; then
		umount "$FS" 2>/dev/null || umount -l "$FS" 2>/dev/null || true
	fi
	if [ "${KEEP_WORK:-0}" = 1 ]; then
		echo "kept $WORK"
	elif ! mountpoint -q "$FS" 2>/dev/null; then
		rm -rf "$WORK"
	else
		echo "could not unmount $FS; left $WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$FS" "$WORK/w"

fs_args=()
fs_skip=
if mount -t tmpfs -o "size=$FS_SIZE,mode=0755" tmpfs "$FS" \
	2>"$WORK/mount.err"; then
	MOUNTED=1
	fs_bytes=$(df -B1 --output=size "$FS" | tail -n 1 | tr -d ' ')
	fs_args=(--fsdir="$FS" --fs-size="$fs_bytes")
	echo "mounted a $fs_bytes-byte tmpfs on $FS"
else
	fs_skip="cannot mount a tmpfs ($(tr '\n' ' ' <"$WORK/mount.err"))"
	echo "SKIP: full file system checks: $fs_skip; running only the" \
		"vanishing client checks"
fi

total_p=0
total_f=0
ran=0
for backend in ${BACKENDS:-uring plain}; do
	if ! "$SERVER" "--backend=$backend" </dev/null >/dev/null \
		2>"$WORK/probe.err"; then
		echo "SKIP: --backend=$backend: the server does not start:" \
			"$(head -c 300 "$WORK/probe.err")"
		continue
	fi
	for merge in default 0; do
		args="--backend=$backend"
		if [ "$merge" != default ]; then
			args="$args --write-merge=$merge"
		fi
		out="$WORK/out.$backend.$merge"
		echo "=== $SERVER $args"
		rc=0
		"$PYTHON3" "$TESTS_DIR/fullfs.py" --server "$SERVER" \
			--server-args="$args" --label="$args" \
			--workdir="$WORK/w" --seed="${FULLFS_SEED:-4}" \
			${fs_args[@]+"${fs_args[@]}"} >"$out" 2>&1 || rc=$?
		cat "$out"
		read_counts "$out" "$rc" fullfs.py
		total_p=$((total_p + P))
		total_f=$((total_f + F))
		ran=$((ran + 1))
	done
done

if [ "$ran" = 0 ]; then
	skip "no back end could start"
fi
if [ -n "$fs_skip" ] && [ "$total_f" = 0 ]; then
	echo "SKIP: full file system checks: $fs_skip"
	echo "$total_p passed, $total_f failed"
	exit 77
fi
echo "$total_p passed, $total_f failed"
if [ "$total_f" -gt 0 ]; then
	exit 1
fi
exit 0

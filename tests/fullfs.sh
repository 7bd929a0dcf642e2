#!/bin/bash
# Write failures and vanishing clients (tests/fullfs.py).
#
# Mounts a small tmpfs (FULLFS_SIZE, default 2m) in a temporary directory
# and uploads more than it holds in one pipelined batch: OK exactly for the
# WRITEs whose bytes are in the file, FAILURE for the rest, the file holds
# exactly what was acknowledged, the close log line counts it.  Then clients
# that vanish mid-upload (on the ordinary temporary directory): the server
# exits 0 and every acknowledged byte is in the file.  Each in every pass
# of lib.sh (io_uring and plain), with write merging on (default) and
# off.
#
# Where mounting is not permitted (not root, no CAP_SYS_ADMIN) the full file
# system checks are a skipped part: the vanishing client checks still run,
# and the script exits 77 unless one of them failed.  So does a back end
# that does not start.
#
# Environment: SERVER, PYTHON3, BACKENDS (default "uring plain"),
# FULLFS_SIZE, FULLFS_SEED (default 4), KEEP_WORK=1.
set -eu

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
FS_SIZE=${FULLFS_SIZE:-2m}

find_server
make_workdir fullfs
setup_merge_configs
FS=$WORK/fs
mkdir "$FS" "$WORK/w"

fs_args=()
# lib.sh's cleanup unmounts what is mounted below $WORK.
if mount -t tmpfs -o "size=$FS_SIZE,mode=0755" tmpfs "$FS" \
	2>"$WORK/mount.err"; then
	fs_bytes=$(df -B1 --output=size "$FS" | tail -n 1 | tr -d ' ')
	fs_args=(--fsdir="$FS" --fs-size="$fs_bytes")
	echo "mounted a $fs_bytes-byte tmpfs on $FS"
else
	skip_part "full file system checks: cannot mount a tmpfs" \
		"($(tr '\n' ' ' <"$WORK/mount.err")); running only the" \
		"vanishing client checks"
fi

for i in "${!CONFIG_NAMES[@]}"; do
	args=${CONFIG_ARGS[$i]}
	echo "=== $SERVER $args"
	run_counted fullfs.py "$WORK/out.${CONFIG_NAMES[$i]}" \
		"$PYTHON3" "$TESTS_DIR/fullfs.py" --server "$SERVER" \
		--server-args="$args" --label="$args" \
		--workdir="$WORK/w" --seed="${FULLFS_SEED:-4}" \
		${fs_args[@]+"${fs_args[@]}"}
done
finish

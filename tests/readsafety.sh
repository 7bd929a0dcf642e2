#!/bin/bash
# Read safety: tests/readsafety.py against $SERVER, with
# OpenSSH's sftp-server measured beside it, on ext4, xfs and btrfs (loop
# devices), tmpfs, an overlay (lower layer on the ext4, upper on the
# tmpfs; a file still in the lower layer and one copied up) and the FUSE
# passthrough tests/fusepass over the tmpfs, without and with a 1 ms delay
# in every call.  Needs root.  Every mount and loop device is undone at the
# end, and fs.lease-break-time (5 s meanwhile, so that a server holding
# read leases costs seconds, not minutes) is set back.
#
#   SERVER=/path/to/uring-sftp-server tests/readsafety.sh
#   SERVER=/usr/lib/openssh/sftp-server tests/readsafety.sh   # the reference
#   READSAFETY_ONLY='tmpfs*'  only the checks whose name matches
#   FUSEPASS=/path/to/fusepass (default: tests/fusepass of the build)
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

if [ "$(id -u)" != 0 ]; then
	skip_all "needs root (loop devices, mounts, a server run as nobody)"
fi
find_server
[ -x "$OPENSSH_SFTP_SERVER" ] ||
	skip_all "no $OPENSSH_SFTP_SERVER (openssh-sftp-server)"
FUSEPASS=${FUSEPASS:-$TESTS_DIR/fusepass}

make_workdir readsafety
chmod 755 "$WORK"
MNT=$WORK/mnt
mkdir -m 755 "$MNT" "$WORK/ovl"

MOUNTS=()
LOOPS=()
FUSE_PIDS=()
LEASE_TIME=/proc/sys/fs/lease-break-time
OLD_LEASE_TIME=

# shellcheck disable=SC2317 # run by the EXIT trap
rs_cleanup() {
	local i pid
	set +e
	# The overlay readsafety.py mounts for each run, then the rest in
	# the reverse order of mounting (FUSE before the tmpfs below it).
	umount_below "$WORK/ovl"
	for ((i = ${#MOUNTS[@]} - 1; i >= 0; i--)); do
		# (a FUSE daemon stopped by a signal unmounts by itself)
		mountpoint -q "${MOUNTS[$i]}" || continue
		if ! umount "${MOUNTS[$i]}" 2>/dev/null; then
			sleep 0.5
			umount "${MOUNTS[$i]}" || umount -l "${MOUNTS[$i]}"
		fi
	done
	for pid in ${FUSE_PIDS[@]+"${FUSE_PIDS[@]}"}; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for i in ${LOOPS[@]+"${LOOPS[@]}"}; do
		losetup -d "$i"
	done
	if [ -n "$OLD_LEASE_TIME" ]; then
		echo "$OLD_LEASE_TIME" >"$LEASE_TIME"
	fi
	cleanup
}
trap rs_cleanup EXIT

TARGETS=()

# mount_loop NAME MKFS...: a sparse image, made by MKFS, on a loop device
# mounted at $MNT/NAME; its directory rs/ is a target.
mount_loop() {
	local name=$1 img=$WORK/$1.img dev
	shift
	if ! command -v "$1" >/dev/null; then
		skip_part "$name: no $1"
		return 0
	fi
	truncate -s 400M "$img"
	if ! "$@" "$img" >"$WORK/$name.mkfs" 2>&1; then
		cat "$WORK/$name.mkfs"
		fail "$name: $* failed"
		return 0
	fi
	dev=$(losetup --find --show "$img")
	LOOPS+=("$dev")
	mkdir "$MNT/$name"
	if ! mount "$dev" "$MNT/$name"; then
		skip_part "$name: cannot mount a $name loop device here"
		return 0
	fi
	MOUNTS+=("$MNT/$name")
	mkdir -m 755 "$MNT/$name/rs"
	TARGETS+=(--target "$name=$MNT/$name/rs")
}

for tool in losetup mount umount mountpoint; do
	command -v $tool >/dev/null || skip_all "no $tool"
done

if [ -w "$LEASE_TIME" ]; then
	OLD_LEASE_TIME=$(cat "$LEASE_TIME")
	echo 5 >"$LEASE_TIME"
else
	note "cannot set $LEASE_TIME: a server holding leases makes" \
		"writers wait $(cat "$LEASE_TIME") s"
fi

mount_loop ext4 mkfs.ext4 -q -F
mkdir "$MNT/tmpfs"
if mount -t tmpfs -o size=1g,mode=755 tmpfs "$MNT/tmpfs"; then
	MOUNTS+=("$MNT/tmpfs")
	mkdir -m 755 "$MNT/tmpfs/rs"
	TARGETS+=(--target "tmpfs=$MNT/tmpfs/rs")
else
	skip_part "tmpfs: cannot mount one here"
fi
mount_loop xfs mkfs.xfs -q -f
mount_loop btrfs mkfs.btrfs -q -f

# The overlay: lower layer on the ext4, upper layer on the tmpfs.
if [ -d "$MNT/ext4/rs" ] && [ -d "$MNT/tmpfs/rs" ]; then
	mkdir -m 755 "$MNT/ext4/ovl-lower" "$MNT/tmpfs/ovl-upper" \
		"$MNT/tmpfs/ovl-work" "$WORK/ovl/merged"
	if mount -t overlay overlay -o "lowerdir=$MNT/ext4/ovl-lower,upperdir=$MNT/tmpfs/ovl-upper,workdir=$MNT/tmpfs/ovl-work" \
		"$WORK/ovl/merged"; then
		umount "$WORK/ovl/merged"
		TARGETS+=(--overlay "overlay=$MNT/ext4/ovl-lower:$MNT/tmpfs/ovl-upper:$MNT/tmpfs/ovl-work:$WORK/ovl/merged")
	else
		skip_part "overlay: cannot mount one here"
	fi
fi

# The FUSE passthrough over the tmpfs: no delay, and 1 ms in every call.
mount_fuse() {
	local name=$1 delay=$2 src=$MNT/tmpfs/$1-src
	if [ ! -x "$FUSEPASS" ]; then
		skip_part "$name: $FUSEPASS is not built (libfuse3-dev)"
		return 0
	fi
	if [ ! -c /dev/fuse ]; then
		skip_part "$name: no /dev/fuse"
		return 0
	fi
	[ -d "$MNT/tmpfs/rs" ] || return 0
	mkdir -m 755 "$src" "$MNT/$name"
	"$FUSEPASS" -f -o "allow_other,delay_us=$delay" "$src" "$MNT/$name" \
		2>"$WORK/$name.log" &
	FUSE_PIDS+=($!)
	for _ in $(seq 100); do
		if awk -v m="$MNT/$name" '$2 == m { f = 1 } END { exit !f }' \
			/proc/self/mounts; then
			MOUNTS+=("$MNT/$name")
			TARGETS+=(--target "$name=$MNT/$name")
			return 0
		fi
		if ! kill -0 "${FUSE_PIDS[-1]}" 2>/dev/null; then
			break
		fi
		sleep 0.1
	done
	cat "$WORK/$name.log"
	fail "$name: $FUSEPASS did not mount"
}
mount_fuse fuse 0
mount_fuse fuse-1ms 1000

if [ ${#TARGETS[@]} -eq 0 ]; then
	skip_all "no file system could be set up"
fi

# Ours reads a cold file's random READs direct on ext4 and xfs (the
# "cold shuffled" checks look for its O_DIRECT descriptor).
EXPECT_DIRECT=--expect-direct
if is_openssh_server; then
	EXPECT_DIRECT=
fi
echo "=== $SERVER ${SERVER_ARGS:-} against $OPENSSH_SFTP_SERVER, as nobody"
run_counted readsafety.py "$WORK/out" "$PYTHON3" "$TESTS_DIR/readsafety.py" \
	--server "$SERVER" --server-args="${SERVER_ARGS:-}" ${EXPECT_DIRECT:+"$EXPECT_DIRECT"} \
	--openssh "$OPENSSH_SFTP_SERVER" --root-owned tmpfs \
	--only "${READSAFETY_ONLY:-*}" -v "${TARGETS[@]}"

# The same checks of --nocache reads on the ext4 (RWF_DONTCACHE, or on a
# kernel before 6.14 mincore before and DONTNEED after): every DATA byte
# still checked, writers still never wait.
if [ -d "$MNT/ext4/rs" ] && ! is_openssh_server; then
	echo "=== $SERVER ${SERVER_ARGS:-} --nocache, on the ext4"
	run_counted readsafety.py "$WORK/out.nocache" "$PYTHON3" \
		"$TESTS_DIR/readsafety.py" --server "$SERVER" \
		--server-args="${SERVER_ARGS:-} --nocache" \
		--openssh "$OPENSSH_SFTP_SERVER" --only "${READSAFETY_ONLY:-ext4*}" \
		-v --target "ext4=$MNT/ext4/rs"
fi
finish

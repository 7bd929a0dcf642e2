#!/bin/bash
# The requests beyond OpenSSH (issue 12): check-file-name, check-file-handle,
# paramiko's check-file, copy-file, space-available, vendor-id and the
# --xferlog transfer log, against the server alone (tests/extensions.py),
# once per back-end pass (see lib.sh).  Hashes are compared with Python's
# hashlib and zlib over random offsets, lengths and block sizes.
#
# Environment: as lib.sh; EXT_TRIALS (random hash requests per pass,
# default 150).
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
if is_openssh_server; then
	skip_all "OpenSSH's server has none of these requests (difftest checks that)"
fi
make_workdir extensions
setup_passes

# copy-file on a file system that shares extents: an XFS image,
# loop-mounted when the machine allows it (lib.sh's cleanup unmounts it).
xfs=()
if [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null &&
	truncate -s 512M "$WORK/xfs.img" &&
	mkfs.xfs -q -f "$WORK/xfs.img" >/dev/null 2>&1 &&
	mkdir -p "$WORK/xfs" &&
	mount -o loop "$WORK/xfs.img" "$WORK/xfs" 2>/dev/null; then
	xfs=(--xfs "$WORK/xfs")
else
	echo "SKIP: copy-file reflink on XFS: needs root, mkfs.xfs (xfsprogs)" \
		"and loop mounts"
fi

# Cancellation on slow storage: a FUSE passthrough that takes 1 ms a
# call (lib.sh's cleanup unmounts it).
slow=()
if [ "$(id -u)" != 0 ] || [ ! -x "${FUSEPASS:-}" ]; then
	echo "SKIP: cancellation on slow storage: needs root and tests/fusepass"
elif mkdir -p "$WORK/slow-src" "$WORK/slow" &&
	"$FUSEPASS" -o delay_ms=1 "$WORK/slow-src" "$WORK/slow"; then
	slow=(--slow "$WORK/slow")
else
	echo "SKIP: cancellation on slow storage: $FUSEPASS would not mount"
fi

run_passes extensions.py ${xfs[@]+"${xfs[@]}"} ${slow[@]+"${slow[@]}"}
finish

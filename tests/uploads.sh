#!/bin/bash
# --atomic-uploads, -m/-M and --fsync-on-close (issue 23): tests/uploads.py
# once per back-end pass (see lib.sh) on an ext4, an XFS and a btrfs image
# and a tmpfs (loop mounts: root), and on a FUSE passthrough where
# tests/fusepass is built (it has no O_TMPFILE: the named temporary files
# and their leftover rule for real); everywhere, tests/upload-sim stands for
# a file system without O_TMPFILE and for kernels that cannot link a file
# by descriptor.  Then through a real sshd with OpenSSH's sftp, paramiko,
# lftp and rclone while a second process watches the target directory, and
# kill -9 of the client and of the server mid-upload on each file system.
#
# Environment: as lib.sh.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
if is_openssh_server; then
	skip_all "OpenSSH's sftp-server has none of these options"
fi
make_workdir uploads
# The planted-link attacks (tests/kernelrules.py) set these at 0 and 1.
save_sysctls fs.protected_symlinks fs.protected_regular fs.protected_fifos
# The server runs as nobody in some checks: it must reach the trees.
chmod 755 "$WORK"
setup_passes
BUILT_TESTS=$(dirname "$SERVER")/tests
SIM=
if [ -x "$BUILT_TESTS/upload-sim" ]; then
	SIM=$BUILT_TESTS/upload-sim
fi

# mount_fs NAME: a file system of that kind at $WORK/fs/NAME.
mount_fs() {
	local img=$WORK/img.$1 dir=$WORK/fs/$1
	mkdir -p "$dir"
	case $1 in
	tmpfs) mount -t tmpfs -o size=400m,mode=0777 uploads "$dir" ;;
	ext4) truncate -s 400M "$img" && mkfs.ext4 -q -F "$img" &&
		mount -o loop "$img" "$dir" ;;
	xfs) truncate -s 400M "$img" && mkfs.xfs -q -f "$img" &&
		mount -o loop "$img" "$dir" ;;
	btrfs) truncate -s 400M "$img" && mkfs.btrfs -q -f "$img" &&
		mount -o loop "$img" "$dir" ;;
	fuse) mkdir -p "$WORK/fuse-source" && chmod 777 "$WORK/fuse-source" &&
		"$BUILT_TESTS/fusepass" -o allow_other "$WORK/fuse-source" \
			"$dir" ;;
	esac
}

FS=()
if [ "$(id -u)" != 0 ]; then
	skip_part "file systems: mounting needs root; only $WORK's is tried"
	mkdir -p "$WORK/fs/work"
	FS+=(--fs "workdir=$WORK/fs/work")
else
	kinds="ext4 xfs btrfs tmpfs"
	if [ -x "$BUILT_TESTS/fusepass" ]; then
		kinds="$kinds fuse"
	else
		note "no tests/fusepass: a file system without O_TMPFILE is" \
			"only simulated (tests/upload-sim)"
	fi
	for fs in $kinds; do
		if mount_fs "$fs" >"$WORK/mount.$fs.log" 2>&1; then
			chmod 777 "$WORK/fs/$fs"
			FS+=(--fs "$fs=$WORK/fs/$fs")
		else
			skip_part "$fs: cannot make or mount one here:" \
				"$(tail -n 1 "$WORK/mount.$fs.log")"
		fi
	done
fi

for i in "${!PASS_NAMES[@]}"; do
	echo "=== pass ${PASS_NAMES[$i]}: $SERVER ${PASS_ARGS[$i]}"
	run_counted "uploads.py (${PASS_NAMES[$i]})" "$WORK/out.$i" \
		"$PYTHON3" "$TESTS_DIR/uploads.py" --server "$SERVER" \
		--server-args="${PASS_ARGS[$i]}" --label "${PASS_NAMES[$i]}" \
		--workdir "$WORK" ${FS[@]+"${FS[@]}"} ${SIM:+--sim "$SIM"}
done

# Through sshd: the Subsystem runs a wrapper that passes the server the
# options in $WORK/server-args, so that one sshd serves every case.
if [ "$(id -u)" != 0 ] || [ ! -x "${SSHD:-/usr/sbin/sshd}" ]; then
	skip_part "real clients through sshd: needs root and sshd"
	finish
fi
need_sshd "sshd must switch users and own its keys"
for tool in ssh sftp ssh-keygen; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed"
done
ssh-keygen -q -t ed25519 -N '' -C uploads-host -f "$WORK/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C uploads-user -f "$WORK/id_ed25519"
cp "$WORK/id_ed25519.pub" "$WORK/authorized_keys"
chmod 600 "$WORK/authorized_keys"
mkdir -p "$WORK/local"
: >"$WORK/server-args"
: >"$WORK/server-prefix"
cat >"$WORK/subsystem" <<EOS
#!/bin/sh
exec \$(cat $WORK/server-prefix) $SERVER \$(cat $WORK/server-args) \\
	-e -l INFO 2>>$WORK/server.log
EOS
chmod 755 "$WORK/subsystem"
sshd_config_body() {
	cat <<EOS
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
MaxStartups 100
LogLevel INFO
Subsystem sftp $WORK/subsystem
EOS
}
if ! launch_sshd uploads; then
	fail "sshd did not start"
	finish
fi
run_counted "uploads.py (clients)" "$WORK/out.clients" \
	"$PYTHON3" "$TESTS_DIR/uploads.py" --clients --server "$SERVER" \
	--label clients --workdir "$WORK" --port "$PORT" \
	--key "$WORK/id_ed25519" --user "$(id -un)" \
	--args-file "$WORK/server-args" --sshd-pid "$SSHD_PID" \
	--local "$WORK/local" ${FS[@]+"${FS[@]}"} ${SIM:+--sim "$SIM"}
finish

#!/bin/bash
# Path-level model test (issue 21): seeded random windows of MKDIR, RMDIR,
# OPEN, WRITE, READ, CLOSE, RENAME, posix-rename, hardlink, REMOVE, STAT,
# LSTAT, FSTAT, SETSTAT, FSETSTAT, OPENDIR/READDIR, SYMLINK, READLINK,
# REALPATH, statvfs and fstatvfs over a small tree (listings and statvfs
# right after WRITEs, merged WRITE runs, FSETSTAT and SETSTAT among them),
# sent pipelined to one server and one at a time to another instance of
# the same server in a copy of the tree; every
# reply and, after each window, the whole tree must agree
# (tests/pathmodel.py says what is compared and what is normalized).
# OpenSSH's sftp-server runs the same requests one at a time as a second
# oracle.  Runs every seed in each pass of lib.sh (io_uring and plain).
# Then, once, the checker is checked: one changed reply or file per seed
# must be reported where it was made, and requests run out of order must
# be noticed (PATHMODEL_SELFTEST=0 skips this).  A back end that does not
# start is a skipped part (exit 77), not a pass.
#
# Environment: SERVER (default ../uring-sftp-server), PYTHON3 (default
# /usr/bin/python3), BACKENDS (default "uring plain"), MODEL_SEEDS (seeds
# per pass, default 30), MODEL_SEED_BASE (first seed, default 1),
# PATHMODEL_OPS (requests per seed, default 300), PATHMODEL_REF (the second
# oracle, default /usr/lib/openssh/sftp-server; empty: none),
# PATHMODEL_SELFTEST (0: skip the checks of the checker; default 1),
# PATHMODEL_SLOW_SEEDS (seeds on slow storage, default 10), FUSEPASS (the
# FUSE passthrough for that, set by make check).
set -eu

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
make_workdir pathmodel
setup_passes

REF=${PATHMODEL_REF-$OPENSSH_SFTP_SERVER}
ref_args=()
if [ -z "$REF" ]; then
	note "no second oracle (PATHMODEL_REF is empty)"
elif is_openssh_server; then
	note "SERVER is OpenSSH's sftp-server: no second oracle"
elif [ ! -x "$REF" ]; then
	skip_part "second oracle $REF is not installed (openssh-sftp-server)"
else
	ref_args=(--ref "$REF")
fi

# As root each tree is a tmpfs of its own: statvfs and fstatvfs replies
# are then compared with their free counts (what earlier requests used).
own_fs=()
if [ "$(id -u)" = 0 ]; then
	own_fs=(--own-fs)
else
	note "not root: statvfs free counts are not compared"
fi

selftest_args=
selftest_ok=0
for i in "${!PASS_NAMES[@]}"; do
	name=${PASS_NAMES[$i]}
	args=${PASS_ARGS[$i]}
	# shellcheck disable=SC2086 # args is a list of options
	if ! "$SERVER" $args </dev/null >/dev/null 2>"$WORK/probe.err"; then
		skip_part "pass $name: the server does not start:" \
			"$(head -c 300 "$WORK/probe.err")"
		continue
	fi
	if [ "$selftest_ok" = 0 ]; then
		selftest_ok=1
		selftest_args=$args
	fi
	echo "=== pass $name: $SERVER $args"
	run_counted "pathmodel.py ($name)" "$WORK/out.$i" \
		"$PYTHON3" "$TESTS_DIR/pathmodel.py" --server "$SERVER" \
		--server-args="$args" --label="$name" --workdir="$WORK" \
		--seeds="${MODEL_SEEDS:-30}" \
		--seed-base="${MODEL_SEED_BASE:-1}" \
		--ops="${PATHMODEL_OPS:-300}" ${ref_args[@]+"${ref_args[@]}"} \
		${own_fs[@]+"${own_fs[@]}"}
done

# The same on slow storage: the trees on a FUSE passthrough that adds
# 300 us to every call, so that the server runs requests in its worker
# threads and (on io_uring) gives their calls to the ring (latency.h,
# route.h), several at once, as on network storage.  Against
# itself only: the FUSE kernel client's attribute cache makes some
# answers there depend on timing, whichever server asks.
if [ "$selftest_ok" = 1 ] && ! is_openssh_server; then
	if [ "$(id -u)" != 0 ] || [ ! -x "${FUSEPASS:-}" ]; then
		skip_part "slow storage: needs root and tests/fusepass"
	elif mkdir -p "$WORK/slow-src" "$WORK/slow" &&
		"$FUSEPASS" -o hard_remove,delay_us=300,attr_timeout=0,entry_timeout=0,negative_timeout=0 \
			"$WORK/slow-src" "$WORK/slow"; then
		echo "=== slow storage: $SERVER $selftest_args, 300 us per call"
		# Its debug lines kept: on io_uring the calls io_uring has
		# must have gone to the ring (io.c logs each at DEBUG3).
		slow_log=$WORK/slow-server.log
		: >"$slow_log"
		printf '#!/bin/sh\nexec %q "$@" -e -l DEBUG3 2>>%q\n' \
			"$SERVER" "$slow_log" >"$WORK/slow-server"
		chmod +x "$WORK/slow-server"
		run_counted "pathmodel.py (slow storage)" "$WORK/out.slow" \
			"$PYTHON3" "$TESTS_DIR/pathmodel.py" \
			--server "$WORK/slow-server" \
			--server-args="$selftest_args" --label=slow \
			--workdir="$WORK/slow" \
			--seeds="${PATHMODEL_SLOW_SEEDS:-10}" \
			--seed-base="${MODEL_SEED_BASE:-1}" \
			--ops="${PATHMODEL_OPS:-300}"
		umount "$WORK/slow" 2>/dev/null || umount -l "$WORK/slow"
		if ! grep -q 'using plain system calls' "$slow_log" &&
			! [[ " $selftest_args " == *" --backend=plain "* ]]; then
			# The ops this kernel has (doc/design.md, "The kernel
			# matrix"): the others go to the workers.
			ops="STATX CLOSE"
			kernel_at_least 5 11 && ops+=" UNLINKAT RENAMEAT"
			kernel_at_least 5 15 && ops+=" MKDIRAT SYMLINKAT LINKAT"
			for op in $ops; do
				n=$(grep -c "io_uring: $op\b" "$slow_log" || true)
				if [ "$n" = 0 ]; then
					fail "slow storage: no $op through io_uring"
				else
					pass "slow storage: $n calls of $op through io_uring"
				fi
			done
		fi
	else
		skip_part "slow storage: $FUSEPASS would not mount"
	fi
fi

# The checker checked: "reply" changes one reply or file per seed, which
# must be reported where it was made; "reorder" swaps random neighbours in
# the pipelined windows, and "lexical" every neighbour that a rule by path
# names alone would let run in either order: some seed must notice.
if [ "${PATHMODEL_SELFTEST:-1}" != 0 ] && [ "$selftest_ok" = 1 ]; then
	for mode in reply:8 reorder:8 lexical:20; do
		echo "=== checking the checker: --selftest ${mode%:*}"
		run_counted "pathmodel.py --selftest ${mode%:*}" \
			"$WORK/out.selftest-${mode%:*}" \
			"$PYTHON3" "$TESTS_DIR/pathmodel.py" --server "$SERVER" \
			--server-args="$selftest_args" --label="${mode%:*}" \
			--workdir="$WORK" --seeds="${mode#*:}" --selftest "${mode%:*}"
	done
fi
finish

#!/bin/bash
# Model-based test of pipelined READ/WRITE/FSTAT/FSETSTAT on one file through
# two handles, checked reply by reply against an in-memory model and byte
# for byte at the end (tests/model.py; issue 4).  Runs every seed with each
# back end, with write merging on (default) and off (--write-merge=0).
#
# Environment: SERVER (default ../uring-sftp-server), PYTHON3 (default
# /usr/bin/python3), BACKENDS (default "uring plain"), MODEL_SEEDS (seeds per
# configuration, default 30), MODEL_SEED_BASE (first seed, default 1),
# MODEL_REQUESTS (requests per seed, default 2000).
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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/model.XXXXXXXX")
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	if [ "${KEEP_WORK:-0}" = 1 ]; then
		echo "kept $WORK"
	else
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

total_p=0
total_f=0
ran=0
for backend in ${BACKENDS:-uring plain}; do
	# A back end the kernel refuses (io_uring disabled) is a skip of that
	# pass, not a failure: the server says so and exits at once.
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
		label="$args"
		out="$WORK/out.$backend.$merge"
		echo "=== $SERVER $args"
		rc=0
		"$PYTHON3" "$TESTS_DIR/model.py" --server "$SERVER" \
			--server-args="$args" --label="$label" --workdir="$WORK" \
			--seeds="${MODEL_SEEDS:-30}" \
			--seed-base="${MODEL_SEED_BASE:-1}" \
			--requests="${MODEL_REQUESTS:-2000}" >"$out" 2>&1 || rc=$?
		cat "$out"
		read_counts "$out" "$rc" model.py
		total_p=$((total_p + P))
		total_f=$((total_f + F))
		ran=$((ran + 1))
	done
done

if [ "$ran" = 0 ]; then
	skip "no back end could start"
fi
echo "$total_p passed, $total_f failed"
if [ "$total_f" -gt 0 ]; then
	exit 1
fi
exit 0

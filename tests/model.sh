#!/bin/bash
# Model-based test of pipelined READ/WRITE/FSTAT/FSETSTAT on one file through
# two handles, checked reply by reply against an in-memory model and byte
# for byte at the end (tests/model.py).  Runs every seed in each
# pass of lib.sh (io_uring and plain), each twice: with write merging on
# (default) and off (--write-merge=0).
# A back end that does not start is a skipped part (exit 77), not a pass.
#
# Environment: SERVER (default ../uring-sftp-server), PYTHON3 (default
# /usr/bin/python3), BACKENDS (default "uring plain"), MODEL_SEEDS
# (seeds per configuration, default 30), MODEL_SEED_BASE (first seed,
# default 1), MODEL_REQUESTS (requests per seed, default 2000).
set -eu

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
make_workdir model
setup_merge_configs

for i in "${!CONFIG_NAMES[@]}"; do
	args=${CONFIG_ARGS[$i]}
	echo "=== $SERVER $args"
	run_counted model.py "$WORK/out.${CONFIG_NAMES[$i]}" \
		"$PYTHON3" "$TESTS_DIR/model.py" --server "$SERVER" \
		--server-args="$args" --label="$args" --workdir="$WORK" \
		--seeds="${MODEL_SEEDS:-30}" \
		--seed-base="${MODEL_SEED_BASE:-1}" \
		--requests="${MODEL_REQUESTS:-2000}"
done
finish

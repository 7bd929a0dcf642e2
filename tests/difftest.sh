#!/bin/bash
# Differential test: the same request streams to OpenSSH's sftp-server and to
# $SERVER must give the same replies, file trees and -e logs.  Runs
# tests/difftest.py once per backend pass (see lib.sh).
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
if [ ! -x "$OPENSSH_SFTP_SERVER" ]; then
	skip_all "reference server $OPENSSH_SFTP_SERVER not installed (openssh-sftp-server)"
fi
make_workdir difftest
setup_passes

total_p=0
total_f=0
for i in "${!PASS_NAMES[@]}"; do
	name=${PASS_NAMES[$i]}
	echo "=== pass $name: $SERVER ${PASS_ARGS[$i]}"
	rc=0
	"$PYTHON3" "$TESTS_DIR/difftest.py" --ref "$OPENSSH_SFTP_SERVER" \
		--server "$SERVER" --server-args="${PASS_ARGS[$i]}" \
		--label "$name" --workdir "$WORK" \
		${DIFFTEST_ONLY:+--only "$DIFFTEST_ONLY"} \
		>"$WORK/out.$i" 2>&1 || rc=$?
	cat "$WORK/out.$i"
	if [ "$rc" = 77 ]; then
		skip_all "difftest.py could not run"
	fi
	read_counts "$WORK/out.$i" "$rc" difftest.py
	total_p=$((total_p + P))
	total_f=$((total_f + F))
done
N_PASSED=$total_p
N_FAILED=$total_f
finish

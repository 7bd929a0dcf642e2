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

for i in "${!PASS_NAMES[@]}"; do
	name=${PASS_NAMES[$i]}
	echo "=== pass $name: $SERVER ${PASS_ARGS[$i]}"
	run_counted "difftest.py ($name)" "$WORK/out.$i" \
		"$PYTHON3" "$TESTS_DIR/difftest.py" --ref "$OPENSSH_SFTP_SERVER" \
		--server "$SERVER" --server-args="${PASS_ARGS[$i]}" \
		--label "$name" --workdir "$WORK" \
		${DIFFTEST_ONLY:+--only "$DIFFTEST_ONLY"}
done
finish

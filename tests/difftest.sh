#!/bin/bash
# Differential test: the same request streams to OpenSSH's sftp-server and to
# $SERVER must give the same replies, file trees and -e logs.  Runs
# tests/difftest.py once per backend pass (see lib.sh), then once per
# variant (--fsync-on-close, --atomic-uploads, -m/-M: DIFFTEST_VARIANTS),
# where only the documented differences may show.
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
# The options that change behaviour on purpose, on the first pass's back
# end: every scenario again, identical to OpenSSH but for the differences
# difftest.py's VARIANTS documents (doc/uploads.md).
if ! is_openssh_server; then
	for v in ${DIFFTEST_VARIANTS:-fsync atomic modes}; do
		[ "$v" = none ] && continue
		echo "=== variant $v: $SERVER ${PASS_ARGS[0]}"
		run_counted "difftest.py ($v)" "$WORK/out.$v" \
			"$PYTHON3" "$TESTS_DIR/difftest.py" \
			--ref "$OPENSSH_SFTP_SERVER" --server "$SERVER" \
			--server-args="${PASS_ARGS[0]}" --variant "$v" \
			--label "$v" --workdir "$WORK" \
			${DIFFTEST_ONLY:+--only "$DIFFTEST_ONLY"}
	done
fi
finish

#!/bin/bash
# Hostile clients: tests/hostile.py against $SERVER, once per
# back end (BACKENDS, default "uring plain"; see lib.sh).  The fuzz seed
# corpus and the fuzz regressions are replayed against the real binary too.
#
#   HOSTILE_ONLY=PATTERN   run only the checks whose name matches
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
make_workdir hostile
setup_passes

total_p=0
total_f=0
for i in "${!PASS_NAMES[@]}"; do
	name=${PASS_NAMES[$i]}
	echo "=== pass $name: $SERVER ${PASS_ARGS[$i]}"
	rc=0
	"$PYTHON3" "$TESTS_DIR/hostile.py" --server "$SERVER" \
		--server-args="${PASS_ARGS[$i]}" --label "$name" \
		--workdir "$WORK" -v \
		--corpus "$TESTS_DIR/fuzz-corpus" \
		--corpus "$TESTS_DIR/fuzz-regressions" \
		--only "${HOSTILE_ONLY:-*}" >"$WORK/out.$i" 2>&1 || rc=$?
	cat "$WORK/out.$i"
	if [ "$rc" = 77 ]; then
		skip_all "hostile.py could not run"
	fi
	summary=$(tail -n 1 "$WORK/out.$i")
	p=0
	f=1
	if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
		p=${BASH_REMATCH[1]}
		f=${BASH_REMATCH[2]}
	fi
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		f=1
	fi
	total_p=$((total_p + p))
	total_f=$((total_f + f))
done
N_PASSED=$total_p
N_FAILED=$total_f
finish

#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# The libFuzzer target over the packet path (tests/fuzz_packets.c).
#
#   tests/fuzz.sh
#       (make check) replay the seed corpus tests/fuzz-corpus/ and every
#       crash found so far, tests/fuzz-regressions/, then fuzz for
#       FUZZ_CHECK_SECONDS (default 30) in a scratch directory.  Skips (77)
#       when the target could not be built because clang's libFuzzer is
#       missing, or when its sandbox cannot be set up.
#   tests/fuzz.sh --campaign DIR
#       (make fuzz) fuzz for FUZZ_SECONDS (default 60) with the corpus kept
#       in DIR/corpus and crashes written to DIR/; the executions of every
#       run are added up in DIR/executions.
#
#   FUZZER       the target (default: tests/fuzz_packets next to $SERVER)
#   FUZZ_ARGS    more libFuzzer flags, e.g. -jobs=2 or -seed=1
#
# A crash: reduce it (tests/fuzz_packets -minimize_crash=1 -runs=10000
# -exact_artifact_path=small CRASH), copy it into tests/fuzz-regressions/
# under a name that says what it was, and fix the bug.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

CAMPAIGN=
if [ "${1:-}" = --campaign ]; then
	CAMPAIGN=${2:?usage: fuzz.sh --campaign DIR}
fi

if [ -z "${FUZZER:-}" ]; then
	SERVER=${SERVER:-$TESTS_DIR/../uring-sftp-server}
	FUZZER=$(dirname "$SERVER")/tests/fuzz_packets
fi
READY=$(dirname "$FUZZER")/fuzz-ready
if [ -z "$CAMPAIGN" ] && [ -f "$READY" ]; then
	case $(head -n 1 "$READY") in
	ok) ;;
	unavailable*) skip_all "$(head -n 1 "$READY")" ;;
	*)
		echo "FAIL: the fuzz target did not build: $(head -n 1 "$READY")"
		tail -n 30 "$(dirname "$FUZZER")/fuzz-build.log" 2>/dev/null || true
		echo "0 passed, 1 failed"
		exit 1
		;;
	esac
fi
if [ ! -x "$FUZZER" ]; then
	if [ -n "$CAMPAIGN" ]; then
		echo "no fuzz target at $FUZZER" >&2
		exit 1
	fi
	skip_all "no fuzz target at $FUZZER (make fuzz builds it)"
fi

SEEDS=$TESTS_DIR/fuzz-corpus
REGRESSIONS=$TESTS_DIR/fuzz-regressions
# libFuzzer's own exit codes: make every failure 1 (77 would read as SKIP).
FLAGS=(-error_exitcode=1 -timeout_exitcode=1 -timeout=10 -rss_limit_mb=2048
	-dict="$TESTS_DIR/fuzz.dict" -print_final_stats=1)

if [ -n "$CAMPAIGN" ]; then
	mkdir -p "$CAMPAIGN/corpus"
	OUT=$(cd "$CAMPAIGN" && pwd)
	SECONDS_TO_RUN=${FUZZ_SECONDS:-60}
else
	make_workdir fuzz
	OUT=$WORK
	mkdir -p "$OUT/corpus"
	SECONDS_TO_RUN=${FUZZ_CHECK_SECONDS:-30}
fi
mkdir -p "$OUT/tmp"

# report_crashes: show what libFuzzer left behind.
report_crashes() {
	local f
	for f in "$OUT"/crash-* "$OUT"/timeout-* "$OUT"/oom-* "$OUT"/leak-*; do
		[ -e "$f" ] || continue
		echo "  $f ($(wc -c <"$f") bytes):"
		od -A d -t x1 "$f" | head -n 16 | sed 's/^/    /'
	done
}

# run_fuzzer LOG ARGS...: the target in $OUT with TMPDIR there; prints
# the exit status.
run_fuzzer() {
	local log=$1 rc=0
	shift
	(cd "$OUT" && TMPDIR=$OUT/tmp "$FUZZER" "${FLAGS[@]}" \
		-artifact_prefix="$OUT/" "$@") >"$log" 2>&1 || rc=$?
	echo "$rc"
}

if [ -z "$CAMPAIGN" ]; then
	shopt -s nullglob
	inputs=("$SEEDS"/* "$REGRESSIONS"/*)
	shopt -u nullglob
	rc=$(run_fuzzer "$OUT/replay.log" "${inputs[@]}")
	if [ "$rc" = 77 ]; then
		tail -n 3 "$OUT/replay.log"
		skip_all "the fuzz target cannot run here"
	fi
	replay() {
		if [ "$rc" != 0 ]; then
			grep -v '^INFO:' "$OUT/replay.log" | tail -n 40
			report_crashes
			return 1
		fi
		echo "  $(grep -c '^Executed ' "$OUT/replay.log") inputs replayed"
	}
	check "seed corpus and regressions replay without a crash" replay
fi

dirs=("$OUT/corpus" "$SEEDS")
if [ -d "$REGRESSIONS" ]; then
	dirs+=("$REGRESSIONS")
fi
# shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
rc=$(run_fuzzer "$OUT/fuzz.log" -max_total_time="$SECONDS_TO_RUN" \
	${FUZZ_ARGS:-} "${dirs[@]}")
if [ "$rc" = 77 ]; then
	tail -n 3 "$OUT/fuzz.log"
	skip_all "the fuzz target cannot run here"
fi
runs=$(sed -n 's/^Done \([0-9]*\) runs in .*/\1/p' "$OUT/fuzz.log" | tail -n 1)
runs=${runs:-$(sed -n 's/^stat::number_of_executed_units: *//p' \
	"$OUT/fuzz.log" | tail -n 1)}
runs=${runs:-0}
fuzz() {
	grep -E '^(#[0-9]+[[:space:]]+(INITED|DONE)|Done|stat::)' "$OUT/fuzz.log" |
		sed 's/^/  /'
	if [ "$rc" != 0 ]; then
		grep -v '^#\|^INFO:\|^\s*NEW_FUNC' "$OUT/fuzz.log" | tail -n 60
		report_crashes
		return 1
	fi
}
check "fuzzing for ${SECONDS_TO_RUN} s: $runs executions, no crash" fuzz

if [ -n "$CAMPAIGN" ]; then
	total=0
	if [ -f "$OUT/executions" ]; then
		total=$(cat "$OUT/executions")
	fi
	total=$((total + runs))
	echo "$total" >"$OUT/executions"
	echo "campaign total: $total executions (in $OUT/executions)"
fi
finish

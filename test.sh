#!/bin/bash
# test.sh: install what is missing, build, and run every test (make check):
# Check unit tests, the differential test against OpenSSH's sftp-server, and
# the integration tests with real clients and a real sshd on 127.0.0.1.
#
#   ./test.sh
#   CONFIGURE_FLAGS=--enable-werror ./test.sh
#   CONFIGURE_FLAGS="--enable-werror --enable-sanitizers" ./test.sh
#   CHECK_SKIP="tests/budget.sh tests/docs.sh" ./test.sh   # all but these
#
# Exit status is non-zero if the build or any test fails; the logs of the
# tests are printed then.  A suite that could not run all of its checks
# (a tool missing, mounting not permitted, a back end the kernel refuses)
# reports SKIP with the reason; the skips are listed at the end, and with
# REQUIRE_ALL_TESTS=1 (set by .ci/run) any skip fails the run.
set -euo pipefail

cd "$(dirname "$(readlink -f "$0")")"

./deps.sh

# The sshd tests start /usr/sbin/sshd, which as root needs its privilege
# separation directory; the service unit normally creates it, but a fresh
# machine or container where sshd never ran has none.
if [ "$(id -u)" -eq 0 ] && [ ! -d /run/sshd ]; then
	mkdir -p /run/sshd
	chmod 0755 /run/sshd
fi

# Build the test programs in parallel, then run the tests one after another.
echo "==> make -j$(nproc) check TESTS= (build the test programs)"
make -j"$(nproc)" check TESTS=

# skipped_tests: print each skipped test and the reasons its log gives.
skipped_tests() {
	local trs log
	for trs in tests/*.trs; do
		[ -e "$trs" ] || continue
		grep -q '^:test-result: SKIP' "$trs" || continue
		log=${trs%.trs}.log
		echo "  ${trs%.trs}:"
		grep -E '^SKIP' "$log" | sed 's/^/    /' |
			head -n 20 || true
	done
}

# suite_times: each suite's wall time, slowest first.  Suites run one
# after another, so a suite took from the previous result file's time to
# its own (the first from the start); CI's 30-minute budget is watched here.
suite_times() {
	local t prev=$start trs
	for trs in $(ls -tr tests/*.trs 2>/dev/null); do
		t=$(stat -c %Y "$trs")
		echo "$((t - prev)) ${trs%.trs}"
		prev=$t
	done | sort -rn | head -n 12 | awk '{ printf "  %5d s  %s\n", $1, $2 }'
}

# CHECK_SKIP: suites to leave out (CI's sanitizer pass runs only those
# whose code paths a sanitizer adds to; .ci/run says which and why).
check_args=(VERBOSE=1)
if [ -n "${CHECK_SKIP:-}" ]; then
	tests=$(make -s print-tests | grep -vxF -f <(tr ' ' '\n' <<<"$CHECK_SKIP" | grep .) | tr '\n' ' ')
	check_args+=("TESTS=$tests")
	echo "==> leaving out: $CHECK_SKIP"
fi

start=$(date +%s)
echo "==> make check ${check_args[*]}"
if make check "${check_args[@]}"; then
	echo "==> the slowest suites:"
	suite_times
	skips=$(skipped_tests)
	if [ -z "$skips" ]; then
		echo "==> all tests passed, none skipped ($(($(date +%s) - start)) s)"
		exit 0
	fi
	echo "==> tests passed, but some did not run everything:"
	echo "$skips"
	if [ "${REQUIRE_ALL_TESTS:-0}" = 1 ]; then
		echo "==> FAILED: REQUIRE_ALL_TESTS=1 and tests were skipped" \
			"($(($(date +%s) - start)) s)" >&2
		exit 1
	fi
	echo "==> passed with skips ($(($(date +%s) - start)) s);" \
		"REQUIRE_ALL_TESTS=1 makes skips fail"
	exit 0
fi

echo "==> make check FAILED after $(($(date +%s) - start)) s" >&2
suite_times >&2
# Print the whole log of every test that did not pass (the .trs files hold
# the results); if there are none (the harness itself broke), print them all.
shopt -s nullglob
logs=()
for trs in tests/*.trs; do
	if grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs"; then
		logs+=("${trs%.trs}.log")
	fi
done
[ ${#logs[@]} -gt 0 ] || logs=(tests/*.log)
for log in "${logs[@]}"; do
	printf '\n===== %s =====\n' "$log" >&2
	cat "$log" >&2 || true
done
printf '\nlogs above: %s\n' "${logs[*]}" >&2
exit 1

#!/bin/bash
# The budget test (tests/budget.py): system calls, wake-ups and page faults
# per GiB of a warm download, a cold download (the file dropped from the
# page cache with DONTNEED, never the machine's cache), a warm download as
# sshd reads it (SSH_CONNECTION set: stdout at 64 KiB, unpaced) and an
# upload, none more than a quarter above the figures in tests/budget.txt.  The server
# runs as nobody when this runs as root.
#
#   tests/budget.sh             check
#   tests/budget.sh --record    measure and write tests/budget.txt, or
#                               tests/budget-sanitizers.txt in a sanitizer
#                               build (deliberately: doc/testing.md says when)
#   BUDGET_SIZE_MB=64 BUDGET_RUNS=3
#   BUDGET_COUNTER=perf|strace  how system calls are counted (default: perf
#                               where it can count them, else strace)
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
is_openssh_server && skip_all "the figures are this server's"
LOAD=${LOAD:-$TESTS_DIR/../bench/sftp-load}
[ -x "$LOAD" ] || skip_all "no $LOAD (make bench/sftp-load)"
for tool in fincore; do
	command -v $tool >/dev/null || skip_all "no $tool"
done
command -v perf >/dev/null || command -v strace >/dev/null ||
	skip_all "neither perf nor strace to count system calls"
make_workdir budget
chmod 755 "$WORK"
size_mb=${BUDGET_SIZE_MB:-64}
droppable_dir "$WORK/files" $((size_mb * 3 + 64))
chmod 755 "$DROP_DIR"
mkdir -m 1777 "$DROP_DIR/up"
user=()
if [ "$(id -u)" = 0 ]; then
	user=(--user nobody)
fi
# A sanitizer build (CI's second pass) faults in ASan's shadow memory and
# maps its allocator's chunks: its figures are its own.
budget_file=$TESTS_DIR/budget.txt
if ldd "$SERVER" 2>/dev/null | grep -Eq 'libasan|libubsan'; then
	budget_file=$TESTS_DIR/budget-sanitizers.txt
fi
note "figures: $budget_file"
run_counted budget.py "$WORK/out" "$PYTHON3" "$TESTS_DIR/budget.py" \
	--server "$SERVER" --server-args="${SERVER_ARGS:-}" --load "$LOAD" \
	--budget "$budget_file" --dir "$DROP_DIR" \
	--size $((size_mb << 20)) --runs "${BUDGET_RUNS:-3}" \
	--machine "$(nproc) CPUs" ${user[@]+"${user[@]}"} "$@"
finish

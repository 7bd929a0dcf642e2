#!/bin/bash
# --confine (issue 14): tests/confine.py against $SERVER, once per back end
# (BACKENDS, default "uring plain"), as an unprivileged user.  Skips (77,
# with the reason) where the kernel has no Landlock, after checking that
# the server then refuses to start.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
if is_openssh_server; then
	skip_all "OpenSSH's sftp-server has no --confine"
fi
make_workdir confine
# The planted-link attacks (tests/kernelrules.py) set these at 0 and 1.
save_sysctls fs.protected_symlinks fs.protected_regular fs.protected_fifos
# The server's user (nobody when we are root) must reach the trees.
chmod 755 "$WORK"
# The helpers are built next to the server (tests/ of the build tree).
BUILT_TESTS=$(dirname "$SERVER")/tests
NO_LANDLOCK=
if [ -x "$BUILT_TESTS/no-uring" ]; then
	NO_LANDLOCK=$BUILT_TESTS/no-uring
else
	note "no tests/no-uring: the refusal without Landlock is tried only" \
		"where the kernel really has none"
fi
if [ -n "$NO_LANDLOCK" ] && ! "$NO_LANDLOCK" --landlock true 2>/dev/null; then
	note "seccomp not usable here: the refusal without Landlock is tried" \
		"only where the kernel really has none"
	NO_LANDLOCK=
fi

PROBE=
if [ -x "$BUILT_TESTS/confine-probe" ]; then
	PROBE=$BUILT_TESTS/confine-probe
else
	note "no tests/confine-probe: Landlock alone is not tried"
fi

# The I/O path (back ends, read-ahead, READ memory, merging, the queue)
# works on descriptors of handles only: if it named a path, nothing would
# resolve that path beneath the confinement directory.
SRC=${top_srcdir:-$TESTS_DIR/..}
io_files=(backend.c backend-uring.c backend-plain.c readahead.c readmem.c
	stdio-pipes.c coalesce.c queue.c input.c frame.c outpace.c output.c
	session.c)
by_path='\b(open|openat|openat2|opendir|creat|stat|lstat|statx|truncate|'
by_path+='statvfs|chmod|chown|lchown|utimensat|utimes|rename|renameat2?|'
by_path+='link|linkat|unlink|unlinkat|mkdir|mkdirat|symlink|readlink|'
by_path+='access|faccessat)[[:space:]]*\(|io_uring_prep_(open|statx|rename|'
by_path+='unlink|mkdir|symlink|link|setxattr|getxattr)'
# The one exception: the metadata calls a handler gives io_uring on slow
# storage (io.h) name op->path and op->path2, which only ring_call
# (handlers-path.c) sets, and it refuses to under --confine.
found=$(cd "$SRC" && { grep -nE "$by_path" "${io_files[@]}" || true; } |
	{ grep -vE '\bop->path2?\b' || true; })
if [ -z "$found" ]; then
	pass "the I/O path opens nothing by path (${io_files[*]})" \
		"but the metadata calls' op->path"
else
	fail "the I/O path names paths:"
	echo "$found"
fi
setters=$(cd "$SRC" && grep -nE '(\.|->)path2? = ' -- *.c | grep -v '^handlers-path\.c:' || true)
if [ -z "$setters" ] && (cd "$SRC" &&
	sed -n '/^int ring_call(/,/^}/p' handlers-path.c | grep -q 'confine_active()'); then
	pass "only ring_call names a path to the I/O path, and not under --confine"
else
	fail "a path reaches the I/O path elsewhere, or ring_call takes it" \
		"under --confine: $setters"
fi

BACKENDS=${BACKENDS:-uring plain}
setup_passes
total_p=0
total_f=0
skipped=
for i in "${!PASS_NAMES[@]}"; do
	name=${PASS_NAMES[$i]}
	echo "=== pass $name: $SERVER ${PASS_ARGS[$i]} --confine"
	mkdir -m 755 "$WORK/$name"
	rc=0
	"$PYTHON3" "$TESTS_DIR/confine.py" --server "$SERVER" \
		--server-args="${PASS_ARGS[$i]}" --workdir "$WORK/$name" \
		--no-landlock "$NO_LANDLOCK" --probe "$PROBE" \
		${CONFINE_VERBOSE:+-v} \
		>"$WORK/out.$i" 2>&1 || rc=$?
	cat "$WORK/out.$i"
	if [ "$rc" = 77 ]; then
		skipped=$(grep '^SKIP: ' "$WORK/out.$i" | head -n 1)
	fi
	read_counts "$WORK/out.$i" "$([ "$rc" = 77 ] && echo 0 || echo "$rc")" \
		"confine.py ($name)"
	total_p=$((total_p + P))
	total_f=$((total_f + F))
done
N_PASSED=$((N_PASSED + total_p))
N_FAILED=$((N_FAILED + total_f))
if [ -n "$skipped" ] && [ "$N_FAILED" = 0 ]; then
	echo "$N_PASSED passed, $N_FAILED failed"
	echo "$skipped"
	exit 77
fi
finish

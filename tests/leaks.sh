#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# Memory and descriptor leaks, once per back end pass (lib.sh):
#
#  - an `sftp -D` batch session (put, get, ls, mkdir, rename, symlink,
#    chmod, df, rm, rmdir, recursive put and get) with the server under
#    valgrind --leak-check=full --track-fds=yes: no definite leak, no
#    error, no descriptor but stdin/stdout/stderr open at exit;
#  - tests/leaks.py: every request and extension, failures included, with
#    /proc/PID/fd compared before and after (exactly equal), then EOF with handles still open (the forced
#    close), also under valgrind.
#
# With the io_uring back end valgrind cannot see the kernel filling read
# buffers, so those passes check leaks, descriptors and invalid accesses
# but not uninitialised values; the plain pass checks everything.  Nor
# can it see the descriptors io_uring closes (a CLOSE's IORING_OP_CLOSE):
# there the server logs at DEBUG3, and a descriptor valgrind reports open
# at exit must be one the server's log shows io_uring closing
# (ring_closed); leaks.py's /proc/PID/fd comparison sees every close.
#
# In a --enable-sanitizers build valgrind cannot run; LeakSanitizer is used
# instead: the server calls __lsan_do_leak_check() before _exit (checked
# here), which ends it with a report and a non-zero status on a leak.  A
# small leaking program built the same way proves LeakSanitizer works on
# this machine first.  Without valgrind (and not a sanitizer build), or
# where LeakSanitizer cannot run, or for a static executable
# (--enable-static-binary, which valgrind cannot check), only the
# descriptor checks run and the suite reports SKIP (which CI refuses).
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
command -v sftp >/dev/null || skip_all "sftp is not installed"
make_workdir leaks
setup_passes

# lsan_works: LeakSanitizer finds the leak of a small program built with
# -fsanitize=address (it cannot where ptrace is denied, e.g. some
# containers: it then stops with a fatal error instead).
lsan_works() {
	printf '%s\n' '#include <stdlib.h>' \
		'void *volatile p;' \
		'int main(void) { p = malloc(77); p = 0; return 0; }' \
		>"$WORK/lsan-probe.c"
	if ! ${CC:-cc} -fsanitize=address -o "$WORK/lsan-probe" \
		"$WORK/lsan-probe.c" >"$WORK/lsan-probe.log" 2>&1; then
		echo "cannot build a program with -fsanitize=address"
		return 1
	fi
	if "$WORK/lsan-probe" >>"$WORK/lsan-probe.log" 2>&1; then
		echo "LeakSanitizer did not report a leaked malloc(77)"
		return 1
	fi
	if ! grep -q "77 byte(s) leaked" "$WORK/lsan-probe.log"; then
		echo "LeakSanitizer cannot run here:" \
			"$(grep -m1 -i 'sanitizer' "$WORK/lsan-probe.log")"
		return 1
	fi
}

if ldd "$SERVER" 2>/dev/null | grep -q libasan; then
	MODE=asan
	# The server ends with _exit(), which skips LeakSanitizer's own check
	# at exit: it must run the check itself.
	calls_lsan() {
		nm -D "$SERVER" 2>/dev/null | grep -q __lsan_do_leak_check ||
			{
				echo "  $SERVER never calls __lsan_do_leak_check()"
				return 1
			}
	}
	check "the sanitizer build runs LeakSanitizer before _exit" calls_lsan
	if why=$(ASAN_OPTIONS=detect_leaks=1 lsan_works); then
		export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1
	else
		MODE=none
		export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
		skip_part "memory leaks not checked: $why"
	fi
elif readelf -h "$SERVER" >/dev/null 2>&1 &&
	! readelf -l "$SERVER" | grep -q INTERP; then
	# ./configure --enable-static-binary: valgrind cannot put its own
	# malloc into a static executable and reports glibc's start-up.
	MODE=none
	skip_part "memory leaks not checked: a static executable, which" \
		"valgrind cannot check (descriptor checks only)"
elif command -v valgrind >/dev/null; then
	MODE=valgrind
else
	MODE=none
	skip_part "memory leaks not checked: valgrind is not installed" \
		"(apt-get install valgrind); descriptor checks only"
fi
echo "leak checker: $MODE"

# vg_undef ARGS: "yes" for the plain back end, "no" with io_uring.
vg_undef() {
	case " $1 " in
	*" --backend=plain "*) echo yes ;;
	*) echo no ;;
	esac
}

# vg_prefix DIR ARGS: valgrind with one log file per process in DIR; with
# io_uring (any pass whose ARGS do not choose the plain back end) without
# the uninitialised-value checks.
vg_prefix() {
	local logs=$1 args=$2
	echo "valgrind --leak-check=full --show-leak-kinds=definite" \
		"--errors-for-leak-kinds=definite --error-exitcode=99" \
		"--track-fds=yes --undef-value-errors=$(vg_undef "$args")" \
		"--log-file=$logs/vg.%p.log"
}

# ring_closed VGLOG SERVERLOG: every descriptor but the standard three
# that VGLOG (valgrind's) reports open at exit was closed by io_uring,
# which valgrind cannot see: SERVERLOG (the server's, at DEBUG3) names it
# in an "io_uring: CLOSE N" line.
ring_closed() {
	local fd
	[ -n "$2" ] || return 1
	for fd in $(sed -n 's/.*Open file descriptor \([0-9]*\):.*/\1/p' "$1"); do
		[ "$fd" -le 2 ] && continue
		grep -q "io_uring: CLOSE $fd\b" "$2" || return 1
	done
}

# vg_clean DIR [SERVERLOG]: every valgrind log in DIR shows no error and no
# descriptor open at exit but the standard three, and, with SERVERLOG,
# those the server had io_uring close (ring_closed).
vg_clean() {
	local f n=0 bad=0
	for f in "$1"/vg.*.log; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		if ! grep -q "ERROR SUMMARY: 0 errors" "$f"; then
			echo "  $f:"
			sed 's/^/    /' "$f" | head -n 60
			bad=1
		elif ! grep -Eq "FILE DESCRIPTORS: ([0-9]+) open \(\1 std\) at exit" "$f" &&
			! ring_closed "$f" "${2:-}"; then
			echo "  descriptors open at exit, $f:"
			grep -A6 "FILE DESCRIPTORS\|Open file descriptor" "$f" |
				sed 's/^/    /' | head -n 40
			bad=1
		fi
	done
	if [ "$n" = 0 ]; then
		echo "  no valgrind log in $1"
		return 1
	fi
	return "$bad"
}

# no_sanitizer_report LOG...: no ASan/LSan/UBSan report in the logs.
no_sanitizer_report() {
	local f
	for f in "$@"; do
		if grep -q "Sanitizer\|runtime error:" "$f"; then
			sed 's/^/    /' "$f" | head -n 60
			return 1
		fi
	done
}

make_tree "$WORK/tree"
mkrandom "$WORK/big" $((3 * 1024 * 1024 + 17))
mkrandom "$WORK/small" 1000

for i in "${!PASS_NAMES[@]}"; do
	PASS=${PASS_NAMES[$i]}
	ARGS=${PASS_ARGS[$i]}
	P=$WORK/$PASS
	mkdir -p "$P/remote" "$P/down" "$P/vg-sftp" "$P/vg-py"
	chmod 755 "$P" "$P/vg-sftp" "$P/vg-py"
	prefix=
	if [ "$MODE" = valgrind ]; then
		prefix=$(vg_prefix "$P/vg-sftp" "$ARGS")
	fi
	cat >"$P/batch" <<EOF
mkdir remote/d
put $WORK/big remote/d/big
put $WORK/small remote/d/small
ls -l remote/d
rename remote/d/small remote/d/small2
symlink small2 remote/d/link
chmod 600 remote/d/small2
df -h remote
get remote/d/big $P/down/big
get remote/d/link $P/down/link
put -R $WORK/tree remote/tree
get -R remote/tree $P/down/tree
rm remote/d/link
rm remote/d/small2
rm remote/d/big
rmdir remote/d
EOF
	# With io_uring under valgrind the server's closes through the ring
	# are logged (DEBUG3), for ring_closed.
	level=INFO
	ring_log=
	if [ "$MODE" = valgrind ] && [ "$(vg_undef "$ARGS")" = no ]; then
		level=DEBUG3
		ring_log=$P/sftp.log
	fi
	session() {
		(cd "$P" && sftp -D "$prefix $SERVER $ARGS -e -l $level" \
			-b "$P/batch" >"$P/sftp.out" 2>"$P/sftp.log") || {
			echo "  sftp failed:"
			tail -n 20 "$P/sftp.log" | sed 's/^/    /'
			return 1
		}
		same_file "$WORK/big" "$P/down/big" &&
			same_file "$WORK/small" "$P/down/link" &&
			same_tree "$WORK/tree" "$P/down/tree" &&
			[ ! -e "$P/remote/d" ]
	}
	check "[$PASS] sftp -D batch session" session
	case $MODE in
	valgrind)
		check "[$PASS] sftp -D session: no leak, error or open descriptor" \
			vg_clean "$P/vg-sftp" "$ring_log"
		prefix=$(vg_prefix "$P/vg-py" "$ARGS")
		;;
	asan)
		check "[$PASS] sftp -D session: no sanitizer report" \
			no_sanitizer_report "$P/sftp.log"
		;;
	esac
	rc=0
	py_log= py_level=ERROR
	if [ -n "$ring_log" ]; then
		py_log=$P/server-py.log
		py_level=DEBUG3
	fi
	"$PYTHON3" "$TESTS_DIR/leaks.py" --server "$SERVER" \
		--server-args="$ARGS" --prefix="$prefix" --workdir "$P" \
		--log-level="$py_level" \
		${py_log:+--server-log="$py_log"} \
		>"$P/leaks.out" 2>&1 || rc=$?
	sed "s/^/  [$PASS] /" "$P/leaks.out"
	check "[$PASS] every request: no descriptor leaked, clean exit" \
		test "$rc" = 0
	if [ "$MODE" = valgrind ]; then
		check "[$PASS] every request, EOF with open handles: no leak" \
			vg_clean "$P/vg-py" "$py_log"
	fi
done

finish

#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# Memory and descriptor leaks (issue 6), once per back end:
#
#  - an `sftp -D` batch session (put, get, ls, mkdir, rename, symlink,
#    chmod, df, rm, rmdir, recursive put and get) with the server under
#    valgrind --leak-check=full --track-fds=yes: no definite leak, no
#    error, no descriptor but stdin/stdout/stderr open at exit;
#  - tests/leaks.py: every request and extension, failures included, with
#    /proc/PID/fd compared before and after, then EOF with handles still
#    open (the forced close), also under valgrind.
#
# With the io_uring back end valgrind cannot see the kernel filling read
# buffers, so those passes check leaks, descriptors and invalid accesses
# but not uninitialised values; the plain pass checks everything.
#
# In a --enable-sanitizers build valgrind cannot run; LeakSanitizer is used
# instead, which only reports if the server runs it before _exit (see the
# note printed then).  Without valgrind or sanitizers only the descriptor
# checks run, as for a static executable (--enable-static-binary), which
# valgrind cannot check.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
command -v sftp >/dev/null || skip_all "sftp is not installed"
make_workdir leaks
setup_passes

if ldd "$SERVER" 2>/dev/null | grep -q libasan; then
	MODE=asan
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
	if ! nm -D "$SERVER" 2>/dev/null | grep -q __lsan_do_leak_check; then
		note "the server ends with _exit() and never calls" \
			"__lsan_do_leak_check(): LeakSanitizer cannot see its leaks"
	fi
elif readelf -h "$SERVER" >/dev/null 2>&1 &&
	! readelf -l "$SERVER" | grep -q INTERP; then
	# ./configure --enable-static-binary: valgrind cannot put its own
	# malloc into a static executable and reports glibc's start-up.
	MODE=none
	note "a static executable: valgrind cannot check it; descriptor" \
		"checks only"
elif command -v valgrind >/dev/null; then
	MODE=valgrind
else
	MODE=none
	note "neither valgrind nor a sanitizer build: descriptor checks only"
fi
echo "leak checker: $MODE"

# vg_prefix DIR ARGS: valgrind with one log file per process in DIR; with
# io_uring (any pass whose ARGS do not choose the plain back end) without
# the uninitialised-value checks.
vg_prefix() {
	local logs=$1 args=$2 undef=no
	case " $args " in
	*" --backend=plain "*) undef=yes ;;
	esac
	echo "valgrind --leak-check=full --show-leak-kinds=definite" \
		"--errors-for-leak-kinds=definite --error-exitcode=99" \
		"--track-fds=yes --undef-value-errors=$undef" \
		"--log-file=$logs/vg.%p.log"
}

# pool_only LOG: every descriptor valgrind lists as open at exit (other
# than stdin, stdout, stderr) is a splice pipe of the READ reply pool,
# which keeps at most --queue-depth (64) pipes for reuse.
pool_only() {
	awk '
		/Open file descriptor [0-9]+:/ { n++; cur = $0; pipe = 0; next }
		cur != "" && /pipe_make|pipe2/ { pipe = 1 }
		cur != "" && /^==[0-9]+== *$/ {
			if (!pipe) { print "    not a pool pipe: " cur; bad = 1 }
			else pipes++
			cur = ""
		}
		END {
			if (cur != "" && !pipe) { print "    not a pool pipe: " cur; bad = 1 }
			if (cur != "" && pipe) pipes++
			if (pipes > 128) { print "    " pipes " pipe descriptors"; bad = 1 }
			exit bad
		}' "$1"
}

# vg_clean DIR: every valgrind log in DIR shows no error and no descriptor
# open at exit but the standard three and the pipe pool's.
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
			! pool_only "$f"; then
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
	session() {
		(cd "$P" && sftp -D "$prefix $SERVER $ARGS -e -l INFO" \
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
			vg_clean "$P/vg-sftp"
		prefix=$(vg_prefix "$P/vg-py" "$ARGS")
		;;
	asan)
		check "[$PASS] sftp -D session: no sanitizer report" \
			no_sanitizer_report "$P/sftp.log"
		;;
	esac
	rc=0
	"$PYTHON3" "$TESTS_DIR/leaks.py" --server "$SERVER" \
		--server-args="$ARGS" --prefix="$prefix" --workdir "$P" \
		>"$P/leaks.out" 2>&1 || rc=$?
	sed "s/^/  [$PASS] /" "$P/leaks.out"
	check "[$PASS] every request: no descriptor leaked, clean exit" \
		test "$rc" = 0
	if [ "$MODE" = valgrind ]; then
		check "[$PASS] every request, EOF with open handles: no leak" \
			vg_clean "$P/vg-py"
	fi
done

finish

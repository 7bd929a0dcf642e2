#!/bin/bash
# The read path on files the user may not write (root's 0644 file, read by
# the server as nobody), where the kernel hides which pages are cached
# (cachestat: EPERM; mincore: "all resident"):
#  - read-ahead hints: a warm file of root's gets none (its residency is
#    asked with RWF_NOWAIT), and a warm file of the user's own read after
#    it gets none either (cachestat's refusal was that file's alone);
#    counted as fadvise64(POSIX_FADV_WILLNEED) of each file under strace
#    (--backend=plain, whose hints are system calls);
#  - the same file of root's through overlayfs and FUSE (tests/fusepass),
#    which refuse RWF_NOWAIT (EOPNOTSUPP): the probe is refused once per
#    handle, not asked again, and a cold file gets its hints, one a step
#    (a refusal taken for "cached" would leave it without); same bytes;
#    and the user's own file on overlayfs is not asked with cachestat,
#    which counts the overlay's own pages (none) instead of the file's;
#  - --nocache in the server's own way (acting as a kernel before
#    RWF_DONTCACHE, 6.13): a page of root's file cached before stays
#    cached (warm, half-cached), the server says once that it cannot drop
#    pages of such a file, and the user's own cold file still leaves the
#    cache; in the kernel's way root's cold file leaves it too.
# Needs root (to be nobody and to own the file), strace, fincore, sftp;
# overlayfs and FUSE (FUSEPASS, /dev/fuse) where they mount, else those
# checks are skipped (SKIP).
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
is_openssh_server && skip_all "the hints and --nocache are this server's"
[ "$(id -u)" = 0 ] || skip_all "needs root (the server runs as nobody)"
id nobody >/dev/null 2>&1 || skip_all "no user nobody"
for tool in fincore sftp strace setpriv; do
	command -v $tool >/dev/null || skip_all "no $tool"
done
make_workdir notowner
chmod 755 "$WORK"
SIZE_MB=${SIZE_MB:-32}
droppable_dir "$WORK/files" $((SIZE_MB * 4 + 64))
DIR=$DROP_DIR
chmod 755 "$DIR"
group=$(id -gn nobody)
head -c $((SIZE_MB << 20)) /dev/urandom >"$DIR/root"
chmod 644 "$DIR/root"
head -c $((SIZE_MB << 20)) /dev/urandom >"$DIR/own"
chown nobody:"$group" "$DIR/own"
# The server as nobody, under strace (written by root, outside its reach).
wrap_server "$WORK/bin" "as nobody, under strace" <<EOF
exec strace -f -y -qq -o "$WORK/strace.out" \
	setpriv --reuid=nobody --regid=$group --clear-groups -- "$SERVER" "\$@"
EOF
wrap_server "$WORK/nobody" "as nobody" <<EOF
exec setpriv --reuid=nobody --regid=$group --clear-groups -- "$SERVER" "\$@"
EOF

# sftp_batch SERVER ARGS COMMANDS: OpenSSH's sftp against the server.
sftp_batch() {
	local server=$1 args=$2
	shift 2
	printf '%s\n' "$@" |
		sftp -q -b - -D "$server $args" >"$WORK/sftp.out" 2>&1 ||
		{
			cat "$WORK/sftp.out"
			return 1
		}
}

# willneed FILE: the WILLNEED hints strace saw for FILE.
willneed() {
	grep -c "fadvise64([0-9]*<$1>.*POSIX_FADV_WILLNEED" \
		"$WORK/strace.out" || true
}

# probes FILE: the RWF_NOWAIT reads (residency probes) strace saw on FILE.
probes() {
	grep -c "preadv2([0-9]*<$1>.*RWF_NOWAIT" "$WORK/strace.out" || true
}

# Hints.  Both files warm: at most the window past the end of each file
# (counted as not cached) is hinted; before, each 2 MiB step of both was.
page_cache_warm "$DIR/root"
page_cache_warm "$DIR/own"
sftp_batch "$WORK/bin/uring-sftp-server" --backend=plain \
	"get $DIR/root /dev/null" "get $DIR/own /dev/null"
# at_most_hints N FILE WHAT
at_most_hints() {
	local n
	n=$(willneed "$2")
	if [ "$n" -le "$1" ]; then
		pass "$3: $n hints"
	else
		fail "$3: $n hints (cached: none due)"
	fi
}
at_most_hints 2 "$DIR/root" "root's warm file"
at_most_hints 2 "$DIR/own" "own warm file after root's"
# And a cold file of root's still gets them (the probe says "not cached").
page_cache_drop "$DIR/root"
sftp_batch "$WORK/bin/uring-sftp-server" --backend=plain \
	"get $DIR/root $WORK/copy"
n=$(willneed "$DIR/root")
if [ "$n" -ge 3 ]; then
	pass "root's cold file: $n hints"
else
	fail "root's cold file: $n hints (expected one a step)"
fi
check "root's cold file: same bytes" same_file "$DIR/root" "$WORK/copy"
rm -f "$WORK/copy"

# Through file systems that refuse RWF_NOWAIT (overlayfs, FUSE: measured
# on 6.18; cachestat is refused too, EPERM): root's cold file still gets
# its hints, the probe is not asked again after its refusal, and the
# bytes are the file's.  Should a kernel answer the probe there, the cold
# file's hints are still due; only the refusal's count is not checked.
mkdir -m 755 "$DIR/lower" "$DIR/upper" "$DIR/ovl-work" "$WORK/ovl" \
	"$WORK/fuse"
ln "$DIR/root" "$DIR/lower/root"
ln "$DIR/own" "$DIR/lower/own"
# refused_probe_hints NAME FILE: a cold download of FILE (root's, the
# same inode as $DIR/root below it) through the file system NAME.
refused_probe_hints() {
	local name=$1 file=$2 n p refused
	page_cache_drop "$DIR/root"
	page_cache_drop "$file"
	sftp_batch "$WORK/bin/uring-sftp-server" --backend=plain \
		"get $file $WORK/copy"
	check "$name, root's cold file: same bytes" \
		same_file "$DIR/root" "$WORK/copy"
	rm -f "$WORK/copy"
	n=$(willneed "$file")
	if [ "$n" -ge 3 ]; then
		pass "$name, root's cold file: $n hints"
	else
		fail "$name, root's cold file: $n hints (expected one a step)"
	fi
	p=$(probes "$file")
	refused=$(grep -c "preadv2([0-9]*<$file>.*RWF_NOWAIT.*EOPNOTSUPP" \
		"$WORK/strace.out" || true)
	if [ "$refused" = 0 ]; then
		note "$name answers RWF_NOWAIT ($p probes)"
	elif [ "$p" = 1 ]; then
		pass "$name refuses RWF_NOWAIT: asked once"
	else
		fail "$name refuses RWF_NOWAIT: asked $p times"
	fi
}
if mount -t overlay overlay -o "lowerdir=$DIR/lower,upperdir=$DIR/upper,workdir=$DIR/ovl-work" \
	"$WORK/ovl" 2>"$WORK/ovl.err"; then
	chmod 755 "$WORK/ovl"
	refused_probe_hints overlayfs "$WORK/ovl/root"
	page_cache_warm "$DIR/own"
	sftp_batch "$WORK/bin/uring-sftp-server" --backend=plain \
		"get $WORK/ovl/own /dev/null"
	# (an strace older than cachestat names it by its number, 0x1c3)
	n=$(grep -cE "(cachestat|syscall_0x1c3)\(" "$WORK/strace.out" || true)
	if [ "$n" = 0 ]; then
		pass "overlayfs, own warm file: cachestat not asked"
	else
		fail "overlayfs, own warm file: cachestat asked $n times" \
			"(of the overlay's pages: none)"
	fi
	umount "$WORK/ovl"
else
	skip_part "overlayfs: cannot mount one here: $(cat "$WORK/ovl.err")"
fi
FUSEPASS=${FUSEPASS:-$TESTS_DIR/fusepass}
if [ ! -x "$FUSEPASS" ]; then
	skip_part "FUSE: $FUSEPASS is not built (libfuse3-dev)"
elif [ ! -c /dev/fuse ]; then
	skip_part "FUSE: no /dev/fuse"
elif "$FUSEPASS" -o allow_other "$DIR/lower" "$WORK/fuse" \
	2>"$WORK/fuse.err"; then
	refused_probe_hints FUSE "$WORK/fuse/root"
	umount "$WORK/fuse"
else
	skip_part "FUSE: $FUSEPASS did not mount: $(cat "$WORK/fuse.err")"
fi
rm -f "$DIR/lower/root" "$DIR/lower/own"

# --nocache, each back end, the server's own way and the kernel's.
half=$((SIZE_MB << 19))
for backend in uring plain; do
	name="--nocache $backend, acting as 6.13"
	export URING_SFTP_TEST_KERNEL=6.13
	args="--backend=$backend --nocache -e -l VERBOSE"

	page_cache_warm "$DIR/root"
	sftp_batch "$WORK/nobody/uring-sftp-server" "$args" \
		"get $DIR/root /dev/null"
	cached_between 95 100 "$DIR/root" "$name: root's warm file stays warm"

	page_cache_drop "$DIR/root"
	page_cache_warm "$DIR/root" 0 "$half"
	pre=$(page_cache_pct "$DIR/root")
	sftp_batch "$WORK/nobody/uring-sftp-server" "$args" \
		"get $DIR/root /dev/null"
	cached_between "$((pre - 1))" 100 "$DIR/root" \
		"$name: root's half-cached file keeps its $pre%"
	check "$name: says it keeps root's pages" \
		grep -q "does not tell which pages" "$WORK/sftp.out"

	# The user's own file: the kernel tells, and the pages go.
	page_cache_drop "$DIR/own"
	sftp_batch "$WORK/nobody/uring-sftp-server" "$args" \
		"get $DIR/own /dev/null"
	cached_between 0 5 "$DIR/own" "$name: own cold file leaves the cache"
	if grep -q "does not tell which pages" "$WORK/sftp.out"; then
		fail "$name: own file: says it cannot tell"
	else
		pass "$name: own file: no word of hidden pages"
	fi

	unset URING_SFTP_TEST_KERNEL
	if kernel_at_least 6 14; then
		page_cache_drop "$DIR/root"
		sftp_batch "$WORK/nobody/uring-sftp-server" \
			"--backend=$backend --nocache" "get $DIR/root /dev/null"
		cached_between 0 5 "$DIR/root" \
			"--nocache $backend: root's cold file leaves the cache"
	fi
done
finish

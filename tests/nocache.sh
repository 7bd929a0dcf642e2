#!/bin/bash
# --nocache: after a download of a file that was not cached and after an
# upload, at most 5% of the file is in the page cache (fincore); a file
# cached before stays cached, one half cached before keeps that half and
# only that; on tmpfs (where the page cache is the file) nothing is lost.
# Each back end, and each acting as a kernel before RWF_DONTCACHE (6.13:
# our own mincore and fadvise way), with OpenSSH's sftp -D as the client.
# Only the test's own files are dropped from the cache (fadvise
# DONTNEED), never the machine's.
#
#   tests/nocache.sh            SIZE_MB=32 by default
#   NOCACHE_DIR=DIR             where the files go (default: the work
#                               directory; a loop ext4 as root when its file
#                               system keeps pages DONTNEED asks to drop)
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
is_openssh_server && skip_all "--nocache is this server's option"
for tool in fincore sftp cmp; do
	command -v $tool >/dev/null || skip_all "no $tool"
done
make_workdir nocache
SIZE_MB=${SIZE_MB:-32}
SHM=

# shellcheck disable=SC2317 # run by the EXIT trap
nc_cleanup() {
	[ -z "$SHM" ] || rm -rf "$SHM"
	cleanup
}
trap nc_cleanup EXIT

droppable_dir "${NOCACHE_DIR:-$WORK/files}" $((SIZE_MB * 4 + 64))
DIR=$DROP_DIR
head -c $((SIZE_MB << 20)) /dev/urandom >"$DIR/src"
if [ -d /dev/shm ] && [ "$(stat -f -c %T /dev/shm)" = tmpfs ]; then
	SHM=$(mktemp -d /dev/shm/nocache.XXXXXXXX)
fi

# sftp_batch ARGS COMMANDS: OpenSSH's sftp against the server.
sftp_batch() {
	local args=$1
	shift
	printf '%s\n' "$@" |
		sftp -q -b - -D "$SERVER $args --nocache" >"$WORK/sftp.out" 2>&1 ||
		{
			cat "$WORK/sftp.out"
			return 1
		}
}

# at_most PCT FILE WHAT: at most PCT% of FILE cached (an upload's last
# pages may still be under write-back for a moment: a second to settle).
at_most() {
	local pct i
	for i in 1 2 3 4 5 6 7 8 9 10; do
		pct=$(page_cache_pct "$2")
		[ "$pct" -le "$1" ] && break
		sleep 0.1
	done
	if [ "$pct" -le "$1" ]; then
		pass "$3: $pct% cached"
	else
		fail "$3: $pct% cached, more than $1%"
	fi
}

setup_passes
PASS_NAMES+=(uring-6.13 plain-6.13)
PASS_ARGS+=("--backend=uring" "--backend=plain")
half=$((SIZE_MB << 19))
for i in "${!PASS_NAMES[@]}"; do
	name=${PASS_NAMES[$i]}
	args=${PASS_ARGS[$i]}
	echo "=== pass $name: $SERVER $args --nocache"
	case $name in
	*-6.13) export URING_SFTP_TEST_KERNEL=6.13 ;;
	*) unset URING_SFTP_TEST_KERNEL ;;
	esac
	rm -f "$DIR/copy" "$DIR/up"

	# A file nobody had read: gone from the cache after the download.
	page_cache_drop "$DIR/src"
	sftp_batch "$args" "get $DIR/src $DIR/copy"
	at_most 5 "$DIR/src" "$name: cold download"
	check "$name: cold download: same bytes" same_file "$DIR/src" "$DIR/copy"

	# Cached before: stays cached.
	page_cache_warm "$DIR/src"
	sftp_batch "$args" "get $DIR/src /dev/null"
	cached_between 95 100 "$DIR/src" "$name: warm download stays warm"

	# Half cached before (and what the kernel read ahead of it): that
	# stays, the rest goes.
	page_cache_drop "$DIR/src"
	page_cache_warm "$DIR/src" 0 "$half"
	pre=$(page_cache_pct "$DIR/src")
	sftp_batch "$args" "get $DIR/src /dev/null"
	cached_between "$((pre - 1))" "$((pre + 5))" "$DIR/src" \
		"$name: half-cached download keeps its $pre%"

	# An upload.
	page_cache_drop "$DIR/copy"
	sftp_batch "$args" "put $DIR/copy $DIR/up"
	at_most 5 "$DIR/up" "$name: upload"
	check "$name: upload: same bytes" same_file "$DIR/copy" "$DIR/up"

	# tmpfs: the page cache is the file; nothing may be lost.
	if [ -n "$SHM" ]; then
		rm -f "$SHM/up" "$SHM/copy"
		sftp_batch "$args" "put $DIR/src $SHM/up" "get $SHM/up $SHM/copy"
		check "$name: tmpfs upload" same_file "$DIR/src" "$SHM/up"
		check "$name: tmpfs download" same_file "$DIR/src" "$SHM/copy"
	fi
done
unset URING_SFTP_TEST_KERNEL
[ -n "$SHM" ] || skip_part "no tmpfs at /dev/shm"
finish

#!/bin/bash
# Hashing and copying on the server beside the tools a shell
# account would use: check-file-name sha256 and md5 against sha256sum and
# md5sum, copy-file and copy-data against cp, on a warm file (1 GiB by
# default), and copy-file on a loop-mounted XFS image (reflink), when the
# machine allows it.  Medians of ROUNDS runs; the ratio is theirs / ours in
# time (above 1: we are faster).  Each copy (ours and cp's) goes to a new
# file, after a sync.  The machine may be shared: the figures are noisy,
# compare ratios and note the conditions (the load is printed first).
#
#   SERVER=./uring-sftp-server bench/extras.sh
#   SIZE_MB (1024), ROUNDS (3), BENCH_DIR (a temporary directory under
#   TMPDIR), BACKENDS ("uring plain"), PYTHON3 (/usr/bin/python3)
set -eu

: "${SERVER:=$(dirname "$0")/../uring-sftp-server}"
: "${PYTHON3:=/usr/bin/python3}"
: "${SIZE_MB:=1024}"
: "${ROUNDS:=3}"
: "${BACKENDS:=uring plain}"
SERVER=$(readlink -f "$SERVER")
TESTS=$(cd "$(dirname "$0")/../tests" && pwd)
WORK=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/extras.XXXXXXXX")
MNT=
cleanup() {
	if [ -n "$MNT" ] && mountpoint -q "$MNT"; then
		umount "$MNT"
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# one_op BACKEND KIND SRC [DST]: seconds for one request, from sending it
# to its reply, to a server already started and initialised.
one_op() {
	"$PYTHON3" - "$SERVER" "$@" <<'EOF'
import os, sys, time
sys.path.insert(0, os.environ["TESTS"])
import sftpclient as sc
server, backend, kind, src = sys.argv[1:5]
dst = sys.argv[5] if len(sys.argv) > 5 else None
if dst:
    # every copy goes to a new file, with the previous one's data written
    # out first (as copy_fresh does for cp)
    if os.path.exists(dst):
        os.unlink(dst)
    os.sync()
c = sc.Client([server, "--backend=" + backend], timeout=600)
c.init(3)
if kind == "copy-data":
    a = c.check_handle(c.open(src, sc.FXF_READ))
    b = c.check_handle(c.open(dst, sc.FXF_WRITE | sc.FXF_CREAT))
t = time.monotonic()
if kind in ("sha256", "md5"):
    rep = c.check_file_name(src, kind)
    ok = rep.type == sc.FXP_EXTENDED_REPLY
elif kind == "copy-file":
    ok = c.copy_file(src, dst, False).is_status(sc.FX_OK)
else:
    ok = c.copy_data(a, 0, 0, b, 0).is_status(sc.FX_OK)
t = time.monotonic() - t
c.finish()
if not ok:
    sys.exit("%s failed" % kind)
print("%.4f" % t)
EOF
}
export TESTS

# tool_time CMD...: seconds the command took.
tool_time() {
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l | xargs printf '%.4f\n'
}

# copy_fresh: seconds cp takes to copy src to a new file, with the previous
# copy removed and everything written out first.
copy_fresh() {
	rm -f cp.out
	sync
	tool_time cp src cp.out
}

median() {
	sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# measure COMMAND...: the median of ROUNDS runs of a command printing
# seconds.
measure() {
	local i
	for i in $(seq "$ROUNDS"); do
		"$@"
	done | median
}

sha256_tool() { tool_time sha256sum src; }
md5_tool() { tool_time md5sum src; }

# pair NAME TOOL-FUNCTION TOOL ONE_OP-ARGS...: ROUNDS runs of the tool and
# of our request, alternating so that both see the same load; a table row
# of their medians.
pair() {
	local name=$1 toolfn=$2 tool=$3 i tt="" ot=""
	shift 3
	for i in $(seq "$ROUNDS"); do
		tt="$tt $($toolfn)"
		ot="$ot $(one_op "$@")"
	done
	row "$name" "$(printf '%s\n' $ot | median)" \
		"$(printf '%s\n' $tt | median)" "$tool"
}

row() {
	# name, ours, theirs (seconds), what they are
	local mbs
	mbs=$(echo "$SIZE_MB / $2" | bc -l)
	printf '| %-30s | %8.3f s | %7.0f MB/s | %8.3f s | %5.2f | %s |\n' \
		"$1" "$2" "$mbs" "$3" "$(echo "$3 / $2" | bc -l)" "$4"
}

cd "$WORK"
echo "== $(date -u +%FT%TZ) $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== ${SIZE_MB} MiB file in $WORK ($(df -T . | awk 'NR == 2 { print $2 }')), $ROUNDS rounds, medians"
head -c "$((SIZE_MB * 1024 * 1024))" /dev/urandom >src
cat src >/dev/null # warm
echo
echo "| request | ours | ours | tool | tool time / ours | tool |"
echo "|---|---:|---:|---:|---:|---|"
for b in $BACKENDS; do
	if ! "$SERVER" "--backend=$b" </dev/null >/dev/null 2>&1; then
		echo "| (--backend=$b cannot start here: skipped) | | | | | |"
		continue
	fi
	pair "check-file sha256 ($b)" sha256_tool sha256sum "$b" sha256 src
	pair "check-file md5 ($b)" md5_tool md5sum "$b" md5 src
	pair "copy-file ($b)" copy_fresh cp "$b" copy-file src dst
	pair "copy-data ($b)" copy_fresh cp "$b" copy-data src dst
done
rm -f dst cp.out

# A reflink on XFS: loop-mounted when the machine allows it.
echo
if [ "$(id -u)" = 0 ] && command -v mkfs.xfs >/dev/null &&
	truncate -s "$((SIZE_MB * 2 + 512))M" xfs.img &&
	mkfs.xfs -q -f xfs.img 2>/dev/null && mkdir -p mnt &&
	mount -o loop xfs.img mnt 2>/dev/null; then
	MNT=$WORK/mnt
	cp src mnt/src
	sync
	t=$(cd mnt && measure one_op uring copy-file src dst)
	shared=$(filefrag -v mnt/dst | grep -c shared || true)
	echo "XFS image: copy-file of ${SIZE_MB} MiB in $t s (median), $shared extent lines marked shared (filefrag -v)"
	umount mnt
	MNT=
else
	echo "XFS image: skipped (needs root, mkfs.xfs and loop mounts)"
fi

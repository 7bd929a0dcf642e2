#!/bin/bash
# sshfs-tree.sh: `ls -lR` and `find -ls` of a tree through an sshfs mount,
# our server against OpenSSH's, on storage with DELAY_US per call (the FUSE
# passthrough tests/fusepass); `find` alone (names only: READDIRs, no
# LSTAT) shows what the listing part costs.  Called by compare.sh
# (SSHFS_TREE=none skips it); needs root (mounts), sshfs and a built
# tests/fusepass.
#
# The tree (DIRS directories of FILES files of 100 bytes) is made once in
# the passthrough's backing directory.  sshfs is mounted afresh for every
# timed command (-o cache=no: SSHFS_CACHE; its default max_conns) and the
# passthrough is either mounted afresh too ("nothing cached": the kernel
# knows no entry of it) or stays mounted with every entry known to the
# kernel and the run starts after their entry and attribute timeouts (1 s)
# have passed ("cached entries expired"): each call still waits DELAY_US,
# as on network storage that revalidates what it has seen.  On a FUSE
# mount the kernel looks up names it does not know one at a time per
# directory (see doc/benchmarks.md), so "nothing cached" measures
# that, whatever the server.  sshfs starts the server itself, without ssh,
# through a wrapper (-o ssh_command) that runs it as RUN_AS (default
# nobody) with setpriv, as compare.py does: no crypto, only the servers
# differ.  Rounds rotate the server order; medians.  The table (markdown)
# goes to stdout and to $BENCH_OUT/sshfs-tree.md.
#
#   ROUNDS (3), DIRS (20), FILES (200), DELAY_US (1000), SERVER
#   (./uring-sftp-server), OURS_ARGS (--backend=uring), OPENSSH
#   (/usr/lib/openssh/sftp-server), FUSEPASS (tests/fusepass of the build),
#   RUN_AS (nobody), BENCH_OUT (bench/out), BENCH_TMPDIR (/var/tmp),
#   SSHFS_CACHE (no), TRACE=1: then ls -lR once more per server and mode
#   with the server's debug log (which requests sshfs sent, and how many
#   were in flight at once) and `strace -f -c` of sshfs and the server it
#   starts, in
#   $BENCH_OUT/sshfs-tree-trace/.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
: "${ROUNDS:=3}" "${DIRS:=20}" "${FILES:=200}" "${DELAY_US:=1000}"
: "${SERVER:=$here/../uring-sftp-server}" "${OURS_ARGS:=--backend=uring}"
: "${OPENSSH:=/usr/lib/openssh/sftp-server}"
: "${FUSEPASS:=$here/../tests/fusepass}" "${RUN_AS=nobody}" "${SSHFS_CACHE:=no}"
: "${BENCH_OUT:=$here/out}" "${BENCH_TMPDIR:=/var/tmp}"
SERVER=$(readlink -f "$SERVER")

say() { echo "sshfs-tree: $*" >&2; }
if [ "$(id -u)" != 0 ]; then
	say "needs root (FUSE mounts): skipped"
	exit 0
fi
for tool in sshfs setpriv; do
	if ! command -v "$tool" >/dev/null; then
		say "no $tool: skipped"
		exit 0
	fi
done
if [ ! -x "$FUSEPASS" ] || [ ! -x "$SERVER" ]; then
	say "no $FUSEPASS or $SERVER (make; make tests/fusepass): skipped"
	exit 0
fi

WORK=$(mktemp -d "$BENCH_TMPDIR/sshfs-tree.XXXXXXXX")
SRC=$WORK/src
SLOW=$WORK/slow
MNT=$WORK/sshfs
cleanup() {
	local m
	for m in "$MNT" "$SLOW"; do
		if mountpoint -q "$m"; then
			umount "$m" || umount -l "$m"
		fi
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$SRC/tree" "$SLOW" "$MNT" "$BENCH_OUT"
chmod 755 "$WORK" "$SRC"

# Others may rebuild the server meanwhile: run a copy.
cp "$SERVER" "$WORK/ours"
prefix=
if [ -n "$RUN_AS" ]; then
	prefix="setpriv --reuid=$(id -u "$RUN_AS") --regid=$(id -g "$RUN_AS")"
	prefix="$prefix --init-groups --inh-caps=-all"
fi
# wrapper NAME COMMAND: $WORK/run-NAME, which sshfs runs as its "ssh"
# (with ssh's arguments, ignored); its stderr goes to $WORK/log-NAME.
wrapper() {
	local name=$1
	shift
	printf '#!/bin/sh\nexec %s %s 2>>%s\n' "$prefix" "$*" \
		"$WORK/log-$name" >"$WORK/run-$name"
	chmod 755 "$WORK/run-$name"
}
wrapper openssh "$OPENSSH"
wrapper ours "$WORK/ours $OURS_ARGS"
wrapper openssh-debug "$OPENSSH -e -l DEBUG3"
wrapper ours-debug "$WORK/ours $OURS_ARGS -e -l DEBUG3"

say "making $DIRS x $FILES files in $SRC/tree"
/usr/bin/python3 - "$SRC/tree" "$DIRS" "$FILES" <<'EOF'
import os, sys
top, dirs, files = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    p = os.path.join(top, "d%03d" % d)
    os.mkdir(p)
    for f in range(files):
        with open(os.path.join(p, "file-%05d.dat" % f), "wb") as fh:
            fh.write(b"x" * 100)
EOF
want=$((DIRS * FILES + DIRS + 1))

mount_slow() {
	"$FUSEPASS" -o "allow_other,max_threads=64,delay_us=$DELAY_US" \
		"$SRC" "$SLOW"
}

mount_sshfs() {
	sshfs -o "ssh_command=$WORK/run-$1,cache=$SSHFS_CACHE" "x:$SLOW/tree" \
		"$MNT"
}

# run WHAT: ls -lR or find -ls of the sshfs mount into $WORK/out.
run() {
	case $1 in
	lslR) ls -lR "$MNT" >"$WORK/out" ;;
	findls) find "$MNT" -ls >"$WORK/out" ;;
	find) find "$MNT" >"$WORK/out" ;;
	esac
}

# timed SERVER WHAT MODE: seconds of one run of WHAT (lslR or findls) with
# SERVER's wrapper on a fresh sshfs mount; the listing must have every
# entry.  MODE fresh: the passthrough is mounted afresh too (no entry in
# the kernel's caches); expired: it stays mounted, every entry known to the
# kernel, and the run starts once its entry and attribute timeouts (1 s,
# libfuse's default) have passed, so each call still waits DELAY_US.
timed() {
	local t0 t1 n
	if [ "$3" = fresh ]; then
		mount_slow
	else
		sleep 1.2
	fi
	mount_sshfs "$1"
	t0=$(date +%s.%N)
	run "$2"
	t1=$(date +%s.%N)
	umount "$MNT"
	[ "$3" = fresh ] && umount "$SLOW"
	case $2 in
	lslR) n=$(grep -c '^[-d]' "$WORK/out") ;;
	*) n=$(grep -c . "$WORK/out") ;;
	esac
	# ls -lR's lines: every file and directory, less the top
	if [ "$n" != "$want" ] && [ "$n" != "$((want - 1))" ]; then
		say "$1 $2: $n entries listed, $want expected"
		return 1
	fi
	echo "$t1 - $t0" | bc
}

declare -A T
servers=(openssh ours)
modes=(fresh expired)
# find: names only (READDIR, no LSTAT), what the other two cost at least
cmds=(lslR findls find)
for mode in "${modes[@]}"; do
	if [ "$mode" = expired ]; then
		mount_slow
		find "$SLOW/tree" -ls >/dev/null
	fi
	for r in $(seq 1 "$ROUNDS"); do
		for what in "${cmds[@]}"; do
			for k in $(seq 0 $((${#servers[@]} - 1))); do
				s=${servers[$(((k + r) % ${#servers[@]}))]}
				t=$(timed "$s" "$what" "$mode")
				T[$s.$what.$mode]="${T[$s.$what.$mode]:-} $t"
				say "$mode round $r $what $s: $t s"
			done
		done
	done
	[ "$mode" = fresh ] || umount "$SLOW"
done

median() {
	tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 }
		END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

title() {
	case $1 in
	lslR) printf "sshfs \`ls -lR\`" ;;
	findls) printf "sshfs \`find -ls\`" ;;
	find) printf "sshfs \`find\` (names only)" ;;
	esac
	printf ' of %d dirs x %d files, %d us per call (FUSE), ' "$DIRS" \
		"$FILES" "$DELAY_US"
	case $2 in
	fresh) echo "nothing cached" ;;
	expired) echo "cached entries expired" ;;
	esac
}

{
	echo "| scenario | OpenSSH s | ours s | ratio (rounds) |"
	echo "|---|---:|---:|---:|"
	for mode in "${modes[@]}"; do
		for what in "${cmds[@]}"; do
			key=$what.$mode
			o=$(echo "${T[openssh.$key]}" | median)
			u=$(echo "${T[ours.$key]}" | median)
			# per-round ratios: OpenSSH / ours of the same round
			read -r -a oa <<<"${T[openssh.$key]}"
			read -r -a ua <<<"${T[ours.$key]}"
			rr=$(for i in "${!oa[@]}"; do
				echo "${oa[$i]} / ${ua[$i]}" | bc -l
			done | sort -g | awk 'NR == 1 { lo = $1 } { hi = $1 }
				END { printf "%.2f-%.2f", lo, hi }')
			printf '| %s | %.2f | %.2f | %.2f (%s) |\n' \
				"$(title "$what" "$mode")" "$o" "$u" \
				"$(echo "$o / $u" | bc -l)" "$rr"
		done
	done
} | tee "$BENCH_OUT/sshfs-tree.md"

[ "${TRACE:-0}" = 1 ] || exit 0

# One more run of ls -lR per server and mode, traced: the server's debug
# log (which requests came, and how many our server had begun and not yet
# answered at once: OpenSSH's reads one request at a time) and strace -f -c
# of sshfs and the server it starts.
tr=$BENCH_OUT/sshfs-tree-trace
mkdir -p "$tr"
for mode in "${modes[@]}"; do
	if [ "$mode" = expired ]; then
		mount_slow
		find "$SLOW/tree" -ls >/dev/null
	fi
	for s in openssh ours; do
		: >"$WORK/log-$s-debug"
		if [ "$mode" = fresh ]; then
			mount_slow
		else
			sleep 1.2
		fi
		strace -f -c -o "$tr/$s-$mode.strace" sshfs -f \
			-o "ssh_command=$WORK/run-$s-debug,cache=$SSHFS_CACHE" \
			"x:$SLOW/tree" "$MNT" &
		spid=$!
		for _ in $(seq 100); do
			mountpoint -q "$MNT" && break
			sleep 0.1
		done
		t0=$(date +%s.%N)
		run lslR
		t1=$(date +%s.%N)
		umount "$MNT"
		wait "$spid" || true
		[ "$mode" = fresh ] && umount "$SLOW"
		tr -d '\r' <"$WORK/log-$s-debug" >"$tr/$s-$mode.log"
		say "traced ls -lR, $mode, $s: $(echo "$t1 - $t0" | bc) s"
		/usr/bin/python3 - "$tr/$s-$mode.log" <<'EOF' >&2
import collections, re, sys
kinds = collections.Counter()
open_ids, most = set(), 0
for line in open(sys.argv[1], errors="replace"):
    m = re.match(r"debug\d: request (\d+): (\w+)", line)
    if not m:
        continue
    rid, word = m.groups()
    if word == "sent":
        open_ids.discard(rid)
    elif rid not in open_ids:
        open_ids.add(rid)
        kinds[word] += 1
        most = max(most, len(open_ids))
print("  requests: %s; most begun and unanswered at once: %d" % (
    ", ".join("%s %d" % kv for kv in kinds.most_common(6)), most))
EOF
	done
	[ "$mode" = fresh ] || umount "$SLOW"
done

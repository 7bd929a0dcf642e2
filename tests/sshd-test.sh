#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# $SERVER as the sftp Subsystem of a real sshd on 127.0.0.1 (a free high
# port, throwaway host and user keys, its own sshd_config), used by OpenSSH's
# sftp and scp, paramiko and lftp.  Files are compared byte for byte.  sshd
# is started and stopped by its pid, once per backend pass.  sshd discards
# a subsystem's stderr, so the Subsystem line (run by the user's shell)
# sends the server's -e log to a file; its level and file are read from
# $WORK/log-level and $WORK/log-to when a session starts.
#
# Then the long listing: one directory of 3000 entries with names of 1 to
# 255 bytes (some UTF-8), listed by every client doc/operations.md names (sftp's
# ls -1 and ls -l, paramiko, lftp's cls and ls, rclone lsf, curl -l through
# libssh2, and an sshfs mount read by ls -f and find); each output must
# hold every name exactly once and nothing else, and the server's debug log
# of each client's session must show replies of more than 100 names
# (OpenSSH's server sends 100).
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
for tool in ssh sftp scp ssh-keygen cmp; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed"
done
need_sshd "sshd must switch users and own its keys"
make_workdir sshd-test
setup_passes

ME=$(id -un)
BIG=$((40 * 1024 * 1024))
KEY=$WORK/id_ed25519
ssh-keygen -q -t ed25519 -N '' -C sshd-test-host -f "$WORK/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C sshd-test-user -f "$KEY"
cp "$KEY.pub" "$WORK/authorized_keys"
chmod 600 "$WORK/authorized_keys"

L=$WORK/local
mkdir -p "$L"
: >"$L/empty"
mkrandom "$L/one" 1
mkrandom "$L/s32767" 32767
mkrandom "$L/s32768" 32768
mkrandom "$L/s261121" 261121
mkrandom "$L/big40" "$BIG"
make_tree "$L/tree"
SIZES="empty one s32767 s32768 s261121 big40"

SSHOPTS=(-F /dev/null -i "$KEY" -o IdentitiesOnly=yes -o BatchMode=yes
	-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o LogLevel=ERROR)
SSHD_PID=

# start_sshd PASS ARGS: write the config, start sshd, wait for the port.
start_sshd() {
	SSHD_PASS_ARGS=$2
	launch_sshd "$1"
}

sshd_config_body() {
	cat <<EOF
AuthorizedKeysFile $WORK/authorized_keys
PermitRootLogin prohibit-password
MaxStartups 100
LogLevel INFO
Subsystem sftp $SERVER $SSHD_PASS_ARGS -e -l \$(cat $WORK/log-level) 2>>\$(cat $WORK/log-to)
EOF
}

# log_to FILE [LEVEL]: the sessions that start from now on log to FILE at
# LEVEL (default INFO).
log_to() {
	echo "$1" >"$WORK/log-to"
	echo "${2:-INFO}" >"$WORK/log-level"
}

stop_sshd() {
	if [ -n "$SSHD_PID" ] && kill -0 "$SSHD_PID" 2>/dev/null; then
		kill "$SSHD_PID"
		wait "$SSHD_PID" 2>/dev/null || true
	fi
	SSHD_PID=
}

# sshd_stops: stop sshd; true only if it was running, its process is gone
# and nothing accepts on its port any more.
sshd_stops() {
	local pid=$SSHD_PID
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "  sshd was not running"
		return 1
	fi
	stop_sshd
	if kill -0 "$pid" 2>/dev/null; then
		echo "  sshd $pid still runs"
		return 1
	fi
	if wait_port "$PORT" 0.5; then
		echo "  127.0.0.1:$PORT still accepts connections"
		return 1
	fi
}

# eager_writer SRC DST: through ssh -s sftp, a READ of SRC, then 40 MiB
# of 8 KiB WRITEs to DST sent before any reply is read (as a client may,
# and OpenSSH's server takes it all).  Under sshd our stdout keeps sshd's
# 64 KiB, which the replies outgrow more than twice (8 KiB of DATA and
# 5120 STATUS, 148 KiB; the server queues no more than 64 replies
# itself): sshd's and ssh's channel buffers must hold them, not our pipe,
# so the server must keep taking input.  Then every reply, in order, and
# DST byte for byte.  (Over bare pipes, with no sshd between, the same
# client stops a server whose stdout is 64 KiB; with 1024 WRITEs of
# 32 KiB, 60 KiB of replies, it did not, and tested nothing.)
eager_writer() {
	local rc=0
	TESTS_DIR=$TESTS_DIR "$PYTHON3" - "$1" "$2" ssh "${SSHOPTS[@]}" -p "$PORT" -s \
		"$ME@127.0.0.1" sftp <<'EOF' >"$P/eager.log" 2>&1 || rc=$?
import os, select, sys, time
sys.path.insert(0, os.environ["TESTS_DIR"])
import sftpclient as sc
src, dst, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
CHUNK, COUNT = 8192, 5120
with open(src, "rb") as f:
    data = f.read(CHUNK * COUNT)
assert len(data) == CHUNK * COUNT
c = sc.Client(argv, timeout=60)
c.init()
h_src = c.check_handle(c.open(src, sc.FXF_READ))
h_dst = c.check_handle(c.open(dst, sc.FXF_WRITE | sc.FXF_CREAT
                              | sc.FXF_TRUNC))


def req(t, rid, body):
    return sc.packet(t, sc.u32(rid) + body)


out = req(sc.FXP_READ, 1, sc.string(h_src) + sc.u64(0) + sc.u32(CHUNK))
out += b"".join(req(sc.FXP_WRITE, 5000 + i, sc.string(h_dst)
                    + sc.u64(i * CHUNK)
                    + sc.string(data[i * CHUNK:(i + 1) * CHUNK]))
                for i in range(COUNT))
view, deadline = memoryview(out), time.monotonic() + 30
while view:
    if time.monotonic() > deadline:
        sys.exit("deadlock: the server stopped taking input with %d bytes "
                 "left, no reply read" % len(view))
    if select.select([], [c.wfd], [], 1)[1]:
        try:
            view = view[os.write(c.wfd, view[:1 << 20]):]
        except BlockingIOError:
            pass
rep = c.expect(1, 30)
if rep.type != sc.FXP_DATA or rep.data != data[:CHUNK]:
    sys.exit("READ: %r" % rep)
for i in range(COUNT):
    rep = c.recv(30)
    if rep.id != 5000 + i or not rep.is_status(sc.FX_OK):
        sys.exit("reply %d: %r" % (i, rep))
rep = c.close_handle(h_dst)
if not rep.is_status(sc.FX_OK):
    sys.exit("CLOSE: %r" % rep)
c.close()
with open(dst, "rb") as f:
    if f.read() != data:
        sys.exit("%s differs" % dst)
print("ok")
EOF
	[ "$rc" = 0 ] || sed 's/^/    /' "$P/eager.log" | tail -n 5
	return "$rc"
}

# run_sftp NAME BATCH: stdout in $P/NAME.out, stderr in $P/NAME.log.
run_sftp() {
	local rc=0
	sftp -P "$PORT" "${SSHOPTS[@]}" -b "$2" "$ME@127.0.0.1" \
		>"$P/$1.out" 2>"$P/$1.log" || rc=$?
	if [ "$rc" != 0 ]; then
		echo "  sftp $1 exited $rc:"
		sed 's/^/    /' "$P/$1.log" | tail -n 20
		return 1
	fi
}

scp_run() {
	scp -q -P "$PORT" "${SSHOPTS[@]}" "$@" 2>>"$P/scp.log"
}

paramiko_run() {
	"$PYTHON3" - "$PORT" "$KEY" "$L" "$R" "$P/pm" "$ME" <<'EOF' >"$P/paramiko.log" 2>&1
import hashlib, os, stat, sys, time
import paramiko
port, key, L, R, D, user = sys.argv[1:]
port = int(port)
os.makedirs(D, exist_ok=True)
t = paramiko.Transport(("127.0.0.1", port))
t.connect(username=user, pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(t)
failed = 0
def check(what, ok):
    global failed
    print(("ok   " if ok else "FAIL ") + what)
    failed += 0 if ok else 1
def same(a, b):
    with open(a, "rb") as f, open(b, "rb") as g:
        return f.read() == g.read()
names = ["empty", "one", "s32767", "s32768", "s261121", "big40"]
for n in names:
    t0 = time.time()
    sftp.put(os.path.join(L, n), R + "/pm-" + n)
    check("put %s (%.2fs)" % (n, time.time() - t0),
          same(os.path.join(L, n), R + "/pm-" + n))
for n in names:
    t0 = time.time()
    sftp.get(R + "/pm-" + n, os.path.join(D, n))   # prefetch by default
    check("get %s (%.2fs)" % (n, time.time() - t0),
          same(os.path.join(L, n), os.path.join(D, n)))
# an explicitly prefetched read of the whole file in one go
with sftp.open(R + "/pm-big40", "rb") as f:
    f.prefetch()
    data = f.read()
with open(os.path.join(L, "big40"), "rb") as f:
    check("prefetch read", data == f.read())
# pipelined writes through a file object
with open(os.path.join(L, "s261121"), "rb") as f:
    src = f.read()
with sftp.open(R + "/pm-pipelined", "wb") as f:
    f.set_pipelined(True)
    for off in range(0, len(src), 10000):
        f.write(src[off:off + 10000])
check("pipelined write", same(os.path.join(L, "s261121"), R + "/pm-pipelined"))
# readv: scattered reads
with sftp.open(R + "/pm-s261121", "rb") as f:
    chunks = [(0, 10), (32760, 20), (261000, 121), (100, 65536)]
    got = list(f.readv(chunks))
check("readv", got == [src[o:o + n] for o, n in chunks])
sftp.mkdir(R + "/pm-dir", 0o750)
check("mkdir mode", stat.S_IMODE(os.stat(R + "/pm-dir").st_mode) == 0o750)
sftp.rename(R + "/pm-one", R + "/pm-dir/one")
check("rename", os.path.exists(R + "/pm-dir/one"))
sftp.posix_rename(R + "/pm-dir/one", R + "/pm-dir/one2")
check("posix_rename", os.path.exists(R + "/pm-dir/one2"))
sftp.symlink("one2", R + "/pm-dir/link")
check("symlink", os.readlink(R + "/pm-dir/link") == "one2")
check("readlink", sftp.readlink(R + "/pm-dir/link") == "one2")
check("listdir", sorted(sftp.listdir(R + "/pm-dir")) == ["link", "one2"])
attrs = {a.filename: a for a in sftp.listdir_attr(R + "/pm-dir")}
check("listdir_attr", attrs["one2"].st_size == 1 and
      stat.S_ISLNK(attrs["link"].st_mode))
check("stat", sftp.stat(R + "/pm-big40").st_size == len(data))
check("lstat", stat.S_ISLNK(sftp.lstat(R + "/pm-dir/link").st_mode))
sftp.chmod(R + "/pm-s32767", 0o604)
check("chmod", stat.S_IMODE(os.stat(R + "/pm-s32767").st_mode) == 0o604)
sftp.utime(R + "/pm-s32767", (1000000000, 1000000000))
check("utime", os.stat(R + "/pm-s32767").st_mtime == 1000000000)
sftp.truncate(R + "/pm-s32767", 100)
check("truncate", os.stat(R + "/pm-s32767").st_size == 100)
check("normalize", sftp.normalize(R + "/pm-dir/..") == R)
sftp.remove(R + "/pm-dir/link")
sftp.remove(R + "/pm-dir/one2")
sftp.rmdir(R + "/pm-dir")
check("remove/rmdir", not os.path.exists(R + "/pm-dir"))
try:
    sftp.stat(R + "/no-such")
    check("missing file raises", False)
except FileNotFoundError:
    check("missing file raises", True)
sftp.close()
t.close()
print("paramiko failures:", failed)
sys.exit(1 if failed else 0)
EOF
}

lftp_run() {
	local conn
	conn="ssh -a -x ${SSHOPTS[*]}"
	lftp -c "set sftp:connect-program '$conn'; set net:max-retries 1; \
set net:timeout 20; set cmd:fail-exit yes; \
open -u $ME, -p $PORT sftp://127.0.0.1; \
cd $R; \
put -O $R $L/big40 -o lftp-big40; \
put $L/s261121 -o lftp-s261121; \
put $L/empty -o lftp-empty; \
get lftp-big40 -o $P/lftp-dl-big40; \
get lftp-s261121 -o $P/lftp-dl-s261121; \
get lftp-empty -o $P/lftp-dl-empty; \
mirror -R $L/tree $R/lftp-tree; \
mirror $R/lftp-tree $P/lftp-tree-back; \
mkdir lftp-dir; rmdir lftp-dir; \
mv lftp-s261121 lftp-moved; \
chmod 640 lftp-moved; \
cls -l lftp-moved; \
rm lftp-empty; \
ls" >"$P/lftp.out" 2>"$P/lftp.log"
}

# ---------------------------------------------------- the long listing
# 3000 entries made once ($LD), the names in $WORK/listing.names: a fifth
# of them 200 to 255 bytes long (ASCII, Latin-1 letters, Cyrillic, CJK),
# some short UTF-8 ones, the rest short ASCII (some with a space), and 5
# directories.  Each reply but the last stops at the 60 KiB bound, with
# 100 to 600 names.
LD=$WORK/listing
"$PYTHON3" - "$LD" "$WORK/listing.names" <<'EOF'
import os, sys
d, out = sys.argv[1:]
os.mkdir(d)
longs = ["x", "\u00e9", "\u0436", "\u65e5\u672c", "\u00fc\u00df"]
shorts = ["\u00f1", "\u0444\u0430\u0439\u043b", "\u6587\u4ef6",
          "\u00c5ngstr\u00f6m", "\u263a"]
names = []
for i in range(3000):
    if i % 5 == 0:
        n = "long-%05d-" % i
        unit = longs[i // 5 % len(longs)]
        limit = 200 + i % 56
        while len((n + unit).encode()) <= limit:
            n += unit
    elif i % 5 == 1:
        n = "%s-%d" % (shorts[i // 5 % len(shorts)], i)
    elif i % 10 == 2:
        n = "a b%d" % i
    else:
        n = "f%d" % i
    names.append(n)
for i in range(5):
    names.append("dir-%d" % i)
for n in names:
    if n.startswith("dir-"):
        os.mkdir(os.path.join(d, n))
    else:
        open(os.path.join(d, n), "w").close()
assert max(len(n.encode()) for n in names) == 255
with open(out, "w", encoding="utf-8") as f:
    f.write("".join(n + "\n" for n in names))
EOF

# same_names WHAT FILE [long]: FILE (a client's output, one entry a line)
# names every entry of $LD exactly once and nothing else; "." and ".."
# are dropped, and so is a "/" at the end of a line (names have none);
# with "long", each line is an ls -l line whose name is the 9th field on.
same_names() {
	"$PYTHON3" - "$WORK/listing.names" "$2" "${3:-}" <<'EOF'
import collections, sys
want_f, got_f, mode = sys.argv[1:]
with open(want_f, "rb") as f:
    want = f.read().split(b"\n")[:-1]
got = []
with open(got_f, "rb") as f:
    for line in f.read().split(b"\n"):
        line = line.rstrip(b"\r")
        if not line or line.startswith(b"sftp> "):
            continue
        if mode == "long":
            fields = line.split(None, 8)
            if len(fields) < 9:
                print("  not an ls -l line: %r" % line[:80])
                sys.exit(1)
            line = fields[8]
        line = line[:-1] if line.endswith(b"/") else line
        if line not in (b".", b".."):
            got.append(line)
c = collections.Counter(got)
twice = [n for n, k in c.items() if k > 1]
missing = set(want) - set(c)
invented = set(c) - set(want)
for what, v in (("more than once", twice), ("missing", missing),
                ("not in the directory", invented)):
    if v:
        print("  %d names %s, e.g. %r" % (len(v), what, sorted(v)[:3]))
print("  %d names listed" % len(got))
sys.exit(1 if twice or missing or invented else 0)
EOF
}

# long_replies LOG: the server's debug log LOG shows READDIR replies of
# more than 100 names; prints how many names each reply held.
long_replies() {
	local counts
	counts=$(tr -d '\r' <"$1" |
		sed -n 's/.*: sent names count \([0-9]*\)$/\1/p' | tr '\n' ' ')
	echo "  names per reply: ${counts:-none}"
	[ -n "$counts" ] && [ "$(echo "$counts" | tr ' ' '\n' | sort -n | tail -n 1)" -gt 100 ]
}

# list_with CLIENT COMMAND...: run COMMAND (which lists $LD to
# $P/list-CLIENT.out) in a UTF-8 locale with the server logging at DEBUG1
# to $P/list-CLIENT.log.
list_with() {
	local c=$1 rc=0
	shift
	log_to "$P/list-$c.log" DEBUG1
	LC_ALL=C.UTF-8 "$@" >"$P/list-$c.out" 2>"$P/list-$c.err" || rc=$?
	log_to "$WORK/server.$PASS.log"
	if [ "$rc" != 0 ]; then
		echo "  $c exited $rc:"
		sed 's/^/    /' "$P/list-$c.err" | tail -n 10
		return 1
	fi
}

list_sftp() {
	printf 'cd %s\nls -1\nls -l\n' "$LD" >"$P/list.batch"
	sftp -P "$PORT" "${SSHOPTS[@]}" -b "$P/list.batch" "$ME@127.0.0.1"
}

list_paramiko() {
	"$PYTHON3" - "$PORT" "$KEY" "$LD" "$ME" <<'EOF'
import sys
import paramiko
port, key, d, user = sys.argv[1:]
t = paramiko.Transport(("127.0.0.1", int(port)))
t.connect(username=user, pkey=paramiko.Ed25519Key.from_private_key_file(key))
sftp = paramiko.SFTPClient.from_transport(t)
out = sys.stdout.buffer
for a in sftp.listdir_attr(d):
    out.write(a.filename.encode("utf-8") + b"\n")
sftp.close()
t.close()
EOF
}

list_lftp() {
	lftp -c "set sftp:connect-program 'ssh -a -x ${SSHOPTS[*]}'; \
set net:max-retries 1; set net:timeout 20; set cmd:fail-exit yes; \
set cmd:cls-default -1; set cache:enable no; \
open -u $ME, -p $PORT sftp://127.0.0.1; cd $LD; cls -1; echo ==ls==; ls"
}

list_rclone() {
	rclone lsf --config /dev/null --retries 1 --low-level-retries 1 \
		":sftp,host=127.0.0.1,port=$PORT,user=$ME,key_file=$KEY,shell_type=none,disable_hashcheck=true:$LD"
}

list_curl() {
	curl -sS --insecure -l --key "$KEY" --pubkey "$KEY.pub" -u "$ME:" \
		"sftp://127.0.0.1:$PORT$LD/"
}

# list_sshfs: mount $LD with sshfs (no caches), list it with ls -f, then
# find (after a "==find==" line), unmount.
list_sshfs() {
	local m=$P/sshfs rc=0
	mkdir -p "$m"
	sshfs -o "ssh_command=ssh ${SSHOPTS[*]}" -o cache=no -p "$PORT" \
		"$ME@127.0.0.1:$LD" "$m" || return 1
	ls -f "$m" || rc=1
	echo "==find=="
	find "$m" -mindepth 1 -maxdepth 1 -printf '%f\n' || rc=1
	umount "$m" || rc=1
	return "$rc"
}

# check_listing CLIENT: list $LD with list_CLIENT, then compare.
check_listing() {
	local c=$1
	if ! check "[$PASS] $c lists $LD" list_with "$c" "list_$c"; then
		return
	fi
	case $c in
	sftp)
		awk '/^sftp> ls -1$/ { o = 1; next } /^sftp> / { o = 0 } o' \
			"$P/list-sftp.out" >"$P/list-sftp-1.out"
		check "[$PASS] sftp ls -1: every name once" \
			same_names sftp "$P/list-sftp-1.out"
		awk '/^sftp> ls -l$/ { o = 1; next } /^sftp> / { o = 0 } o' \
			"$P/list-sftp.out" >"$P/list-sftp-l.out"
		check "[$PASS] sftp ls -l: every name once" \
			same_names sftp "$P/list-sftp-l.out" long
		;;
	lftp)
		sed '/^==ls==$/,$d' "$P/list-lftp.out" >"$P/list-lftp-cls.out"
		sed '1,/^==ls==$/d' "$P/list-lftp.out" >"$P/list-lftp-ls.out"
		check "[$PASS] lftp cls -1: every name once" \
			same_names lftp "$P/list-lftp-cls.out"
		check "[$PASS] lftp ls: every name once" \
			same_names lftp "$P/list-lftp-ls.out" long
		;;
	sshfs)
		sed '/^==find==$/,$d' "$P/list-sshfs.out" >"$P/list-sshfs-ls.out"
		sed '1,/^==find==$/d' "$P/list-sshfs.out" >"$P/list-sshfs-find.out"
		check "[$PASS] sshfs ls -f: every name once" \
			same_names sshfs "$P/list-sshfs-ls.out"
		check "[$PASS] sshfs find: every name once" \
			same_names sshfs "$P/list-sshfs-find.out"
		;;
	*)
		check "[$PASS] $c: every name once" \
			same_names "$c" "$P/list-$c.out"
		;;
	esac
	# OpenSSH's server sends 100 names a reply, no more.
	if ! is_openssh_server; then
		check "[$PASS] $c got READDIR replies of more than 100 names" \
			long_replies "$P/list-$c.log"
	fi
}

for i in "${!PASS_NAMES[@]}"; do
	PASS=${PASS_NAMES[$i]}
	ARGS=${PASS_ARGS[$i]}
	P=$WORK/pass-$PASS
	R=$P/remote
	mkdir -p "$R" "$P/dl"
	echo "=== pass $PASS: $SERVER $ARGS"
	log_to "$WORK/server.$PASS.log"
	if ! start_sshd "$PASS" "$ARGS"; then
		if [ "$i" = 0 ]; then
			skip_all "sshd did not start (log above)"
		fi
		fail "[$PASS] sshd did not start"
		continue
	fi
	pass "[$PASS] sshd started on 127.0.0.1:$PORT (pid $SSHD_PID)"

	# ---------------------------------------------------- sftp
	{
		for f in $SIZES; do
			echo "put $L/$f $R/$f"
		done
		echo "mkdir $R/dir"
		echo "rename $R/one $R/dir/one"
		echo "ln -s s32767 $R/link"
		echo "chmod 640 $R/s32768"
		echo "ls -l $R"
		echo "df $R"
		echo "cp $R/s261121 $R/copied"
		echo "put -r $L/tree $R/tree"
		for f in $SIZES; do
			[ "$f" = one ] && f=dir/one
			echo "get $R/$f $P/dl/"
		done
		echo "get -r $R/tree $P/dl/tree"
	} >"$P/sftp.batch"
	check "[$PASS] sftp session through sshd" run_sftp sftp "$P/sftp.batch"
	for f in $SIZES; do
		src=$f
		[ "$f" = one ] && src=dir/one
		check "[$PASS] sftp put $f" same_file "$L/$f" "$R/$src"
		check "[$PASS] sftp get $f" same_file "$L/$f" "$P/dl/$f"
	done
	check "[$PASS] sftp cp (copy-data)" same_file "$L/s261121" "$R/copied"
	check "[$PASS] sftp put -r" same_tree "$L/tree" "$R/tree"
	check "[$PASS] sftp get -r" same_tree "$L/tree" "$P/dl/tree"
	check "[$PASS] sftp ln -s" test "$(readlink "$R/link")" = s32767
	check "[$PASS] sftp chmod" test "$(stat -c %a "$R/s32768")" = 640
	SLOG=$WORK/server.$PASS.log
	check "[$PASS] log: session opened (SSH_CONNECTION)" has_line \
		"$SLOG" "session opened for local user $ME from [127.0.0.1]"
	check "[$PASS] log: close with byte count" has_line "$SLOG" \
		"close \"$R/big40\" bytes read 0 written $BIG"
	check "[$PASS] log: download byte count" has_line "$SLOG" \
		"close \"$R/big40\" bytes read $BIG written 0"
	check "[$PASS] log: session closed" has_line "$SLOG" \
		"session closed for local user $ME from [127.0.0.1]"

	# ------------------------------- stdout under sshd, an eager writer
	log_to "$P/eager-server.log" DEBUG1
	check "[$PASS] eager writer through sshd: input taken, replies in order" \
		eager_writer "$L/big40" "$R/eager-out"
	check "[$PASS] stdout kept at sshd's 64 KiB" has_line \
		"$P/eager-server.log" "debug1: stdout: read by sshd, kept at 64 KiB"
	check "[$PASS] stdout's writes block under sshd" has_line \
		"$P/eager-server.log" "debug1: stdout: read by sshd, its writes block"
	log_to "$WORK/server.$PASS.log"

	# ---------------------------------------------------- scp (SFTP mode)
	mkdir -p "$P/scp"
	check "[$PASS] scp upload" scp_run "$L/big40" "$L/s261121" "$L/empty" \
		"$ME@127.0.0.1:$R/dir/"
	check "[$PASS] scp upload 40 MiB" same_file "$L/big40" "$R/dir/big40"
	check "[$PASS] scp upload odd" same_file "$L/s261121" "$R/dir/s261121"
	check "[$PASS] scp upload empty" same_file "$L/empty" "$R/dir/empty"
	check "[$PASS] scp download" scp_run "$ME@127.0.0.1:$R/dir/big40" \
		"$ME@127.0.0.1:$R/dir/s261121" "$P/scp/"
	check "[$PASS] scp download 40 MiB" same_file "$L/big40" "$P/scp/big40"
	check "[$PASS] scp download odd" same_file "$L/s261121" "$P/scp/s261121"
	check "[$PASS] scp -r upload" scp_run -r "$L/tree" "$ME@127.0.0.1:$R/scp-tree"
	check "[$PASS] scp -r upload content" same_tree "$L/tree" "$R/scp-tree"
	check "[$PASS] scp -r download" scp_run -r "$ME@127.0.0.1:$R/scp-tree" "$P/scp/tree"
	check "[$PASS] scp -r download content" same_tree "$L/tree" "$P/scp/tree"

	# ---------------------------------------------------- paramiko
	if "$PYTHON3" -c 'import paramiko' 2>/dev/null; then
		if paramiko_run; then
			pass "[$PASS] paramiko ($(grep -c '^ok' "$P/paramiko.log") checks)"
		else
			fail "[$PASS] paramiko"
			sed 's/^/    /' "$P/paramiko.log" | grep -v '^    ok' | tail -n 30
		fi
	else
		skip_part "paramiko is not installed for $PYTHON3 (python3-paramiko)"
	fi

	# ---------------------------------------------------- lftp
	if command -v lftp >/dev/null; then
		if lftp_run; then
			pass "[$PASS] lftp session"
		else
			fail "[$PASS] lftp session"
			sed 's/^/    /' "$P/lftp.log" | tail -n 20
		fi
		check "[$PASS] lftp put/get 40 MiB" same_file "$L/big40" "$P/lftp-dl-big40"
		check "[$PASS] lftp upload 40 MiB" same_file "$L/big40" "$R/lftp-big40"
		check "[$PASS] lftp put/get odd" same_file "$L/s261121" "$P/lftp-dl-s261121"
		check "[$PASS] lftp put/get empty" same_file "$L/empty" "$P/lftp-dl-empty"
		check "[$PASS] lftp mirror -R" same_tree "$L/tree" "$R/lftp-tree"
		check "[$PASS] lftp mirror" same_tree "$L/tree" "$P/lftp-tree-back"
		check "[$PASS] lftp mv/chmod" test "$(stat -c %a "$R/lftp-moved")" = 640
		check "[$PASS] lftp rm" test ! -e "$R/lftp-empty"
	else
		skip_part "lftp is not installed"
	fi

	# ---------------------------------------------------- the long listing
	check_listing sftp
	if "$PYTHON3" -c 'import paramiko' 2>/dev/null; then
		check_listing paramiko
	fi
	for c in lftp rclone curl sshfs; do
		if command -v "$c" >/dev/null; then
			check_listing "$c"
		else
			skip_part "$c is not installed (deps.sh installs it)"
		fi
	done

	check "[$PASS] sshd stopped (its pid gone, its port closed)" sshd_stops
	[ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$P"
done
finish

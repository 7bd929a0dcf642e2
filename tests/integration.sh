#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# Real OpenSSH clients against $SERVER, without sshd: `sftp -D` batch
# sessions using every sftp command, `scp -D` in SFTP mode, files compared
# byte for byte, and the INFO log (-e -l INFO) checked line by line.
# Runs once per backend pass (see lib.sh).
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
for tool in sftp scp cmp; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed"
done
make_workdir integration
setup_passes

MYUID=$(id -u)
MYGID=$(id -g)
MYUSER=$(id -un)
BIG=$((40 * 1024 * 1024))

# Local files shared by all passes.
L=$WORK/local
mkdir -p "$L"
: >"$L/empty"
mkrandom "$L/one" 1
mkrandom "$L/s32767" 32767
mkrandom "$L/s32768" 32768
mkrandom "$L/s261121" 261121
mkrandom "$L/big40" "$BIG"
mkrandom "$L/ptime" 5000
chmod 640 "$L/ptime"
touch -d '2001-09-09 01:46:40 UTC' "$L/ptime"
make_tree "$L/tree"
SIZES="empty one s32767 s32768 s261121 big40"

# run_sftp NAME BATCH: one `sftp -D` session in $P with the batch file;
# stdout in $P/NAME.out, stderr (the server's -e log) in $P/NAME.log.
run_sftp() {
	local name=$1 batch=$2 rc=0
	(cd "$P" && sftp -D "$SERVER $ARGS -e -l INFO" -b "$batch" \
		>"$P/$name.out" 2>"$P/$name.log") || rc=$?
	if [ "$rc" != 0 ]; then
		echo "  sftp session $name exited $rc; stderr:"
		sed 's/^/    /' "$P/$name.log" | tail -n 20
		return 1
	fi
}

# log_has NAME LINE: the server log of session NAME has LINE.
log_has() {
	check "[$PASS] $1 log: $2" has_line "$P/$1.log" "$2"
}

# scp_run ARGS...: scp in SFTP mode straight to the server wrapper $W.
scp_run() {
	(cd "$P" && scp -q -s -D "$W" "$@") 2>>"$P/scp.log"
}

scp_fails() {
	! scp_run "$@" 2>/dev/null
}

mtime_of() {
	stat -c %Y "$1"
}

mode_of() {
	stat -c %a "$1"
}

for i in "${!PASS_NAMES[@]}"; do
	PASS=${PASS_NAMES[$i]}
	ARGS=${PASS_ARGS[$i]}
	P=$WORK/pass-$PASS
	R=$P/remote
	DL=$P/dl
	mkdir -p "$R" "$DL"
	echo "=== pass $PASS: $SERVER $ARGS"

	# ---------------------------------------------------- uploads
	{
		for f in $SIZES; do
			echo "put $L/$f remote/$f"
		done
		echo "put -f $L/s261121 remote/fsynced"
		echo "put -p $L/ptime remote/ptime"
		echo "progress"
		echo "mkdir remote/putdir"
		echo "put $L/one remote/putdir"
		echo "put $L/s3276* remote/putdir/"
	} >"$P/up.batch"
	check "[$PASS] sftp put session" run_sftp up "$P/up.batch"
	for f in $SIZES; do
		check "[$PASS] put $f" same_file "$L/$f" "$R/$f"
	done
	check "[$PASS] put -f" same_file "$L/s261121" "$R/fsynced"
	check "[$PASS] put -p content" same_file "$L/ptime" "$R/ptime"
	check "[$PASS] put -p mode" test "$(mode_of "$R/ptime")" = 640
	check "[$PASS] put -p mtime" test "$(mtime_of "$R/ptime")" = 1000000000
	check "[$PASS] put into directory" same_file "$L/one" "$R/putdir/one"
	check "[$PASS] put glob 1" same_file "$L/s32767" "$R/putdir/s32767"
	check "[$PASS] put glob 2" same_file "$L/s32768" "$R/putdir/s32768"
	log_has up "session opened for local user $MYUSER from [UNKNOWN]"
	log_has up "open \"$R/big40\" flags WRITE,CREATE,TRUNCATE mode 0644"
	log_has up "close \"$R/big40\" bytes read 0 written $BIG"
	log_has up "open \"$R/empty\" flags WRITE,CREATE,TRUNCATE mode 0644"
	log_has up "close \"$R/empty\" bytes read 0 written 0"
	log_has up "close \"$R/s261121\" bytes read 0 written 261121"
	log_has up "open \"$R/ptime\" flags WRITE,CREATE,TRUNCATE mode 0640"
	log_has up "set \"$R/ptime\" modtime $(date -d @1000000000 +%Y%m%d-%H:%M:%S)"
	log_has up "session closed for local user $MYUSER from [UNKNOWN]"

	# ---------------------------------------------------- reput / reget
	cp "$L/s261121" "$R/partial"
	truncate -s 100000 "$R/partial"
	cp "$L/big40" "$R/partialbig"
	truncate -s 12345678 "$R/partialbig"
	head -c 54321 "$L/s261121" >"$DL/partial"
	head -c 23456789 "$L/big40" >"$DL/partialbig"
	cat >"$P/re.batch" <<EOF
reput $L/s261121 remote/partial
reput $L/big40 remote/partialbig
reget remote/s261121 $DL/partial
reget remote/big40 $DL/partialbig
EOF
	check "[$PASS] sftp reput/reget session" run_sftp re "$P/re.batch"
	check "[$PASS] reput" same_file "$L/s261121" "$R/partial"
	check "[$PASS] reput 40 MiB" same_file "$L/big40" "$R/partialbig"
	check "[$PASS] reget" same_file "$L/s261121" "$DL/partial"
	check "[$PASS] reget 40 MiB" same_file "$L/big40" "$DL/partialbig"
	log_has re "open \"$R/partial\" flags WRITE,APPEND,CREATE mode 0644"
	log_has re "close \"$R/partial\" bytes read 0 written 161121"
	log_has re "close \"$R/s261121\" bytes read $((261121 - 54321)) written 0"

	# ---------------------------------------------------- file operations
	cat >"$P/ops.batch" <<EOF
pwd
version
mkdir remote/newdir
rmdir remote/newdir
mkdir remote/keptdir
rename remote/one remote/one-renamed
rename -l remote/s32767 remote/s32767-legacy
rename remote/s32767-legacy remote/s32767
ln remote/s32768 remote/hardlink
ln -s s32767 remote/symlink
symlink s261121 remote/symlink2
chmod 604 remote/s32767
chmod -h 640 remote/s32768
chown $MYUID remote/s32767
chgrp $MYGID remote/s32767
chown -h $MYUID remote/symlink
cp remote/s261121 remote/copied
copy remote/big40 remote/big40-copy
rm remote/fsynced
-rm remote/no-such-file
-rmdir remote/no-such-dir
-mkdir remote/keptdir
df remote
df -h remote
df -i remote
ls remote
ls -l remote
ls -la remote
ls -ln remote
ls -1 remote/s3*
ls -lS remote
ls -lt remote
ls -lr remote
ls -lh remote
ls remote/putdir
EOF
	check "[$PASS] sftp file operations session" run_sftp ops "$P/ops.batch"
	check "[$PASS] mkdir/rmdir" test -d "$R/keptdir" -a ! -e "$R/newdir"
	check "[$PASS] rename" test -f "$R/one-renamed" -a ! -e "$R/one"
	check "[$PASS] rename -l and back" same_file "$L/s32767" "$R/s32767"
	check "[$PASS] ln (hard link)" test "$R/hardlink" -ef "$R/s32768"
	check "[$PASS] ln -s target" test "$(readlink "$R/symlink")" = s32767
	check "[$PASS] symlink target" test "$(readlink "$R/symlink2")" = s261121
	check "[$PASS] chmod" test "$(mode_of "$R/s32767")" = 604
	check "[$PASS] chmod -h (on a file)" test "$(mode_of "$R/s32768")" = 640
	check "[$PASS] chown/chgrp" test "$(stat -c %u:%g "$R/s32767")" = "$MYUID:$MYGID"
	check "[$PASS] cp (copy-data)" same_file "$L/s261121" "$R/copied"
	check "[$PASS] copy 40 MiB (copy-data)" same_file "$L/big40" "$R/big40-copy"
	check "[$PASS] rm" test ! -e "$R/fsynced"
	check "[$PASS] pwd" grep -qxF "Remote working directory: $P" "$P/ops.out"
	check "[$PASS] version" grep -qxF "SFTP protocol version 3" "$P/ops.out"
	check "[$PASS] df header" grep -qE '^ +Size +Used +Avail +\(root\) +%Capacity$' "$P/ops.out"
	check "[$PASS] df -i header" grep -qE '^ +Inodes +Used +Avail +\(root\) +%Capacity$' "$P/ops.out"
	check "[$PASS] ls lists names" grep -q 'remote/one-renamed' "$P/ops.out"
	check "[$PASS] ls -l long format" grep -qE "^-rw----r-- +[0-9?]+ +$MYUSER +[^ ]+ +32767 .* remote/s32767\$" "$P/ops.out"
	check "[$PASS] ls -l symlink" grep -qE '^lrwxrwxrwx .* remote/symlink$' "$P/ops.out"
	# (sftp 9.2's ls -n still prints names for ls -ln of a directory)
	check "[$PASS] ls -ln" grep -qE "^-rw----r-- +[0-9?]+ +($MYUID|$MYUSER) +[^ ]+ +32767 " "$P/ops.out"
	check "[$PASS] ls -la shows dot files" grep -qE '^d.* remote/\.\.$' "$P/ops.out"
	check "[$PASS] ls glob" grep -qxF 'remote/s32767' "$P/ops.out"
	log_has ops "mkdir name \"$R/newdir\" mode 0777"
	log_has ops "rmdir name \"$R/newdir\""
	log_has ops "posix-rename old \"$R/one\" new \"$R/one-renamed\""
	log_has ops "rename old \"$R/s32767\" new \"$R/s32767-legacy\""
	log_has ops "hardlink old \"$R/s32768\" new \"$R/hardlink\""
	log_has ops "symlink old \"s32767\" new \"$R/symlink\""
	log_has ops "set \"$R/s32767\" mode 0604"
	log_has ops "set \"$R/s32767\" owner $MYUID group $MYGID"
	log_has ops "remove name \"$R/fsynced\""
	log_has ops "sent status No such file"
	log_has ops "sent status Failure"
	log_has ops "opendir \"$R/\""
	log_has ops "closedir \"$R/\""
	log_has ops "statvfs \"$R\""
	log_has ops "open \"$R/s261121\" flags READ mode 0666"
	log_has ops "open \"$R/copied\" flags WRITE,CREATE,TRUNCATE mode 0644"
	log_has ops "close \"$R/copied\" bytes read 0 written 261121"
	log_has ops "close \"$R/s261121\" bytes read 261121 written 0"
	log_has ops "close \"$R/big40-copy\" bytes read 0 written $BIG"

	# ---------------------------------------------------- downloads
	mkdir -p "$DL/glob"
	{
		for f in $SIZES; do
			if [ "$f" = one ]; then
				echo "get remote/one-renamed $DL/one"
			else
				echo "get remote/$f $DL/$f"
			fi
		done
		echo "get -p remote/ptime $DL/ptime"
		echo "get remote/s3276? $DL/glob/"
		echo "get remote/one-renamed $DL/"
		echo "get remote/symlink $DL/via-symlink"
		echo "get remote/big40-copy $DL/big40-copy"
		echo "-get remote/missing $DL/missing"
	} >"$P/down.batch"
	check "[$PASS] sftp get session" run_sftp down "$P/down.batch"
	for f in $SIZES; do
		check "[$PASS] get $f" same_file "$L/$f" "$DL/$f"
	done
	check "[$PASS] get 40 MiB matches original" same_file "$L/big40" "$DL/big40"
	check "[$PASS] get -p content" same_file "$L/ptime" "$DL/ptime"
	check "[$PASS] get -p mtime" test "$(mtime_of "$DL/ptime")" = 1000000000
	check "[$PASS] get -p mode" test "$(mode_of "$DL/ptime")" = 640
	check "[$PASS] get glob 1" same_file "$L/s32767" "$DL/glob/s32767"
	check "[$PASS] get glob 2" same_file "$L/s32768" "$DL/glob/s32768"
	check "[$PASS] get into directory" same_file "$L/one" "$DL/one-renamed"
	check "[$PASS] get of a missing file fails" test ! -e "$DL/missing"
	check "[$PASS] get via symlink" same_file "$L/s32767" "$DL/via-symlink"
	check "[$PASS] get copy-data result" same_file "$L/big40" "$DL/big40-copy"
	log_has down "open \"$R/big40\" flags READ mode 0666"
	log_has down "close \"$R/big40\" bytes read $BIG written 0"
	log_has down "close \"$R/empty\" bytes read 0 written 0"
	log_has down "close \"$R/s32768\" bytes read 32768 written 0"

	# ---------------------------------------------------- recursive
	cat >"$P/rec.batch" <<EOF
put -r $L/tree remote/tree
put -rp $L/tree remote/tree-p
get -r remote/tree $DL/tree
get -rp remote/tree-p $DL/tree-p
EOF
	check "[$PASS] sftp recursive session" run_sftp rec "$P/rec.batch"
	check "[$PASS] put -r" same_tree "$L/tree" "$R/tree"
	check "[$PASS] get -r" same_tree "$L/tree" "$DL/tree"
	check "[$PASS] put -rp/get -rp" same_tree "$L/tree" "$DL/tree-p"
	check "[$PASS] put -rp mode" test "$(mode_of "$R/tree-p/sub/deeper")" = 750
	check "[$PASS] get -rp mtime" test "$(mtime_of "$DL/tree-p/other/t.txt")" = "$(mtime_of "$L/tree/other/t.txt")"

	# ---------------------------------------------------- scp (SFTP mode)
	W=$P/srv
	{
		echo '#!/bin/sh'
		printf 'exec %q' "$SERVER"
		for a in $ARGS; do printf ' %q' "$a"; done
		echo ' -e -l INFO "$@"'
	} >"$W"
	chmod +x "$W"
	mkdir -p "$P/scpdl"
	check "[$PASS] scp upload" scp_run "$L/big40" "x:remote/scp-big40"
	check "[$PASS] scp upload content" same_file "$L/big40" "$R/scp-big40"
	check "[$PASS] scp upload odd sizes" scp_run "$L/empty" "$L/one" \
		"$L/s32767" "$L/s32768" "$L/s261121" "x:remote/putdir/"
	for f in empty one s32767 s32768 s261121; do
		check "[$PASS] scp upload $f" same_file "$L/$f" "$R/putdir/$f"
	done
	check "[$PASS] scp download" scp_run "x:remote/big40" "$P/scpdl/big40"
	check "[$PASS] scp download content" same_file "$L/big40" "$P/scpdl/big40"
	check "[$PASS] scp download several" scp_run "x:remote/s261121" \
		"x:remote/empty" "x:remote/s32768" "$P/scpdl/"
	for f in empty s32768 s261121; do
		check "[$PASS] scp download $f" same_file "$L/$f" "$P/scpdl/$f"
	done
	check "[$PASS] scp -r upload" scp_run -r "$L/tree" "x:remote/scp-tree"
	check "[$PASS] scp -r upload content" same_tree "$L/tree" "$R/scp-tree"
	check "[$PASS] scp -r download" scp_run -r "x:remote/scp-tree" "$P/scpdl/tree"
	check "[$PASS] scp -r download content" same_tree "$L/tree" "$P/scpdl/tree"
	check "[$PASS] scp -p keeps mtime" scp_run -p "$L/ptime" "x:remote/scp-ptime"
	check "[$PASS] scp -p mtime" test "$(mtime_of "$R/scp-ptime")" = 1000000000
	check "[$PASS] scp of a missing file fails" scp_fails "x:remote/no-such" \
		"$P/scpdl/x"
	check "[$PASS] scp log open" has_line "$P/scp.log" \
		"open \"remote/scp-big40\" flags WRITE,CREATE mode 0644"
	check "[$PASS] scp log size" has_line "$P/scp.log" \
		"set \"remote/scp-big40\" size $BIG"
	check "[$PASS] scp log close" has_line "$P/scp.log" \
		"close \"remote/scp-big40\" bytes read 0 written $BIG"

	# Free the space of this pass before the next.
	rm -rf "$P/remote" "$P/dl" "$P/scpdl"
done
finish

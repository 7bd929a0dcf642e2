#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# The jail recipe of doc/confinement.md and the man page, with a real sshd on
# 127.0.0.1: a throwaway user (created here with useradd, removed at the
# end) confined by ChrootDirectory to a jail that holds one file, a static
# build of the server ($JAIL_SERVER), and no shell, no libraries, no
# /etc/passwd.  The user's login shell is the server itself, at the same
# path outside the jail (where sshd checks it) and inside (where sshd runs
# it as "SHELL -c COMMAND").
#   forcecommand  ForceCommand naming the server with -l INFO;
#                 first, with /bin/sh as the login shell, that no session
#                 works (sshd needs the user's shell inside the jail)
#   loginshell    no ForceCommand: the Subsystem line names the server,
#                 run through the login shell, with -l VERBOSE
# First, outside any jail, the static server lists a file whose owner has
# no passwd entry (glibc must not load NSS modules into a static program).
# Each phase uploads, downloads, lists and renames inside the jail, tries
# to reach files outside it (absolute paths, .., a symlink; all must
# fail), runs a command (it must not run), and checks the server's syslog
# lines, which reach a /dev/log socket this test binds inside the jail.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

if [ -z "${JAIL_SERVER:-}" ] || [ ! -x "$JAIL_SERVER" ]; then
	skip_all "no static build of the server (a sanitizer build, or" \
		"configure found no static liburing/libbsd/libmd)"
fi
for tool in ssh sftp ssh-keygen cmp useradd userdel usermod readelf; do
	command -v "$tool" >/dev/null || skip_all "$tool is not installed"
done
need_sshd "sshd chroots, and a user is created"
if readelf -l "$JAIL_SERVER" | grep -q INTERP; then
	echo "$JAIL_SERVER asks for a dynamic loader:"
	readelf -l "$JAIL_SERVER" | grep -A1 INTERP
	echo "0 passed, 1 failed"
	exit 1
fi
[ -x "$PYTHON3" ] || skip_all "no Python at $PYTHON3"
make_workdir jail

# Outside a jail first, where /etc/nsswitch.conf names NSS modules a static
# program must not load: a listing with an owner missing from /etc/passwd.
mkdir "$WORK/nss"
: >"$WORK/nss/orphan"
NOBODY_ID=4000123
while getent passwd "$NOBODY_ID" >/dev/null || getent group "$NOBODY_ID" >/dev/null; do
	NOBODY_ID=$((NOBODY_ID + 1))
done
chown "$NOBODY_ID:$NOBODY_ID" "$WORK/nss/orphan"
echo "ls -l $WORK/nss" >"$WORK/nss.batch"
list_orphan() {
	if sftp -D "$JAIL_SERVER" -b "$WORK/nss.batch" >"$WORK/nss.out" 2>&1 &&
		grep -q " $NOBODY_ID *$NOBODY_ID .*orphan" "$WORK/nss.out"; then
		return 0
	fi
	sed 's/^/    /' "$WORK/nss.out"
	return 1
}
check "static server outside a jail lists an unknown owner's file" list_orphan

# sshd refuses a ChrootDirectory with any component not owned by root or
# writable by group or others, so not below /tmp: below /var/lib.
PARENT=${JAIL_PARENT:-/var/lib}
d=$PARENT
while :; do
	# shellcheck disable=SC2012 # stat's %a is enough
	if [ "$(stat -c %u "$d")" != 0 ] || [ $(($(stat -c 0%a "$d") & 022)) != 0 ]; then
		skip_all "$d is not owned by root or is group/other-writable:" \
			"sshd would refuse a jail below it (set JAIL_PARENT)"
	fi
	[ "$d" = / ] && break
	d=$(dirname "$d")
done
BASE=$(mktemp -d "$PARENT/uring-sftp-jail-test.XXXXXXXX")
chmod 755 "$BASE"
JUSER=
jail_cleanup() {
	local pid
	# sshd and the log listener first: a user with processes cannot go.
	for pid in ${CLEANUP_PIDS[@]+"${CLEANUP_PIDS[@]}"}; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	if [ -n "$JUSER" ] && id "$JUSER" >/dev/null 2>&1; then
		userdel "$JUSER" || echo "userdel $JUSER failed"
	fi
	rm -rf "$BASE"
	cleanup
}
trap jail_cleanup EXIT

# The throwaway user: a unique name, the server as login shell, home
# /files (a path inside the jail), password "*" (not locked: sshd without
# PAM refuses locked accounts; no password matches "*").
SHELLPATH=$BASE/bin/uring-sftp-server
for n in 1 2 3 4 5; do
	JUSER=usfs-jail-$$-$n
	id "$JUSER" >/dev/null 2>&1 || break
done
if ! useradd -M -U -d /files -s "$SHELLPATH" -p '*' "$JUSER" 2>"$WORK/useradd.log"; then
	cat "$WORK/useradd.log"
	JUSER=
	skip_all "useradd failed"
fi
JUID=$(id -u "$JUSER")
note "user $JUSER (uid $JUID), jail $BASE/jail/$JUSER"

# The jail: root-owned, the server at $SHELLPATH inside it, the user's
# writable /files with a file to download.  Outside it, next to it, a
# world-readable file the user must not reach.
J=$BASE/jail/$JUSER
install -D -m 755 "$JAIL_SERVER" "$SHELLPATH"
install -D -m 755 "$JAIL_SERVER" "$J$SHELLPATH"
if ! "$SHELLPATH" --version >/dev/null; then
	skip_all "cannot run programs below $PARENT (noexec?)"
fi
mkdir -m 755 "$J/files" "$J/dev"
chown "$JUSER:" "$J/files"
mkdir -m 755 "$BASE/outside"
echo "secret outside the jail" >"$BASE/outside/secret"
chmod 644 "$BASE/outside/secret"

KEY=$WORK/id_ed25519
ssh-keygen -q -t ed25519 -N '' -C jail-test-host -f "$WORK/host_ed25519"
ssh-keygen -q -t ed25519 -N '' -C jail-test-user -f "$KEY"
# sshd reads authorized keys as the user: a world-readable place.
install -D -m 644 "$KEY.pub" "$BASE/keys/$JUSER"

L=$WORK/local
mkdir -p "$L"
mkrandom "$L/up.bin" 300000
mkrandom "$L/given.bin" 70000

SSHOPTS=(-F /dev/null -i "$KEY" -o IdentitiesOnly=yes -o BatchMode=yes
	-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
	-o LogLevel=ERROR)
SSHD_PID=
LOG_PID=

# start_sshd NAME SUBSYSTEM_COMMAND [MATCH_LINE]: sshd with the user's
# jail and that Subsystem line; wait for its port.
start_sshd() {
	SSHD_SUBSYSTEM=$2
	SSHD_MATCH=${3:-}
	launch_sshd "$1"
}

sshd_config_body() {
	cat <<EOF
AuthorizedKeysFile $BASE/keys/%u
LogLevel VERBOSE
Subsystem sftp $SSHD_SUBSYSTEM
Match User $JUSER
	ChrootDirectory $BASE/jail/%u
	$SSHD_MATCH
EOF
}

stop_pid() {
	if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
		kill "$1"
		wait "$1" 2>/dev/null || true
	fi
}

# start_syslog FILE: a datagram socket at the jail's /dev/log, each
# message a line in FILE.  On SIGTERM it takes what is queued, then ends:
# a session's lines are queued before its sftp client exits.
start_syslog() {
	rm -f "$J/dev/log" "$WORK/syslog.ready"
	"$PYTHON3" - "$J/dev/log" "$1" "$WORK/syslog.ready" <<'EOF' &
import os, signal, socket, sys
path, outfile, ready = sys.argv[1:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
os.chmod(path, 0o666)
out = open(outfile, "ab", buffering=0)
def stop(*_):
    s.setblocking(False)
    try:
        while True:
            out.write(s.recv(65536) + b"\n")
    except BlockingIOError:
        pass
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(ready, "w").close()
while True:
    out.write(s.recv(65536) + b"\n")
EOF
	LOG_PID=$!
	CLEANUP_PIDS+=("$LOG_PID")
	for _ in $(seq 100); do
		[ -e "$WORK/syslog.ready" ] && return 0
		sleep 0.1
	done
	return 1
}

# sftp_batch NAME: run $P/NAME.batch as the user; output in $P/NAME.out.
sftp_batch() {
	sftp -P "$PORT" "${SSHOPTS[@]}" -b "$P/$1.batch" "$JUSER@127.0.0.1" \
		>"$P/$1.out" 2>"$P/$1.log"
}

sftp_session() {
	if sftp_batch "$1"; then
		return 0
	fi
	echo "  sftp $1 failed:"
	sed 's/^/    /' "$P/$1.log" | tail -n 10
	return 1
}

# owned_by_user FILE
owned_by_user() {
	test "$(stat -c %u "$1")" = "$JUID"
}

# lists OUT NAME...: the sftp output has each NAME as a line.
lists() {
	local out=$1 name
	shift
	for name; do
		grep -qxF -- "$name" "$out" || {
			echo "  no line '$name' in $out:"
			sed 's/^/    /' "$out"
			return 1
		}
	done
}

# only_entries OUT NAME...: the "ls -1 /" lines of OUT are exactly NAMEs.
only_entries() {
	local got want
	got=$(grep -v '^sftp>' "$1" | sort | tr '\n' ' ')
	shift
	want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
	if [ "$got" != "$want" ]; then
		echo "  / lists '$got', expected '$want'"
		return 1
	fi
}

no_file() {
	if [ -e "$1" ]; then
		echo "  $1 exists"
		return 1
	fi
}

# jail_checks PHASE LOGLEVEL_LINE: the session checks, then the log.
jail_checks() {
	local phase=$1 top
	P=$WORK/$phase
	mkdir -p "$P/dl"
	cp "$L/given.bin" "$J/files/given.bin"
	chown "$JUSER:" "$J/files/given.bin"
	rm -f "$J/files/up.bin" "$J/files/renamed.bin" "$J/files/link"

	cat >"$P/main.batch" <<EOF
pwd
put $L/up.bin up.bin
get given.bin $P/dl/given.bin
rename up.bin renamed.bin
ls -1
EOF
	check "[$phase] upload, download, rename, list" sftp_session main
	check "[$phase] upload landed in the jail" same_file "$L/up.bin" \
		"$J/files/renamed.bin"
	check "[$phase] upload owned by the user" owned_by_user \
		"$J/files/renamed.bin"
	check "[$phase] renamed away" no_file "$J/files/up.bin"
	check "[$phase] download" same_file "$L/given.bin" "$P/dl/given.bin"
	check "[$phase] starts in the home directory" lists "$P/main.out" \
		"Remote working directory: /files"
	check "[$phase] list" lists "$P/main.out" renamed.bin given.bin

	# Outside: by its real path, by .., through a symlink made inside.
	# "-" lets the batch go on after a failing command.
	top=${SHELLPATH#/}
	top=/${top%%/*}
	cat >"$P/escape.batch" <<EOF
ls -1 /
-get $BASE/outside/secret $P/dl/by-path
-get ../../outside/secret $P/dl/by-dotdot
-get /etc/passwd $P/dl/passwd
-get ../../../../../../etc/passwd $P/dl/passwd2
-symlink $BASE/outside/secret link
-get link $P/dl/by-link
EOF
	check "[$phase] escape attempts session" sftp_session escape
	check "[$phase] / holds only the jail's entries" only_entries \
		"$P/escape.out" /dev /files "$top"
	check "[$phase] absolute path outside unreachable" no_file "$P/dl/by-path"
	check "[$phase] .. outside unreachable" no_file "$P/dl/by-dotdot"
	check "[$phase] /etc/passwd unreachable (none in the jail)" \
		no_file "$P/dl/passwd"
	check "[$phase] ../../etc/passwd unreachable" no_file "$P/dl/passwd2"
	check "[$phase] symlink to outside unreachable" no_file "$P/dl/by-link"

	# A command request runs no command: the shell is the server, which
	# takes it as an SFTP session and ends at end of input.
	ssh -n -p "$PORT" "${SSHOPTS[@]}" "$JUSER@127.0.0.1" \
		"cat $BASE/outside/secret; echo ran" >"$P/cmd.out" \
		2>"$P/cmd.log" || true
	check "[$phase] a command does not run" test ! -s "$P/cmd.out"
}

# log_has PHASE TEXT: a syslog line from the server ends with TEXT.
log_has() {
	if grep -qF -- "uring-sftp-server[" "$WORK/syslog.$1" &&
		grep -F -- "uring-sftp-server[" "$WORK/syslog.$1" |
		grep -qF -- "]: $2"; then
		return 0
	fi
	echo "  no server line '...: $2' in the jail's syslog:"
	sed 's/^/    /' "$WORK/syslog.$1" | tail -n 20
	return 1
}

jail_files() {
	(cd "$J" && find . -type f | sort | tr '\n' ' ')
}

check "jail holds one file" test "$(jail_files)" = ".$SHELLPATH "

# ------------------------------------------------ 1. ForceCommand
phase=forcecommand
if start_sshd "$phase" "/usr/lib/openssh/sftp-server" \
	"ForceCommand $SHELLPATH -l INFO"; then
	pass "[$phase] sshd started on 127.0.0.1:$PORT"
	# With a login shell missing from the jail nothing works, whatever
	# the ForceCommand: sshd runs it as "SHELL -c COMMAND" in the jail.
	usermod -s /bin/sh "$JUSER"
	P=$WORK/$phase
	mkdir -p "$P"
	echo "ls" >"$P/noshell.batch"
	check "[$phase] /bin/sh as login shell: no session" \
		eval '! sftp_batch noshell'
	usermod -s "$SHELLPATH" "$JUSER"

	start_syslog "$WORK/syslog.$phase" ||
		fail "[$phase] syslog listener did not start"
	jail_checks "$phase"
	stop_pid "$LOG_PID"
	check "[$phase] log: session opened, numeric user (no passwd)" \
		log_has "$phase" "session opened for local user $JUID from [127.0.0.1]"
	check "[$phase] log: INFO from ForceCommand's -l" log_has "$phase" \
		"close \"/files/up.bin\" bytes read 0 written 300000"
	check "[$phase] log: rename" log_has "$phase" \
		"posix-rename old \"/files/up.bin\" new \"/files/renamed.bin\""
	check "[$phase] log: session closed" log_has "$phase" \
		"session closed for local user $JUID from [127.0.0.1]"
	stop_pid "$SSHD_PID"
else
	fail "[$phase] sshd did not start"
fi

# ------------------------------------------------ 2. login shell
phase=loginshell
if start_sshd "$phase" "$SHELLPATH -l VERBOSE"; then
	pass "[$phase] sshd started on 127.0.0.1:$PORT"
	start_syslog "$WORK/syslog.$phase" ||
		fail "[$phase] syslog listener did not start"
	jail_checks "$phase"
	stop_pid "$LOG_PID"
	check "[$phase] log: session opened" log_has "$phase" \
		"session opened for local user $JUID from [127.0.0.1]"
	check "[$phase] log: VERBOSE from the Subsystem line's -l" \
		log_has "$phase" "realpath \".\""
	check "[$phase] log: no passwd entry noted" log_has "$phase" \
		"no passwd entry for uid $JUID: user \"$JUID\", home \"/files\""
	stop_pid "$SSHD_PID"
else
	fail "[$phase] sshd did not start"
fi
finish

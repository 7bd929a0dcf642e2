#!/bin/bash
# demo.sh: build uring-sftp-server and show it working behind a real sshd.
#
#   ./demo.sh            start a throwaway sshd on 127.0.0.1 (high port, throwaway
#                        keys and config in a temporary directory) whose
#                        "Subsystem sftp" is this build, then upload a 64 MiB file
#                        with OpenSSH's sftp, download it again, list it, compare
#                        SHA-256 sums and print timings and the server's log lines
#   ./demo.sh --direct   the same transfer without sshd: sftp -D ./uring-sftp-server
#
# Environment: CONFIGURE_FLAGS (passed to ./configure by deps.sh),
# DEMO_SIZE_MIB (file size, default 64), SFTP_SERVER_BIN (server binary to run
# instead of the build, e.g. /usr/lib/openssh/sftp-server for comparison; the
# build step is then skipped).
# Exit status is non-zero if anything fails. Nothing is left behind.
set -euo pipefail

here=$(dirname "$(readlink -f "$0")")
cd "$here"

mode=sshd
case "${1:-}" in
"") ;;
--direct) mode=direct ;;
-h | --help)
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	exit 0
	;;
*)
	echo "usage: $0 [--direct]" >&2
	exit 2
	;;
esac

size_mib=${DEMO_SIZE_MIB:-64}
case "$size_mib" in
'' | *[!0-9]* | 0)
	echo "demo.sh: DEMO_SIZE_MIB must be a positive integer" >&2
	exit 2
	;;
esac
# -l VERBOSE also says if io_uring was not available; -e sends the log lines
# to stderr so that we can show them here. (sshd reads and drops a subsystem's
# stderr, so under sshd the Subsystem line redirects it to a file: sshd runs the
# line through the user's shell, like any command.)
log_flags=(-e -l VERBOSE)

say() { printf '\n==> %s\n' "$*"; }
die() {
	printf 'demo.sh: FAILED: %s\n' "$*" >&2
	exit 1
}
now_ns() { date +%s%N; }
# seconds and MiB/s for a transfer of $size_mib MiB that took $1 nanoseconds
rate() { awk -v ns="$1" -v mib="$size_mib" 'BEGIN {
	s = ns / 1e9; if (s <= 0) s = 1e-9
	printf "%.2f s, %.1f MiB/s", s, mib / s }'; }

# --- build ------------------------------------------------------------------
if [ -n "${SFTP_SERVER_BIN:-}" ]; then
	server=$(readlink -f "$SFTP_SERVER_BIN")
	say "using SFTP_SERVER_BIN=$server (build skipped)"
else
	say "installing dependencies and building (./deps.sh)"
	./deps.sh
	server="$here/uring-sftp-server"
fi
[ -x "$server" ] || die "no server binary at $server"
case "$server" in
*[[:space:]]*) die "the server path contains white space, which a Subsystem line cannot hold: $server" ;;
esac
if [ "$mode" = sshd ]; then
	sshd_bin=/usr/sbin/sshd
	[ -x "$sshd_bin" ] || die "$sshd_bin not found (apt-get install openssh-server)"
fi
command -v sftp >/dev/null || die "sftp not found (apt-get install openssh-client)"

# --- scratch directory and clean-up -----------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/uring-sftp-demo.XXXXXX")
sshd_pid=
cleanup() {
	local rc=$?
	if [ -n "$sshd_pid" ] && kill -0 "$sshd_pid" 2>/dev/null; then
		kill "$sshd_pid" 2>/dev/null || true
		wait "$sshd_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	if [ "$rc" -eq 0 ]; then
		printf '\ndemo.sh: OK\n'
	else
		printf '\ndemo.sh: FAILED (exit %d)\n' "$rc" >&2
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

src=$tmp/data/source.bin
remote=$tmp/data/uploaded.bin
back=$tmp/data/downloaded.bin
mkdir "$tmp/data"

say "generating a ${size_mib} MiB file of random bytes"
head -c "$((size_mib * 1024 * 1024))" /dev/urandom >"$src"
sum_src=$(sha256sum "$src" | cut -d' ' -f1)
echo "sha256 $sum_src  $src"

# --- the sftp command line, per mode ----------------------------------------
if [ "$mode" = sshd ]; then
	user=$(id -un)
	port=$(python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

	say "starting a throwaway sshd on 127.0.0.1:$port"
	ssh-keygen -q -t ed25519 -N '' -C demo-host -f "$tmp/host_key"
	ssh-keygen -q -t ed25519 -N '' -C demo-user -f "$tmp/user_key"
	cp "$tmp/user_key.pub" "$tmp/authorized_keys"
	echo "demo-sshd $(cat "$tmp/host_key.pub")" >"$tmp/known_hosts"
	cat >"$tmp/sshd_config" <<-EOF
		ListenAddress 127.0.0.1:$port
		HostKey $tmp/host_key
		PidFile $tmp/sshd.pid
		AuthorizedKeysFile $tmp/authorized_keys
		PubkeyAuthentication yes
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		PermitRootLogin prohibit-password
		AllowUsers $user
		StrictModes no
		LogLevel INFO
		Subsystem sftp $server ${log_flags[*]} 2>>$tmp/server.log
	EOF
	cat >"$tmp/ssh_config" <<-EOF
		Host demo
		    HostName 127.0.0.1
		    Port $port
		    User $user
		    HostKeyAlias demo-sshd
		    UserKnownHostsFile $tmp/known_hosts
		    GlobalKnownHostsFile /dev/null
		    StrictHostKeyChecking yes
		    IdentityFile $tmp/user_key
		    IdentitiesOnly yes
		    BatchMode yes
		    LogLevel ERROR
	EOF
	# sshd refuses to start as root without its privilege separation directory
	# (normally created by the service unit, missing on a fresh container).
	if [ "$(id -u)" -eq 0 ] && [ ! -d /run/sshd ]; then
		mkdir -p /run/sshd
		chmod 0755 /run/sshd
	fi
	"$sshd_bin" -t -f "$tmp/sshd_config" || die "sshd rejected its configuration"
	sed 's/^/    /' "$tmp/sshd_config"
	"$sshd_bin" -D -f "$tmp/sshd_config" -E "$tmp/sshd.log" </dev/null &
	sshd_pid=$!
	# sshd writes its PidFile once it listens
	for _ in $(seq 100); do
		kill -0 "$sshd_pid" 2>/dev/null || {
			cat "$tmp/sshd.log" >&2 || true
			die "sshd exited at start-up"
		}
		[ -s "$tmp/sshd.pid" ] && break
		sleep 0.1
	done
	[ -s "$tmp/sshd.pid" ] || die "sshd did not start within 10 s"
	[ "$(cat "$tmp/sshd.pid")" = "$sshd_pid" ] || die "sshd's PidFile does not hold pid $sshd_pid"
	echo "sshd running, pid $sshd_pid (PidFile $tmp/sshd.pid), log $tmp/sshd.log"
	sftp_cmd=(sftp -F "$tmp/ssh_config" -b - demo)
	where="$user@127.0.0.1:$port through sshd"
else
	sftp_cmd=(sftp -D "$server ${log_flags[*]}" -b -)
	where="sftp -D, no sshd"
fi

# Run one sftp batch (read from stdin) and set elapsed_ns to its wall-clock
# time. The client's output goes to $1.out and its stderr to $1.err; the
# server's log lines go to $1.log (with -D, the server inherits the client's
# stderr; under sshd they are appended to server.log).
elapsed_ns=0
run_sftp() {
	local name=$1 mark=0 t0 rc=0
	[ -f "$tmp/server.log" ] && mark=$(stat -c %s "$tmp/server.log")
	t0=$(now_ns)
	"${sftp_cmd[@]}" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
	elapsed_ns=$(($(now_ns) - t0))
	if [ "$rc" -ne 0 ]; then
		cat "$tmp/$name.out" "$tmp/$name.err" >&2 || true
		[ -f "$tmp/server.log" ] && cat "$tmp/server.log" >&2
		[ -f "$tmp/sshd.log" ] && cat "$tmp/sshd.log" >&2
		die "sftp session '$name' failed"
	fi
	if [ "$mode" = sshd ]; then
		# sshd may still be closing the session: give the server a moment to
		# write its last line ("session closed ...")
		for _ in $(seq 20); do
			grep -q 'session closed' <(tail -c +"$((mark + 1))" "$tmp/server.log" 2>/dev/null) && break
			sleep 0.1
		done
		tail -c +"$((mark + 1))" "$tmp/server.log" >"$tmp/$name.log" 2>/dev/null || true
	else
		cp "$tmp/$name.err" "$tmp/$name.log"
	fi
}
show_log() {
	echo "server log ($(basename "$server") ${log_flags[*]}):"
	tr -d '\r' <"$tmp/$1.log" | sed 's/^/    /'
}

# --- an empty session first, to show what connection set-up alone costs -----
say "connect: an sftp session that only runs pwd ($where)"
run_sftp connect <<<"pwd"
connect_ns=$elapsed_ns
grep -v '^sftp>' "$tmp/connect.out" | sed 's/^/    /'
echo "session set-up and tear-down took $(awk -v ns="$connect_ns" 'BEGIN { printf "%.2f s", ns / 1e9 }')"

# --- upload -----------------------------------------------------------------
say "upload: put $src -> $remote ($where)"
run_sftp upload <<<"put $src $remote"
up_ns=$elapsed_ns
echo "upload took $(rate "$up_ns") (whole session, including connection set-up)"
show_log upload

# --- download and listing ---------------------------------------------------
say "download: get $remote -> $back ($where)"
run_sftp download <<<"get $remote $back"
down_ns=$elapsed_ns
echo "download took $(rate "$down_ns") (whole session, including connection set-up)"
show_log download

say "listing: ls -l $tmp/data"
run_sftp list <<<"ls -l $tmp/data"
grep -v '^sftp>' "$tmp/list.out" | sed 's/^/    /'

# --- verify -----------------------------------------------------------------
say "comparing SHA-256 sums"
sum_remote=$(sha256sum "$remote" | cut -d' ' -f1)
sum_back=$(sha256sum "$back" | cut -d' ' -f1)
printf '%s  source\n%s  uploaded (written by the server)\n%s  downloaded\n' \
	"$sum_src" "$sum_remote" "$sum_back"
[ "$sum_remote" = "$sum_src" ] || die "the uploaded file differs from the source"
[ "$sum_back" = "$sum_src" ] || die "the downloaded file differs from the source"
cmp "$src" "$back" || die "cmp: downloaded file differs"
echo "all three match"

if [ "$mode" = sshd ]; then
	say "sshd's own log ($tmp/sshd.log)"
	sed 's/^/    /' "$tmp/sshd.log"
fi

say "summary"
echo "server:   $server ${log_flags[*]}"
echo "path:     $where"
echo "file:     $size_mib MiB, sha256 $sum_src"
echo "session:  $(awk -v ns="$connect_ns" 'BEGIN { printf "%.2f s", ns / 1e9 }') for an empty one (included below)"
echo "upload:   $(rate "$up_ns")"
echo "download: $(rate "$down_ns")"

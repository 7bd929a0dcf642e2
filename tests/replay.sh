#!/bin/bash
# make bench's limit for a get through sshd is `sftp-load replay`: a
# recorded session of this server with OpenSSH's sftp, played back to the
# same client (bench/README.md).  That limit means something only if the
# replay answers the client correctly and refuses a client that asks
# anything else, so both are checked here, over sftp -D (no sshd needed):
#
#  - a get recorded through tee, replayed: the client gets the same file;
#  - the same replay to a client asking for another file: the replay
#    fails (its exit status, which make bench checks, and its message);
#  - the replay to a client that asks something else (an ls): the replay
#    fails.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
LOAD=${LOAD:-$TESTS_DIR/../bench/sftp-load}
[ -x "$LOAD" ] || skip_all "no $LOAD (make bench/sftp-load)"
command -v sftp >/dev/null || skip_all "no OpenSSH sftp client"
make_workdir replay

src=$WORK/src
mkrandom "$src" $((3 * 1024 * 1024 + 4321))
# Another file, its name as long as src's: a replay that compared only
# lengths would take it.
other=$WORK/srd
cp "$src" "$other"
replies=$WORK/replies
requests=$WORK/requests
server_args=${SERVER_ARGS:-}

# get REMOTE LOCAL SERVER-COMMAND: sftp -D's exit status.
get() {
	printf 'get %s %s\n' "$1" "$2" >"$WORK/batch"
	sftp -q -B 32768 -R 16 -b "$WORK/batch" -D "$3" >"$WORK/client.log" 2>&1
}

printf '#!/bin/sh\ntee %s | %s %s | tee %s\n' "$requests" "$SERVER" \
	"$server_args" "$replies" >"$WORK/record.sh"
chmod +x "$WORK/record.sh"
check "a get recorded through tee" get "$src" "$WORK/got" "$WORK/record.sh"
check "recorded get: the file" same_file "$src" "$WORK/got"
rm -f "$WORK/got"

# The replay runs under sftp-load wrap, which writes its exit status.
replay_cmd="$LOAD wrap $WORK/rusage -- $LOAD replay $replies $requests"
# The replay may still run when the client has gone (it checks the
# requests once its replies are out): wrap writes the file when it ends.
replay_status() {
	local i
	for i in $(seq 100); do
		[ -s "$WORK/rusage" ] && break
		sleep 0.1
	done
	[ -s "$WORK/rusage" ] || echo none
	tr ' ' '\n' <"$WORK/rusage" | sed -n 's/^status=//p'
}

rm -f "$WORK/rusage"
check "the replay answers the same client" get "$src" "$WORK/got" "$replay_cmd"
check "replayed get: the file" same_file "$src" "$WORK/got"
check "the replay ends well" test "$(replay_status)" = 0

# The replay sends its replies as fast as sshd takes them, so a client
# asking for another file may still get the recorded bytes: what makes
# make bench's run fail is the replay's status (bench/compare.py
# read_rusage).
rm -f "$WORK/got" "$WORK/rusage"
get "$other" "$WORK/got" "$replay_cmd" || true
status=$(replay_status)
check "a client asking for another file fails the replay" \
	test -n "$status" -a "$status" != none -a "$status" != 0
check "the replay says the requests differ" \
	grep -q "the requests differ from the recorded" "$WORK/client.log"

rm -f "$WORK/rusage"
printf 'ls %s\n' "$WORK" >"$WORK/batch"
sftp -q -b "$WORK/batch" -D "$replay_cmd" >"$WORK/client.log" 2>&1 || true
status=$(replay_status)
check "a client asking something else fails the replay" \
	test -n "$status" -a "$status" != none -a "$status" != 0
check "the replay says its requests differ" \
	grep -q "the requests differ from the recorded" "$WORK/client.log"
finish

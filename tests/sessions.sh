#!/bin/bash
# Many sessions of one unprivileged user at once:
# tests/sessions.py run as that user, as sshd would run the server.  Run as
# root, the user is SESSIONS_USER (default nobody, through setpriv); run as
# anyone else, that user.
#
#   SESSIONS_N (16)     sessions holding their pipes during the pipe check
#   SESSIONS_MANY (256) sessions open at once
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
make_workdir sessions
as_user=()
if [ "$(id -u)" = 0 ]; then
	user=${SESSIONS_USER:-nobody}
	if ! command -v setpriv >/dev/null || ! id "$user" >/dev/null 2>&1; then
		skip_all "running as root, and no setpriv or no user $user"
	fi
	group=$(id -gn "$user")
	as_user=(setpriv --reuid="$user" --regid="$group" --init-groups
		--inh-caps=-all)
	chown "$user" "$WORK"
	# The server and the tests must be reachable by that user.
	for f in "$SERVER" "$TESTS_DIR/sessions.py"; do
		if ! "${as_user[@]}" test -r "$f"; then
			skip_all "$f is not readable by $user"
		fi
	done
fi
rc=0
"${as_user[@]}" env TMPDIR="$WORK" "$PYTHON3" "$TESTS_DIR/sessions.py" \
	--server "$SERVER" --workdir "$WORK" \
	--sessions "${SESSIONS_N:-16}" --many "${SESSIONS_MANY:-256}" \
	>"$WORK/out" 2>&1 || rc=$?
finish_run "$WORK/out" "$rc" sessions.py

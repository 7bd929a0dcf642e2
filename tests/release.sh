#!/bin/bash
# The version comes from configure.ac (AC_INIT) alone: --version prints
# it, debian/changelog's newest entry and NEWS's newest section carry the
# same number.  A release bumps AC_INIT, adds a NEWS section and a
# debian/changelog entry (dch -v VERSION); this test says what is missing.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
[ -n "${PACKAGE_VERSION:-}" ] || skip_all "PACKAGE_VERSION is not set (run through make check)"
V=$PACKAGE_VERSION
SRC=${top_srcdir:-$TESTS_DIR/..}

check "--version prints $V" test "$("$SERVER" --version)" = "uring-sftp-server $V"

# debian/changelog's first line: "uring-sftp-server (VERSION) ...".
first=$(head -n 1 "$SRC/debian/changelog")
check "debian/changelog's newest entry is $V" \
	test "$first" != "${first#"uring-sftp-server ($V) "}"

# NEWS: the first line that starts with a version number.
news=$(grep -m 1 -E '^[0-9]+\.[0-9]+' "$SRC/NEWS" | cut -d ' ' -f 1)
check "NEWS's newest section is $V (found '$news')" test "$news" = "$V"
finish

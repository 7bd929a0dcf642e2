#!/bin/bash
# The licence (ISC, as OpenSSH's sftp-server.c): LICENSE holds its text,
# every C source and header (the server's, the tests' and the benchmarks')
# starts with the short notice, and debian/copyright names it in DEP-5
# form.  A new file without the notice fails here.  And no source, build
# file or doc/design.md names a tracker number ("issue" and a number): a
# reader of the code has no tracker, so comments name the feature.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

SRC=${top_srcdir:-$TESTS_DIR/..}
NOTICE1='/* SPDX-License-Identifier: ISC'
NOTICE2=' * Copyright (c) 2026 The uring-sftp-server developers.  See LICENSE. */'

check "LICENSE is the ISC licence" \
	grep -q '^Permission to use, copy, modify, and distribute this software for any$' \
	"$SRC/LICENSE"
check "LICENSE names the copyright holders" \
	grep -qx 'Copyright (c) 2026 The uring-sftp-server developers' \
	"$SRC/LICENSE"

missing=()
count=0
while IFS= read -r f; do
	count=$((count + 1))
	if [ "$(sed -n 1p "$f")" != "$NOTICE1" ] ||
		[ "$(sed -n 2p "$f")" != "$NOTICE2" ]; then
		missing+=("${f#"$SRC"/}")
	fi
done < <(find "$SRC" -maxdepth 1 -name '*.c'
	find "$SRC/include" "$SRC/tests" "$SRC/bench" -maxdepth 1 \
		-name '*.[ch]' ! -name 'fuzz-probe.c')
check "found the C sources ($count)" test "$count" -ge 50
if [ ${#missing[@]} -eq 0 ]; then
	pass "every C source and header starts with the ISC notice"
else
	fail "without the ISC notice on their first two lines: ${missing[*]}"
fi

# tracker_numbers FILE...: the lines that name an issue by its number.
tracker_numbers() {
	grep -n -i -E 'issues? #?[0-9]' "$@"
}
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
printf '/* Extreme offsets (Issue %d item 2). */\n' 10 >"$probe"
check "a tracker number put in a comment is found" tracker_numbers "$probe"
mapfile -t files < <(cd "$SRC" && find tests bench .ci debian -maxdepth 1 \
	-type f \( -name '*.[ch]' -o -name '*.sh' -o -name '*.py' -o \
	-name '*.md' -o -path '.ci/*' -o -path 'debian/*' \))
rc=0
found=$(cd "$SRC" && tracker_numbers -- *.c include/*.h Makefile.am \
	configure.ac uring-sftp-server.8 doc/design.md "${files[@]}") || rc=$?
case $rc in
0)
	fail "name the feature, not the tracker's number:"
	echo "$found"
	;;
1) pass "no source, build file or doc/design.md names a tracker number" ;;
*) fail "grep for tracker numbers failed ($rc): $found" ;;
esac

C=$SRC/debian/copyright
check "debian/copyright is DEP-5" grep -qx \
	'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/' "$C"
check "debian/copyright: Files: * under License: ISC" \
	sh -c "grep -A3 -x 'Files: \*' '$C' | grep -qx 'License: ISC'"
check "debian/copyright has the licence's text" \
	grep -q '^ Permission to use, copy, modify, and distribute this software' "$C"
check "debian/copyright names no placeholder" \
	sh -c "! grep -qi 'undecided\|placeholder' '$C'"
finish

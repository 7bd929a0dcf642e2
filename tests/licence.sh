#!/bin/bash
# The licence (ISC, as OpenSSH's sftp-server.c): LICENSE holds its text,
# every C source and header (the server's, the tests' and the benchmarks')
# starts with the short notice, and debian/copyright names it in DEP-5
# form.  A new file without the notice fails here.
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

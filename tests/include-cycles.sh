#!/bin/bash
# No include cycles (doc/design.md "Layers"): tests/include-cycles.py
# over the sources, and once over a copy with a cycle put in, so that the
# check itself is seen to fail when it should.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

SRC=${top_srcdir:-$TESTS_DIR/..}
CHECK=$TESTS_DIR/include-cycles.py

if out=$(python3 "$CHECK" "$SRC" 2>&1); then
	pass "no include cycles among $(cd "$SRC" && echo *.c | wc -w) .c files"
else
	fail "include cycles:"
	echo "$out"
fi

copy=$(mktemp -d)
trap 'rm -rf "$copy"' EXIT
mkdir "$copy/include"
cp "$SRC"/*.c "$copy/"
cp "$SRC"/include/*.h "$copy/include/"
# buf.c is included by nearly everything: buf.c including queue.h closes a
# loop through request.h.
echo '#include "queue.h"' >>"$copy/buf.c"
if out=$(python3 "$CHECK" "$copy" 2>&1); then
	fail "a cycle put in (buf.c includes queue.h) was not found"
elif grep -q '^cycle: .*buf.*queue' <<<"$out"; then
	pass "a cycle put in is found (buf.c includes queue.h)"
else
	fail "a cycle put in was reported wrongly:"
	echo "$out"
fi
finish

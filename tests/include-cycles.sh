#!/bin/bash
# No include cycles (doc/design.md "Layers"): tests/include-cycles.py
# over the sources, and once over a copy with a cycle put in, so that the
# check itself is seen to fail when it should: once for an include, once for
# two .c files that call each other through a shared header.
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

# expect_cycle FILE TEXT WHAT PATTERN: with TEXT appended to a fresh copy
# of FILE (the rest of the copy as the sources are), the check must fail
# with a line matching PATTERN.
expect_cycle() {
	cp "$SRC"/*.c "$copy/"
	cp "$SRC"/include/*.h "$copy/include/"
	printf '%s\n' "$2" >>"$copy/$1"
	if out=$(python3 "$CHECK" "$copy" 2>&1); then
		fail "a cycle put in ($3) was not found"
	elif grep -q "$4" <<<"$out"; then
		pass "a cycle put in is found ($3)"
	else
		fail "a cycle put in ($3) was reported wrongly:"
		echo "$out"
	fi
}

# buf.c is included by nearly everything: buf.c including queue.h closes a
# loop through request.h.
expect_cycle buf.c '#include "queue.h"' "buf.c includes queue.h" \
	'^cycle: .*buf.*queue'
# The loop that came back once between handlers-file.c and handlers-path.c
# (each called a function of the other, both declared in handlers.h): here
# setstat.c calls setstat_request (handlers-path.c), which calls
# apply_attrib (setstat.c).  No include is added.
expect_cycle setstat.c "$(printf 'int cycle_probe(void)\n{\n\treturn setstat_request(0, 0, 0);\n}')" \
	"setstat.c and handlers-path.c call each other" \
	'^call cycle: .*handlers-path.*setstat'
finish

#!/bin/bash
# The documents hold together: every relative link in README.md, doc/*.md
# and bench/README.md names a file that exists and, with #anchor, a
# heading of that file as GitHub writes its anchors (tests/doclinks.py).
# The checker is first seen to catch what it must on a small tree of its
# own: a missing file, a missing heading, GitHub's anchor rules.  (That
# the README's options table names every option: tests/manpage.sh.)
# Functions here are called through `check`:
# shellcheck disable=SC2317
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

SRC=${top_srcdir:-$TESTS_DIR/..}
[ -x "$PYTHON3" ] || skip_all "no Python at $PYTHON3"
make_workdir docs
LINKS=("$PYTHON3" "$TESTS_DIR/doclinks.py" links)

# --- the checker, on a tree made to hold each case -------------------------
mkdir -p "$WORK/t/doc"
cat >"$WORK/t/README.md" <<'MD'
# Title

## Uploads (`--atomic-uploads`, `-m`, `-M`)

## Differences from OpenSSH's sftp-server

## Notes

### Notes

[good anchor](#uploads---atomic-uploads--m--m)
[apostrophe dropped](#differences-from-opensshs-sftp-server)
[repeated heading](#notes-1)
[into a guide](doc/guide.md#a-heading)
[bad anchor](#no-such-heading)
[bad file](doc/missing.md)
[bad anchor in a guide](doc/guide.md#not-there)
[outside](https://example.org/#whatever)
`[in a code span](doc/missing-too.md)`

    [in a code block](doc/missing-three.md)
MD
cat >"$WORK/t/doc/guide.md" <<'MD'
# Guide

## A heading

[back](../README.md#notes)
MD
if "${LINKS[@]}" "$WORK/t" README.md doc/guide.md >"$WORK/t.out"; then
	fail "the checker fails on the broken links of its test tree"
else
	pass "the checker fails on the broken links of its test tree"
fi
verdict() { grep -q "^$1 $2\$\|^$1 $2:" "$WORK/t.out"; }
for ok in 'README.md:11 #uploads---atomic-uploads--m--m' \
	'README.md:12 #differences-from-opensshs-sftp-server' \
	'README.md:13 #notes-1' 'README.md:14 doc/guide.md#a-heading' \
	'doc/guide.md:5 ../README.md#notes'; do
	check "checker: $ok resolves" verdict ok "$ok"
done
for bad in 'README.md:15 #no-such-heading' 'README.md:16 doc/missing.md' \
	'README.md:17 doc/guide.md#not-there'; do
	check "checker: $bad is broken" verdict broken "$bad"
done
check "checker: links in code and to other sites are not checked" \
	test "$(grep -c . "$WORK/t.out")" -eq 8

# --- the documents ----------------------------------------------------------
cd "$SRC"
docs=(README.md bench/README.md doc/*.md)
"${LINKS[@]}" "$SRC" "${docs[@]}" >"$WORK/links" || true
check "the documents have links ($(grep -c . "$WORK/links"))" \
	test "$(grep -c . "$WORK/links")" -ge 20
while read -r verdict rest; do
	case $verdict in
	ok) pass "link $rest" ;;
	*) fail "link $rest" ;;
	esac
done <"$WORK/links"
finish

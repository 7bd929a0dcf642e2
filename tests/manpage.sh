#!/bin/bash
# Functions here are mostly called through `check`:
# shellcheck disable=SC2317
# uring-sftp-server.8 and the README against the program: every option
# that `--help` lists (the letters of the usage lines, every --long
# option) has an ".It Fl ..." entry in the man page and a row in the
# README's options table (tests/doclinks.py, seen to notice a row taken
# out), and the page is clean under `mandoc -T lint` at every level.  A
# new option needs only its man page entry and its README row; nothing
# here lists options.
set -eu
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

find_server
SRC=${top_srcdir:-$TESTS_DIR/..}
PAGE=${MANPAGE:-$SRC/uring-sftp-server.8}
README=$SRC/README.md
[ -f "$PAGE" ] || skip_all "no man page at $PAGE"
make_workdir manpage

"$SERVER" --help >"$WORK/help"

# The options the program lists.  Letters: the words of the usage lines
# that start with one dash, each letter on its own ("-ehR" is -e -h -R),
# and the letters that begin a line of the option list ("  -m mode").
# Long options: every --name.
{
	sed -n '/^usage:/,/^$/p' "$WORK/help" | tr -cs 'A-Za-z0-9_-' '\n' |
		sed -n 's/^-\([A-Za-z][A-Za-z]*\)$/\1/p' | fold -w1
	sed -n 's/^  -\([A-Za-z]\) .*/\1/p' "$WORK/help"
	grep -o -- '--[a-z][a-z0-9-]*' "$WORK/help" | sed 's/^--/-/'
} | sort -u >"$WORK/listed"

# The options the page documents: ".It Fl X ..." with \- for a dash.
sed -n 's/^\.It Fl \([^ ]*\).*/\1/p' "$PAGE" | sed 's/\\-/-/g' |
	sort -u >"$WORK/documented"

check "--help lists options (parsed $(wc -l <"$WORK/listed"))" \
	test "$(wc -l <"$WORK/listed")" -ge 10
while read -r opt; do
	check "man page documents -$opt" grep -qxF -- "$opt" "$WORK/documented"
done <"$WORK/listed"

# The README's options table: a row per option, by its first word.
readme_options() {
	"$PYTHON3" "$TESTS_DIR/doclinks.py" options "$1" "$WORK/listed"
}
readme_options "$README" >"$WORK/readme-options" || true
while read -r verdict opt; do
	case $verdict in
	ok) pass "README's options table has $opt" ;;
	*) fail "README's options table has $opt ($verdict)" ;;
	esac
done <"$WORK/readme-options"
# ... and the check notices a row that is not there.
grep -v '^| `--confine' "$README" >"$WORK/README-without-confine.md"
if readme_options "$WORK/README-without-confine.md" >"$WORK/without"; then
	fail "a README without the --confine row fails the check"
else
	check "a README without the --confine row fails the check" \
		grep -qx -- 'missing --confine' "$WORK/without"
fi

render_page() {
	mandoc -T utf8 "$PAGE" >"$WORK/page.txt"
}

if command -v mandoc >/dev/null; then
	# mandoc also reports cross references missing from the system's
	# mandoc.db: the system's state, not the page's.
	mandoc -T lint -W all "$PAGE" 2>&1 | grep -v 'mandoc\.db' \
		>"$WORK/lint" || true
	if [ -s "$WORK/lint" ]; then
		fail "mandoc -T lint"
		sed 's/^/    /' "$WORK/lint"
	else
		pass "mandoc -T lint: clean"
	fi
	check "man page renders" render_page
	check "rendered page names the program" \
		grep -q 'uring-sftp-server' "$WORK/page.txt"
else
	note "mandoc is not installed (apt-get install mandoc): lint skipped"
fi
finish

#!/usr/bin/python3
"""The documents' links and the README's options table.

    doclinks.py links ROOT FILE...
        Every relative link in each Markdown FILE (paths relative to ROOT)
        must name a file that exists and, with #anchor, a heading of that
        Markdown file (GitHub's anchors: lowercase, punctuation removed,
        spaces to '-', "-1", "-2", ... for repeats).  Links in code spans
        and code blocks are not links.  One line per link checked:
        "ok FILE:LINE TARGET" or "broken FILE:LINE TARGET: why".
    doclinks.py options README HELP_OPTIONS
        Every option in HELP_OPTIONS (one per line, as tests/manpage.sh
        lists them: "e", "-backend") must be the first cell of a row of the
        README's "## Options" table.  One line per option: "ok -X" or
        "missing -X".

Exit status 1 when anything is broken or missing.  Standard library only.
"""

import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^()\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """(line number, line) of the lines outside code blocks, with code spans
    blanked out."""
    fenced = False
    prev_blank = True
    in_list = False
    for n, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        blank = not line.strip()
        if re.match(r"^\s*([*+-]|\d+\.)\s", line):
            in_list = True
        elif not blank and not line.startswith(" "):
            in_list = False
        # An indented code block: four spaces after a blank line, outside
        # a list (inside one, indented lines continue the item).
        indented = line.startswith("    ") and not in_list
        if fenced or (indented and prev_blank):
            prev_blank = blank or prev_blank
            continue
        prev_blank = blank
        yield n, re.sub(r"(`+).*?\1", "", line)


def slug(heading):
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links: text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)  # punctuation (` ' : . , ( ) ...)
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor of a Markdown file's headings."""
    seen = {}
    out = set()
    with open(path, encoding="utf-8") as f:
        text = f.read()
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else "%s-%d" % (base, n))
    return out


def check_links(root, files):
    bad = 0
    for name in files:
        path = os.path.join(root, name)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in prose_lines(text):
            for m in LINK.finditer(line):
                target = m.group(1)
                where = "%s:%d %s" % (name, n, target)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # https:, mailto: ...: not ours to check
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(
                    os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                if not os.path.exists(dest):
                    print("broken %s: no file %s" % (where,
                          os.path.relpath(dest, root)))
                    bad += 1
                    continue
                if anchor:
                    if not dest.endswith(".md"):
                        print("broken %s: an anchor into a file that is "
                              "not Markdown" % where)
                        bad += 1
                        continue
                    if anchor not in anchors(dest):
                        print("broken %s: no heading #%s in %s"
                              % (where, anchor, os.path.relpath(dest, root)))
                        bad += 1
                        continue
                print("ok %s" % where)
    return bad


def check_options(readme, listed):
    """The README's options table: the first cell of each row of the table
    under "## Options", its first word, e.g. `--confine[=DIR]` -> -confine,
    `-d start_directory` -> d."""
    with open(readme, encoding="utf-8") as f:
        lines = f.read().splitlines()
    try:
        start = lines.index("## Options")
    except ValueError:
        print("missing: README has no \"## Options\" section")
        return 1
    table = set()
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        m = re.match(r"^\|\s*`-(-?[A-Za-z][A-Za-z0-9-]*)", line)
        if m:
            table.add(m.group(1))
    bad = 0
    with open(listed) as f:
        for opt in (w.strip() for w in f):
            if not opt:
                continue
            if opt in table:
                print("ok -%s" % opt)
            else:
                print("missing -%s" % opt)
                bad += 1
    return bad


def main(argv):
    if len(argv) >= 3 and argv[1] == "links":
        bad = check_links(argv[2], argv[3:])
    elif len(argv) == 4 and argv[1] == "options":
        bad = check_options(argv[2], argv[3])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""Include cycles among the sources: a file's header (include/foo.h) and its
foo.c count as one module, which depends on every module whose header either
of them includes.  A header shared by several .c files (handlers.h declares
the handlers of handlers-file.c, handlers-path.c, ...) hides who depends on
whom, so the calls count too: a .c that uses a function another .c defines
depends on that .c, and those dependencies must not loop either.  Prints
each cycle (a strongly connected group of modules, with the edges inside
it) and exits 1 if there is one, else exits 0.
Usage: include-cycles.py SRCDIR"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)\.h"', re.M)


# A function definition that other files can call: not static, its
# parameter list closed at the end of a line and its body opening on the
# next (the layout .clang-format gives).
DEFINITION = re.compile(
    r'^(?!static\b)[A-Za-z_][\w \t*]*?\b(\w+)\([^;{}]*?\)\s*\n\{', re.M)
IDENTIFIER = re.compile(r'\b[A-Za-z_]\w*\b')


def code(path):
    """The file's text without comments and string literals, whose words
    are not uses."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r'/\*.*?\*/', lambda m: '\n' * m.group(0).count('\n'),
                  text, flags=re.S)
    text = re.sub(r'//[^\n]*', '', text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


def calls(root):
    """Module -> the other .c files whose functions it calls or names."""
    texts = {os.path.basename(p)[:-2]: code(p)
             for p in glob.glob(os.path.join(root, "*.c"))}
    owner = {fn: name for name, text in texts.items()
             for fn in DEFINITION.findall(text)}
    edges = {name: set() for name in texts}
    for name, text in texts.items():
        for word in set(IDENTIFIER.findall(text)):
            if owner.get(word, name) != name:
                edges[name].add(owner[word])
    return edges


def includes(path):
    with open(path, encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def graph(root):
    sources = {os.path.basename(p)[:-2]: p
               for p in glob.glob(os.path.join(root, "*.c"))}
    headers = {os.path.basename(p)[:-2]: p
               for p in glob.glob(os.path.join(root, "include", "*.h"))}
    edges = {name: set() for name in set(sources) | set(headers)}
    for table in (sources, headers):
        for name, path in table.items():
            for inc in includes(path):
                # Headers without a .c of their own (sftp.h, server.h)
                # lead nowhere but through their own includes.
                if inc != name and inc in edges:
                    edges[name].add(inc)
    return edges


def cycles(edges):
    """Tarjan's strongly connected components of size > 1."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    edges = graph(root)
    if not any(edges.values()):
        print("no includes found under %s" % root)
        return 2
    found = 0
    for kind, deps in (("", edges), ("call ", calls(root))):
        for group in cycles(deps):
            found += 1
            print("%scycle: %s" % (kind, " ".join(group)))
            for name in group:
                print("  %s -> %s" % (name, " ".join(
                    sorted(w for w in deps[name] if w in group))))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Include cycles among the sources: a file's header (include/foo.h) and its
foo.c count as one module, which depends on every module whose header either
of them includes.  Prints each cycle (a strongly connected group of modules,
with the edges inside it) and exits 1 if there is one, else exits 0.
Usage: include-cycles.py SRCDIR"""
import glob
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)\.h"', re.M)


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
    found = cycles(edges)
    for group in found:
        print("cycle: " + " ".join(group))
        for name in group:
            print("  %s -> %s" % (name, " ".join(
                sorted(w for w in edges[name] if w in group))))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Draw bench/out/ratios.svg from a compare.py run, with gnuplot.

For each scenario (pinned ones again, marked so): the speed ratio
ours/OpenSSH of the medians, with the lowest and highest per-round ratio as
an error bar, and the CPU ratio (the server's own CPU time, ours/OpenSSH)
beside it, with its per-round spread.  The y axis is logarithmic, so 2x
faster and 2x cheaper look the same size; 1 is OpenSSH.

    bench/chart.py [RESULTS_JSON [SVG]]
        default bench/out/results.json (or $BENCH_OUT/results.json), the SVG
        next to it as ratios.svg
    bench/chart.py --table doc/benchmarks.md SVG
        from the medians in doc/benchmarks.md's table, which has no
        per-round spread; the chart says so.

compare.py's results.json: {"unpinned"|"pinned": {scenario: {server: {"rate":
[per round], "cpu": [per round], ...}}}, "rounds": N}; round i of every
server belongs together.  Only "openssh" and "ours" are drawn.  Standard
library and gnuplot (Debian: gnuplot-nox) only.
"""

import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def ratio(a, b):
    return a / b if a and b else None


def per_round(ours, theirs):
    return [u / o for o, u in zip(theirs, ours) if o and u]


def rows_from_results(results):
    """(label, rate ratio, lo, hi, CPU ratio, lo, hi) per scenario."""
    rows = []
    for group, suffix in (("unpinned", ""), ("pinned", " (pinned)")):
        for name, res in results.get(group, {}).items():
            o, u = res.get("openssh"), res.get("ours")
            if not o or not u:
                continue
            ro = [x for x in o.get("rate", []) if x]
            ru = [x for x in u.get("rate", []) if x]
            if not ro or not ru:
                continue
            co = [x for x in o.get("cpu", []) if x]
            cu = [x for x in u.get("cpu", []) if x]
            rr = per_round(u["rate"], o["rate"]) or [0]
            cr = per_round(u.get("cpu", []), o.get("cpu", [])) or [0]
            r = ratio(statistics.median(ru), statistics.median(ro))
            c = ratio(statistics.median(cu), statistics.median(co)) \
                if co and cu else None
            rows.append((name + suffix, r, min(rr), max(rr),
                         c, min(cr) if c else None, max(cr) if c else None))
    return rows


def rows_from_table(path):
    """doc/benchmarks.md's table: | scenario | ratio | CPU ratio | pinned ratio |
    pinned CPU ratio |, medians only."""
    rows = []
    pinned = []
    num = re.compile(r"^\d+(\.\d+)?$")
    with open(path) as f:
        lines = f.read().splitlines()
    # In doc/benchmarks.md, only the "## Benchmarks..." section.
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    start = [i for i in heads if lines[i].startswith("## Benchmarks")]
    if start:
        end = [i for i in heads if i > start[0]]
        lines = lines[start[0]:end[0] if end else len(lines)]
    for line in lines:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not num.match(cells[1]):
            continue
        label = cells[0].replace("`", "")
        r = float(cells[1])
        c = float(cells[2]) if num.match(cells[2]) else None
        rows.append((label, r, r, r, c, c, c))
        if len(cells) >= 5 and num.match(cells[3]):
            pr = float(cells[3])
            pc = float(cells[4]) if num.match(cells[4]) else None
            pinned.append((label + " (pinned)", pr, pr, pr, pc, pc, pc))
    return rows + pinned


def fmt(x):
    return "NaN" if x is None else "%.4f" % x


def draw(rows, svg, subtitle):
    gnuplot = shutil.which("gnuplot")
    if gnuplot is None:
        sys.exit("chart.py: no gnuplot (apt-get install gnuplot-nox): "
                 "%s not written" % svg)
    if not rows:
        sys.exit("chart.py: no scenario with results for both servers")
    lo = min(x for row in rows for x in row[1:] if x) / 1.5
    hi = max(x for row in rows for x in row[1:] if x) * 1.5
    with tempfile.TemporaryDirectory(prefix="chart.") as tmp:
        data = os.path.join(tmp, "ratios.dat")
        with open(data, "w") as f:
            for row in rows:
                f.write('"%s" %s\n' % (row[0].replace('"', "'"),
                                       " ".join(fmt(x) for x in row[1:])))
        script = os.path.join(tmp, "ratios.gp")
        width = max(900, 55 * len(rows) + 300)
        with open(script, "w") as f:
            f.write("""\
set terminal svg size %d,760 dynamic font "sans,11" background rgb "white"
set output '%s'
set title "uring-sftp-server / OpenSSH sftp-server, per scenario\\n{/*0.85 %s}"
set style data histogram
set style histogram errorbars gap 2 lw 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set yrange [%g:%g]
set ytics (0.1, 0.2, 0.3, 0.5, 0.7, 1, 1.5, 2, 3, 5, 7, 10)
set grid ytics lc rgb "#dddddd"
set ylabel "ratio, ours / OpenSSH (log scale)"
set xtics rotate by 40 right noenhanced font ",10"
set bmargin 16
set lmargin 28
set key outside top center horizontal
set arrow from graph 0, first 1 to graph 1, first 1 nohead lc rgb "black" lw 1.5
plot '%s' using 2:3:4:xtic(1) title "speed (higher is faster); bar: per-round range" lc rgb "#2b6cb0", \\
     '' using 5:6:7 title "server CPU (lower is cheaper); bar: per-round range" lc rgb "#dd8452"
""" % (width, svg, subtitle.replace('"', "'"), lo, hi, data))
        subprocess.run([gnuplot, script], check=True)


def main(argv):
    if len(argv) >= 2 and argv[0] == "--table":
        rows = rows_from_table(argv[1])
        svg = os.path.abspath(argv[2] if len(argv) > 2 else "ratios.svg")
        subtitle = ("from the medians in %s's table, no per-round spread; "
                    "make bench draws it from a run" % os.path.basename(
                        argv[1]))
    else:
        out = os.environ.get("BENCH_OUT", os.path.join(HERE, "out"))
        src = argv[0] if argv else os.path.join(out, "results.json")
        svg = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(
            os.path.dirname(src), "ratios.svg"))
        with open(src) as f:
            results = json.load(f)
        rows = rows_from_results(results)
        when = datetime.datetime.fromtimestamp(
            os.path.getmtime(src)).strftime("%Y-%m-%d %H:%M")
        subtitle = "compare.py run of %s, %s rounds, medians%s" % (
            when, results.get("rounds", "?"),
            "" if results.get("cold", True) else ", page cache not dropped")
    draw(rows, svg, subtitle)
    print("chart: %s" % svg, file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])

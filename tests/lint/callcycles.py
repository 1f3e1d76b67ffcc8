#!/usr/bin/env python3
"""The call cycles between the .c files of tcfs, from Universal Ctags.

A file uses another when a function of the first names a function the
second defines (not static): a call, or a callback handed over, which is
a call all the same.  Files that use each other, directly or through
others, form a cycle: to change one, a reader must understand them all.
The rule (doc/ARCHITECTURE.md): none in index/, none of more than three
files in fs/, none at all between the rooms (index/ never calls up into
fs/ or tools/).

    tests/lint/callcycles.py [--functions] [--tap] [DIR...]
                                               (default: fs index tools)

Prints each cycle with the files in it and one call for each step, then
`N cycles, N over the limits`; exits 1 when any is over them.  --tap
prints that as TAP instead, one check per cycle, for the test suite.
--functions also prints lines per function: the mean and the five
longest.  Needs ctags (Debian: universal-ctags).
"""
import collections
import json
import os
import re
import subprocess
import sys

LIMITS = {"index": 1, "fs": 3}  # the most files a cycle may hold; else 1
WORD = re.compile(r"[A-Za-z_]\w*")
# Comments, strings and character literals: no calls in them.
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                   r"'(?:\\.|[^'\\\n])*'", re.S)


def bail(why):
    print("Bail out! " + why)
    sys.exit(1)


def tags(paths):
    try:
        out = subprocess.run(
            ["ctags", "--output-format=json", "--fields=+nesK",
             "--kinds-C=f", "--language-force=C", "-f", "-"] + paths,
            check=True, stdout=subprocess.PIPE, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        # Without the calls nothing can be said: fail, never pass.
        bail("ctags failed (%s); Debian: apt install universal-ctags" % e)
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


def sources(dirs):
    for d in dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if f.endswith(".c"):
                    yield os.path.join(root, f)


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


def uses(paths, funcs):
    """{file: {other file: (function, callee)}} and the functions."""
    defined = {t["name"]: t["path"] for t in funcs if not t.get("file")}
    by_file = collections.defaultdict(list)
    for t in funcs:
        by_file[t["path"]].append(t)
    edges = collections.defaultdict(dict)
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = NOISE.sub(blank, f.read()).split("\n")
        for t in by_file[path]:
            body = "\n".join(lines[t["line"] - 1:t.get("end", t["line"])])
            for w in WORD.findall(body):
                to = defined.get(w)
                if to and to != path and to not in edges[path]:
                    edges[path][to] = (t["name"], w)
    return edges


def sccs(nodes, edges):
    """Tarjan's strongly connected components, each of two files or more."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def limit(comp):
    rooms = {p.split(os.sep)[0] for p in comp}
    if len(rooms) > 1:
        return 1  # between rooms: none
    return LIMITS.get(rooms.pop(), 1)


def functions(funcs):
    sizes = sorted(((t.get("end", t["line"]) - t["line"] + 1,
                     "%s:%d %s" % (t["path"], t["line"], t["name"]))
                    for t in funcs), reverse=True)
    mean = sum(s for s, _ in sizes) / max(len(sizes), 1)
    over = sum(1 for s, _ in sizes if s > 50)
    print("%d functions, %.1f lines on average, %d over 50" %
          (len(sizes), mean, over))
    for s, where in sizes[:5]:
        print("  %4d  %s" % (s, where))


def main(argv):
    want_functions = "--functions" in argv
    dirs = [a for a in argv if not a.startswith("--")] or ["fs", "index",
                                                           "tools"]
    paths = list(sources(dirs))
    if not paths:  # run from elsewhere than the source root
        bail("no .c files in %s" % " ".join(dirs))
    funcs = tags(paths)
    edges = uses(paths, funcs)
    tap = "--tap" in argv
    bad = 0
    comps = sccs(paths, edges)
    for n, comp in enumerate(comps, 1):
        over = len(comp) > limit(comp)
        bad += over
        if tap:
            print("%sok %d - a call cycle of %d files, within the limit of "
                  "its room" % ("not " if over else "", n, len(comp)))
        else:
            print("%s cycle of %d files:" %
                  ("OVER THE LIMIT:" if over else "a", len(comp)))
        for f in comp:
            for to in comp:
                if to in edges[f]:
                    fn, callee = edges[f][to]
                    print("%s  %s -> %s  (%s calls %s)" %
                          ("#" if tap else "", f, to, fn, callee))
    if tap:
        print("ok %d - %d .c files read, %d cycles, %d over the limits" %
              (len(comps) + 1, len(paths), len(comps), bad))
        print("1..%d" % (len(comps) + 1))
    else:
        print("%d cycles, %d over the limits" % (len(comps), bad))
    if want_functions:
        functions(funcs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

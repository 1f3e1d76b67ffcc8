#!/usr/bin/env python3
"""Counts every TAP check of a meson test run and prints the closing line
'N passed, N failed, N skipped'.  A test that died without reporting a
failing check counts as one failure of its own.  Each failed check is
printed first with the TAP comments after it, which say why: CI shows only
the end of the run, and meson prints a TAP test's stderr, not its stdout."""
import json
import re
import sys

passed = failed = skipped = 0
args = sys.argv[1:]
if args[:1] == ["--failed"]:	# failures found outside meson (builds)
    failed, args = int(args[1]), args[2:]
for path in args:
    with open(path) as log:
        for line in log:
            t = json.loads(line)
            out = t.get("stdout") or ""
            p = f = s = 0
            for m in re.finditer(r"^(not )?ok\b[^\n]*((?:\n#[^\n]*)*)",
                                 out, re.M):
                text = m.group(0).split("\n", 1)[0]
                if re.search(r"#\s*(SKIP|TODO)", text, re.I):
                    s += 1
                elif m.group(1):
                    f += 1
                    print(f"{t['name']}: {m.group(0)}")
                else:
                    p += 1
            plan = re.search(r"^1\.\.0\s*#\s*SKIP", out, re.M | re.I)
            if plan:
                s += 1
            if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and f == 0:
                f += 1
                print(f"{t['name']}: {t.get('result')} without a failing "
                      "check (crashed or timed out?)", file=sys.stderr)
            passed, failed, skipped = passed + p, failed + f, skipped + s
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)

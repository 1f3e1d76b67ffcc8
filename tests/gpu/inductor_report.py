#!/usr/bin/env python3
"""tests/gpu/inductor_remote.sh's bookkeeping (plain Python, no torch).

  record LABEL REP ONE RC START END R1B R1A R2B R2A SB SA
      ONE: inductor_run.py's output; R*: INFO commandstats of Redis R1
      (tcfs's) and R2 (PyTorch's) before and after; SB/SA: `tcfs stats
      --json` before and after ('-' for a plain dir).  Prints the record.
  get PATH           a number from the JSON on stdin (dotted; 0 if absent)
  fact NAME VALUE    a fact line (VALUE is JSON)
  summary RESULTS OUT  the table, targets, PASS/FAIL; exit 1 on a FAIL
"""
import collections
import json
import re
import statistics
import sys


def load(path):
    try:
        text = open(path).read().strip()
    except OSError:
        return None
    for doc in (text, text.splitlines()[-1] if text else ""):
        try:
            return json.loads(doc)
        except ValueError:
            pass
    return None


def commands(before, after):
    """Redis calls between two INFO commandstats, INFO itself left out."""
    def calls(path):
        d = {}
        for line in open(path).read().splitlines():
            m = re.match(r"^cmdstat_([^:]+):calls=(\d+)", line.strip())
            if m:
                d[m.group(1)] = int(m.group(2))
        return d
    b, a = calls(before), calls(after)
    return {k: a[k] - b.get(k, 0) for k in a
            if k != "info" and a[k] != b.get(k, 0)}


def dig(doc, path):
    for p in path.split("."):
        doc = doc.get(p, {}) if isinstance(doc, dict) else {}
    return doc if isinstance(doc, (int, float)) else 0


def record(a):
    label, rep, one, rc, start, end = a[:6]
    out = load(one) or {}
    rec = {"label": label, "rep": int(rep), "rc": int(rc),
           "correct": bool(out.get("correct")),
           "compile_s": out.get("compile_and_run_seconds"),
           "process_s": round(float(end) - float(start), 3),
           "counters": out.get("counters", {}),
           "r1": commands(a[6], a[7]), "r2": commands(a[8], a[9])}
    if a[10] != "-":
        sb, sa = load(a[10]) or {}, load(a[11]) or {}
        rec["tcfs"] = {k: dig(sa, k) - dig(sb, k) for k in (
            "hits", "misses", "remote.hits", "remote.misses",
            "remote.fxgraph_hits", "remote.aotautograd_hits",
            "remote.published", "remote.refused")}
    print(json.dumps(rec))


def probes(path):
    """{kind: [hits, misses, remote]} from `tcfs log --json`."""
    n = collections.defaultdict(lambda: [0, 0, 0])
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return {}
    for line in lines:
        try:
            e = json.loads(line)
        except ValueError:
            continue
        k = n[e.get("kind", "?")]
        k[0 if e.get("hit") else 1] += 1
        k[2] += 1 if e.get("remote") else 0
    return dict(n)


def div(a, b):
    """a / b, NaN where b is 0 (a run that failed, or the stand-in)."""
    return a / b if b else float("nan")


def summary(path, out):
    runs, facts = collections.defaultdict(list), {}
    for line in open(path):
        r = json.loads(line)
        if "fact" in r:
            facts[r["fact"]] = r["value"]
        else:
            runs[r["label"]].append(r)
    med = {k: (statistics.median(r["compile_s"] or 0 for r in v),
               statistics.median(r["process_s"] for r in v))
           for k, v in runs.items()}
    base = med.get("plain-warm", (1, 1))
    print("run               n  compile s  process s  /plain-warm (compile, process)")
    for k in ("plain-cold", "plain-warm", "noremote-cold", "A-cold",
              "A-warm", "B-first", "B-warm", "pt-cold", "pt-first",
              "interop-pt-reads-tcfs", "interop-tcfs-reads-pt"):
        if k in med:
            c, p = med[k]
            print(f"{k:22} {len(runs[k])} {c:9.2f} {p:10.2f}   "
                  f"{div(c, base[0]):.3f}  {div(p, base[1]):.3f}")
    fails = []

    def check(name, ok):
        print(("PASS" if ok else "FAIL") + ": " + name)
        if not ok:
            fails.append(name)

    def ratio(name, a, b, target):
        if a in med and b in med:
            rc, rp = div(med[a][0], med[b][0]), div(med[a][1], med[b][1])
            met = "met" if max(rc, rp) <= target else "MISSED"
            print(f"target {name}: compile {rc:.3f}, process {rp:.3f} "
                  f"(<= {target}) {met}")
    print("medians; all runs are fresh processes")
    ratio("B-first / plain-warm", "B-first", "plain-warm", 1.05)
    ratio("B-first / pt-first", "B-first", "pt-first", 1.00)
    ratio("A-cold / noremote-cold", "A-cold", "noremote-cold", 1.03)
    for k, v in runs.items():
        check(f"{k}: every run exit 0 and right",
              all(r["rc"] == 0 and r["correct"] for r in v))
    warm = [sum(r["r1"].values()) for r in runs.get("B-warm", [])]
    print(f"Redis commands of B's warm runs: {warm}; of A's: "
          f"{[sum(r['r1'].values()) for r in runs.get('A-warm', [])]}")
    check("B's warm runs: 0 Redis commands", bool(warm) and max(warm) == 0)
    fx = [r["tcfs"]["remote.fxgraph_hits"] for r in runs.get("B-first", [])]
    check(f"B's first runs: remote fx graph hits {fx} > 0",
          bool(fx) and min(fx) > 0)
    for r in runs.get("B-first", []):
        print(f"  B-first #{r['rep']}: counters {r['counters']} tcfs {r['tcfs']}")
    for r in runs.get("pt-first", []):
        print(f"  pt-first #{r['rep']}: counters {r['counters']}")
    x = (runs.get("interop-pt-reads-tcfs") or [{}])[0]
    check("interop: stock PyTorch hits what tcfs published "
          f"(counters {x.get('counters')})",
          x.get("counters", {}).get("fxgraph_cache_hit", 0) > 0)
    x = (runs.get("interop-tcfs-reads-pt") or [{}])[0]
    check("interop: tcfs (any) serves what PyTorch published "
          f"(tcfs {x.get('tcfs')})",
          x.get("tcfs", {}).get("remote.fxgraph_hits", 0) > 0)
    print("facts: " + json.dumps(facts))
    # B2 saw its first run only; B1 its warm runs too.
    node = "B2" if len(runs.get("B-first", [])) > 1 else "B1"
    print(f"a fresh node's probes ({node}) kind: [hits, misses, remote]")
    for k, v in sorted(probes(f"{out}/log-{node}.jsonl").items()):
        print(f"  {k:12} {v}")
    return 1 if fails else 0


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "record":
        record(a)
    elif cmd == "get":
        try:
            print(int(dig(json.load(sys.stdin), a[0])))
        except ValueError:
            print(0)
    elif cmd == "fact":
        print(json.dumps({"fact": a[0], "value": json.loads(a[1])}))
    elif cmd == "summary":
        sys.exit(summary(a[0], a[1]))


if __name__ == "__main__":
    main()

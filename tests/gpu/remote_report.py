#!/usr/bin/env python3
"""tests/gpu/remote.sh's bookkeeping: one JSON record per run, the facts
between runs, and the summary (the ratios issue 22's targets name, and
PASS/FAIL for correctness).  Plain Python, no third-party module: it runs
beside Triton but never imports it.

  record LABEL REP ONE RC START END REDIS_BEFORE REDIS_AFTER [STATS_BEFORE STATS_AFTER]
      ONE is what triton_run.py printed (may be empty: the run failed),
      RC its exit status, START/END the clock around the process,
      REDIS_* `redis-cli INFO commandstats` around it, STATS_* `tcfs stats
      --json` of the mount's store around it (tcfs runs only).  Prints the
      record: triton_run.py's fields, process_seconds, rc, redis (calls by
      command, reads, calls) and, for tcfs runs, tcfs (the store's hits,
      misses, module hits and misses and remote figures this run added).
  get PATH            a number from the JSON on stdin (dotted PATH; 0 if absent)
  groups DIR          how many kernels (key dirs with a group file) DIR holds
  compare A B         B's key dirs against A's: every file B has, A has
                      with the same bytes (group files: the same children)
  origins             {origin: count} of the kernels in `tcfs list --json` on stdin
  fact NAME VALUE     a fact line (VALUE is JSON)
  summary RESULTS     the table, the targets, PASS/FAIL; exit 1 on FAIL
"""
import json
import os
import re
import statistics
import sys

# Redis commands that read a value or ask whether one is there: a round
# trip a cache lookup makes.
READS = {"get", "mget", "strlen", "exists", "getrange", "substr", "hget",
         "hmget", "hgetall", "type", "ttl", "pttl", "scan", "keys"}
KEY_DIR = re.compile(r"^[A-Z2-7]{32,}$")


def load_json(path):
    """The JSON document in PATH, or its last line's (a program's output
    after other lines); None when there is none."""
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    for doc in (text, text.splitlines()[-1] if text else ""):
        try:
            return json.loads(doc)
        except ValueError:
            pass
    return None


def commandstats(path):
    """{command: calls} from INFO commandstats (Redis 7: cmdstat_NAME:calls=N,...)."""
    calls = {}
    try:
        text = open(path).read()
    except OSError:
        return calls
    for line in text.splitlines():
        m = re.match(r"^cmdstat_([^:]+):calls=(\d+)", line.strip())
        if m:
            calls[m.group(1)] = int(m.group(2))
    return calls


def redis_delta(before, after):
    b, a = commandstats(before), commandstats(after)
    d = {k: a[k] - b.get(k, 0) for k in a if a[k] - b.get(k, 0) > 0}
    d.pop("info", None)         # our own INFO commandstats
    return {"commands": d, "reads": sum(v for k, v in d.items() if k in READS),
            "calls": sum(d.values())}


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def tcfs_delta(before, after, pid):
    """What this run added to the store's counts."""
    if not after:
        return None
    before = before or {}
    d = {"hits": num(after.get("hits")) - num(before.get("hits")),
         "misses": num(after.get("misses")) - num(before.get("misses"))}
    am, bm = after.get("modules") or {}, before.get("modules") or {}
    d["module_hits"] = num(am.get("hits")) - num(bm.get("hits"))
    d["module_misses"] = num(am.get("misses")) - num(bm.get("misses"))
    ar, br = after.get("remote"), before.get("remote") or {}
    if isinstance(ar, dict):
        d["remote"] = {k: num(v) - num(br.get(k)) for k, v in ar.items()
                       if k != "breaker"}
        d["remote"]["breaker"] = ar.get("breaker")
        d["remote"]["published_total"] = num(ar.get("published"))
    else:
        d["remote"] = None
    for p in after.get("per_process") or []:
        if pid is not None and p.get("pid") == pid:
            d["process"] = {"hits": p.get("hits"), "misses": p.get("misses")}
    return d


def record(args):
    label, rep, one, rc, start, end, rb, ra = args[:8]
    d = load_json(one) or {"kernels": 0, "correct": False}
    d["label"], d["rep"], d["rc"] = label, int(rep), int(rc)
    d["process_seconds"] = float(end) - float(start)
    d["redis"] = redis_delta(rb, ra)
    if len(args) >= 10:
        d["tcfs"] = tcfs_delta(load_json(args[8]), load_json(args[9]),
                               d.get("pid"))
    print(json.dumps(d), flush=True)


def get(args):
    try:
        v = json.load(sys.stdin)
        for part in args[0].split("."):
            v = v.get(part) if isinstance(v, dict) else None
    except ValueError:
        v = None
    print(int(num(v)))


def key_dirs(top):
    try:
        names = os.listdir(top)
    except OSError:
        return []
    return [n for n in names if KEY_DIR.match(n)
            and os.path.isdir(os.path.join(top, n))]


def groups(args):
    top = args[0]
    print(sum(1 for k in key_dirs(top)
              if any(f.startswith("__grp__")
                     for f in os.listdir(os.path.join(top, k)))))


def children(path):
    try:
        with open(path) as f:
            c = json.load(f).get("child_paths")
    except (OSError, ValueError, AttributeError):
        return None
    return set(c) if isinstance(c, (dict, list)) else None


def compare(args):
    a_top, b_top = args
    files, differ, missing = 0, [], []
    for k in key_dirs(b_top):
        for name in os.listdir(os.path.join(b_top, k)):
            if name.startswith("tmp."):
                continue
            rel = os.path.join(k, name)
            pa, pb = os.path.join(a_top, rel), os.path.join(b_top, rel)
            files += 1
            if not os.path.exists(pa):
                missing.append(rel)
            elif name.startswith("__grp__"):
                cb, ca = children(pb), children(pa)
                if cb is None or ca is None or not cb <= ca:
                    differ.append(rel)
            else:
                with open(pa, "rb") as fa, open(pb, "rb") as fb:
                    if fa.read() != fb.read():
                        differ.append(rel)
    print(json.dumps({"files": files, "differ": differ[:20],
                      "missing_in_a": missing[:20],
                      "same": files > 0 and not differ and not missing}))


def origins(_args):
    counts = {}

    def walk(v):
        if isinstance(v, dict):
            if isinstance(v.get("origin"), str):
                counts[v["origin"]] = counts.get(v["origin"], 0) + 1
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    try:
        walk(json.load(sys.stdin))
    except ValueError:
        pass
    print(json.dumps(counts))


def fact(args):
    print(json.dumps({"fact": args[0], "value": json.loads(args[1])}))


class Summary:
    def __init__(self, path):
        self.runs, self.facts, self.failed = {}, {}, False
        for line in open(path):
            d = json.loads(line)
            if "fact" in d:
                self.facts[d["fact"]] = d["value"]
            else:
                self.runs.setdefault(d["label"], []).append(d)

    def check(self, ok, what):
        print(f"{'PASS' if ok else 'FAIL'}: {what}")
        self.failed |= not ok

    def med(self, label, field="seconds"):
        v = [r[field] for r in self.runs.get(label, [])
             if r.get("rc") == 0 and isinstance(r.get(field), (int, float))]
        return statistics.median(v) if v else None

    def tc(self, label, field):
        """Per-rep values of a tcfs field (dotted) of one label."""
        out = []
        for r in self.runs.get(label, []):
            v = r.get("tcfs")
            for part in field.split("."):
                v = v.get(part) if isinstance(v, dict) else None
            out.append(v)
        return out

    def ratio(self, what, num_label, den_label, target=None, note=""):
        parts = []
        for field, name in (("seconds", "kernels"),
                            ("launch_seconds", "launches"),
                            ("process_seconds", "process")):
            n, d = self.med(num_label, field), self.med(den_label, field)
            if n is None or d is None or d <= 0:
                parts.append(f"{name} n/a")
                continue
            parts.append(f"{name} {n:.3f}s/{d:.3f}s x{n / d:.3f}")
        line = f"{what}: " + ", ".join(parts)
        n, d = self.med(num_label), self.med(den_label)
        if target is not None and n is not None and d:
            line += (f"  [target <= {target}: "
                     f"{'met' if n / d <= target else 'missed'}]")
        print(line + (f"  ({note})" if note else ""))

    def table(self):
        print(f"{'run':<18}{'n':>3}{'kernels s':>11}{'launch s':>10}"
              f"{'process s':>11}{'hits':>6}{'miss':>6}{'rhits':>7}"
              f"{'mod h/m':>9}{'redis rd':>9}{'calls':>7}  ok")
        for label, rs in self.runs.items():
            t = [r.get("tcfs") or {} for r in rs]
            rem = [x.get("remote") or {} for x in t]

            def col(vals):
                vals = [v for v in vals if v is not None]
                if not vals:
                    return "-"
                return "/".join(str(v) for v in sorted(set(vals)))
            print(f"{label:<18}{len(rs):>3}"
                  f"{self.fmt(self.med(label)):>11}"
                  f"{self.fmt(self.med(label, 'launch_seconds')):>10}"
                  f"{self.fmt(self.med(label, 'process_seconds')):>11}"
                  f"{col([x.get('hits') for x in t]):>6}"
                  f"{col([x.get('misses') for x in t]):>6}"
                  f"{col([x.get('kernel_hits') for x in rem]):>7}"
                  f"{col([self.mods(x) for x in t]):>9}"
                  f"{col([r['redis']['reads'] for r in rs]):>9}"
                  f"{col([r['redis']['calls'] for r in rs]):>7}  "
                  f"{all(r.get('rc') == 0 and r.get('correct') for r in rs)}")

    @staticmethod
    def mods(t):
        if "module_hits" not in t:
            return None
        return f"{t['module_hits']}/{t['module_misses']}"

    @staticmethod
    def fmt(v):
        return "-" if v is None else f"{v:.3f}"

    def zero_misses(self, label, want_hits=None):
        hits, misses = self.tc(label, "hits"), self.tc(label, "misses")
        ok = bool(hits) and all(m == 0 for m in misses) and all(
            isinstance(h, int) and h > 0 for h in hits)
        if want_hits:
            ok = ok and all(h >= want_hits for h in hits)
        return ok, f"hits {hits}, misses {misses}"

    def run(self):
        f = self.facts
        kernels = f.get("kernels_compiled") or 0
        print(f"Triton {self._any('triton')}, {self._any('kernels')} "
              f"launches, {kernels} kernels compiled; warm runs: median of "
              f"{f.get('reps')}; B mounted with -o {f.get('b_opts')}")
        self.table()
        print()
        print("Targets (issue 22; benchmarks: a missed one is not a failure)")
        self.ratio("B first run / plain warm", "B-first", "plain-warm", 1.05)
        self.ratio("  RemoteCacheManager B first run / plain warm",
                   "rcm-B-first", "plain-warm", note="issue: about 1.0-1.05")
        self.ratio("  B first run / A warm", "B-first", "A-warm")
        self.ratio("  B first run / A cold", "B-first", "A-cold")
        self.ratio("  B first run / RemoteCacheManager B first run",
                   "B-first", "rcm-B-first")
        self.ratio("A warm (tcfs) / plain warm", "A-warm", "plain-warm", 1.0)
        self.ratio("B warm (tcfs) / plain warm", "B-warm", "plain-warm", 1.0)
        self.ratio("  tcfs warm, no remote / plain warm", "noremote-warm",
                   "plain-warm")
        self.ratio("  RemoteCacheManager B warm / plain warm", "rcm-B-warm",
                   "plain-warm", note="issue: about 1.1")
        reads = {lb: [r["redis"]["reads"] for r in self.runs.get(lb, [])]
                 for lb in ("A-warm", "B-warm", "rcm-B-warm")}
        tcfs_reads = reads["A-warm"] + reads["B-warm"]
        print(f"Redis reads per warm run: tcfs A {reads['A-warm']}, B "
              f"{reads['B-warm']}; RemoteCacheManager B {reads['rcm-B-warm']}"
              f"  [target 0 for tcfs: "
              f"{'met' if tcfs_reads and not any(tcfs_reads) else 'missed'}]")
        self.ratio("A cold, publishing on / cold, no remote", "A-cold",
                   "noremote-cold", 1.03)
        self.ratio("  RemoteCacheManager A cold / plain cold", "rcm-A-cold",
                   "plain-cold", note="issue: about 1.1")
        self.ratio("cold, remote but remote_publish=off / cold, no remote",
                   "publish-off-cold", "noremote-cold", 1.1)
        self.ratio("  tcfs cold, no remote / plain cold", "noremote-cold",
                   "plain-cold")
        print(f"A published {f.get('published')} in "
              f"{f.get('publish_wait_seconds')} s after its cold run; Redis "
              f"then held {f.get('redis_groups')} groups, "
              f"{f.get('redis_sidecars')} tcfs sidecars; B's store: kernels "
              f"by origin {f.get('b_origins')}")
        print()
        self.checks(kernels)
        print("PASS" if not self.failed else "FAIL")
        return 1 if self.failed else 0

    def _any(self, field):
        for rs in self.runs.values():
            for r in rs:
                if field in r:
                    return r[field]
        return None

    def checks(self, kernels):
        f = self.facts
        bad = [f"{lb}#{r['rep']}" for lb, rs in self.runs.items() for r in rs
               if r.get("rc") != 0 or not r.get("correct")]
        self.check(not bad, "every run exited 0 with every result right"
                   + (f" (not: {', '.join(bad)})" if bad else ""))
        self.check(kernels > 0, f"the plain cold run compiled {kernels} kernels")
        for lb in ("noremote-cold", "publish-off-cold", "A-cold"):
            m = self.tc(lb, "misses")
            self.check(bool(m) and all(isinstance(x, int) and x >= kernels
                                       for x in m),
                       f"{lb}: every kernel compiled through the mount "
                       f"(misses {m})")
        self.check(f.get("publish_off_published") == 0
                   and f.get("publish_off_keys") == 0,
                   f"remote_publish=off wrote nothing (published "
                   f"{f.get('publish_off_published')}, Redis keys "
                   f"{f.get('publish_off_keys')})")
        self.check(num(f.get("published")) >= kernels > 0,
                   f"A published every kernel within the wait "
                   f"({f.get('published')} of {kernels})")
        ok, what = self.zero_misses("B-first", kernels)
        self.check(ok, f"B's first run: all hits ({what})")
        rh = self.tc("B-first", "remote.kernel_hits")
        self.check(bool(rh) and all(x == kernels for x in rh),
                   f"B's first run: every kernel a remote hit "
                   f"(kernel_hits {rh}, kernels {kernels})")
        cmp_ = f.get("b_vs_a") or {}
        self.check(bool(cmp_.get("same")),
                   f"B's files byte-exact with A's ({cmp_.get('files')} files;"
                   f" differ {cmp_.get('differ')}, missing in A "
                   f"{cmp_.get('missing_in_a')})")
        for lb in ("noremote-warm", "A-warm", "B-warm"):
            ok, what = self.zero_misses(lb, kernels)
            self.check(ok, f"{lb}: all hits ({what})")


def summary(args):
    return Summary(args[0]).run()


def main():
    cmds = {"record": record, "get": get, "groups": groups,
            "compare": compare, "origins": origins, "fact": fact,
            "summary": summary}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[sys.argv[1]](sys.argv[2:]) or 0


if __name__ == "__main__":
    sys.exit(main())

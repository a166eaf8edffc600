"""Per run: lmkd's wakeups before and after its last kill, from lmkd.csv."""
import csv, json, sys, collections
from pathlib import Path
root = Path(sys.argv[1])
for run in sorted(root.glob("*-r*")):
    if not (run / "lmkd.csv").exists() or not (run / "run.json").exists():
        continue
    rows = list(csv.DictReader(open(run / "lmkd.csv")))
    ev = [json.loads(l) for l in open(run / "events.jsonl")]
    kills = [e["t_ms"] for e in ev if e["type"] == "kill"]
    last = max(kills, default=0)
    after = [r for r in rows if int(r["t_ms"]) > last]
    evald = [r for r in after if r["reclaim"] != "idle"]
    c = collections.Counter((r["swap_is_low"], r["wmark"]) for r in evald)
    frees = [int(r["free_kb"]) for r in evald]
    th = [int(r["thrashing"]) for r in evald if r["thrashing"]]
    ev_after = sum(1 for r in after if r["event"] == "1")
    # wakeups under low watermark before the last kill that did not kill
    before = [r for r in rows if int(r["t_ms"]) <= last and r["reclaim"] != "idle"]
    under_before = [r for r in before if r["wmark"] in ("low", "min")]
    nokill_under = [r for r in under_before if not r["reason"]]
    print(f"{run.name}: kills {len(kills)} last {last/1000:.0f}s | before: evaluated {len(before)}, under low {len(under_before)} (no reason {len(nokill_under)}: swaplow={collections.Counter(r['swap_is_low'] for r in nokill_under)}) "
          f"| after: wakeups {len(after)} events {ev_after} evaluated {len(evald)} {dict(c)} min free {min(frees, default=0)/1024:.1f} MB thrash max {max(th, default=None)}")

"""Share of 100-ms meminfo samples (switching phase to the end) with swap low
(< 20% free) and MemFree under lmkd's low watermark sum (23.1 MB, from lmkd.csv
of session 35's runs), per run, and the seconds of that until the last kill."""
import csv, json, sys
from pathlib import Path
LOW_KB = 23.1 * 1024
for root in sys.argv[1:]:
    for run in sorted(Path(root).glob("*-r*")):
        if not (run / "run.json").exists():
            continue
        mi = list(csv.DictReader(open(run / "meminfo.csv")))
        ev = [json.loads(l) for l in open(run / "events.jsonl")]
        start = next(e["t_ms"] for e in ev if e.get("phase") == "switching")
        kills = [e["t_ms"] for e in ev if e["type"] == "kill"]
        last = max(kills, default=start)
        tot = int(mi[0]["swap_total_kb"])
        def cond(m): return int(m["swap_free_kb"]) < 0.2 * tot and int(m["mem_free_kb"]) < LOW_KB
        sw = [m for m in mi if int(m["t_ms"]) >= start]
        until = [m for m in sw if int(m["t_ms"]) <= last]
        after = [m for m in sw if int(m["t_ms"]) > last]
        psi = list(csv.DictReader(open(run / "psi.csv")))
        print(f"{run.parent.parent.name[:12]:12} {run.name:12} kills {len(kills):2} "
              f"swaplow&under-low s: until last kill {sum(map(cond, until))/10:5.1f} after {sum(map(cond, after))/10:5.1f} "
              f"| PSI some s {(int(psi[-1]['some_total_us'])-int(psi[0]['some_total_us']))/1e6:5.1f}")

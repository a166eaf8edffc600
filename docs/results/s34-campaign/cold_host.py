"""Per run of a campaign: host CPU of its QEMU's vCPU threads and main
thread during the foreground cold switches, against the rest of the run;
with the guest's run-queue wait of those launches per second."""
import json, sys
from datetime import datetime, timezone
from pathlib import Path
import numpy as np

host = [json.loads(l) for l in open(sys.argv[1])]
camp = Path(sys.argv[2])

def pid_series(pid):
    rs = [r for r in host if any(k.startswith(pid + "/") for k in r["qemu"])]
    main = f"{pid}/{pid}/qemu-system-x86"
    t, m, v, h = [], [], [], []
    for a, b in zip(rs, rs[1:]):
        h.append(sum(b["stat"][j] - a["stat"][j] for j in (0, 1, 2, 5, 6, 7)) / 100 / (b["t"] - a["t"]))
        dt = b["t"] - a["t"]
        d = {k: val - a["qemu"].get(k, 0) for k, val in b["qemu"].items() if k.startswith(pid + "/")}
        others = sorted((val for k, val in d.items() if k != main), reverse=True)
        t.append((a["t"] + b["t"]) / 2); m.append(d.get(main, 0) / 100 / dt); v.append(sum(others[:2]) / 100 / dt)
    return np.array(t), np.array(m), np.array(v), np.array(h)

pids = []
for r in host:
    for k in r["qemu"]:
        p = k.split("/")[0]
        if p not in pids:
            pids.append(p)
series = {p: pid_series(p) for p in pids}
print("run | cold s | vCPUs in cold | vCPUs elsewhere | main in cold | main elsewhere | host busy in cold | host busy elsewhere | guest runq per cold s")
for run in sorted((camp / "runs").glob("*-r*"), key=lambda p: (p.name.split("-r")[1], p.name)):
    if not (run / "run.json").exists():
        continue
    start = datetime.strptime(json.load(open(run / "run.json"))["started_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    ev = [json.loads(l) for l in open(run / "events.jsonl")]
    cold = [e for e in ev if e.get("type") == "switch" and e.get("kind") == "cold"]
    wins = [(start + (e["t_ms"] - e["response_ms"]) / 1000, start + e["t_ms"] / 1000) for e in cold]
    end = start + max(e["t_ms"] for e in ev if "t_ms" in e) / 1000
    for p, (t, m, v, h) in series.items():
        inrun = (t >= start) & (t <= end)
        if inrun.sum() > 0.5 * (end - start):
            break
    else:
        continue
    incold = np.zeros_like(t, dtype=bool)
    for a, b in wins:
        incold |= (t >= a) & (t <= b)
    c = inrun & incold; o = inrun & ~incold
    runq = sum(e.get("cost", {}).get("runq_ms", 0) for e in cold) / 1000
    tot = sum(e["response_ms"] for e in cold) / 1000
    print(f"{run.name} | {c.sum()} | {v[c].mean():.2f} | {v[o].mean():.2f} | {m[c].mean():.2f} | {m[o].mean():.2f} | {h[c].mean():.2f} | {h[o].mean():.2f} | {runq / tot:.2f}")

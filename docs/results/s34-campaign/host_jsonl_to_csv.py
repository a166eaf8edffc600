"""Split host.jsonl (host_sampler.py, sampled beside a campaign whose harness
predates host_cpu.py) into each run's host_cpu.csv, in host_cpu.py's format.
The QEMU threads were not named: the two busiest after the main thread over
the run are taken as the vCPUs. A run is the QEMU process most of whose
samples fall inside its workload (run.json's started_at + workload_s)."""
import csv, json, sys
from datetime import datetime
from pathlib import Path

recs = [json.loads(l) for l in open(sys.argv[1])]
camp = Path(sys.argv[2])
pids = []
for r in recs:
    for k in r["qemu"]:
        p = k.split("/")[0]
        if p not in pids:
            pids.append(p)
for run in sorted((camp / "runs").glob("*-r*")):
    if not (run / "run.json").exists():
        continue
    rj = json.load(open(run / "run.json"))
    start = datetime.fromisoformat(rj["started_at"].replace("Z", "+00:00")).timestamp()
    end = start + rj["workload_s"]
    best = max(pids, key=lambda p: sum(1 for r in recs if start <= r["t"] <= end
                                       and any(k.startswith(p + "/") for k in r["qemu"])))
    rs = [r for r in recs if any(k.startswith(best + "/") for k in r["qemu"])]
    main = f"{best}/{best}/qemu-system-x86"
    total = {}
    for r in rs:      # threads exit one by one at shutdown: the largest reading of each
        for k, v in r["qemu"].items():
            if k.startswith(best + "/"):
                total[k] = max(total.get(k, 0), v)
    vcpus = sorted((k for k in total if k != main), key=lambda k: -total[k])[:2]
    if sum(1 for r in rs if start <= r["t"] <= end) < 0.8 * rj["workload_s"]:
        print(f"{run.name}: sampled {sum(1 for r in rs if start <= r['t'] <= end)} of {rj['workload_s']:.0f} s: skipped")
        continue
    with open(run / "host_cpu.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("t_unix", "host_cpus", "busy", "vcpus", "main", "other"))
        for a, b in zip(rs, rs[1:]):
            dt = b["t"] - a["t"]
            d = {k: v - a["qemu"][k] for k, v in b["qemu"].items()
                 if k.startswith(best + "/") and k in a["qemu"]}
            busy = sum(b["stat"][j] - a["stat"][j] for j in (0, 1, 2, 5, 6, 7))
            tot = sum(b["stat"][j] - a["stat"][j] for j in range(8))
            if tot <= 0:
                continue
            v = sum(d.get(k, 0) for k in vcpus) / 100 / dt
            m = d.get(main, 0) / 100 / dt
            o = sum(x for k, x in d.items() if k != main and k not in vcpus) / 100 / dt
            w.writerow([f"{b['t']:.2f}", 2, f"{busy / tot * 2:.3f}", f"{v:.3f}", f"{m:.3f}", f"{o:.3f}"])
    print(f"{run.name}: qemu {best}, vCPU threads {vcpus}")

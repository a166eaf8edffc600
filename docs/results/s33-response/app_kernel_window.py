"""The kernel functions in the samples of some threads within a time window
(seconds from the first sample) of a profiled run: self (running) and
total (on the stack), as shares of those threads' kernel samples.

    python3 app_kernel_window.py RUN.script T0 T1 COMM[,COMM...]

RUN.script as for app_kernel_split.py.
"""
import sys
from collections import Counter
path, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
comms = set(sys.argv[4].split(","))
start = None
selfc, total = Counter(), Counter()
n = nk = 0
for block in open(path).read().split("\n\n"):
    lines = block.strip("\n").splitlines()
    if not lines:
        continue
    head = lines[0].split(); t = float(head[-1].rstrip(":"))
    start = t if start is None else start
    if not (t0 <= t - start < t1) or head[0] not in comms:
        continue
    n += 1
    frames = [ln.strip().split(None, 1)[-1] for ln in lines[1:]]
    kf = [f.rsplit(" (", 1)[0].split("+")[0] for f in frames if "kernel.kallsyms" in f]
    if not frames or "kernel.kallsyms" not in frames[0]:
        continue
    nk += 1
    selfc[kf[0]] += 1
    total.update(set(kf))
print(f"{sorted(comms)} {t0}-{t1}s: {n} samples, {nk} in the kernel")
print("self:", ", ".join(f"{f} {100*c/nk:.1f}%" for f, c in selfc.most_common(15)))
print("total:")
for f, c in total.most_common(45):
    print(f"  {100*c/nk:5.1f}% {f}")

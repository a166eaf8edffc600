"""Every second: host /proc/stat CPU totals and each QEMU thread's CPU ticks.
Writes JSON lines to argv[1]."""
import json, os, sys, time

def qemu_pids():
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                if open(f"/proc/{p}/comm").read().strip().startswith("qemu-system"):
                    out.append(int(p))
            except OSError:
                pass
    return out

with open(sys.argv[1], "a") as f:
    while True:
        rec = {"t": time.time()}
        cpu = open("/proc/stat").readline().split()[1:]
        rec["stat"] = [int(x) for x in cpu]
        threads = {}
        for pid in qemu_pids():
            try:
                for tid in os.listdir(f"/proc/{pid}/task"):
                    try:
                        st = open(f"/proc/{pid}/task/{tid}/stat").read()
                        comm = st[st.index("(") + 1:st.rindex(")")]
                        fields = st[st.rindex(")") + 2:].split()
                        threads[f"{pid}/{tid}/{comm}"] = int(fields[11]) + int(fields[12])
                    except (OSError, ValueError):
                        pass
            except OSError:
                pass
        rec["qemu"] = threads
        f.write(json.dumps(rec) + "\n")
        f.flush()
        time.sleep(1)

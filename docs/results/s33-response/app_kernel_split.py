"""The app threads' CPU samples of profiled runs, split by what they were
doing: in user space, or in the kernel by the first of CATS on the stack.
The apps' threads: `pmr-guest` (each app process's main thread, which
runs its launches, and the runtime's other unnamed threads) and `activity`
(the app's work between switches, runtime/src/app.rs).

    perf script -i RUN/perf.data --vmlinux VMLINUX -F comm,tid,time,ip,sym,dso > RUN.script
    python3 app_kernel_split.py RUN.script...
"""
import sys
from collections import Counter
CATS = [("direct reclaim", "try_to_free_pages"), ("memcg reclaim", "try_to_free_mem_cgroup_pages"),
        ("compaction", "__alloc_pages_direct_compact"),
        ("swap-in", "do_swap_page"), ("file fault", "filemap_fault"),
        ("zeroing a new page", "clear_page_erms"), ("anon fault, other", "do_anonymous_page"),
        ("page fault, other", "exc_page_fault"), ("nanosleep", "hrtimer_nanosleep"),
        ("syscall, other", "do_syscall_64")]
for path in sys.argv[1:]:
    c = Counter(); n = 0
    for block in open(path).read().split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines or lines[0].split()[0] not in ("activity", "pmr-guest"):
            continue
        n += 1
        frames = [ln.strip().split(None, 1)[-1] for ln in lines[1:]]
        if not frames or "kernel.kallsyms" not in frames[0]:
            c["user"] += 1; continue
        syms = {f.rsplit(" (", 1)[0].split("+")[0] for f in frames}
        for name, fn in CATS:
            if fn in syms:
                c[name] += 1; break
        else:
            c["kernel, other"] += 1
    print(path, n, "samples;", ", ".join(f"{k} {v} ({100*v/n:.1f}%)" for k, v in c.most_common()))

import os, sys
from array import array
from collections import Counter
sys.path.insert(0, "/work/main/probes/lib")
from paged_out import read_entries, KPF_ANON, KPF_SWAPCACHE, KPF_MMAP
NAMES = {2: "ref", 4: "dirty", 5: "lru", 6: "active", 8: "wb", 9: "reclaim", 18: "unevict"}
ino = os.stat(sys.argv[1]).st_ino
owners = read_entries("/proc/kpagecgroup")
flags = array("Q"); flags.frombytes(read_entries("/proc/kpageflags"))
key = array("Q", [ino]).tobytes()
c = Counter(); pos = owners.find(key)
while pos >= 0:
    if pos % 8 == 0:
        f = flags[pos // 8]
        if f & (KPF_ANON | KPF_SWAPCACHE | KPF_MMAP) == KPF_ANON | KPF_SWAPCACHE:
            c[",".join(n for b, n in sorted(NAMES.items()) if f >> b & 1) or "-"] += 1
        pos = owners.find(key, pos + 8)
    else:
        pos = owners.find(key, pos + 1)
print(dict(c))

"""Bytes of a memory cgroup's anon pages that are paged out: in the swap
cache and mapped by no page table (Documentation/admin-guide/mm/pagemap.rst).

    python3 paged_out.py CGROUP_DIR [KPAGEFLAGS KPAGECGROUP]

Such a page holds a swap slot already: reclaim frees it with no new slot,
once its write has completed. Swap readahead pages are in the swap cache
too, but not anon until a page table maps them, so they are not counted.
Runs in the guest with the host's python3 and its standard library only.
"""

import os
import sys
from array import array

KPF_MMAP = 1 << 11
KPF_ANON = 1 << 12
KPF_SWAPCACHE = 1 << 13
CHUNK = 1 << 20  # bytes read at a time, a multiple of 8


def read_entries(path: str) -> bytes:
    """The whole file, read in counts of whole entries as the kernel wants."""
    chunks = []
    with open(path, "rb", buffering=0) as f:
        while chunk := f.read(CHUNK):
            chunks.append(chunk)
    return b"".join(chunks)


def paged_out_pages(ino: int, kpageflags: str, kpagecgroup: str) -> int:
    """Pages owned by the memcg whose inode is @ino that are paged out."""
    owners = read_entries(kpagecgroup)
    flags = array("Q")
    flags.frombytes(read_entries(kpageflags))
    # Find the memcg's pages at C speed: most pages are someone else's
    key = array("Q", [ino]).tobytes()
    n, pos = 0, owners.find(key)
    while pos >= 0:
        if pos % 8 == 0:
            if flags[pos // 8] & (KPF_ANON | KPF_SWAPCACHE | KPF_MMAP) == \
                    KPF_ANON | KPF_SWAPCACHE:
                n += 1
            pos = owners.find(key, pos + 8)
        else:
            pos = owners.find(key, pos + 1)
    return n


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 4):
        print("usage: paged_out.py CGROUP_DIR [KPAGEFLAGS KPAGECGROUP]", file=sys.stderr)
        return 2
    kpageflags, kpagecgroup = argv[2:] or ["/proc/kpageflags", "/proc/kpagecgroup"]
    pages = paged_out_pages(os.stat(argv[1]).st_ino, kpageflags, kpagecgroup)
    print(pages * os.sysconf("SC_PAGE_SIZE"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

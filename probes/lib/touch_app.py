"""An application for the probes: anon memory it writes once, then touches
half of on request.

    python3 touch_app.py MEGABYTES STATE

Maps MEGABYTES of private anon memory, writes every page once, and writes
"ADDRESS PAGES" (the area's start, in hex, and its size in pages) to
STATE.addr. On SIGUSR1 it reads one byte of every even page of the area
(page 0, 2, 4...), which sets the accessed bit of their page table entries
and faults back in those that were paged out, then writes the sum of the
bytes read to STATE.touched; on SIGUSR2 it does the same with the odd
pages (1, 3, 5...) and STATE.odd.
It stays until killed. Runs in the guest with the host's python3 and its
standard library only.
"""

import ctypes
import mmap
import os
import signal
import sys

PAGE = mmap.PAGESIZE


def main() -> None:
    megabytes, state = int(sys.argv[1]), sys.argv[2]
    size = megabytes << 20
    area = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, size, PAGE):
        area[offset] = 1 + (offset // PAGE) % 255   # a page of its own, not the zero page
    address = ctypes.addressof(ctypes.c_char.from_buffer(area))
    with open(state + ".addr.tmp", "w") as f:
        f.write(f"{address:x} {size // PAGE}\n")
    os.rename(state + ".addr.tmp", state + ".addr")

    def touch(first_page: int, done: str) -> None:
        total = 0
        for offset in range(first_page * PAGE, size, 2 * PAGE):
            total += area[offset]
        with open(done + ".tmp", "w") as f:
            f.write(f"{total}\n")
        os.rename(done + ".tmp", done)

    signal.signal(signal.SIGUSR1, lambda _s, _f: touch(0, state + ".touched"))
    signal.signal(signal.SIGUSR2, lambda _s, _f: touch(1, state + ".odd"))
    while True:
        signal.pause()


if __name__ == "__main__":
    main()

"""An application for the probes: anon memory it writes once, then touches
half of on request.

    python3 touch_app.py MEGABYTES STATE

Maps MEGABYTES of private anon memory, writes every page once, and writes
"ADDRESS PAGES" (the area's start, in hex, and its size in pages) to
STATE.addr. On SIGUSR1 it reads one byte of every even page of the area
(page 0, 2, 4...), which sets the accessed bit of their page table entries
and faults back in those that were paged out, then writes the sum of the
bytes read to STATE.touched; on SIGUSR2 it does the same with the odd
pages (1, 3, 5...) and STATE.odd, after writing to STATE.incore what
mincore(2) says of every page of the area before the reads, one
character a page: `1` in memory, `0` not. For a page whose page table
entry holds a swap entry, in memory means in the swap cache.
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

    def save_incore() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        vec = (ctypes.c_ubyte * (size // PAGE))()
        if libc.mincore(ctypes.c_void_p(address), ctypes.c_size_t(size), vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore")
        with open(state + ".incore.tmp", "w") as f:
            f.write("".join("1" if v & 1 else "0" for v in vec))
        os.rename(state + ".incore.tmp", state + ".incore")

    def touch_odd() -> None:
        save_incore()
        touch(1, state + ".odd")

    def touch(first_page: int, done: str) -> None:
        total = 0
        for offset in range(first_page * PAGE, size, 2 * PAGE):
            total += area[offset]
        with open(done + ".tmp", "w") as f:
            f.write(f"{total}\n")
        os.rename(done + ".tmp", done)

    signal.signal(signal.SIGUSR1, lambda _s, _f: touch(0, state + ".touched"))
    signal.signal(signal.SIGUSR2, lambda _s, _f: touch_odd())
    while True:
        signal.pause()


if __name__ == "__main__":
    main()

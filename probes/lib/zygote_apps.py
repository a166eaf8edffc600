"""A zygote and the apps it forks, for the zygote-batches probe.

    python3 zygote_apps.py APPS MB PRELOAD_MB CHUNK OUT

Maps one private anonymous area, writes its first PRELOAD_MB (the
preload, shared copy-on-write by every app), then forks APPS apps. App i
writes its own MB of the inherited area, past the preload, CHUNK pages at
a time in turns with the others (the parent hands the turns round), so
that their pages join the LRU lists interleaved: every app's pages are in
an anon_vma of its own, all under the zygote's root, as for apps forked
from Android's zygote. Then OUT/zygote.map holds "ADDRESS PRELOAD_PAGES
APP_PAGES" (ADDRESS in hex) and one "PID INDEX" line per app, and every
process sleeps until the zygote gets SIGTERM, which kills the apps.
Runs in the guest with the host's python3 and its standard library only.
"""

import ctypes
import mmap
import os
import signal
import sys

PAGE = 4096


def app(region: mmap.mmap, first: int, pages: int, chunk: int, turn: int, done: int) -> None:
    """Write pages [first, first + pages) CHUNK at a time, one chunk per turn."""
    for start in range(first, first + pages, chunk):
        os.read(turn, 1)
        for page in range(start, min(start + chunk, first + pages)):
            region[page * PAGE] = 0x5A
        os.write(done, b"d")
    signal.pause()


def main(argv: list[str]) -> int:
    if len(argv) != 6:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    apps, mb, preload_mb, chunk = (int(a) for a in argv[1:5])
    out = argv[5]
    per_app, preload = mb * 256, preload_mb * 256
    region = mmap.mmap(-1, (preload + apps * per_app) * PAGE,
                       flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    address = ctypes.addressof(ctypes.c_char.from_buffer(region))
    for page in range(preload):
        region[page * PAGE] = 0x2A
    turns = [os.pipe() for _ in range(apps)]
    done_r, done_w = os.pipe()
    pids = []
    for i in range(apps):
        pid = os.fork()
        if pid == 0:
            app(region, preload + i * per_app, per_app, chunk, turns[i][0], done_w)
            os._exit(0)
        pids.append(pid)

    def end(*_):
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        os._exit(0)

    signal.signal(signal.SIGTERM, end)
    for _ in range(0, per_app, chunk):
        for i in range(apps):
            os.write(turns[i][1], b"t")
            os.read(done_r, 1)
    with open(f"{out}/zygote.map.tmp", "w") as f:
        f.write(f"{address:x} {preload} {per_app}\n")
        for i, pid in enumerate(pids):
            f.write(f"{pid} {i}\n")
    os.rename(f"{out}/zygote.map.tmp", f"{out}/zygote.map")
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main(sys.argv))

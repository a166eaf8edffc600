"""Where the zygote-batches probe's apps have their pages in swap.

    python3 swap_runs.py save MAP FILE
    python3 swap_runs.py runs MAP BEFORE AFTER

MAP is zygote_apps.py's zygote.map. `save` writes to FILE, for every app,
the swap slot of each page of its own area, from /proc/PID/pagemap (bits
0-4 the swap type, 5-54 the offset, 62 "swapped";
Documentation/admin-guide/mm/pagemap.rst), 0 for a page not swapped out.
`runs` takes the pages swapped out between BEFORE and AFTER, orders them
by swap slot and prints "PAGES RUNS APPS": how many there are, into how
many runs of one app's pages they fall, and how many apps have some. A
batch written back app by app gives each app one run per batch; one
written back in LRU order, where the apps' pages interleave, gives a run
per stretch of interleaving.
Runs in the guest with the host's python3 and its standard library only,
beside page_states.py, whose pagemap reader it uses.
"""

import json
import sys

import page_states

PAGE = page_states.PAGE
SWAPPED = page_states.SWAPPED
SLOT = (1 << 55) - 1  # type and offset


def read_map(path: str) -> tuple[int, int, int, list[tuple[int, int]]]:
    with open(path) as f:
        address, preload, per_app = f.readline().split()
        apps = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    return int(address, 16), int(preload), int(per_app), apps


def slots(pid: int, address: int, pages: int) -> list[int]:
    return [e & SLOT if e & SWAPPED else 0
            for e in page_states.entries(f"/proc/{pid}/pagemap", address, pages)]


def save(map_path: str, out: str) -> None:
    address, preload, per_app, apps = read_map(map_path)
    state = {str(i): slots(pid, address + (preload + i * per_app) * PAGE, per_app)
             for pid, i in apps}
    with open(out, "w") as f:
        json.dump(state, f)


def runs(before: dict[str, list[int]], after: dict[str, list[int]]) -> tuple[int, int, int]:
    """(pages, runs, apps) of the pages swapped out in @after, not in @before."""
    new = sorted((slot, app) for app, pages in after.items()
                 for page, slot in enumerate(pages) if slot and not before[app][page])
    changes = sum(1 for a, b in zip(new, new[1:]) if a[1] != b[1])
    return len(new), (changes + 1) if new else 0, len({app for _, app in new})


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[1] == "save":
        save(argv[2], argv[3])
        return 0
    if len(argv) == 5 and argv[1] == "runs":
        with open(argv[3]) as b, open(argv[4]) as a:
            print(*runs(json.load(b), json.load(a)))
        return 0
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Where the pages of a process's memory area are, from its pagemap
(Documentation/admin-guide/mm/pagemap.rst).

    python3 page_states.py save PAGEMAP ADDRESS PAGES FILE
    python3 page_states.py paged-out BEFORE AFTER
    python3 page_states.py swap-cached BEFORE AFTER INCORE

`save` writes one character per page of the area (ADDRESS in hex) to FILE,
reading PAGEMAP (/proc/PID/pagemap): `p` present, `s` swapped out, `-`
neither. `paged-out` prints, for the even pages and for the odd ones, how
many were present in BEFORE and are swapped out in AFTER: "even N odd M".
`swap-cached` prints the same counts of those that INCORE (touch_app.py's
mincore(2) of the area, `1` a page in memory) says are still in memory:
paged out, and in the swap cache.
Runs in the guest with the host's python3 and its standard library only.
"""

import sys
from array import array

PAGE = 4096
PRESENT = 1 << 63
SWAPPED = 1 << 62
USAGE = ("usage: page_states.py save PAGEMAP ADDRESS PAGES FILE\n"
         "       page_states.py paged-out BEFORE AFTER\n"
         "       page_states.py swap-cached BEFORE AFTER INCORE")


def entries(pagemap: str, address: int, pages: int) -> array:
    """The pagemap entries of the @pages pages of the area at @address."""
    found = array("Q")
    with open(pagemap, "rb", buffering=0) as f:
        f.seek(address // PAGE * 8)
        data = b""
        while len(data) < pages * 8:
            chunk = f.read(pages * 8 - len(data))
            if not chunk:
                raise SystemExit(f"{pagemap} ended after {len(data) // 8} of {pages} pages")
            data += chunk
    found.frombytes(data)
    return found


def states(pagemap: str, address: int, pages: int) -> str:
    """One character per page of the area at @address (see the header)."""
    return "".join("p" if e & PRESENT else "s" if e & SWAPPED else "-"
                   for e in entries(pagemap, address, pages))


def paged_out(before: str, after: str, incore: str | None = None) -> dict[str, int]:
    """Pages present in @before and swapped out in @after, by parity; with
    @incore, only those it says are in memory."""
    counts = {"even": 0, "odd": 0}
    for i, (b, a) in enumerate(zip(before, after)):
        if b == "p" and a == "s" and (incore is None or incore[i] == "1"):
            counts["odd" if i % 2 else "even"] += 1
    return counts


def read(path: str) -> str:
    with open(path) as f:
        return f.read()


def main(argv: list[str]) -> int:
    if len(argv) == 6 and argv[1] == "save":
        with open(argv[5], "w") as f:
            f.write(states(argv[2], int(argv[3], 16), int(argv[4])))
        return 0
    if (len(argv) == 4 and argv[1] == "paged-out") or (len(argv) == 5 and
                                                        argv[1] == "swap-cached"):
        incore = read(argv[4]) if len(argv) == 5 else None
        counts = paged_out(read(argv[2]), read(argv[3]), incore)
        print(f"even {counts['even']} odd {counts['odd']}")
        return 0
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

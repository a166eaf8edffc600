"""An application for the swam-swap-clean probe: a shared object's written
data, swapped out, for MADV_SWAPCLEAN (kernel/baselines/swam, patch 2) to
drop.

    python3 so_app.py FILE STATE

Writes FILE (64 MB; every page a known pattern, see file_page()) and maps
it MAP_PRIVATE, readable and writable, like a .so's data; writes a
"relocated" word over the first 8 bytes of every page, so that each page
becomes a private anon copy; maps 16 MB of private anon memory (no THP)
and writes every page of it. MADV_PAGEOUT on both areas sends them to
swap; the file's page cache is dropped, so that a refault reads the disk;
then one page in four of the file mapping (pages 0, 4, 8...) is read back
in from swap, still relocated. From /proc/self/pagemap, before the clean:
which pages are present and which swapped out. It writes STATE.before:

    file_pages anon_pages       the areas' sizes, in pages
    quarter_present             pages 0, 4, 8... present (all, normally)
    file_swapped file_present   the other pages, swapped out or present
    anon_swapped                anon pages swapped out
    vmswap_kb                   VmSwap (/proc/self/status)

On SIGUSR1 it calls process_madvise(2) on itself (pidfd_open(2) of its own
pid) with MADV_SWAPCLEAN (26) and one iovec for each area, then, before
it reads any page, pagemap and VmSwap again; then it reads every page:
a page of the file mapping holds either the file's content (dropped and
refaulted from the file) or the relocated word and the file's content
after it (kept), or something else (corrupt); an anon page must hold what
was written. It writes STATE.after and exits:

    rc errno                    process_madvise's result; errno 0 or a name
    advised                     bytes process_madvise says it advised
    vmswap_kb                   VmSwap right after the call
    dropped                     pages swapped out before that are now
                                neither present nor swapped (pagemap)
    anon_swapped                anon pages swapped out after the call
    quarter_relo quarter_bad    pages 0, 4, 8...: relocated, or not
    reverted kept corrupt       the other pages: file content, relocated,
                                neither
    reverted_present            reverted pages that were present before
                                the clean (a resident page dropped)
    kept_swapped                kept pages that were swapped out before
                                (not dropped)
    anon_ok anon_bad            anon pages as written, or not
    first_bad                   the first bad page: area, index and its
                                first 16 bytes in hex; "none"
    vmswap_end_kb               VmSwap after the reads

If the call fails, STATE.after has rc, errno and advised only. On an
error of its own it writes the message to STATE.error and exits 1.
Runs in the guest with the host's python3 and its standard library only.
"""

import ctypes
import errno
import mmap
import os
import signal
import sys
import traceback
from array import array

PAGE = mmap.PAGESIZE
FILE_MB = 64
ANON_MB = 16
MADV_NOHUGEPAGE = 15
MADV_PAGEOUT = 21
MADV_SWAPCLEAN = 26
SYS_PIDFD_OPEN = 434
SYS_PROCESS_MADVISE = 440
PRESENT = 1 << 63
SWAPPED = 1 << 62
FILL = [bytes([k + 1]) * (PAGE - 8) for k in range(251)]

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


class Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


def head(tag: bytes, i: int) -> bytes:
    return tag + i.to_bytes(4, "little")


def file_page(i: int) -> bytes:
    """Page @i of FILE: "FILE", i, then one byte repeated."""
    return head(b"FILE", i) + FILL[i % 251]


def write_file(path: str, pages: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for first in range(0, pages, 256):
            os.write(fd, b"".join(file_page(i) for i in range(first, min(first + 256, pages))))
        os.fsync(fd)
    finally:
        os.close(fd)


def address_of(area: mmap.mmap) -> int:
    return ctypes.addressof(ctypes.c_char.from_buffer(area))


def madvise(address: int, size: int, advice: int) -> None:
    if libc.madvise(address, size, advice) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"madvise({advice}): {os.strerror(err)}")


def pagemap(address: int, pages: int) -> array:
    """The pagemap entries of the @pages pages at @address."""
    found = array("Q")
    data = b""
    with open("/proc/self/pagemap", "rb", buffering=0) as f:
        while len(data) < pages * 8:
            chunk = os.pread(f.fileno(), pages * 8 - len(data), address // PAGE * 8 + len(data))
            if not chunk:
                raise OSError(f"pagemap ended after {len(data) // 8} of {pages} entries")
            data += chunk
    found.frombytes(data)
    return found


def vmswap_kb() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSwap:"):
                return int(line.split()[1])
    raise OSError("no VmSwap in /proc/self/status")


def save(path: str, values: dict) -> None:
    with open(path + ".tmp", "w") as f:
        f.write("".join(f"{k}={v}\n" for k, v in values.items()))
    os.rename(path + ".tmp", path)


def run(path: str, state: str) -> None:
    fpages, apages = (FILE_MB << 20) // PAGE, (ANON_MB << 20) // PAGE
    write_file(path, fpages)
    fd = os.open(path, os.O_RDONLY)
    fm = mmap.mmap(fd, fpages * PAGE, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    faddr = address_of(fm)
    for i in range(fpages):
        fm[i * PAGE : i * PAGE + 8] = head(b"RELO", i)  # copy on write
    am = mmap.mmap(-1, apages * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    aaddr = address_of(am)
    try:
        madvise(aaddr, apages * PAGE, MADV_NOHUGEPAGE)
    except OSError as e:  # EINVAL: a kernel without THP, which has no huge pages to avoid
        if e.errno != errno.EINVAL:
            raise
    for i in range(apages):
        am[i * PAGE : (i + 1) * PAGE] = head(b"ANON", i) + FILL[i % 251]
    madvise(faddr, fpages * PAGE, MADV_PAGEOUT)
    madvise(aaddr, apages * PAGE, MADV_PAGEOUT)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    quarter = range(0, fpages, 4)
    touched = 0
    for i in quarter:
        touched += fm[i * PAGE]  # back in from swap, still relocated

    fmap, amap = pagemap(faddr, fpages), pagemap(aaddr, apages)
    swapped_before = [bool(e & SWAPPED) for e in fmap]
    present_before = [bool(e & PRESENT) for e in fmap]
    others = [i for i in range(fpages) if i % 4]
    before = {
        "file_pages": fpages,
        "anon_pages": apages,
        "quarter_present": sum(present_before[i] for i in quarter),
        "file_swapped": sum(swapped_before[i] for i in others),
        "file_present": sum(present_before[i] for i in others),
        "anon_swapped": sum(1 for e in amap if e & SWAPPED),
        "vmswap_kb": vmswap_kb(),
    }

    def clean(_sig, _frame) -> None:
        iov = (Iovec * 2)(Iovec(faddr, fpages * PAGE), Iovec(aaddr, apages * PAGE))
        pidfd = libc.syscall(
            ctypes.c_long(SYS_PIDFD_OPEN), ctypes.c_long(os.getpid()), ctypes.c_long(0)
        )
        if pidfd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"pidfd_open: {os.strerror(err)}")
        advised = libc.syscall(
            ctypes.c_long(SYS_PROCESS_MADVISE),
            ctypes.c_long(pidfd),
            iov,
            ctypes.c_long(2),
            ctypes.c_long(MADV_SWAPCLEAN),
            ctypes.c_long(0),
        )
        err = ctypes.get_errno() if advised < 0 else 0
        os.close(pidfd)
        after = {
            "rc": 0 if advised >= 0 else -1,
            "errno": errno.errorcode.get(err, str(err)) if err else 0,
            "advised": max(advised, 0),
        }
        if advised < 0:
            save(state + ".after", after)
            sys.exit(0)
        after["vmswap_kb"] = vmswap_kb()
        fmap, amap = pagemap(faddr, fpages), pagemap(aaddr, apages)
        after["dropped"] = sum(
            1 for i in range(fpages) if swapped_before[i] and not fmap[i] & (PRESENT | SWAPPED)
        )
        after["anon_swapped"] = sum(1 for e in amap if e & SWAPPED)
        counts = dict.fromkeys(
            (
                "quarter_relo",
                "quarter_bad",
                "reverted",
                "kept",
                "corrupt",
                "reverted_present",
                "kept_swapped",
                "anon_ok",
                "anon_bad",
            ),
            0,
        )
        first_bad = "none"
        for i in range(fpages):
            page = fm[i * PAGE : (i + 1) * PAGE]
            relo = page[:8] == head(b"RELO", i) and page[8:] == FILL[i % 251]
            if i % 4 == 0:
                key = "quarter_relo" if relo else "quarter_bad"
            elif page == file_page(i):
                key = "reverted"
                counts["reverted_present"] += present_before[i]
            elif relo:
                key = "kept"
                counts["kept_swapped"] += swapped_before[i]
            else:
                key = "corrupt"
            counts[key] += 1
            if key in ("quarter_bad", "corrupt") and first_bad == "none":
                first_bad = f"file:{i}:{page[:16].hex()}"
        for i in range(apages):
            page = am[i * PAGE : (i + 1) * PAGE]
            ok = page[:8] == head(b"ANON", i) and page[8:] == FILL[i % 251]
            counts["anon_ok" if ok else "anon_bad"] += 1
            if not ok and first_bad == "none":
                first_bad = f"anon:{i}:{page[:16].hex()}"
        after.update(counts)
        after["first_bad"] = first_bad
        after["vmswap_end_kb"] = vmswap_kb()
        save(state + ".after", after)
        sys.exit(0)

    signal.signal(signal.SIGUSR1, clean)
    save(state + ".before", before)
    while True:
        signal.pause()


def main() -> int:
    path, state = sys.argv[1], sys.argv[2]
    try:
        run(path, state)
    except Exception:  # for the probe's log, rather than a timeout
        with open(state + ".error", "w") as f:
            f.write(traceback.format_exc())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Switch the multi-gen LRU off while another thread keeps asking for a
PMR mode, for the lru-gen-off-window probe.

    python3 lru_gen_window.py PMR_KNOB MODE

Thread `switch` writes "n" to /sys/kernel/mm/lru_gen/enabled, which moves
every folio from the generations back to the classic lists before the
write returns; thread `ask` writes MODE to PMR_KNOB (pmr/enabled) over and
over from just before that until a write is accepted, or for 60 s. The
writes release the GIL, so `ask` runs while `switch` is in the kernel.
Prints "START END ACCEPTED" in seconds of CLOCK_MONOTONIC: when the switch
began and returned, and when the first accepted write began (-1 if none
was). Runs in the guest with the host's python3 and its standard library
only.
"""

import os
import sys
import threading
import time

LRU_GEN = "/sys/kernel/mm/lru_gen/enabled"


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    knob, mode = argv[1], argv[2].encode()
    times = {"accepted": -1.0}
    asking = threading.Event()

    def ask() -> None:
        fd = os.open(knob, os.O_WRONLY)
        asking.set()
        until = time.monotonic() + 60
        while time.monotonic() < until:
            began = time.monotonic()
            try:
                os.pwrite(fd, mode, 0)
            except OSError:  # EBUSY while the multi-gen LRU is (being) on
                continue
            times["accepted"] = began
            break
        os.close(fd)

    asker = threading.Thread(target=ask)
    asker.start()
    asking.wait()
    fd = os.open(LRU_GEN, os.O_WRONLY)
    times["start"] = time.monotonic()
    os.write(fd, b"n")
    times["end"] = time.monotonic()
    os.close(fd)
    asker.join()
    print(f"{times['start']:.6f} {times['end']:.6f} {times['accepted']:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

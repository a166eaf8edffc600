#!/usr/bin/env python3
"""Regenerate kernel/patches/ from the series' worktree (docs/kernel-workflow.md).

Runs `git format-patch --cover-letter pristine..HEAD` in the worktree and
carries the subject and the text of the current cover letter over into the
new one (format-patch writes placeholders). Check the patch numbers the
cover letter names afterwards: this script does not rewrite its prose.

    scripts/format-series.py [WORKTREE]      # default: build/kernel/dev
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PATCHES = ROOT / "kernel" / "patches"
COVER = "0000-cover-letter.patch"


def subject_and_blurb(cover: str) -> tuple[str, str]:
    """The cover letter's subject (without "[PATCH n/m]") and its text up to
    the shortlog, which format-patch writes again."""
    subject = re.search(r"^Subject: \[PATCH \d+/\d+\] (.*?)\n(?=\S)", cover, re.S | re.M)
    body = cover.split("\n\n", 1)[1]
    shortlog = re.search(r"^\S.* \(\d+\):$", body, re.M)
    if not subject or not shortlog:
        sys.exit(f"{PATCHES / COVER}: no subject or no shortlog found; edit the new one by hand")
    return subject.group(1), body[: shortlog.start()].rstrip("\n")


def main() -> None:
    worktree = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "kernel" / "dev"
    if not (worktree / ".git").exists():
        sys.exit(f"{worktree} is not the series' worktree: see docs/kernel-workflow.md")
    subject, blurb = subject_and_blurb((PATCHES / COVER).read_text())
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                "git",
                "-C",
                str(worktree),
                "format-patch",
                "-q",
                "--cover-letter",
                "-o",
                tmp,
                "pristine..HEAD",
            ],
            check=True,
        )
        new = Path(tmp) / COVER
        head, body = new.read_text().split("\n\n", 1)
        new.write_text(
            head.replace("*** SUBJECT HERE ***", subject)
            + "\n\n"
            + body.replace("*** BLURB HERE ***", blurb)
        )
        for old in PATCHES.glob("*.patch"):
            old.unlink()
        for patch in sorted(Path(tmp).glob("*.patch")):
            (PATCHES / patch.name).write_bytes(patch.read_bytes())
    count = len(list(PATCHES.glob("*.patch"))) - 1
    print(
        f"{count} patches and the cover letter in {PATCHES}; check the patch numbers its text names"
    )


if __name__ == "__main__":
    main()

#!/bin/sh
# Install what the testbed needs on a Debian 12 host, idempotently:
# Debian packages, the project venv (pinned), the guest runtime (cargo).
# Run as root. Safe to run again: each step is skipped when already done.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)

say() { printf 'setup: %s\n' "$*" >&2; }

# 1. Debian packages
pkgs=$(grep -v '^#' scripts/host-packages.txt | xargs)
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
        || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        say "missing Debian packages:$missing; run this as root"; exit 2
    fi
    say "installing Debian packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends $missing
fi

# 2. Python venv with pinned libraries (Debian's python3, not a pyenv one)
stamp=.venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)
if [ ! -f "$stamp" ]; then
    say "creating the project venv (.venv)"
    [ -x .venv/bin/python ] || /usr/bin/python3 -m venv .venv
    .venv/bin/pip install -q --upgrade pip==26.3
    .venv/bin/pip install -q -e '.[test,lint]'
    rm -f .venv/.installed-*
    touch "$stamp"
fi

# 3. Guest runtime (Rust), built in release mode with the locked crates
if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    say "cargo not found: installing Debian's cargo"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends cargo
fi
say "building the guest runtime"
# cargo leaves the binary as it was when only test code changed; the harness
# refuses a binary older than any runtime source (guest_setup.py), so the
# binary is stamped as built from this tree.
(cd runtime && cargo build --release --locked --quiet && touch target/release/pmr-guest)
say "ready ($ROOT)"

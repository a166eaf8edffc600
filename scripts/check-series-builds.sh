#!/bin/sh
# Does every patch of the series build? Checks out each commit of
# pristine..HEAD of the series' worktree in turn and builds TARGETS with the
# testbed kernel's config in an object directory of its own, holding the
# kernel build lock, and prints one line per patch: "ok" and the compiler
# warnings of the files that patch made make rebuild, or the failing log.
# Then it goes back to the branch it started from. TARGETS default to mm/
# and the object of every other .c file the series changes. ccache makes
# the commits whose headers did not change cheap.
#
#   scripts/check-series-builds.sh [WORKTREE] [TARGETS...]
#   (WORKTREE: default build/kernel/dev; see docs/kernel-workflow.md)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
wt=$(cd "${1:-$root/build/kernel/dev}" && pwd)
[ $# -gt 0 ] && shift
obj=$root/build/kernel/obj-series-check
config=$root/build/kernel/obj-testbed/.config
lock=$root/build/kernel/.lock
[ -f "$config" ] || { echo "no $config: run \`make kernel\` first" >&2; exit 2; }
git -C "$wt" diff --quiet HEAD || { echo "$wt has uncommitted changes" >&2; exit 2; }
branch=$(git -C "$wt" rev-parse --abbrev-ref HEAD)
[ "$branch" != HEAD ] || { echo "$wt is not on a branch" >&2; exit 2; }
targets=${*:-mm/ $(git -C "$wt" diff --name-only pristine..HEAD -- '*.c' |
	grep -v '^mm/' | sed 's/\.c$/.o/' | tr '\n' ' ')}
trap 'git -C "$wt" checkout -q "$branch"' EXIT
trap 'exit 130' INT TERM HUP
mkdir -p "$obj"
echo "building $targets at each patch of $branch (logs: $obj/build-NN.log)"
failed=0
n=0
for c in $(git -C "$wt" rev-list --reverse pristine..HEAD); do
	n=$((n + 1))
	git -C "$wt" checkout -q "$c"
	log=$obj/build-$(printf %02d $n).log
	printf '%02d %s ... ' $n "$(git -C "$wt" log -1 --format=%s "$c")"
	# the config afresh each time (olddefconfig drops what a patch lacks),
	# copied under the lock so that a reconfiguring `make kernel` is not seen
	# shellcheck disable=SC2086 # TARGETS are words
	if CCACHE_DIR=$root/build/ccache flock "$lock" sh -c \
		'cp "$1" "$2/.config" && shift 2 && exec make "$@"' sh "$config" "$obj" \
		-C "$wt" O="$obj" -j"$(nproc)" CC="ccache gcc" olddefconfig $targets \
		>"$log" 2>&1; then
		echo "ok, $(grep -c 'warning:' "$log" || true) warnings"
	else
		echo "FAILED (log: $log)"
		tail -20 "$log"
		failed=1
	fi
done
exit $failed

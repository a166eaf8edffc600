#!/bin/sh
# Does global reclaim keep the clean page cache below vm.clean_low_kbytes
# and vm.clean_min_kbytes (kernel/baselines/swam, SWAM's OOM cleaner)?
#
#   pmrtb probe swam-clean-floors [MODE]     (pmr/enabled, default 2)
#
# Cgroup `cache` reads a 96 MB file on ext4 into the page cache; cgroup
# `app` writes 128 MB of anon once (lib/touch_app.py), cold memory to
# swap. Three times, cgroup `load` allocates the memory that is free and
# 96 MB more for 20 s (sized from what is free, as on every kernel it then
# reclaims about as much), and /proc/vmstat gives what reclaim took:
# A. every floor 0: reclaim takes page cache as usual, 16 MB or more of
#    it (else the probe is inconclusive: nothing to protect);
# B. after the file is read again, vm.clean_low_kbytes 128 MB above the
#    clean page cache there is: reclaim swaps anon instead. Passed when
#    it took a quarter or less of A's file pages, and clean_low_hit
#    counted the passes;
# C. the same with vm.clean_low_kbytes 0 and vm.clean_min_kbytes there:
#    no file page is scanned at all (pgscan_file, kswapd and direct
#    reclaim), reclaim swaps 16 MB or more of anon instead, and
#    clean_min_hit counts the passes.
# Failed if B or C does not hold.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
vm=/proc/sys/vm

# clean_kb: the node's file pages less its dirty ones, kB (/proc/meminfo)
clean_kb() {
	awk '$1 == "Active(file):" || $1 == "Inactive(file):" { f += $2 }
	     $1 == "Dirty:" { d = $2 } END { print f - d }' /proc/meminfo
}
# cache: the file into the page cache, charged to `cache`
cache() {
	sh -c "echo \$\$ >$cg/cache/cgroup.procs; exec cat /run/data/f" >/dev/null
}
# pressure PHASE: the load, then the file pages and anon pages reclaim
# took in $file_mb and $anon_mb, the file pages scanned in $scanned
pressure() {
	s0=$(vmstat pgsteal_file)
	a0=$(vmstat pgsteal_anon)
	c0=$(vmstat pgscan_file)
	start_load $((20 * $(slowdown))) \
		"$(($(awk '$1 == "MemFree:" { print $2 }' /proc/meminfo) / 1024 + 96))m"
	wait "$load" 2>/dev/null || true
	file_mb=$((($(vmstat pgsteal_file) - s0) / 256))
	anon_mb=$((($(vmstat pgsteal_anon) - a0) / 256))
	scanned=$(($(vmstat pgscan_file) - c0))
	log "$1: reclaim took $file_mb MB of page cache, $anon_mb MB of anon;" \
	    "$scanned file pages scanned; clean page cache now $(($(clean_kb) >> 10)) MB"
}

setup_probe "$mode"
[ -e "$vm/clean_low_kbytes" ] || verdict 2 "no $vm/clean_low_kbytes: this kernel has no working-set floors"
need_keys /proc/vmstat clean_low_hit clean_min_hit pgsteal_file pgsteal_anon pgscan_file
make_file
mkdir "$cg/cache" "$cg/app"
start_app 128

cache
pressure "A. floors 0"
a_file=$file_mb
[ "$a_file" -ge 16 ] || verdict 2 "with no floor the load took only $a_file MB of page cache: nothing to protect"

cache
floor=$(($(clean_kb) + (128 << 10)))
echo "$floor" >"$vm/clean_low_kbytes"
hit0=$(vmstat clean_low_hit)
pressure "B. clean_low_kbytes $floor"
hits=$(($(vmstat clean_low_hit) - hit0))
echo 0 >"$vm/clean_low_kbytes"
[ "$hits" -gt 0 ] || verdict 1 "B: clean_low_hit did not move with the page cache below the floor"
[ $((file_mb * 4)) -le "$a_file" ] ||
	verdict 1 "B: under clean_low_kbytes reclaim took $file_mb MB of page cache ($a_file MB with no floor)"
b_file=$file_mb

cache
floor=$(($(clean_kb) + (128 << 10)))
echo "$floor" >"$vm/clean_min_kbytes"
hit0=$(vmstat clean_min_hit)
pressure "C. clean_min_kbytes $floor"
hits=$(($(vmstat clean_min_hit) - hit0))
echo 0 >"$vm/clean_min_kbytes"
kill "$app"
[ "$hits" -gt 0 ] || verdict 1 "C: clean_min_hit did not move with the page cache below the floor"
[ "$scanned" -eq 0 ] || verdict 1 "C: reclaim scanned $scanned file pages under clean_min_kbytes"
[ "$anon_mb" -ge 16 ] || verdict 1 "C: under clean_min_kbytes reclaim took only $anon_mb MB of anon: it did not swap instead"
verdict 0 "page cache reclaimed: $a_file MB with no floor, $b_file MB under clean_low_kbytes, none scanned under clean_min_kbytes"

#!/bin/sh
# Under cgroup v1 with memory+swap accounting (as Android mounts memcg at
# /dev/memcg), does a memcg that reaches its memsw limit take its file
# victims, reclaim there being unable to swap?
#
#   pmrtb probe v1-memsw-file-victims [MODE]     (pmr/enabled, default 2)
#
# 1. The memory controller is mounted as cgroup v1 (inconclusive if cgroup
#    v2 holds it, or if the kernel has no swap accounting); cgroup `app`
#    gets memory.limit_in_bytes and memory.memsw.limit_in_bytes of 192 MB
#    both, and, with PMR off, reads a 96 MB file once into its page cache;
# 2. pmr/victim_target_kbytes=65536, then pmr/enabled=MODE: kshrinkd
#    fills the victim lists, and the probe waits for 16 MB of victims in
#    `app` (inconclusive if not within 30 s: mode 0 makes none);
# 3. `app` allocates 150 MB of anon. Memory and memory+swap hit their
#    limits together, and try_charge_memcg() reclaims without swapping
#    when memsw is the counter at its limit (swapping would not lower
#    it): reclaim of `app` may take only file pages, its file victims
#    first (patch 6's skip_victim()). Passed when the anon is all charged
#    (memory.stat rss reaches 140 MB), no OOM kill happened in `app` and
#    reclaim freed 8 MB or more of victims (pmr_victim_reclaimed: no
#    other reclaim runs, the guest has 512 MB); failed otherwise.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"
v1=/run/memcg
# v1stat KEY: one field of `app`'s v1 memory.stat, in bytes or a count
v1stat() { keyval "$v1/app/memory.stat" "$1"; }
# oom_kills: the OOM kills in `app` (memory.oom_control)
oom_kills() { keyval "$v1/app/memory.oom_control" oom_kill; }
# has_victims: whether `app` holds 16 MB of victims
has_victims() { [ "$(victims_in "$v1/app/memory.stat")" -ge $((16 << 20)) ]; }
# charged_or_killed: whether `app` has 140 MB of anon or an OOM kill
charged_or_killed() { [ "$(v1stat rss)" -ge $((140 << 20)) ] || [ "$(oom_kills)" -ne 0 ]; }

setup_disks
set_pmr_enabled 0
mkdir -p "$v1"
mount -t cgroup -o memory memory "$v1" 2>/dev/null ||
	verdict 2 "the memory controller could not be mounted as cgroup v1 (cgroup v2 holds it?)"
[ -e "$v1/memory.memsw.limit_in_bytes" ] ||
	verdict 2 "no memory.memsw.limit_in_bytes: the kernel does not account swap"
mkdir "$v1/app"
echo $((192 << 20)) >"$v1/app/memory.limit_in_bytes"
echo $((192 << 20)) >"$v1/app/memory.memsw.limit_in_bytes"
make_file
sh -c "echo \$\$ >$v1/app/cgroup.procs; exec cat /run/data/f >/dev/null"
need_keys "$v1/app/memory.stat" cache rss swap
need_victims "$v1/app/memory.stat"
need_keys "$v1/app/memory.oom_control" oom_kill
need_keys /proc/vmstat pmr_victim_reclaimed pgscan_kswapd
log "app: cache $(v1stat cache), limits $(cat "$v1/app/memory.limit_in_bytes") / $(cat "$v1/app/memory.memsw.limit_in_bytes")"

pmr_knob victim_target_kbytes 65536
set_pmr_enabled "$mode"
wait_for 30 has_victims ||
	verdict 2 "kshrinkd made $(victims_in "$v1/app/memory.stat") bytes of victims in app in 30 s, not 16 MB"
victims=$(victims_in "$v1/app/memory.stat")
reclaimed0=$(vmstat pmr_victim_reclaimed)
kswapd0=$(vmstat pgscan_kswapd)
log "app: victims $victims, cache $(v1stat cache)"

sh -c "echo \$\$ >$v1/app/cgroup.procs; cd /tmp; exec stress-ng --vm 1 --vm-bytes 150m \
       --vm-method write64 --vm-hang 0 --timeout 60s --quiet" &
load=$!
wait_for 30 charged_or_killed || true
rss=$(v1stat rss)
kills=$(oom_kills)
left=$(victims_in "$v1/app/memory.stat")
stop_load
reclaimed=$((($(vmstat pmr_victim_reclaimed) - reclaimed0) * 4096))
log "app: rss $rss, cache $(v1stat cache), victims $left (of $victims), OOM kills $kills, swap $(v1stat swap)"
log "victims reclaimed $reclaimed bytes, memsw failcnt $(cat "$v1/app/memory.memsw.failcnt")," \
    "pgscan_kswapd +$(($(vmstat pgscan_kswapd) - kswapd0))"
[ "$kills" -eq 0 ] || verdict 1 "the OOM killer ran in app ($kills kills) with $left bytes of victims left"
[ "$rss" -ge $((140 << 20)) ] || verdict 1 "app's anon stopped at $rss bytes in 30 s"
[ "$reclaimed" -ge $((8 << 20)) ] ||
	verdict 1 "reclaim at the memsw limit freed $reclaimed bytes of victims, with $left bytes of them in app"
verdict 0 "at its memsw limit, app's reclaim freed $reclaimed bytes of victims and charged $rss of anon"

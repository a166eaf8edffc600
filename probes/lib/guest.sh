# Helpers the probes source: their log, their disks and cgroup v2.
# A probe's first argument is its results directory (a --rwdir).
cg=/sys/fs/cgroup

# log TEXT: to the probe's log, and to the console if it can be written.
log() {
	echo "$*" >>"$out/guest.log"
	echo "$*" || true
}

# verdict STATUS TEXT: the probe's last line and exit status (probe.py:
# 0 passed, 1 failed, 2 inconclusive).
verdict() {
	log "RESULT: $2"
	exit "$1"
}

# The /dev node of the virtio disk whose serial is $1.
disk_by_serial() {
	for d in /sys/block/vd*; do
		if [ "$(cat "$d/serial" 2>/dev/null)" = "$1" ]; then
			echo "/dev/${d##*/}"
			return 0
		fi
	done
	return 1
}

# Swap on the disk with serial pmrswap, ext4 on pmrdata mounted at /run/data.
setup_disks() {
	swap=$(disk_by_serial pmrswap) || verdict 2 "no swap disk (serial pmrswap)"
	data=$(disk_by_serial pmrdata) || verdict 2 "no data disk (serial pmrdata)"
	mkswap -q "$swap"
	swapon "$swap"
	mkfs.ext4 -q -F "$data"
	mkdir -p /run/data
	mount "$data" /run/data
}

# pmr_knob NAME VALUE: VALUE into /sys/kernel/mm/pmr/NAME or, on a kernel
# of the first version of the series (--kernel), into its sysctl
# vm.pmr_NAME (vm.pmr_mode for `enabled`).
pmr_knob() {
	if [ -d /sys/kernel/mm/pmr ]; then
		echo "$2" >"/sys/kernel/mm/pmr/$1"
	elif [ "$1" = enabled ]; then
		echo "$2" >/proc/sys/vm/pmr_mode
	else
		echo "$2" >"/proc/sys/vm/pmr_$1"
	fi
}

# set_pmr_enabled MODE: MODE into pmr/enabled, or an inconclusive verdict
# if refused.
set_pmr_enabled() {
	pmr_knob enabled "$1" 2>/dev/null ||
		verdict 2 "pmr/enabled refused $1 (a mode is 0, 1 or 2)"
}

# setup_probe MODE: the disks, pmr/enabled=MODE and the memory controller
# for the root's children, as every probe starts.
setup_probe() {
	setup_disks
	set_pmr_enabled "$1"
	echo +memory >"$cg/cgroup.subtree_control"
}

# need_keys FILE KEY...: an inconclusive verdict unless the flat-keyed
# FILE (a memory.stat, /proc/vmstat) has every KEY. A probe checks the keys
# it reads first: with an empty value every comparison fails, and a wait
# would time out as if the kernel were only slow.
need_keys() {
	f=$1
	shift
	for k in "$@"; do
		[ -n "$(keyval "$f" "$k")" ] ||
			verdict 2 "$f has no $k: this kernel does not count what the probe reads"
	done
}

# keyval FILE KEY: the value of KEY in the flat-keyed FILE ("key value"
# lines: memory.stat, cgroup.stat, /proc/vmstat), empty if it has none.
keyval() { awk -v k="$2" '$1 == k { print $2 }' "$1"; }

# memstat CGROUP KEY: one field of CGROUP's memory.stat, in bytes or pages.
memstat() { keyval "$cg/$1/memory.stat" "$2"; }

# victims_in STATFILE: what a memory.stat (cgroup v1 or v2) has on PMR's
# victim lists: victim_anon + victim_file, or `victim` on the first version
# of the series before its patch 26 (one list for both types; probes run on
# such kernels with --kernel). Empty if it counts no victims.
victims_in() {
	awk '$1 == "victim" { one = $2 }
	     $1 == "victim_anon" || $1 == "victim_file" { n += $2; split_lists = 1 }
	     END { if (one != "") print one; else if (split_lists) print n }' "$1"
}

# anon_victims_in STATFILE: the anon ones among them (victim_anon, or
# victim - victim_file before v1's patch 26); empty if it does not count them.
anon_victims_in() {
	awk '$1 == "victim" { one = $2 } $1 == "victim_file" { file = $2 }
	     $1 == "victim_anon" { anon = $2 }
	     END { if (anon != "") print anon; else if (one != "" && file != "") print one - file }' "$1"
}

# memvictims CGROUP: CGROUP's victims, in bytes.
memvictims() { victims_in "$cg/$1/memory.stat"; }

# anon_victims CGROUP: CGROUP's anon victims, in bytes.
anon_victims() { anon_victims_in "$cg/$1/memory.stat"; }

# need_victims STATFILE: an inconclusive verdict unless the memory.stat
# counts victims (see need_keys).
need_victims() {
	[ -n "$(victims_in "$1")" ] ||
		verdict 2 "$1 counts no victims: this kernel does not count what the probe reads"
}

# cgstat CGROUP KEY: one field of CGROUP's cgroup.stat.
cgstat() { keyval "$cg/$1/cgroup.stat" "$2"; }

# vmstat KEY: one counter of /proc/vmstat.
vmstat() { keyval /proc/vmstat "$1"; }

# wait_for SECONDS COMMAND [ARG...]: run COMMAND every 0.1 s until it
# succeeds (status 0) or SECONDS have passed (status 1).
wait_for() {
	ticks=$(($1 * 10))
	shift
	until "$@"; do
		[ "$ticks" -gt 0 ] || return 1
		sleep 0.1
		ticks=$((ticks - 1))
	done
}

# A 96 MB file of random data on the data disk, not in the page cache.
make_file() {
	dd if=/dev/urandom of=/run/data/f bs=1M count=96 status=none
	sync
	echo 3 >/proc/sys/vm/drop_caches
}

# start_app MEGABYTES: lib/touch_app.py in cgroup `app` (made already),
# writing MEGABYTES of anon once, in the background; $app is its pid. Its
# state files ($out/app.*) of an earlier run in the same directory go
# first, so that the waits see this run's. An inconclusive verdict unless
# it wrote them within 60 s.
start_app() {
	rm -f "$out"/app.*
	sh -c "echo \$\$ >$cg/app/cgroup.procs; exec python3 $(dirname "$0")/lib/touch_app.py $1 $out/app" &
	app=$!
	wait_for 60 test -e "$out/app.addr" || verdict 2 "app did not write its $1 MB within 60 s"
}

# Anon memory from cgroup `load` for at most $1 seconds, $2 of it (a
# stress-ng size: 85% of the memory there is, or e.g. 600m), at nice $3
# (0 if not given), in the background: $load is stress-ng's pid;
# stop_load ends it and its workers.
start_load() {
	mkdir -p "$cg/load"
	sh -c "echo \$\$ >$cg/load/cgroup.procs; cd /tmp; exec nice -n ${3:-0} \
	       stress-ng --vm 1 --vm-bytes ${2:-85%} --vm-keep --timeout ${1}s --quiet" &
	load=$!
}

# RAM in MB (MemTotal).
ram_mb() { awk '$1 == "MemTotal:" { print int($2 / 1024) }' /proc/meminfo; }

stop_load() {
	kill "$load" 2>/dev/null || true
	wait "$load" 2>/dev/null || true
}

# How many times slower the kernel runs than the testbed kernel (the
# harness's kernel.SLOWDOWN, in the results directory): 1 unless told.
slowdown() { cat "$out/slowdown" 2>/dev/null || echo 1; }

# MemAvailable in MB.
available_mb() { awk '$1 == "MemAvailable:" { print int($2 / 1024) }' /proc/meminfo; }

# top_up_victims CGROUP: wake kshrinkd by writing pmr/victim_target_kbytes
# again: it tops the victims up to its target from the inactive lists.
# After a load, with no reclaim left to take them, most come from what the
# load pushed there, CGROUP's memory. Sets $victims to CGROUP's anon victims
# a second later. Nothing to do on a kernel of the first version of the
# series, which has no such file.
top_up_victims() {
	tv_knob=/sys/kernel/mm/pmr/victim_target_kbytes
	[ -w "$tv_knob" ] || return 0
	tv_target=$(cat "$tv_knob")
	echo "$tv_target" >"$tv_knob"
	sleep 1
	victims=$(anon_victims "$1")
	log "kshrinkd woken: $1 anon victims $victims"
}

# load_until_victims CGROUP WANT KEEP: anon victims in CGROUP, for a probe
# to judge. They come and go while a load runs (reclaim takes them as
# kshrinkd makes them), so cgroup `load` allocates anon (for at most 30 s)
# until CGROUP holds WANT bytes of anon victims; then the load ends and its
# memory is freed, so that no reclaim runs but the probe's own. If under
# KEEP bytes of them are left a second later (kswapd, still busy, may take
# them all), the load runs again, for 90 s in all. Reclaim takes the
# victims about as fast as kshrinkd makes them, so few may be left when the
# load ends (on a slow host, under 4 MB where 16 were wanted): after each
# load, top_up_victims. A load is 0.8 x RAM, or
# LOAD_OVER_AVAILABLE_MB more than MemAvailable when that is larger: once
# a load fits, reclaim stops, and a load of the same size fits again after
# the first has pushed CGROUP's memory out. Both times are stretched by the
# slowdown: on the debug kernel a load needs longer to fill RAM, and it
# runs at nice 19 there, so that the polls still see the victims before
# reclaim takes them. Sets $victims to the bytes left.
LOAD_OVER_AVAILABLE_MB=48
load_until_victims() {
	lu_start=$(date +%s)
	lu_polls=0
	lu_slow=$(slowdown)
	lu_nice=0
	[ "$lu_slow" -eq 1 ] || lu_nice=19
	victims=0
	while [ "$victims" -lt "$3" ] &&
	    [ $(($(date +%s) - lu_start)) -lt $((90 * lu_slow)) ]; do
		lu_mb=$(($(ram_mb) * 8 / 10))
		lu_over=$(($(available_mb) + LOAD_OVER_AVAILABLE_MB))
		[ "$lu_over" -le "$lu_mb" ] || lu_mb=$lu_over
		start_load $((30 * lu_slow)) "${lu_mb}m" "$lu_nice"
		lu_made=0
		while [ "$lu_made" -lt "$2" ] && kill -0 "$load" 2>/dev/null; do
			sleep 0.2
			lu_made=$(anon_victims "$1")
			lu_polls=$((lu_polls + 1))
			[ $((lu_polls % 5)) -ne 0 ] ||
				log "  $1: anon victims $lu_made anon $(memstat "$1" anon)" \
				    "swap $(cat "$cg/$1/memory.swap.current")"
		done
		stop_load
		sleep 1
		victims=$(anon_victims "$1")
		log "load of $lu_mb MB ended after $(($(date +%s) - lu_start)) s:" \
		    "$1 anon victims $lu_made, a second later $victims"
		top_up_victims "$1"
	done
}

#!/bin/sh
# Does MADV_SWAPCLEAN drop exactly the swapped-out private copies of file
# pages (kernel/baselines/swam patch 2, SWAM's swap-clean)?
#
#   pmrtb probe swam-swap-clean [MODE]     (pmr/enabled, default 2)
#
# lib/so_app.py writes a 64 MB file on ext4 and maps it MAP_PRIVATE like
# a .so's data, writes a "relocated" word to every page (each becomes a
# private anon copy), writes 16 MB of private anon, pages both out with
# MADV_PAGEOUT and reads one page in four of the file mapping back in.
# Then it calls process_madvise(2) with MADV_SWAPCLEAN on itself, over
# both areas, and reads every page. No memory pressure is needed.
# Inconclusive if the kernel refuses the advice (EINVAL: it has no
# MADV_SWAPCLEAN), or if less than half the file mapping or of the anon
# was swapped out before the clean (nothing to judge).
# Failed if a page holds neither the file's content nor the relocated
# word (corrupt), if a page that was resident lost its relocated word, if
# an anon page changed or anon swap was dropped (its swapped pages, from
# pagemap, and VmSwap after the clean), if fewer than half the file
# pages that were swapped out went back to the file's content, if
# /proc/vmstat swap_clean did not grow by the pages that did (within 4),
# or if VmSwap did not fall by them (within 64 pages: the per-task RSS
# cache). Passed otherwise.
set -eu
out=$1
mode=${2:-2}
. "$(dirname "$0")/lib/guest.sh"

# kv FILE KEY: KEY's value in the app's key=value FILE
kv() { awk -F= -v k="$2" '$1 == k { print $2 }' "$1"; }
# app_wrote FILE: the app's STATE.FILE, or its error file, is there
app_wrote() { [ -e "$out/so.$1" ] || [ -e "$out/so.error" ]; }
# app_error WHAT: an inconclusive verdict if the app gave up
app_error() {
	if [ -e "$out/so.error" ]; then
		log "$(cat "$out/so.error")"
		verdict 2 "the app failed $1: $(tail -n 1 "$out/so.error")"
	fi
}

setup_probe "$mode"
rm -f "$out"/so.*
python3 "$(dirname "$0")/lib/so_app.py" /run/data/so "$out/so" &
app=$!
wait_for $((60 * $(slowdown))) app_wrote before ||
	verdict 2 "the app did not set up its pages within $((60 * $(slowdown))) s"
app_error "setting up"
b=$out/so.before
fpages=$(kv "$b" file_pages)
apages=$(kv "$b" anon_pages)
fswapped=$(kv "$b" file_swapped)
aswapped=$(kv "$b" anon_swapped)
swap0=$(kv "$b" vmswap_kb)
log "before: of $fpages file pages, $(kv "$b" quarter_present) of the quarter read back" \
    "present; of the others $fswapped swapped out, $(kv "$b" file_present) present;" \
    "$aswapped of $apages anon pages swapped out; VmSwap $swap0 kB"
[ $((fswapped * 2)) -ge "$fpages" ] ||
	verdict 2 "only $fswapped of $fpages file pages were swapped out: nothing to clean"
[ $((aswapped * 2)) -ge "$apages" ] ||
	verdict 2 "only $aswapped of $apages anon pages were swapped out: nothing to keep"

c0=$(vmstat swap_clean)
kill -USR1 "$app"
wait_for $((60 * $(slowdown))) app_wrote after ||
	verdict 2 "the app did not finish its clean within $((60 * $(slowdown))) s"
app_error "cleaning"
wait "$app" || true
a=$out/so.after
if [ "$(kv "$a" rc)" != 0 ]; then
	err=$(kv "$a" errno)
	[ "$err" != EINVAL ] ||
		verdict 2 "process_madvise refused MADV_SWAPCLEAN (EINVAL): this kernel has no MADV_SWAPCLEAN"
	verdict 1 "process_madvise(MADV_SWAPCLEAN) failed: $err"
fi
need_keys /proc/vmstat swap_clean
counted=$(($(vmstat swap_clean) - ${c0:-0}))
for k in advised vmswap_kb vmswap_end_kb dropped anon_swapped quarter_relo quarter_bad \
    reverted kept corrupt reverted_present kept_swapped anon_ok anon_bad first_bad; do
	eval "$k=\$(kv \"\$a\" $k)"
done
log "after: advised $advised bytes; swap_clean +$counted; VmSwap $vmswap_kb kB" \
    "($vmswap_end_kb kB after the reads); $dropped swapped pages unmapped (pagemap);" \
    "quarter: $quarter_relo relocated, $quarter_bad not; others: $reverted file content" \
    "($reverted_present of them resident before), $kept relocated ($kept_swapped of them" \
    "swapped out before), $corrupt corrupt; anon: $anon_ok intact, $anon_bad not," \
    "$anon_swapped swapped; first bad page: $first_bad"

[ "$advised" -eq $(((fpages + apages) * 4096)) ] ||
	verdict 1 "process_madvise advised $advised bytes, not both areas"
[ "$corrupt" -eq 0 ] ||
	verdict 1 "$corrupt file pages hold neither the file nor the relocated word (first: $first_bad)"
[ "$quarter_bad" -eq 0 ] && [ "$reverted_present" -eq 0 ] ||
	verdict 1 "resident pages lost their writes: $quarter_bad read back, $reverted_present others"
[ "$anon_bad" -eq 0 ] ||
	verdict 1 "$anon_bad anon pages changed (first: $first_bad)"
[ "$anon_swapped" -eq "$aswapped" ] ||
	verdict 1 "anon swap dropped: $aswapped anon pages swapped out before the clean, $anon_swapped after"
[ "$vmswap_kb" -ge $((aswapped * 4 - 256)) ] ||
	verdict 1 "VmSwap $vmswap_kb kB after the clean, below the $((aswapped * 4)) kB of swapped anon"
[ $((reverted * 2)) -ge "$fswapped" ] ||
	verdict 1 "only $reverted of the $fswapped swapped-out file pages went back to the file's content"
[ "$counted" -ge $((reverted - 4)) ] && [ "$counted" -le $((reverted + 4)) ] ||
	verdict 1 "swap_clean grew by $counted, but $reverted pages went back to the file's content"
fell=$(((swap0 - vmswap_kb) / 4))
[ "$fell" -ge $((reverted - 64)) ] && [ "$fell" -le $((reverted + 64)) ] ||
	verdict 1 "VmSwap fell by $fell pages, but $reverted pages went back to the file's content"
msg="swap-clean dropped $reverted of $fswapped swapped-out file pages (swap_clean +$counted,"
msg="$msg VmSwap $swap0 -> $vmswap_kb kB); $quarter_relo resident and $kept other file pages"
verdict 0 "$msg kept their writes; $apages anon pages intact, $anon_swapped still swapped"

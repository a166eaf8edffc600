//! SWAM's OOM Cleaner as its paper has it (MobiCom'23; its public code
//! lacks it): swap-clean. When lmkd is about to kill for a reason that
//! involves swap, it first drops the swapped-out copies its candidates
//! made of file pages in private mappings (a shared object's relocated
//! data: the apps' `so_mb`, workload/app.rs) with process_madvise(2) and
//! MADV_SWAPCLEAN (kernel/baselines/swam, patch 2), candidate by candidate
//! in its kill order, and kills nobody once swap is no longer low. Swap
//! space comes back without a kill; the app finds those pages holding the
//! file's content again and relocates them when it next touches them.
//!
//! - The reasons (`cleans_for`): low_swap_and_thrashing, low_mem_and_swap
//!   and low_mem_and_swap_util.
//! - The ranges (`so_ranges`): from /proc/PID/maps, the private writable
//!   mappings of files under the candidate's app directory on the data
//!   disk, and those only. Every process also maps its executable's and
//!   its libraries' data private and writable (the runtime's statics,
//!   libc's), which nothing here would regenerate, and the kernel would
//!   drop their swapped-out pages just the same.
//! - The stop rule (`relieved`, `clean_in_order`): after each process
//!   cleaned, /proc/meminfo against the threshold the kill reason came
//!   from, as lmkd's decision computes it (decision.rs): free swap no
//!   longer below `swap_free_low_percentage` of SwapTotal, or, for
//!   low_mem_and_swap_util, swap utilization no longer above
//!   `swap_util_max`. Once it holds, the kill is skipped; when no
//!   candidate made it hold, lmkd kills as it would have.
//! - Each process cleaned (one with such ranges) logs a `swam_clean`
//!   event: its app and pid, the pages the kernel dropped (the growth of
//!   /proc/vmstat's `swap_clean` over the call), SwapFree after, how long
//!   the process took, and whether swap was relieved then.
//! - A process that exited meanwhile (ESRCH) is skipped without an event.
//!   At lmkd's start (`Cleaner::new`) a kernel without the advice fails the
//!   run's setup: no `swap_clean` in /proc/vmstat, or process_madvise(2)
//!   refusing MADV_SWAPCLEAN (EINVAL) for lmkd's own pid with no range.

use crate::lmkd::decision::{swap_is_low, swap_utilization, KillReason};
use crate::spec::LmkdConfig;
use crate::sys::proc_files::{self, parse_maps_line, MemInfo};
use crate::sys::{self, MAX_IOVECS};
use crate::workload::activity_manager::millis;
use crate::workload::app_files;
use crate::workload::unused_anon::pageout::ranges_done;
use anyhow::{bail, ensure, Context, Result};
use std::ops::Range;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The madvise advice of kernel/baselines/swam's patch 2.
pub const MADV_SWAPCLEAN: i32 = 26;

/// Whether lmkd swap-cleans before a kill for `reason`: the reasons that
/// say swap is short.
pub fn cleans_for(reason: KillReason) -> bool {
    matches!(
        reason,
        KillReason::LowSwapAndThrashing | KillReason::LowMemAndSwap | KillReason::LowMemAndSwapUtil
    )
}

/// The stop rule: whether `mem` no longer meets the swap condition of
/// `reason` as lmkd's decision weighs it (decision.rs): swap no longer
/// low, or, for low_mem_and_swap_util, swap utilization no longer above
/// `swap_util_max`. Never for a reason that is not about swap.
pub fn relieved(reason: KillReason, cfg: &LmkdConfig, mem: &MemInfo) -> bool {
    match reason {
        KillReason::LowSwapAndThrashing | KillReason::LowMemAndSwap => !swap_is_low(cfg, mem),
        KillReason::LowMemAndSwapUtil => {
            swap_utilization(mem, cfg.swap_compression_ratio) <= cfg.swap_util_max
        }
        _ => false,
    }
}

/// Swap-clean the candidates of `order` (lmkd's kill order) one after the
/// other with `clean` until one leaves swap relieved: whether one did.
/// `clean` answers None for a candidate it did not clean (gone, or
/// nothing to clean), which does not end the walk, else whether swap is
/// relieved after it.
pub fn clean_in_order<T>(
    order: &[T],
    mut clean: impl FnMut(&T) -> Result<Option<bool>>,
) -> Result<bool> {
    for candidate in order {
        if clean(candidate)? == Some(true) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The ranges swap-clean may drop in a process whose app's files are in
/// `app_dir`: its private writable mappings of files under it (its shared
/// objects' data), in the order of `maps` (/proc/PID/maps: by address).
pub fn so_ranges(maps: &str, app_dir: &Path) -> Vec<Range<u64>> {
    maps.lines()
        .filter_map(parse_maps_line)
        .filter(|v| v.private_writable() && Path::new(v.path).starts_with(app_dir))
        .map(|v| v.range)
        .collect()
}

/// The `swap_clean` counter of /proc/vmstat (pages dropped by
/// MADV_SWAPCLEAN); None on a kernel without it.
pub fn swap_clean_pages(vmstat: &str) -> Option<i64> {
    proc_files::parse_key_values(vmstat)
        .ok()?
        .into_iter()
        .find_map(|(key, pages)| (key == "swap_clean").then_some(pages))
}

/// What swap-cleaning one process did, for its `swam_clean` event.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cleaned {
    /// Pages the kernel dropped (the growth of vmstat's swap_clean).
    pub pages: i64,
    /// /proc/meminfo SwapFree right after.
    pub swap_free_kb_after: i64,
    /// Wall time, from reading its maps to reading meminfo after.
    pub ms: f64,
    /// Whether the stop rule held then.
    pub relieved: bool,
}

/// lmkd's swap-cleaner: the apps' files are under `data_dir`.
pub struct Cleaner {
    data_dir: PathBuf,
}

impl Cleaner {
    /// A cleaner for the apps whose files are under `data_dir`
    /// (app_files::DATA_MOUNT), if the kernel has MADV_SWAPCLEAN; an error
    /// that says so otherwise.
    pub fn new(data_dir: &Path) -> Result<Cleaner> {
        check_kernel()?;
        Ok(Cleaner {
            data_dir: data_dir.to_path_buf(),
        })
    }

    /// Swap-clean process `pid` of `app`, then weigh swap against
    /// `reason`'s threshold; None if the process has no shared objects'
    /// data mapped or exited.
    pub fn clean(
        &self,
        pid: i32,
        app: &str,
        reason: KillReason,
        cfg: &LmkdConfig,
    ) -> Result<Option<Cleaned>> {
        let start = Instant::now();
        let maps = match std::fs::read_to_string(format!("/proc/{pid}/maps")) {
            Ok(text) => text,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read /proc/{pid}/maps")),
        };
        // A zombie's maps are empty.
        let ranges = so_ranges(&maps, &app_files::app_dir(&self.data_dir, app));
        if ranges.is_empty() {
            return Ok(None);
        }
        let pidfd = match sys::pidfd_open(pid) {
            Ok(fd) => fd,
            Err(e) if gone(&e) => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("pidfd_open({pid}) failed")),
        };
        let before = read_swap_clean()?;
        if !swap_clean(pidfd.as_fd(), &ranges).with_context(|| format!("pid {pid} ({app})"))? {
            return Ok(None);
        }
        let after = read_swap_clean()?;
        let mem = proc_files::parse_meminfo(
            &std::fs::read_to_string("/proc/meminfo").context("cannot read /proc/meminfo")?,
        )?;
        Ok(Some(Cleaned {
            pages: after - before,
            swap_free_kb_after: mem.swap_free,
            ms: millis(start.elapsed()),
            relieved: relieved(reason, cfg, &mem),
        }))
    }
}

fn gone(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH))
}

fn read_swap_clean() -> Result<i64> {
    let vmstat = std::fs::read_to_string("/proc/vmstat").context("cannot read /proc/vmstat")?;
    swap_clean_pages(&vmstat).context("/proc/vmstat has no swap_clean")
}

/// process_madvise(MADV_SWAPCLEAN) over `ranges` of the process behind
/// `pidfd`, at most MAX_IOVECS ranges a call; false if the process exited
/// meanwhile. A range unmapped since its maps were read (ENOMEM, EFAULT)
/// is skipped, the rest advised.
fn swap_clean(pidfd: BorrowedFd<'_>, ranges: &[Range<u64>]) -> Result<bool> {
    for batch in ranges.chunks(MAX_IOVECS) {
        let mut next = 0;
        while next < batch.len() {
            let left = &batch[next..];
            match sys::process_madvise(pidfd, left, MADV_SWAPCLEAN) {
                // The range after those done failed: skip it.
                Ok(advised) => next += ranges_done(left, advised) + 1,
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(false),
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOMEM | libc::EFAULT)) => {
                    next += 1
                }
                Err(e) => return Err(e).context("process_madvise(MADV_SWAPCLEAN) failed"),
            }
        }
    }
    Ok(true)
}

/// The kernel has MADV_SWAPCLEAN and its counter, or an error that says
/// it has not: one line for the run's setup.
fn check_kernel() -> Result<()> {
    const NEEDS: &str = "scheme.swam.cleaner needs a kernel with MADV_SWAPCLEAN \
                         (kernel/baselines/swam, patch 2)";
    let vmstat = std::fs::read_to_string("/proc/vmstat").context("cannot read /proc/vmstat")?;
    ensure!(
        swap_clean_pages(&vmstat).is_some(),
        "{NEEDS}: /proc/vmstat has no swap_clean"
    );
    let pid = std::process::id() as i32;
    let pidfd = sys::pidfd_open(pid).context("pidfd_open of lmkd's own pid failed")?;
    // No range: nothing is advised, but the kernel checks the advice.
    match sys::process_madvise(pidfd.as_fd(), &[], MADV_SWAPCLEAN) {
        Ok(_) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            bail!("{NEEDS}: process_madvise(2) refuses advice {MADV_SWAPCLEAN} (EINVAL)")
        }
        Err(e) => {
            Err(e).context("process_madvise(MADV_SWAPCLEAN) of lmkd's own pid, a check, failed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    const APP_DIR: &str = "/tmp/pmr/data/chrome";

    /// chrome's process as the kernel lists it: its shared objects' data
    /// in two files (two ranges), the same files mapped shared for reading,
    /// the runtime's and libc's own data, and anonymous memory.
    const MAPS: &str = "\
55d0c0800000-55d0c0900000 r--p 00000000 fe:00 1201                       /tmp/pmr-guest
55d0c0900000-55d0c0a00000 rw-p 00100000 fe:00 1201                       /tmp/pmr-guest
55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0                          [heap]
7f0000000000-7f0000400000 r--s 00000000 fe:10 12                         /tmp/pmr/data/chrome/res-000.bin
7f0000400000-7f0000800000 r--s 00000000 fe:10 13                         /tmp/pmr/data/chrome/res-001.bin
7f1000000000-7f1000400000 rw-p 00000000 fe:10 12                         /tmp/pmr/data/chrome/res-000.bin
7f1000400000-7f1000500000 rw-p 00000000 fe:10 13                         /tmp/pmr/data/chrome/res-001.bin
7f1000500000-7f1000600000 r--p 00000000 fe:10 14                         /tmp/pmr/data/chrome/res-002.bin
7f1000600000-7f1000700000 rw-s 00000000 fe:10 15                         /tmp/pmr/data/chrome/res-003.bin
7f1000700000-7f1000800000 rw-p 00000000 fe:10 16                         /tmp/pmr/data/chromecast/res-000.bin
7f1000800000-7f1000900000 rw-p 00000000 fe:10 17                         /tmp/pmr/data/youtube/res-000.bin
7f2000000000-7f2000002000 rw-p 0001f000 fd:01 131                        /usr/lib/libc.so.6
7f3000000000-7f3000004000 rw-p 00000000 00:00 0
7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                          [stack]
7ffd1c100000-7ffd1c102000 r-xp 00000000 00:00 0                          [vdso]
";

    fn config() -> LmkdConfig {
        Spec::parse(include_str!("../../tests/fixtures/spec.json"))
            .unwrap()
            .lmkd
    }

    /// 400 MB of RAM and of swap, 200 MB of anon resident, 100 MB free
    /// and 200 MB of inactive file; `swap_free_kb` of swap free.
    fn mem(swap_free_kb: i64) -> MemInfo {
        MemInfo {
            mem_total: 400_000,
            mem_free: 100_000,
            mem_available: 150_000,
            swap_total: 400_000,
            swap_free: swap_free_kb,
            shmem: 0,
            active_anon: 100_000,
            inactive_anon: 100_000,
            inactive_file: 200_000,
            cma_free: 0,
        }
    }

    #[test]
    fn only_the_apps_private_writable_file_mappings_are_cleaned() {
        assert_eq!(
            so_ranges(MAPS, Path::new(APP_DIR)),
            vec![
                0x7f10_0000_0000..0x7f10_0040_0000,
                0x7f10_0040_0000..0x7f10_0050_0000
            ]
        );
        assert_eq!(
            so_ranges(MAPS, Path::new("/tmp/pmr/data/youtube")),
            vec![0x7f10_0080_0000..0x7f10_0090_0000]
        );
        assert!(so_ranges(MAPS, Path::new("/tmp/pmr/data/firefox")).is_empty());
        assert!(so_ranges("", Path::new(APP_DIR)).is_empty(), "a zombie");
    }

    #[test]
    fn swap_reasons_are_cleaned_for() {
        use KillReason::*;
        for reason in [LowSwapAndThrashing, LowMemAndSwap, LowMemAndSwapUtil] {
            assert!(cleans_for(reason), "{reason:?}");
        }
        for reason in [
            PressureAfterKill,
            NotResponding,
            LowMemAndThrashing,
            DirectReclAndThrashing,
            LowFilecacheAfterThrashing,
        ] {
            assert!(!cleans_for(reason), "{reason:?}");
            assert!(!relieved(reason, &config(), &mem(400_000)), "{reason:?}");
        }
    }

    #[test]
    fn swap_is_relieved_at_lmkds_own_threshold() {
        let mut cfg = config(); // swap low under 20% of SwapTotal: 20,000 pages
        cfg.swap_compression_ratio = 0;
        for reason in [KillReason::LowMemAndSwap, KillReason::LowSwapAndThrashing] {
            assert!(!relieved(reason, &cfg, &mem(79_996)), "19,999 pages free");
            assert!(relieved(reason, &cfg, &mem(80_000)), "20,000 pages free");
        }
        // lmkd 14's cap: free swap counts at most (free + inactive file) x 1,
        // 75,000 pages here
        cfg.swap_compression_ratio = 1;
        let mut m = mem(400_000);
        assert!(relieved(KillReason::LowMemAndSwap, &cfg, &m));
        m.mem_free = 40_000;
        m.inactive_file = 39_996; // 10,000 + 9,999 pages
        assert!(!relieved(KillReason::LowMemAndSwap, &cfg, &m));
        // a percentage of 0 never calls swap low
        cfg.swap_free_low_percentage = 0;
        assert!(relieved(KillReason::LowMemAndSwap, &cfg, &mem(0)));
    }

    #[test]
    fn swap_utilization_is_relieved_at_swap_util_max() {
        let mut cfg = config();
        cfg.swap_compression_ratio = 0;
        cfg.swap_util_max = 50;
        // 75,000 pages used of 50,000 resident + 75,000: 60%
        assert!(!relieved(
            KillReason::LowMemAndSwapUtil,
            &cfg,
            &mem(100_000)
        ));
        // 37,500 used of 50,000 + 37,500: 42%
        assert!(relieved(KillReason::LowMemAndSwapUtil, &cfg, &mem(250_000)));
        // 50,000 of 100,000: 50%, not above the limit
        assert!(relieved(KillReason::LowMemAndSwapUtil, &cfg, &mem(200_000)));
    }

    #[test]
    fn cleaning_stops_at_the_first_candidate_that_relieves_swap() {
        let mut cfg = config();
        cfg.swap_compression_ratio = 0;
        // each candidate's cleaning frees 30 MB of swap, from none free;
        // pid 2 is gone, pid 4 has nothing to clean
        let order = [1, 2, 3, 4, 5, 6];
        let mut swap_free = 0;
        let mut cleaned = Vec::new();
        let mut clean = |&pid: &i32| -> Result<Option<bool>> {
            if pid == 2 || pid == 4 {
                return Ok(None);
            }
            swap_free += 30_000;
            cleaned.push(pid);
            Ok(Some(relieved(
                KillReason::LowMemAndSwap,
                &cfg,
                &mem(swap_free),
            )))
        };
        assert!(clean_in_order(&order, &mut clean).unwrap());
        assert_eq!(
            cleaned,
            vec![1, 3, 5],
            "90 MB free after the third: no kill"
        );
        // never relieved: every candidate is cleaned, then lmkd kills
        let mut seen = Vec::new();
        let never = clean_in_order(&order, |&pid| {
            seen.push(pid);
            Ok(Some(false))
        });
        assert!(!never.unwrap());
        assert_eq!(seen, order);
        assert!(!clean_in_order(&[] as &[i32], |_| Ok(Some(true))).unwrap());
        // an error ends the walk
        let err = clean_in_order(&order, |&pid| {
            if pid == 3 {
                bail!("process_madvise failed")
            }
            Ok(None)
        });
        assert!(err.is_err());
    }

    #[test]
    fn the_swap_clean_counter_is_read_from_vmstat() {
        let vmstat = "pswpout 120\nswap_ra 3\nswap_ra_hit 2\nswap_clean 4096\nksm_swpin_copy 0\n";
        assert_eq!(swap_clean_pages(vmstat), Some(4096));
        assert_eq!(swap_clean_pages("pswpout 120\nswap_ra 3\n"), None);
        assert_eq!(swap_clean_pages("swap_clean_x 1\n"), None);
        assert_eq!(swap_clean_pages("swap_clean x\n"), None);
    }

    #[test]
    fn a_process_without_shared_objects_data_or_gone_is_skipped() {
        // no kernel support needed: nothing reaches process_madvise
        let cleaner = Cleaner {
            data_dir: std::env::temp_dir().join("pmr-cleaner-none"),
        };
        let me = std::process::id() as i32;
        let cfg = config();
        let reason = KillReason::LowMemAndSwap;
        assert_eq!(cleaner.clean(me, "chrome", reason, &cfg).unwrap(), None);
        assert_eq!(
            cleaner.clean(i32::MAX, "chrome", reason, &cfg).unwrap(),
            None
        );
    }
}

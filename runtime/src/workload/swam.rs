//! SWAM's Adaptive Swap (MobiCom'23) as its public code has it: a
//! user-space daemon that grows and shrinks the flash tier of swap, below
//! zram, with memory pressure by adding and removing swap files
//! (mobile-swam/third-party, adaptive-swapd/swamd.c). SWAM's EOOM Killer
//! is in lmkd (lmkd/eoom.rs); its OOM Cleaner is the kernel's working-set
//! protection, set by the scheme's knobs, and swap-clean in lmkd
//! (lmkd/cleaner.rs).
//!
//! - The swap disk is an ext4 filesystem on `SWAP_FILE_DIR` (setup.rs);
//!   the daemon starts with no file on it.
//! - Every `period_ms` (swamd.c: every 1 s) it reads spare memory, swamd.c's
//!   formula: MemFree + SwapFree + (Buffers + Cached) / 2 (/proc/meminfo,
//!   kB). Below `low_mb` it adds a file while fewer than `max_files` are in
//!   use; above `high_mb` it removes the newest (`decide`; swamd.c removes
//!   above its chunk + upper limit, which `high_mb` stands for). One file
//!   at most per period, as swamd.c.
//! - Adding a file: fallocate `chunk_mb` (whole pages), mkswap's header
//!   written in-process (`swap_header`) and swapon without a priority (swamd.c's
//!   `swapon(file, 0)`): the kernel puts it below zram and below the files
//!   before it, so the newest file, the first removed, fills last.
//!   Removing: swapoff, which reads the file's pages back into memory, then
//!   unlink. A disk with no room for another file (fallocate's ENOSPC:
//!   ext4's metadata takes some of the disk) caps the files at those it
//!   holds, with a warning; swamd.c skips such an add too.
//! - The thread runs at nice -4 (swamd.h's PRIORITY: "a chance to add swap
//!   space" under pressure).
//!
//! Events: `swam_swapfile` after each add or remove, and `swam_end` when
//! the run stops. The files stay swapped on at the end of the run.

use crate::control::{spawn_thread, Control};
use crate::events::{Event, EventLog};
use crate::spec::{ms, Swapd};
use crate::sys::{self, proc_files};
use crate::workload::activity_manager::millis;
use anyhow::{Context, Result};
use serde::Serialize;
use std::fs::{self, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// Where the swap disk is mounted for the swap files (/tmp is a fresh
/// tmpfs in the guest).
pub const SWAP_FILE_DIR: &str = "/tmp/swam";
/// swamd.h's PRIORITY, the daemon's nice value.
const NICE: i32 = -4;
const PAGE_SIZE: u64 = crate::pattern::PAGE_SIZE as u64;

/// What the daemon did with a swap file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SwapFileAction {
    Add,
    Remove,
}

/// The thresholds of `decide`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub low_kb: i64,
    pub high_kb: i64,
    pub max_files: u32,
}

impl Policy {
    pub fn new(swapd: &Swapd) -> Policy {
        let kb = |mb: f64| (mb * 1024.0).round() as i64;
        Policy {
            low_kb: kb(swapd.low_mb),
            high_kb: kb(swapd.high_mb),
            max_files: swapd.max_files,
        }
    }
}

/// swamd.c's decision with `spare_kb` of spare memory and `files` swap
/// files in use: add one below the low mark while under the most files,
/// else remove the newest above the high mark if there is one.
pub fn decide(spare_kb: i64, files: u32, policy: &Policy) -> Option<SwapFileAction> {
    if spare_kb < policy.low_kb && files < policy.max_files {
        Some(SwapFileAction::Add)
    } else if spare_kb > policy.high_kb && files > 0 {
        Some(SwapFileAction::Remove)
    } else {
        None
    }
}

/// swamd.c's spare memory of a /proc/meminfo text, kB: MemFree + SwapFree
/// + (Buffers + Cached) / 2.
pub fn spare_kb(meminfo: &str) -> Result<i64> {
    let values = proc_files::parse_key_values(meminfo)?;
    let get = |key: &str| {
        values
            .iter()
            .find(|(k, _)| k.strip_suffix(':') == Some(key))
            .map(|(_, v)| *v)
            .with_context(|| format!("/proc/meminfo has no {key}"))
    };
    Ok(get("MemFree")? + get("SwapFree")? + (get("Buffers")? + get("Cached")?) / 2)
}

/// A swap file of `chunk_mb`, in bytes: whole pages, as mkswap uses them.
pub fn chunk_bytes(chunk_mb: f64) -> u64 {
    let bytes = (chunk_mb * (1u64 << 20) as f64) as u64;
    bytes / PAGE_SIZE * PAGE_SIZE
}

/// The first page of a swap area of `pages` pages, as mkswap writes it
/// (version 1, `union swap_header` in include/linux/swap.h): 1024 bytes
/// left for a boot block, then the version, the last page's index, no bad
/// pages, a zero UUID and label, and the magic `SWAPSPACE2` at the page's
/// end. Native byte order, as the kernel reads it.
pub fn swap_header(pages: u64) -> Vec<u8> {
    let mut page = vec![0u8; PAGE_SIZE as usize];
    let last_page = u32::try_from(pages.saturating_sub(1)).unwrap_or(u32::MAX);
    page[1024..1028].copy_from_slice(&1u32.to_ne_bytes());
    page[1028..1032].copy_from_slice(&last_page.to_ne_bytes());
    let magic = b"SWAPSPACE2";
    page[PAGE_SIZE as usize - magic.len()..].copy_from_slice(magic);
    page
}

/// How the daemon adds and removes swap files: the kernel's swap (`Kernel`)
/// or a stand-in in tests.
pub trait SwapFiles: Send {
    /// Make `path` a swap file of `bytes` and swap on it; false if the
    /// filesystem has no room for it. Unless it returns true, nothing is
    /// left behind.
    fn add(&mut self, path: &Path, bytes: u64) -> Result<bool>;
    /// Swap off `path` and remove it.
    fn remove(&mut self, path: &Path) -> Result<()>;
}

/// Swap files on the running kernel.
pub struct Kernel;

impl SwapFiles for Kernel {
    fn add(&mut self, path: &Path, bytes: u64) -> Result<bool> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let made = make_swap_file(file, path, bytes);
        if !matches!(made, Ok(true)) {
            let removed =
                fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()));
            // the first failure is the one to report
            return made.and_then(|added| removed.map(|()| added));
        }
        made
    }

    fn remove(&mut self, path: &Path) -> Result<()> {
        sys::swapoff(path).with_context(|| format!("swapoff {} failed", path.display()))?;
        fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))
    }
}

/// Allocate `file` (at `path`), write its swap header and swap on it;
/// false on ENOSPC. The caller removes the file unless this returns true.
fn make_swap_file(file: fs::File, path: &Path, bytes: u64) -> Result<bool> {
    match sys::fallocate(&file, bytes) {
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => return Ok(false),
        allocated => allocated
            .with_context(|| format!("fallocate of {bytes} bytes on {} failed", path.display()))?,
    }
    // mkswap's header, written in-process: no fork and exec at the moment
    // memory is short, and no child for the run's reaper to take
    file.write_all_at(&swap_header(bytes / PAGE_SIZE), 0)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("cannot write the swap header of {}", path.display()))?;
    drop(file);
    let name = path.display();
    sys::swapon_default_priority(path).with_context(|| {
        format!("swapon {name} failed (EPERM: more swap areas than the kernel's MAX_SWAPFILES?)")
    })?;
    Ok(true)
}

/// The daemon's state between periods.
pub struct Daemon {
    policy: Policy,
    chunk_bytes: u64,
    dir: PathBuf,
    swap: Box<dyn SwapFiles>,
    /// The files swapped on, oldest first.
    files: Vec<PathBuf>,
    max_files_used: u32,
    events: Arc<EventLog>,
}

impl Daemon {
    /// The daemon of `swapd` making its files in `dir` with `swap`.
    pub fn new(
        swapd: &Swapd,
        dir: &Path,
        swap: Box<dyn SwapFiles>,
        events: Arc<EventLog>,
    ) -> Daemon {
        Daemon {
            policy: Policy::new(swapd),
            chunk_bytes: chunk_bytes(swapd.chunk_mb),
            dir: dir.to_path_buf(),
            swap,
            files: Vec::new(),
            max_files_used: 0,
            events,
        }
    }

    fn in_use(&self) -> u32 {
        self.files.len() as u32
    }

    /// One period with `meminfo`, /proc/meminfo's text: add or remove a
    /// file if `decide` says so, and log it.
    pub fn period(&mut self, meminfo: &str) -> Result<()> {
        let spare_kb = spare_kb(meminfo)?;
        let Some(action) = decide(spare_kb, self.in_use(), &self.policy) else {
            return Ok(());
        };
        let start = Instant::now();
        match action {
            SwapFileAction::Add => {
                // The newest file is always the last: its name is free.
                let path = self.dir.join(format!("swapfile-{}", self.files.len()));
                if !self.swap.add(&path, self.chunk_bytes)? {
                    self.policy.max_files = self.in_use();
                    eprintln!(
                        "pmr-guest: warning: swam: {} holds no more than {} swap files of {} \
                         bytes; the daemon keeps to that many",
                        self.dir.display(),
                        self.in_use(),
                        self.chunk_bytes
                    );
                    return Ok(());
                }
                self.files.push(path);
                self.max_files_used = self.max_files_used.max(self.in_use());
            }
            SwapFileAction::Remove => {
                let path = self.files.last().expect("decide removes from files in use");
                self.swap.remove(path)?;
                self.files.pop();
            }
        }
        self.events.log(&Event::SwamSwapfile {
            action,
            files: self.in_use(),
            spare_kb,
            ms: millis(start.elapsed()),
        })
    }

    /// The end of the run: log `swam_end`; the files stay swapped on.
    pub fn end(&self) -> Result<()> {
        self.events.log(&Event::SwamEnd {
            files: self.in_use(),
            max_files_used: self.max_files_used,
        })
    }
}

/// Start the daemon of `swapd` on `SWAP_FILE_DIR`: its first period now,
/// until the run stops; a failure fails the run.
pub fn spawn(
    swapd: &Swapd,
    events: Arc<EventLog>,
    control: Arc<Control>,
) -> Result<JoinHandle<()>> {
    let mut daemon = Daemon::new(swapd, Path::new(SWAP_FILE_DIR), Box::new(Kernel), events);
    let period = ms(swapd.period_ms);
    Ok(spawn_thread(&control.clone(), "swam-swapd", move || {
        if let Err(e) = sys::set_thread_nice(NICE) {
            eprintln!("pmr-guest: warning: swam's daemon keeps nice 0: nice {NICE} refused: {e}");
        }
        let ran = control.every(Instant::now(), period, || {
            let meminfo =
                fs::read_to_string("/proc/meminfo").context("cannot read /proc/meminfo")?;
            daemon.period(&meminfo)
        });
        if let Err(e) = ran.and(daemon.end()) {
            control.fail(format!("swam swapd: {e:#}"));
        }
    })?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_file_the_kernel_refuses_is_removed() {
        // tmpfs cannot hold swap files (no swap_activate or bmap): swapon
        // fails with EINVAL as root and EPERM otherwise, after fallocate
        // and the header, so the host never swaps on it.
        let shm = Path::new("/dev/shm");
        let mounts = fs::read_to_string("/proc/mounts").unwrap();
        assert!(
            mounts.lines().any(|l| l
                .split_whitespace()
                .take(3)
                .eq(["tmpfs", "/dev/shm", "tmpfs"])),
            "the test needs /dev/shm on tmpfs"
        );
        let dir = shm.join(format!("pmr-swam-add-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("swapfile-0");
        let err = Kernel.add(&path, 1 << 20).unwrap_err();
        assert!(format!("{err:#}").contains("swapon"), "{err:#}");
        assert!(!path.exists(), "the refused file was left behind");
        fs::remove_dir(&dir).unwrap();
    }

    fn swapd() -> Swapd {
        Swapd {
            period_ms: 1000.0,
            chunk_mb: 4.0,
            max_files: 3,
            low_mb: 2.0,
            high_mb: 8.0,
        }
    }

    #[test]
    fn policy_is_in_kb() {
        let p = Policy::new(&Swapd {
            low_mb: 10.7,
            high_mb: 42.7,
            ..swapd()
        });
        assert_eq!((p.low_kb, p.high_kb, p.max_files), (10957, 43725, 3));
    }

    #[test]
    fn adds_below_low_while_under_the_most_files() {
        let p = Policy::new(&swapd()); // low 2048 kB, high 8192 kB, 3 files
        assert_eq!(decide(2047, 0, &p), Some(SwapFileAction::Add));
        assert_eq!(decide(0, 2, &p), Some(SwapFileAction::Add));
        assert_eq!(decide(0, 3, &p), None, "at the most files");
        assert_eq!(decide(2048, 0, &p), None, "low itself is enough");
    }

    #[test]
    fn removes_the_newest_above_high_if_any() {
        let p = Policy::new(&swapd());
        assert_eq!(decide(8193, 1, &p), Some(SwapFileAction::Remove));
        assert_eq!(decide(1 << 30, 3, &p), Some(SwapFileAction::Remove));
        assert_eq!(decide(8193, 0, &p), None, "no file to remove");
        assert_eq!(decide(8192, 2, &p), None, "high itself keeps them");
    }

    #[test]
    fn between_the_marks_nothing_changes() {
        let p = Policy::new(&swapd());
        for files in 0..=3 {
            for spare in [2048, 5000, 8192] {
                assert_eq!(decide(spare, files, &p), None, "{spare} kB, {files}");
            }
        }
    }

    #[test]
    fn swap_header_is_mkswaps() {
        let page = swap_header(5456);
        assert_eq!(page.len(), PAGE_SIZE as usize);
        assert!(page[..1024].iter().all(|&b| b == 0));
        assert_eq!(u32::from_ne_bytes(page[1024..1028].try_into().unwrap()), 1);
        assert_eq!(
            u32::from_ne_bytes(page[1028..1032].try_into().unwrap()),
            5455
        );
        assert_eq!(u32::from_ne_bytes(page[1032..1036].try_into().unwrap()), 0);
        assert_eq!(&page[PAGE_SIZE as usize - 10..], b"SWAPSPACE2");
    }

    #[test]
    fn spare_is_swamds_formula() {
        let meminfo = "MemTotal:  400000 kB\nMemFree:  1000 kB\nMemAvailable: 9000 kB\n\
                       Buffers:  300 kB\nCached:  701 kB\nSwapCached:  55 kB\n\
                       SwapTotal:  4000 kB\nSwapFree:  2000 kB\nHugePages_Total:  0\n";
        assert_eq!(spare_kb(meminfo).unwrap(), 1000 + 2000 + 1001 / 2);
        let err = format!("{:#}", spare_kb("MemFree: 1 kB\n").unwrap_err());
        assert!(err.contains("no SwapFree"), "{err}");
    }

    #[test]
    fn chunks_are_whole_pages() {
        assert_eq!(chunk_bytes(4.0), 4 << 20);
        assert_eq!(chunk_bytes(21.3), 22_331_392); // 22334668.8 bytes down to pages
        assert_eq!(chunk_bytes(21.3) % 4096, 0);
    }

    /// Swap files in a list, with room for `room` of them.
    struct StandIn {
        on: Arc<Mutex<Vec<PathBuf>>>,
        room: usize,
    }

    impl SwapFiles for StandIn {
        fn add(&mut self, path: &Path, bytes: u64) -> Result<bool> {
            assert_eq!(bytes, 4 << 20);
            let mut on = self.on.lock().unwrap();
            if on.len() == self.room {
                return Ok(false);
            }
            assert!(!on.contains(&path.to_path_buf()), "{path:?} reused");
            on.push(path.to_path_buf());
            Ok(true)
        }

        fn remove(&mut self, path: &Path) -> Result<()> {
            let mut on = self.on.lock().unwrap();
            assert_eq!(on.last().map(PathBuf::as_path), Some(path), "the newest");
            on.pop();
            Ok(())
        }
    }

    fn meminfo(spare_kb: i64) -> String {
        format!("MemFree: {spare_kb} kB\nSwapFree: 0 kB\nBuffers: 0 kB\nCached: 0 kB\n")
    }

    fn daemon(name: &str, room: usize) -> (Daemon, Arc<Mutex<Vec<PathBuf>>>, PathBuf) {
        let dir = std::env::temp_dir().join(format!("pmr-swam-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let events_path = dir.join("events.jsonl");
        let events = Arc::new(EventLog::create(&events_path, Instant::now()).unwrap());
        let on = Arc::new(Mutex::new(Vec::new()));
        let swap = StandIn {
            on: on.clone(),
            room,
        };
        let d = Daemon::new(&swapd(), Path::new("/swam"), Box::new(swap), events);
        (d, on, dir)
    }

    fn lines(dir: &Path) -> Vec<serde_json::Value> {
        std::fs::read_to_string(dir.join("events.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn the_daemon_adds_and_removes_the_newest_and_logs_both() {
        let (mut d, on, dir) = daemon("cycle", 8);
        for spare in [100, 100, 5000, 100, 100, 100, 9000, 9000] {
            d.period(&meminfo(spare)).unwrap();
        }
        d.end().unwrap();
        assert_eq!(*on.lock().unwrap(), vec![PathBuf::from("/swam/swapfile-0")]);
        let events = lines(&dir);
        let actions: Vec<(&str, u64, i64)> = events
            .iter()
            .filter(|e| e["type"] == "swam_swapfile")
            .map(|e| {
                assert!(e["ms"].as_f64().unwrap() >= 0.0, "{e}");
                (
                    e["action"].as_str().unwrap(),
                    e["files"].as_u64().unwrap(),
                    e["spare_kb"].as_i64().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            actions,
            [
                ("add", 1, 100),
                ("add", 2, 100),
                ("add", 3, 100),
                ("remove", 2, 9000),
                ("remove", 1, 9000)
            ],
            "the fourth add is over max_files"
        );
        let end = events.last().unwrap();
        assert_eq!(
            (&end["type"], &end["files"], &end["max_files_used"]),
            (&"swam_end".into(), &1.into(), &3.into())
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_full_disk_caps_the_files() {
        let (mut d, on, dir) = daemon("full", 2);
        for spare in [100, 100, 100, 100, 9000, 100, 100] {
            d.period(&meminfo(spare)).unwrap();
        }
        assert_eq!(on.lock().unwrap().len(), 2);
        let adds = lines(&dir).iter().filter(|e| e["action"] == "add").count();
        assert_eq!(
            adds, 3,
            "two, then one again after a remove; no event without room"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}

//! `spec.json`: everything the host tells the guest about one run.
//!
//! The types mirror `docs/guest-interface.md` field for field. Parsing is
//! strict (unknown fields are rejected) so that a typo in the harness fails
//! the run at setup instead of silently using a default. `validate` checks
//! what serde cannot: ranges, cross references between the scenario and the
//! apps, and the kernel's limits on PSI triggers.

use anyhow::{bail, ensure, Context, Result};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A spec time (milliseconds, possibly fractional) as a Duration.
pub fn ms(v: f64) -> Duration {
    Duration::from_secs_f64(v / 1e3)
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub run_id: String,
    pub seed: u64,
    pub out_dir: PathBuf,
    pub deadline_s: f64,
    pub work_iters_per_ms: f64,
    pub scheme: Scheme,
    pub memory: Memory,
    pub swap: Swap,
    pub data_disk: DataDisk,
    pub lmkd: LmkdConfig,
    pub metrics: Metrics,
    pub scenario: Scenario,
    pub zygote: ZygoteSpec,
    pub heap: HeapContent,
    pub apps: Vec<AppSpec>,
}

/// What the apps write into their heap pages besides the canary word
/// (pattern.rs), which sets how well the pages compress: on zram the
/// compression ratio, on flash nothing.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HeapContent {
    /// Words of pseudo-random data after the canary word at a page's first
    /// write, the rest of the page left zero: 0 (the canary alone) up to
    /// 511 (a page that does not compress).
    pub random_words: u32,
}

impl HeapContent {
    pub fn validate(&self) -> Result<()> {
        ensure!(
            (self.random_words as usize) < crate::pattern::WORDS_PER_PAGE,
            "heap.random_words must be 0..={}",
            crate::pattern::WORDS_PER_PAGE - 1
        );
        Ok(())
    }
}

/// The parent of every app process (zygote.rs).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ZygoteSpec {
    /// Anonymous memory the zygote writes before forking, which every app
    /// shares copy-on-write (MB, guest scale)
    pub shared_mb: f64,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scheme {
    pub name: String,
    pub knobs: Vec<Knob>,
    pub policies: Vec<String>,
    /// Scheduling of kernel threads (kthread_sched.rs)
    #[serde(default)]
    pub kthreads: Vec<KthreadSched>,
    /// Acclaim's background marks written into the apps' cgroups
    /// (workload/background_marks.rs); none if absent. `run` only.
    #[serde(default)]
    pub background: Option<BackgroundMarks>,
    /// Skew rectification (workload/unused_anon.rs and
    /// workload/anon_file_balance.rs); off if absent. `run` only.
    #[serde(default)]
    pub skew: Option<Skew>,
    /// Ice's app freezing (workload/ice.rs) and, with `spare_swapped`,
    /// Ice+'s lmkd rule; off if absent. `run` only.
    #[serde(default)]
    pub ice: Option<Ice>,
    /// SWAM's swap-file daemon (workload/swam.rs), EOOM kill order
    /// (lmkd/eoom.rs) and OOM cleaner (lmkd/cleaner.rs); off if absent.
    /// `run` only.
    #[serde(default)]
    pub swam: Option<Swam>,
}

/// SWAM (MobiCom'23): zram is the fast tier of swap and flash the slow
/// one, whose size a swap-file daemon adjusts to memory pressure (Adaptive
/// Swap), and lmkd kills the app cheapest to relaunch first (EOOM Killer).
/// Its OOM Cleaner is the kernel's working-set protection, set by knobs,
/// and the paper's swap-clean in lmkd (`cleaner`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Swam {
    /// The flash tier as swap files added and removed by a daemon; absent:
    /// the swap disk is swapped on whole.
    #[serde(default)]
    pub swapd: Option<Swapd>,
    /// lmkd's candidates ordered by oom_score_adj plus a launch_adj from
    /// their app's relaunch cost; absent: lmkd's usual order.
    #[serde(default)]
    pub eoom: Option<Eoom>,
    /// Before a kill for low swap, lmkd swap-cleans its candidates
    /// (MADV_SWAPCLEAN) until swap is no longer low; absent: it kills.
    #[serde(default)]
    pub cleaner: Option<OomCleaner>,
}

/// The OOM Cleaner's swap-clean (the paper's; its public code lacks it),
/// lmkd/cleaner.rs: when lmkd is to kill for a reason that involves swap
/// (low_swap_and_thrashing, low_mem_and_swap, low_mem_and_swap_util), it
/// first drops the swapped-out pages of the apps' private file mappings
/// (their shared objects' data, `so_mb`), candidate by candidate in its
/// kill order, and kills only if swap is still as low as the reason said.
/// It has no settings: the stop rule is lmkd's own threshold.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OomCleaner {}

/// The swap-file daemon (adaptive-swapd's swamd.c): every `period_ms`,
/// spare = MemFree + SwapFree + (Buffers + Cached) / 2; below `low_mb` a
/// file of `chunk_mb` is added (at most `max_files`), above `high_mb` the
/// newest is removed. The swap disk holds the files (ext4).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Swapd {
    /// How often spare memory is checked, ms (> 0).
    pub period_ms: f64,
    /// The size of each swap file, MB (guest scale, > 0).
    pub chunk_mb: f64,
    /// The most swap files at a time, 1..=24.
    pub max_files: u32,
    /// Spare memory below which a file is added, MB (guest scale, >= 0).
    pub low_mb: f64,
    /// Spare memory above which the newest file is removed, MB (guest
    /// scale, > low_mb).
    pub high_mb: f64,
}

/// EOOM's kill order: each candidate's launch_adj runs from
/// `launch_adj_max` (its app is the cheapest of the candidates to
/// relaunch) down to 0 (the costliest, or a cost not measured yet).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Eoom {
    /// The launch_adj of the cheapest app to relaunch, 1..=1000.
    pub launch_adj_max: i32,
}

/// Ice (TOCS'25): background apps that refault are frozen whole (cgroup v2
/// freezer) by refault-driven process freezing (RPF) and given a thaw
/// window now and then by memory-aware dynamic thawing (MDT); an app
/// brought to the front is thawed inside its launch.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Ice {
    /// Where refaults are noticed: by the kernel (`memory.ice_freezable`)
    /// or by polling memory.stat (the ice-us variant).
    pub rpf: Rpf,
    /// `user` only: the memory.stat polling period, ms (> 0).
    pub poll_ms: f64,
    /// Apps whose current oom_score_adj is at most this are never frozen
    /// (0..=699).
    pub protect_adj: i32,
    pub mdt: Mdt,
    /// Ice+: lmkd passes over frozen apps with memory.swap.current > 0
    /// while another candidate qualifies.
    pub spare_swapped: bool,
}

/// Where RPF notices the refaults of background apps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Rpf {
    /// The kernel freezes a freezable app's cgroup at its refault.
    Kernel,
    /// The runtime polls each freezable app's refault counters.
    User,
}

/// MDT's heartbeat: each epoch keeps the frozen apps frozen for E_f, then
/// thaws them for E_t = `thaw_ms`; E_f / E_t = delta * 2^ceil(H_wm / S_am)
/// (Eq. 1), at most `max_freeze_ms`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Mdt {
    /// Eq. 1's weight (> 0; the paper's 8.0).
    pub delta: f64,
    /// E_t, ms (> 0).
    pub thaw_ms: f64,
    /// The cap on E_f, ms (>= delta * 2 * thaw_ms).
    pub max_freeze_ms: f64,
    /// Which /proc/meminfo field is S_am.
    pub available: Available,
}

/// The /proc/meminfo field MDT takes for the available memory S_am.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Available {
    MemFree,
    MemAvailable,
}

/// Skew rectification (TECS'23): at each switch the anonymous pages the
/// app leaving the front did not touch while in front are advised out,
/// and optionally a feedback loop moves swappiness between anonymous and
/// file reclaim by their refaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Skew {
    /// What the unused anonymous pages are advised with.
    pub advice: SkewAdvice,
    /// The swappiness feedback loop; off if absent.
    #[serde(default)]
    pub balance: Option<AnonFileBalance>,
}

/// The process_madvise advice for the pages an app left unused in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SkewAdvice {
    /// MADV_PAGEOUT: reclaim them now.
    Pageout,
    /// MADV_COLD: move them to the inactive list.
    Cold,
}

/// The swappiness feedback loop: every period, lower swappiness by `step`
/// when anonymous refaults show thrashing, else raise it by `step` when
/// file refaults reach their threshold, within [min, max].
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnonFileBalance {
    /// The period, ms (>= 100).
    pub period_ms: f64,
    /// How much swappiness moves in one period, 1..=100.
    pub step: u32,
    /// The lowest swappiness the loop sets.
    pub min: u32,
    /// The highest swappiness the loop sets, <= 200.
    pub max: u32,
    /// Anonymous refaults in one period, % of the anonymous LRU pages,
    /// above which anonymous memory thrashes.
    pub thrash_anon_pct: f64,
    /// File refaults in one period, % of the file LRU pages, from which
    /// file reclaim is too much.
    pub file_refault_pct: f64,
}

/// Which app cgroups get `1` (background) or `0` written into a cgroup
/// file of the kernel's, as Acclaim's activity manager tells its kernel
/// which app is in the foreground (ATC'20, foreground-aware eviction).
/// Apps of class `persistent` are never marked.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackgroundMarks {
    /// The file in each app's cgroup directory: a plain name starting
    /// with `memory.` (`memory.acclaim_bg`).
    pub file: String,
    /// The apps marked, and when.
    pub apps: MarkedApps,
}

/// The apps whose cgroups Acclaim marks as background.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MarkedApps {
    /// Every launched app but the one in front; the app coming to the
    /// front is cleared as its oom_score_adj becomes the foreground's (the
    /// paper's design).
    NotForeground,
    /// The scenario's `background` apps, marked at each cold launch and
    /// never cleared, even while in front (the public code's fixed list).
    ScenarioBackground,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct KthreadSched {
    /// The thread's name without its number: `kswapd` for kswapd0, ...
    pub comm: String,
    pub policy: SchedPolicy,
    /// Real-time priority, 1..=99, for fifo and rr
    #[serde(default)]
    pub priority: i32,
    /// Nice value, -20..=19, for normal
    #[serde(default)]
    pub nice: i32,
    /// CPUs to keep the thread on; its own affinity if absent
    #[serde(default)]
    pub cpus: Option<Vec<usize>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    Fifo,
    Rr,
    Normal,
}

impl Scheme {
    /// What serde cannot check; shared with the reliability spec.
    pub fn validate(&self) -> Result<()> {
        if let Some(p) = self.policies.first() {
            bail!("unknown scheme policy {p:?}: the guest runtime has no policies yet");
        }
        for knob in &self.knobs {
            ensure!(
                knob.path.is_absolute(),
                "knob path {} is not absolute",
                knob.path.display()
            );
        }
        for k in &self.kthreads {
            k.validate()?;
        }
        if let Some(b) = &self.background {
            b.validate()?;
        }
        if let Some(balance) = self.skew.as_ref().and_then(|s| s.balance.as_ref()) {
            balance.validate()?;
        }
        if let Some(ice) = &self.ice {
            ice.validate()?;
        }
        if let Some(swam) = &self.swam {
            swam.validate()?;
        }
        Ok(())
    }
}

impl Swam {
    pub fn validate(&self) -> Result<()> {
        if let Some(s) = &self.swapd {
            s.validate()?;
        }
        if let Some(e) = &self.eoom {
            ensure!(
                (1..=Eoom::MAX_LAUNCH_ADJ).contains(&e.launch_adj_max),
                "scheme.swam.eoom.launch_adj_max must be 1..={}",
                Eoom::MAX_LAUNCH_ADJ
            );
        }
        Ok(())
    }
}

impl Swapd {
    /// The most files, ours: 24 files and zram are 25 swap areas, within
    /// the kernel's MAX_SWAPFILES (6.1: 32 less the swap types its config
    /// reserves for migration, hwpoison, PTE markers and device memory).
    pub const MAX_FILES: u32 = 24;

    pub fn validate(&self) -> Result<()> {
        ensure!(
            self.period_ms.is_finite() && self.period_ms > 0.0,
            "scheme.swam.swapd.period_ms must be > 0"
        );
        ensure!(
            self.chunk_mb.is_finite() && self.chunk_mb > 0.0,
            "scheme.swam.swapd.chunk_mb must be > 0"
        );
        ensure!(
            (1..=Self::MAX_FILES).contains(&self.max_files),
            "scheme.swam.swapd.max_files must be 1..={}",
            Self::MAX_FILES
        );
        ensure!(
            non_negative(self.low_mb),
            "scheme.swam.swapd.low_mb must be >= 0"
        );
        ensure!(
            self.high_mb.is_finite() && self.high_mb >= self.low_mb + self.chunk_mb,
            "scheme.swam.swapd.high_mb must be >= low_mb + chunk_mb ({:.1} MB): a file added \
             below low_mb raises spare memory by chunk_mb and must not be removed at once",
            self.low_mb + self.chunk_mb
        );
        Ok(())
    }
}

impl Eoom {
    /// oom_score_adj's range is -1000..=1000.
    pub const MAX_LAUNCH_ADJ: i32 = 1000;
}

/// The previous app's oom_score_adj (workload/oom_adj.rs), the least adj
/// of a cached app.
const PREVIOUS_APP_ADJ: i32 = crate::workload::oom_adj::PREVIOUS_APP_ADJ;

impl Ice {
    pub fn validate(&self) -> Result<()> {
        ensure!(
            self.poll_ms.is_finite() && self.poll_ms > 0.0,
            "scheme.ice.poll_ms must be > 0"
        );
        ensure!(
            (0..PREVIOUS_APP_ADJ).contains(&self.protect_adj),
            "scheme.ice.protect_adj must be 0..={}: the app in front (adj 0) is never frozen, \
             and a cached app (adj {PREVIOUS_APP_ADJ} and up) always may be",
            PREVIOUS_APP_ADJ - 1
        );
        let m = &self.mdt;
        ensure!(
            m.delta.is_finite() && m.delta > 0.0,
            "scheme.ice.mdt.delta must be > 0"
        );
        ensure!(
            m.thaw_ms.is_finite() && m.thaw_ms > 0.0,
            "scheme.ice.mdt.thaw_ms must be > 0"
        );
        let least = m.delta * 2.0 * m.thaw_ms;
        ensure!(
            m.max_freeze_ms.is_finite() && m.max_freeze_ms >= least,
            "scheme.ice.mdt.max_freeze_ms must be >= delta * 2 * thaw_ms ({least} ms, the \
             shortest E_f)"
        );
        Ok(())
    }
}

impl AnonFileBalance {
    /// The least period: /proc/vmstat deltas over less are mostly noise.
    pub const MIN_PERIOD_MS: f64 = 100.0;
    /// The highest swappiness the kernel accepts.
    pub const MAX_SWAPPINESS: u32 = 200;

    pub fn validate(&self) -> Result<()> {
        ensure!(
            self.period_ms.is_finite() && self.period_ms >= Self::MIN_PERIOD_MS,
            "scheme.skew.balance.period_ms must be >= {}",
            Self::MIN_PERIOD_MS
        );
        ensure!(
            (1..=100).contains(&self.step),
            "scheme.skew.balance.step must be 1..=100"
        );
        ensure!(
            self.min <= self.max && self.max <= Self::MAX_SWAPPINESS,
            "scheme.skew.balance needs min <= max <= {}",
            Self::MAX_SWAPPINESS
        );
        for (name, v) in [
            ("thrash_anon_pct", self.thrash_anon_pct),
            ("file_refault_pct", self.file_refault_pct),
        ] {
            ensure!(
                v.is_finite() && v > 0.0,
                "scheme.skew.balance.{name} must be > 0"
            );
        }
        Ok(())
    }
}

impl BackgroundMarks {
    const FILE_PREFIX: &'static str = "memory.";

    pub fn validate(&self) -> Result<()> {
        let f = &self.file;
        ensure!(
            f.len() > Self::FILE_PREFIX.len()
                && f.starts_with(Self::FILE_PREFIX)
                && is_path_component(f),
            "scheme.background.file {f:?} must be a file name of [A-Za-z0-9_.-] in a cgroup \
             directory, starting with {:?} (e.g. \"memory.acclaim_bg\")",
            Self::FILE_PREFIX
        );
        Ok(())
    }
}

impl Memory {
    pub fn validate(&self) -> Result<()> {
        ensure!(self.swappiness <= 200, "memory.swappiness must be 0..=200");
        Ok(())
    }
}

impl Swap {
    pub fn validate(&self) -> Result<()> {
        ensure!(!self.serial.is_empty(), "swap.serial is empty");
        ensure!(non_negative(self.zram_mb), "swap.zram_mb must be >= 0");
        ensure!(
            self.disk || self.zram_mb > 0.0,
            "swap.disk is false and swap.zram_mb is 0: without disk swap, zram_mb must be > 0"
        );
        Ok(())
    }
}

impl KthreadSched {
    pub fn validate(&self) -> Result<()> {
        ensure!(!self.comm.is_empty(), "scheme kthreads: comm is empty");
        match self.policy {
            SchedPolicy::Fifo | SchedPolicy::Rr => ensure!(
                (1..=99).contains(&self.priority),
                "scheme kthreads {}: priority must be 1..=99 for fifo and rr",
                self.comm
            ),
            SchedPolicy::Normal => ensure!(
                (-20..=19).contains(&self.nice),
                "scheme kthreads {}: nice must be -20..=19",
                self.comm
            ),
        }
        if let Some(cpus) = &self.cpus {
            ensure!(
                !cpus.is_empty() && cpus.iter().all(|&c| c < libc::CPU_SETSIZE as usize),
                "scheme kthreads {}: cpus must list CPU numbers",
                self.comm
            );
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Knob {
    pub path: PathBuf,
    pub value: String,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Memory {
    pub watermark_scale_factor: u32,
    pub min_free_kbytes: u64,
    pub swappiness: u32,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Swap {
    /// The serial of the swap disk, which must be attached even when it
    /// is not swapped on.
    pub serial: String,
    /// The zram device swapped on at a higher priority than the disk;
    /// none if 0.
    pub zram_mb: f64,
    /// The swap disk is swapped on; if false only zram is.
    pub disk: bool,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DataDisk {
    pub serial: String,
}

/// lmkd's tunables (`ro.lmk.*` properties); see `lmkd.rs` for their use.
/// The optional ones default to lmkd's own defaults.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LmkdConfig {
    /// `psi_partial_stall_ms`: "some" stall that raises a medium event.
    pub medium_some_ms: f64,
    /// `psi_complete_stall_ms`: "full" stall that raises a critical event.
    pub critical_full_ms: f64,
    /// PSI tracking window (lmkd: `PSI_WINDOW_SIZE_MS`), also how long
    /// lmkd keeps polling after an event.
    pub window_ms: f64,
    /// `PERCEPTIBLE_APP_ADJ`: spared by most kill reasons.
    pub perceptible_adj: i32,
    pub swap_free_low_percentage: i64,
    pub thrashing_limit: i64,
    pub thrashing_limit_decay: i64,
    pub kill_timeout_ms: f64,
    pub kill_heaviest_task: bool,
    /// Polling period while pressure lasts and swap is low or a kill is
    /// under way (lmkd: `PSI_POLL_PERIOD_SHORT_MS`).
    pub poll_ms: f64,
    /// Polling period otherwise (lmkd: `PSI_POLL_PERIOD_LONG_MS`).
    #[serde(default = "defaults::poll_long_ms")]
    pub poll_long_ms: f64,
    /// `thrashing_limit_critical`; lmkd's default is 3 × `thrashing_limit`.
    #[serde(default)]
    pub thrashing_limit_critical: Option<i64>,
    /// `swap_util_max`; 100 disables the low_mem_and_swap_util reason.
    #[serde(default = "defaults::swap_util_max")]
    pub swap_util_max: i64,
    /// `filecache_min_kb`; 0 disables low_filecache_after_thrashing.
    #[serde(default)]
    pub filecache_min_kb: i64,
    /// `stall_limit_critical`: PSI full avg10 (%) above which perceptible
    /// and foreground apps may be killed; 100 never triggers.
    #[serde(default = "defaults::stall_limit_critical")]
    pub stall_limit_critical: f64,
    /// Free swap counts at most `easy available × ratio` (free + inactive
    /// file); lmkd 14 always uses 1, 0 means plain SwapFree.
    #[serde(default = "defaults::swap_compression_ratio")]
    pub swap_compression_ratio: i64,
}

impl LmkdConfig {
    pub fn thrashing_critical(&self) -> i64 {
        self.thrashing_limit_critical
            .unwrap_or(self.thrashing_limit * 3)
    }
}

mod defaults {
    pub fn launch_threads() -> u32 {
        1
    }
    pub fn poll_long_ms() -> f64 {
        100.0
    }
    pub fn swap_util_max() -> i64 {
        100
    }
    pub fn stall_limit_critical() -> f64 {
        100.0
    }
    pub fn swap_compression_ratio() -> i64 {
        1
    }
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    pub interval_ms: f64,
    pub reclaim_threads: Vec<String>,
    /// Tracepoints ("system/event") recorded into trace.txt.
    #[serde(default)]
    pub trace_events: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    pub rounds: u32,
    pub dwell_ms: [f64; 2],
    pub launch_gap_ms: f64,
    pub settle_ms: f64,
    pub foreground: Vec<String>,
    pub background: Vec<String>,
    /// Background apps brought to the front between switches; none if absent.
    #[serde(default)]
    pub background_use: Option<BackgroundUse>,
}

/// Background apps kept in use between the switches (the paper's UI
/// Automator, §5.1): after every `every`-th switch's dwell, the next of
/// `apps` in a seeded order comes to the front for a dwell drawn from
/// `dwell_ms`, launched hot if alive and cold if lmkd killed it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BackgroundUse {
    pub every: u32,
    pub dwell_ms: [f64; 2],
    pub apps: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AppSpec {
    pub name: String,
    pub processes: u32,
    pub anon_mb: f64,
    pub file_mb: f64,
    pub launch_fraction: f64,
    pub working_set_fraction: f64,
    pub init_work_ms: f64,
    pub growth_ms: f64,
    pub fg_period_ms: f64,
    pub fg_churn_mb: f64,
    pub bg_touch: Option<BgTouch>,
    pub adj_class: AdjClass,
    /// Threads that fill the heap during a cold launch (ART's heap, class
    /// loading and render threads).
    #[serde(default = "defaults::launch_threads")]
    pub launch_threads: u32,
    /// CPU work of a hot launch (resume, first frame), guest ms.
    #[serde(default)]
    pub resume_work_ms: f64,
    /// The most the heap grows to while the app is used; `anon_mb` if absent.
    #[serde(default)]
    pub peak_anon_mb: Option<f64>,
    /// How fast the heap grows beyond `anon_mb` while in the foreground.
    #[serde(default)]
    pub fg_growth_mb_per_s: f64,
    /// The frames the app draws while in front (workload/frames.rs); none
    /// if absent.
    #[serde(default)]
    pub frame: Option<FrameLoop>,
    /// Its shared objects' data, MB (guest scale, <= `file_mb`; 0: none):
    /// the first `so_mb` of its files, split among its processes as the
    /// files are, mapped private and writable and relocated (written) at a
    /// cold launch, the pages SWAM's swap-clean drops (workload/app.rs).
    /// Android's `dumpsys meminfo` ".so mmap" row, Private Dirty, is a few
    /// MB per app: an estimate to calibrate, not SWAM's figure.
    #[serde(default)]
    pub so_mb: f64,
    /// CPU work to relocate one page of `so_mb` (the dynamic linker's
    /// symbol lookup), guest µs, at a cold launch and again for each page
    /// found swap-cleaned.
    #[serde(default)]
    pub so_reloc_us_per_page: f64,
}

/// A render thread in the app's first process while the app is in front:
/// a vsync every `period_ms`; a frame starts at a vsync when none is in
/// progress, writes `alloc_kb` of newly allocated memory, does `work_ms` of
/// CPU work and reads `touch_mb` of the process's heap at a rotating cursor.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FrameLoop {
    /// The vsync period, ms (> 0; 16.667 at 60 Hz).
    pub period_ms: f64,
    /// CPU work of a frame, guest ms (>= 0).
    pub work_ms: f64,
    /// Heap a frame reads and checks, MB (>= 0; guest scale, all of it in
    /// the first process).
    pub touch_mb: f64,
    /// Memory a frame allocates and writes, kB (>= 0; guest scale): its
    /// buffers, freed a second of frames later (frames.rs).
    #[serde(default)]
    pub alloc_kb: f64,
}

impl AppSpec {
    pub fn peak_anon_mb(&self) -> f64 {
        self.peak_anon_mb.unwrap_or(self.anon_mb)
    }
}

/// Most threads a cold launch may fill its heap with.
pub const MAX_LAUNCH_THREADS: u32 = 16;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BgTouch {
    pub period_ms: f64,
    pub mb: f64,
    /// CPU work of each period besides the touch, guest ms per process.
    #[serde(default)]
    pub cpu_ms: f64,
}

/// The oom_score_adj class of an app when it is not in the foreground.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AdjClass {
    Cached,
    Perceptible,
    Service,
    /// System processes (system_server, SystemUI, ...): never killed.
    Persistent,
}

/// The JSON Schema of spec.json, from the types above, pretty-printed with
/// a final newline: what schemas/spec.schema.json holds (`pmr-guest schema
/// spec`; a test keeps the two equal).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Spec);
    serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"
}

impl Spec {
    pub fn load(path: &Path) -> Result<Spec> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("bad spec {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Spec> {
        let spec: Spec = serde_json::from_str(text)?;
        spec.validate()?;
        Ok(spec)
    }

    pub fn app(&self, name: &str) -> Option<&AppSpec> {
        self.apps.iter().find(|a| a.name == name)
    }

    fn validate(&self) -> Result<()> {
        ensure!(self.deadline_s > 0.0, "deadline_s must be > 0");
        ensure!(
            self.work_iters_per_ms > 0.0,
            "work_iters_per_ms must be > 0"
        );
        self.scheme.validate()?;
        self.memory.validate()?;
        self.swap.validate()?;
        let swapd = self.scheme.swam.as_ref().and_then(|s| s.swapd.as_ref());
        ensure!(
            swapd.is_none() || self.swap.disk,
            "scheme.swam.swapd needs the swap disk (swap.disk true): its swap files are made \
             on it"
        );
        self.heap.validate()?;
        ensure!(
            !self.data_disk.serial.is_empty(),
            "data_disk.serial is empty"
        );
        self.validate_lmkd()?;
        ensure!(
            self.metrics.interval_ms > 0.0,
            "metrics.interval_ms must be > 0"
        );
        ensure!(
            non_negative(self.zygote.shared_mb),
            "zygote.shared_mb must be >= 0"
        );
        self.validate_apps()?;
        self.validate_scenario()
    }

    fn validate_lmkd(&self) -> Result<()> {
        let l = &self.lmkd;
        // The kernel accepts PSI windows of 500 ms to 10 s and thresholds
        // no longer than the window (kernel/sched/psi.c).
        ensure!(
            (500.0..=10_000.0).contains(&l.window_ms),
            "lmkd.window_ms must be 500..=10000 (kernel PSI limit)"
        );
        for (name, v) in [
            ("medium_some_ms", l.medium_some_ms),
            ("critical_full_ms", l.critical_full_ms),
        ] {
            ensure!(
                v > 0.0 && v <= l.window_ms,
                "lmkd.{name} must be in (0, window_ms]"
            );
        }
        ensure!(
            (0..=100).contains(&l.swap_free_low_percentage),
            "lmkd.swap_free_low_percentage must be 0..=100"
        );
        ensure!(l.thrashing_limit >= 0, "lmkd.thrashing_limit must be >= 0");
        ensure!(
            (0..=100).contains(&l.thrashing_limit_decay),
            "lmkd.thrashing_limit_decay must be 0..=100"
        );
        ensure!(
            (0..=100).contains(&l.swap_util_max),
            "lmkd.swap_util_max must be 0..=100"
        );
        ensure!(
            l.thrashing_critical() >= 0,
            "lmkd.thrashing_limit_critical must be >= 0"
        );
        ensure!(
            l.swap_compression_ratio >= 0,
            "lmkd.swap_compression_ratio must be >= 0"
        );
        ensure!(
            (0..=1000).contains(&l.perceptible_adj),
            "lmkd.perceptible_adj must be 0..=1000"
        );
        ensure!(
            non_negative(l.kill_timeout_ms),
            "lmkd.kill_timeout_ms must be >= 0"
        );
        ensure!(
            l.poll_ms > 0.0 && l.poll_long_ms > 0.0,
            "lmkd polling periods must be > 0"
        );
        Ok(())
    }

    fn validate_apps(&self) -> Result<()> {
        let mut seen = HashSet::new();
        for a in &self.apps {
            ensure!(
                is_path_component(&a.name),
                "app name {:?} must be [A-Za-z0-9_.-]+",
                a.name
            );
            ensure!(
                seen.insert(a.name.as_str()),
                "app {:?} is defined twice",
                a.name
            );
            let ctx = |field: &str| format!("app {}: {field}", a.name);
            ensure!(a.processes >= 1, "{} must be >= 1", ctx("processes"));
            for (field, v) in [
                ("anon_mb", a.anon_mb),
                ("file_mb", a.file_mb),
                ("init_work_ms", a.init_work_ms),
                ("growth_ms", a.growth_ms),
                ("fg_churn_mb", a.fg_churn_mb),
                ("resume_work_ms", a.resume_work_ms),
                ("fg_growth_mb_per_s", a.fg_growth_mb_per_s),
                ("so_mb", a.so_mb),
                ("so_reloc_us_per_page", a.so_reloc_us_per_page),
            ] {
                ensure!(non_negative(v), "{} must be >= 0", ctx(field));
            }
            ensure!(
                a.so_mb <= a.file_mb,
                "{} must be <= file_mb: its pages are the app's files",
                ctx("so_mb")
            );
            ensure!(
                (1..=MAX_LAUNCH_THREADS).contains(&a.launch_threads),
                "{} must be 1..={MAX_LAUNCH_THREADS}",
                ctx("launch_threads")
            );
            ensure!(
                a.peak_anon_mb() >= a.anon_mb,
                "{} must be >= anon_mb",
                ctx("peak_anon_mb")
            );
            ensure!(a.fg_period_ms > 0.0, "{} must be > 0", ctx("fg_period_ms"));
            for (field, v) in [
                ("launch_fraction", a.launch_fraction),
                ("working_set_fraction", a.working_set_fraction),
            ] {
                ensure!((0.0..=1.0).contains(&v), "{} must be in [0, 1]", ctx(field));
            }
            if let Some(bg) = &a.bg_touch {
                ensure!(
                    bg.period_ms > 0.0,
                    "{} must be > 0",
                    ctx("bg_touch.period_ms")
                );
                ensure!(non_negative(bg.mb), "{} must be >= 0", ctx("bg_touch.mb"));
                ensure!(
                    non_negative(bg.cpu_ms),
                    "{} must be >= 0",
                    ctx("bg_touch.cpu_ms")
                );
            }
            if let Some(f) = &a.frame {
                ensure!(
                    f.period_ms.is_finite() && f.period_ms > 0.0,
                    "{} must be > 0",
                    ctx("frame.period_ms")
                );
                ensure!(
                    non_negative(f.work_ms),
                    "{} must be >= 0",
                    ctx("frame.work_ms")
                );
                ensure!(
                    non_negative(f.touch_mb),
                    "{} must be >= 0",
                    ctx("frame.touch_mb")
                );
                ensure!(
                    non_negative(f.alloc_kb),
                    "{} must be >= 0",
                    ctx("frame.alloc_kb")
                );
            }
        }
        Ok(())
    }

    fn validate_scenario(&self) -> Result<()> {
        let s = &self.scenario;
        ensure!(s.rounds >= 1, "scenario.rounds must be >= 1");
        ensure!(!s.foreground.is_empty(), "scenario.foreground is empty");
        ensure!(
            non_negative(s.dwell_ms[0]) && s.dwell_ms[0] <= s.dwell_ms[1],
            "scenario.dwell_ms must be [low, high] with 0 <= low <= high"
        );
        ensure!(
            non_negative(s.launch_gap_ms) && non_negative(s.settle_ms),
            "scenario.launch_gap_ms and settle_ms must be >= 0"
        );
        if let Some(u) = &s.background_use {
            ensure!(u.every >= 1, "scenario.background_use.every must be >= 1");
            ensure!(
                non_negative(u.dwell_ms[0]) && u.dwell_ms[0] <= u.dwell_ms[1],
                "scenario.background_use.dwell_ms must be [low, high] with 0 <= low <= high"
            );
            ensure!(!u.apps.is_empty(), "scenario.background_use.apps is empty");
            for name in &u.apps {
                ensure!(
                    s.background.contains(name),
                    "scenario.background_use.apps names {name:?}, which is not a background app"
                );
            }
        }
        let mut seen = HashSet::new();
        for name in s.foreground.iter().chain(&s.background) {
            ensure!(
                self.app(name).is_some(),
                "scenario names app {name:?} which is not in apps"
            );
            ensure!(
                seen.insert(name),
                "scenario lists app {name:?} more than once"
            );
        }
        Ok(())
    }
}

fn non_negative(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

fn is_path_component(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = include_str!("../tests/fixtures/spec.json");

    fn fixture_value() -> serde_json::Value {
        serde_json::from_str(FIXTURE).unwrap()
    }

    fn parse_value(v: &serde_json::Value) -> Result<Spec> {
        Spec::parse(&v.to_string())
    }

    #[test]
    fn the_committed_schema_is_the_types() {
        // the host checks every spec.json it writes against this file
        assert!(
            include_str!("../../schemas/spec.schema.json") == json_schema(),
            "schemas/spec.schema.json is not the types' schema: run \
             `make schemas` and commit it"
        );
    }

    #[test]
    fn fixture_parses_with_all_fields() {
        let spec = Spec::parse(FIXTURE).unwrap();
        assert_eq!(spec.run_id, "original-r1");
        assert_eq!(spec.seed, 42);
        assert_eq!(spec.scheme.knobs.len(), 2);
        assert_eq!(spec.scheme.knobs[1].value, "n");
        assert_eq!(spec.lmkd.medium_some_ms, 70.0);
        assert_eq!(spec.lmkd.thrashing_critical(), 300);
        assert_eq!(
            spec.lmkd.poll_long_ms, 100.0,
            "optional field takes lmkd's default"
        );
        assert_eq!(spec.scenario.dwell_ms, [1500.0, 3000.0]);
        let whatsapp = spec.app("whatsapp").unwrap();
        assert_eq!(whatsapp.adj_class, AdjClass::Cached);
        assert_eq!(
            spec.app("firefox").unwrap().adj_class,
            AdjClass::Perceptible
        );
        assert_eq!(whatsapp.bg_touch.as_ref().unwrap().mb, 2.0);
        assert!(spec.app("chrome").unwrap().bg_touch.is_none());
    }

    #[test]
    fn kthreads_are_optional_and_parsed() {
        assert!(Spec::parse(FIXTURE).unwrap().scheme.kthreads.is_empty());
        let mut v = fixture_value();
        v["scheme"]["kthreads"] = serde_json::json!([
            {"comm": "kswapd", "policy": "fifo", "priority": 1, "cpus": [1]}
        ]);
        let k = &parse_value(&v).unwrap().scheme.kthreads[0];
        assert_eq!(
            (k.comm.as_str(), k.policy, k.priority),
            ("kswapd", SchedPolicy::Fifo, 1)
        );
        assert_eq!(k.cpus, Some(vec![1]));
    }

    #[test]
    fn background_marks_are_optional_and_parsed() {
        assert!(Spec::parse(FIXTURE).unwrap().scheme.background.is_none());
        for (apps, mode) in [
            ("not-foreground", MarkedApps::NotForeground),
            ("scenario-background", MarkedApps::ScenarioBackground),
        ] {
            let mut v = fixture_value();
            v["scheme"]["background"] =
                serde_json::json!({"file": "memory.acclaim_bg", "apps": apps});
            let marks = parse_value(&v).unwrap().scheme.background.unwrap();
            assert_eq!(
                (marks.file.as_str(), marks.apps),
                ("memory.acclaim_bg", mode)
            );
        }
        let mut v = fixture_value();
        v["scheme"]["background"] = serde_json::Value::Null;
        assert!(parse_value(&v).unwrap().scheme.background.is_none());
    }

    #[test]
    fn background_marks_refuse_unknown_modes_and_fields() {
        let mut v = fixture_value();
        v["scheme"]["background"] =
            serde_json::json!({"file": "memory.acclaim_bg", "apps": "not_foreground"});
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown variant `not_foreground`"), "{err}");
        v["scheme"]["background"] = serde_json::json!({"file": "memory.acclaim_bg"});
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("missing field `apps`"), "{err}");
        v["scheme"]["background"] = serde_json::json!(
            {"file": "memory.acclaim_bg", "apps": "not-foreground", "value": "1"}
        );
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `value`"), "{err}");
    }

    #[test]
    fn background_marks_refuse_what_is_not_a_memcg_file_name() {
        for file in [
            "",
            "memory.",
            "acclaim_bg",
            "cgroup.procs",
            "memory.acclaim_bg/x",
            "../memory.acclaim_bg",
            "/sys/fs/cgroup/memory.acclaim_bg",
            "memory.acclaim bg",
        ] {
            let mut v = fixture_value();
            v["scheme"]["background"] = serde_json::json!({"file": file, "apps": "not-foreground"});
            let err = format!("{:#}", parse_value(&v).unwrap_err());
            assert!(
                err.contains("scheme.background.file") && err.contains("\"memory.\""),
                "{file:?}: {err}"
            );
        }
    }

    #[test]
    fn swap_may_be_zram_only() {
        assert!(Spec::parse(FIXTURE).unwrap().swap.disk);
        let mut v = fixture_value();
        v["swap"]["disk"] = false.into();
        v["swap"]["zram_mb"] = 341.3.into();
        let swap = parse_value(&v).unwrap().swap;
        assert_eq!((swap.disk, swap.zram_mb), (false, 341.3));
        v["swap"]["zram_mb"] = 0.into();
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("zram_mb must be > 0"), "{err}");
        v["swap"].as_object_mut().unwrap().remove("disk");
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("missing field `disk`"), "{err}");
    }

    fn balance() -> serde_json::Value {
        serde_json::json!({"period_ms": 1000, "step": 10, "min": 100, "max": 200,
                           "thrash_anon_pct": 0.5, "file_refault_pct": 0.1})
    }

    #[test]
    fn skew_is_optional_and_parsed() {
        assert!(Spec::parse(FIXTURE).unwrap().scheme.skew.is_none());
        let mut v = fixture_value();
        v["scheme"]["skew"] = serde_json::json!({"advice": "cold"});
        let skew = parse_value(&v).unwrap().scheme.skew.unwrap();
        assert_eq!(skew.advice, SkewAdvice::Cold);
        assert!(skew.balance.is_none());
        v["scheme"]["skew"] = serde_json::json!({"advice": "pageout", "balance": balance()});
        let skew = parse_value(&v).unwrap().scheme.skew.unwrap();
        assert_eq!(skew.advice, SkewAdvice::Pageout);
        let b = skew.balance.unwrap();
        assert_eq!((b.period_ms, b.step, b.min, b.max), (1000.0, 10, 100, 200));
        assert_eq!((b.thrash_anon_pct, b.file_refault_pct), (0.5, 0.1));
        v["scheme"]["skew"] = serde_json::json!({"advice": "cold", "balance": null});
        assert!(parse_value(&v)
            .unwrap()
            .scheme
            .skew
            .unwrap()
            .balance
            .is_none());
        v["scheme"]["skew"] = serde_json::Value::Null;
        assert!(parse_value(&v).unwrap().scheme.skew.is_none());
    }

    #[test]
    fn skew_refuses_unknown_advice_fields_and_bad_balances() {
        let mut v = fixture_value();
        v["scheme"]["skew"] = serde_json::json!({"advice": "free"});
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown variant `free`"), "{err}");
        v["scheme"]["skew"] = serde_json::json!({"advice": "cold", "period_ms": 1000});
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `period_ms`"), "{err}");
        let mut b = balance();
        b["target"] = 1.into();
        v["scheme"]["skew"] = serde_json::json!({"advice": "cold", "balance": b});
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `target`"), "{err}");
        for (field, value, needle) in [
            (
                "period_ms",
                serde_json::json!(99),
                "period_ms must be >= 100",
            ),
            ("step", 0.into(), "step must be 1..=100"),
            ("step", 101.into(), "step must be 1..=100"),
            ("min", 201.into(), "min <= max <= 200"),
            ("max", 201.into(), "min <= max <= 200"),
            ("thrash_anon_pct", 0.into(), "thrash_anon_pct must be > 0"),
            (
                "file_refault_pct",
                (-1.0).into(),
                "file_refault_pct must be > 0",
            ),
        ] {
            let mut b = balance();
            b[field] = value;
            v["scheme"]["skew"] = serde_json::json!({"advice": "cold", "balance": b});
            let err = format!("{:#}", parse_value(&v).unwrap_err());
            assert!(err.contains(needle), "{field}: {err}");
        }
    }

    fn ice() -> serde_json::Value {
        serde_json::json!({"rpf": "kernel", "poll_ms": 100.0, "protect_adj": 200,
                           "mdt": {"delta": 8.0, "thaw_ms": 1000.0, "max_freeze_ms": 64000.0,
                                   "available": "mem_free"},
                           "spare_swapped": false})
    }

    #[test]
    fn ice_is_optional_and_parsed() {
        assert!(Spec::parse(FIXTURE).unwrap().scheme.ice.is_none());
        let mut v = fixture_value();
        v["scheme"]["ice"] = ice();
        let i = parse_value(&v).unwrap().scheme.ice.unwrap();
        assert_eq!(
            (i.rpf, i.poll_ms, i.protect_adj, i.spare_swapped),
            (Rpf::Kernel, 100.0, 200, false)
        );
        assert_eq!(
            (
                i.mdt.delta,
                i.mdt.thaw_ms,
                i.mdt.max_freeze_ms,
                i.mdt.available
            ),
            (8.0, 1000.0, 64000.0, Available::MemFree)
        );
        v["scheme"]["ice"]["rpf"] = "user".into();
        v["scheme"]["ice"]["mdt"]["available"] = "mem_available".into();
        v["scheme"]["ice"]["spare_swapped"] = true.into();
        let i = parse_value(&v).unwrap().scheme.ice.unwrap();
        assert_eq!(
            (i.rpf, i.mdt.available, i.spare_swapped),
            (Rpf::User, Available::MemAvailable, true)
        );
        v["scheme"]["ice"] = serde_json::Value::Null;
        assert!(parse_value(&v).unwrap().scheme.ice.is_none());
    }

    #[test]
    fn ice_refuses_unknown_values_fields_and_bad_ranges() {
        let mut v = fixture_value();
        for (path, value, needle) in [
            ("rpf", serde_json::json!("both"), "unknown variant `both`"),
            (
                "available",
                serde_json::json!("free"),
                "unknown variant `free`",
            ),
            (
                "poll_ms",
                serde_json::json!(0),
                "scheme.ice.poll_ms must be > 0",
            ),
            (
                "protect_adj",
                serde_json::json!(-1),
                "scheme.ice.protect_adj must be 0..=699",
            ),
            (
                "protect_adj",
                serde_json::json!(700),
                "scheme.ice.protect_adj must be 0..=699",
            ),
            (
                "delta",
                serde_json::json!(0),
                "scheme.ice.mdt.delta must be > 0",
            ),
            (
                "thaw_ms",
                serde_json::json!(-1),
                "scheme.ice.mdt.thaw_ms must be > 0",
            ),
            (
                "max_freeze_ms",
                serde_json::json!(15999),
                "max_freeze_ms must be >= delta * 2 * thaw_ms (16000 ms",
            ),
        ] {
            let mut i = ice();
            if ["delta", "thaw_ms", "max_freeze_ms", "available"].contains(&path) {
                i["mdt"][path] = value;
            } else {
                i[path] = value;
            }
            v["scheme"]["ice"] = i;
            let err = format!("{:#}", parse_value(&v).unwrap_err());
            assert!(err.contains(needle), "{path}: {err}");
        }
        let mut i = ice();
        i["freeze_ms"] = 1.into();
        v["scheme"]["ice"] = i;
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `freeze_ms`"), "{err}");
        let mut i = ice();
        i.as_object_mut().unwrap().remove("spare_swapped");
        v["scheme"]["ice"] = i;
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("missing field `spare_swapped`"), "{err}");
    }

    fn swam() -> serde_json::Value {
        serde_json::json!({"swapd": {"period_ms": 1000.0, "chunk_mb": 21.3, "max_files": 24,
                                     "low_mb": 10.7, "high_mb": 42.7},
                           "eoom": {"launch_adj_max": 100}})
    }

    #[test]
    fn swam_is_optional_and_parsed() {
        assert!(Spec::parse(FIXTURE).unwrap().scheme.swam.is_none());
        let mut v = fixture_value();
        v["scheme"]["swam"] = swam();
        let s = parse_value(&v).unwrap().scheme.swam.unwrap();
        let d = s.swapd.unwrap();
        assert_eq!(
            (d.period_ms, d.chunk_mb, d.max_files, d.low_mb, d.high_mb),
            (1000.0, 21.3, 24, 10.7, 42.7)
        );
        assert_eq!(s.eoom.unwrap().launch_adj_max, 100);
        for (swam, swapd, eoom) in [
            (serde_json::json!({}), false, false),
            (
                serde_json::json!({"swapd": null, "eoom": null}),
                false,
                false,
            ),
            (
                serde_json::json!({"eoom": {"launch_adj_max": 1}}),
                false,
                true,
            ),
            (serde_json::json!({"swapd": swam()["swapd"]}), true, false),
        ] {
            v["scheme"]["swam"] = swam.clone();
            let s = parse_value(&v).unwrap().scheme.swam.unwrap();
            assert_eq!(
                (s.swapd.is_some(), s.eoom.is_some()),
                (swapd, eoom),
                "{swam}"
            );
        }
        v["scheme"]["swam"] = serde_json::Value::Null;
        assert!(parse_value(&v).unwrap().scheme.swam.is_none());
    }

    #[test]
    fn swam_refuses_unknown_fields_and_bad_ranges() {
        let mut v = fixture_value();
        for (part, field, value, needle) in [
            (
                "swapd",
                "period_ms",
                serde_json::json!(0),
                "scheme.swam.swapd.period_ms must be > 0",
            ),
            (
                "swapd",
                "chunk_mb",
                serde_json::json!(-1),
                "scheme.swam.swapd.chunk_mb must be > 0",
            ),
            (
                "swapd",
                "max_files",
                serde_json::json!(0),
                "scheme.swam.swapd.max_files must be 1..=24",
            ),
            (
                "swapd",
                "max_files",
                serde_json::json!(25),
                "scheme.swam.swapd.max_files must be 1..=24",
            ),
            (
                "swapd",
                "low_mb",
                serde_json::json!(-0.5),
                "scheme.swam.swapd.low_mb must be >= 0",
            ),
            (
                "swapd",
                "high_mb",
                serde_json::json!(31.9),
                "scheme.swam.swapd.high_mb must be >= low_mb + chunk_mb (32.0 MB)",
            ),
            (
                "eoom",
                "launch_adj_max",
                serde_json::json!(0),
                "scheme.swam.eoom.launch_adj_max must be 1..=1000",
            ),
            (
                "eoom",
                "launch_adj_max",
                serde_json::json!(1001),
                "scheme.swam.eoom.launch_adj_max must be 1..=1000",
            ),
            (
                "swapd",
                "priority",
                serde_json::json!(-1),
                "unknown field `priority`",
            ),
            (
                "eoom",
                "scale",
                serde_json::json!(1),
                "unknown field `scale`",
            ),
        ] {
            let mut s = swam();
            s[part][field] = value;
            v["scheme"]["swam"] = s;
            let err = format!("{:#}", parse_value(&v).unwrap_err());
            assert!(err.contains(needle), "{part}.{field}: {err}");
        }
        let mut s = swam();
        s["wsp"] = serde_json::json!({"clean_low_mb": 150});
        v["scheme"]["swam"] = s;
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `wsp`"), "{err}");
        let mut s = swam();
        s["swapd"].as_object_mut().unwrap().remove("high_mb");
        v["scheme"]["swam"] = s;
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("missing field `high_mb`"), "{err}");
    }

    #[test]
    fn swam_swapd_needs_the_swap_disk() {
        let mut v = fixture_value();
        v["swap"]["disk"] = false.into();
        v["swap"]["zram_mb"] = 341.3.into();
        v["scheme"]["swam"] = swam();
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(
            err.contains("scheme.swam.swapd needs the swap disk (swap.disk true)"),
            "{err}"
        );
        v["scheme"]["swam"]["swapd"] = serde_json::Value::Null;
        assert!(parse_value(&v).is_ok(), "eoom alone needs no swap disk");
    }

    #[test]
    fn swam_cleaner_is_an_empty_table_or_absent() {
        let mut v = fixture_value();
        v["scheme"]["swam"] = swam();
        assert!(parse_value(&v)
            .unwrap()
            .scheme
            .swam
            .unwrap()
            .cleaner
            .is_none());
        v["scheme"]["swam"]["cleaner"] = serde_json::json!({});
        let s = parse_value(&v).unwrap().scheme.swam.unwrap();
        assert!(s.cleaner.is_some() && s.eoom.is_some());
        v["scheme"]["swam"] = serde_json::json!({"cleaner": {}});
        let s = parse_value(&v).unwrap().scheme.swam.unwrap();
        assert!(s.cleaner.is_some() && s.swapd.is_none() && s.eoom.is_none());
        v["scheme"]["swam"]["cleaner"] = serde_json::Value::Null;
        assert!(parse_value(&v)
            .unwrap()
            .scheme
            .swam
            .unwrap()
            .cleaner
            .is_none());
        v["scheme"]["swam"]["cleaner"] = serde_json::json!({"min_free_swap_percent": 20});
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(
            err.contains("unknown field `min_free_swap_percent`"),
            "{err}"
        );
    }

    #[test]
    fn so_pages_are_optional_and_within_the_files() {
        let spec = Spec::parse(FIXTURE).unwrap();
        assert!(spec
            .apps
            .iter()
            .all(|a| a.so_mb == 0.0 && a.so_reloc_us_per_page == 0.0));
        let mut v = fixture_value();
        v["apps"][0]["so_mb"] = 4.0.into(); // chrome: file_mb 20
        v["apps"][0]["so_reloc_us_per_page"] = 50.0.into();
        let chrome = parse_value(&v).unwrap().apps[0].clone();
        assert_eq!((chrome.so_mb, chrome.so_reloc_us_per_page), (4.0, 50.0));
        for (field, value, needle) in [
            ("so_mb", -1.0, "app chrome: so_mb must be >= 0"),
            ("so_mb", 20.5, "app chrome: so_mb must be <= file_mb"),
            (
                "so_reloc_us_per_page",
                -0.5,
                "app chrome: so_reloc_us_per_page must be >= 0",
            ),
        ] {
            let mut bad = v.clone();
            bad["apps"][0][field] = value.into();
            let err = format!("{:#}", parse_value(&bad).unwrap_err());
            assert!(err.contains(needle), "{field}: {err}");
        }
    }

    #[test]
    fn frames_and_background_cpu_are_optional_and_checked() {
        let spec = Spec::parse(FIXTURE).unwrap();
        assert!(spec.apps.iter().all(|a| a.frame.is_none()));
        assert_eq!(
            spec.app("whatsapp")
                .unwrap()
                .bg_touch
                .as_ref()
                .unwrap()
                .cpu_ms,
            0.0
        );
        let mut v = fixture_value();
        v["apps"][0]["frame"] =
            serde_json::json!({"period_ms": 16.667, "work_ms": 6, "touch_mb": 2});
        v["apps"][3]["bg_touch"]["cpu_ms"] = 20.into();
        let spec = parse_value(&v).unwrap();
        let f = spec.apps[0].frame.as_ref().unwrap();
        assert_eq!((f.period_ms, f.work_ms, f.touch_mb), (16.667, 6.0, 2.0));
        assert_eq!(f.alloc_kb, 0.0, "no allocation unless asked");
        assert_eq!(spec.apps[3].bg_touch.as_ref().unwrap().cpu_ms, 20.0);
        for (field, value, needle) in [
            ("period_ms", 0.0, "app chrome: frame.period_ms must be > 0"),
            ("work_ms", -1.0, "app chrome: frame.work_ms must be >= 0"),
            ("touch_mb", -1.0, "app chrome: frame.touch_mb must be >= 0"),
            ("alloc_kb", -1.0, "app chrome: frame.alloc_kb must be >= 0"),
        ] {
            let mut v = fixture_value();
            v["apps"][0]["frame"] =
                serde_json::json!({"period_ms": 16.667, "work_ms": 6, "touch_mb": 2});
            v["apps"][0]["frame"][field] = value.into();
            let err = format!("{:#}", parse_value(&v).unwrap_err());
            assert!(err.contains(needle), "{field}: {err}");
        }
        v["apps"][3]["bg_touch"]["cpu_ms"] = (-1.0).into();
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(
            err.contains("app whatsapp: bg_touch.cpu_ms must be >= 0"),
            "{err}"
        );
        v["apps"][3]["bg_touch"]["cpu_ms"] = 0.into();
        v["apps"][0]["frame"]["fps"] = 60.into();
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `fps`"), "{err}");
    }

    #[test]
    fn app_levers_default_to_the_plain_model() {
        let spec = Spec::parse(FIXTURE).unwrap();
        let chrome = spec.app("chrome").unwrap();
        assert_eq!(chrome.launch_threads, 1);
        assert_eq!(chrome.resume_work_ms, 0.0);
        assert_eq!(chrome.fg_growth_mb_per_s, 0.0);
        assert_eq!(chrome.peak_anon_mb(), chrome.anon_mb);
        let mut v = fixture_value();
        v["apps"][0]["peak_anon_mb"] = 180.0.into();
        v["apps"][0]["launch_threads"] = 3.into();
        let spec = parse_value(&v).unwrap();
        assert_eq!(spec.apps[0].peak_anon_mb(), 180.0);
        assert_eq!(spec.apps[0].launch_threads, 3);
    }

    #[test]
    fn rejects_malformed_json() {
        let err = Spec::parse("{\"run_id\": \"x\",").unwrap_err();
        assert!(err.to_string().contains("EOF"), "{err}");
    }

    #[test]
    fn rejects_unknown_field() {
        let mut v = fixture_value();
        v["lmkd"]["medium_min_adj"] = 800.into();
        let err = format!("{:#}", parse_value(&v).unwrap_err());
        assert!(err.contains("unknown field `medium_min_adj`"), "{err}");
    }

    #[test]
    fn rejects_missing_field_and_bad_types() {
        let mut v = fixture_value();
        v.as_object_mut().unwrap().remove("seed");
        assert!(format!("{:#}", parse_value(&v).unwrap_err()).contains("missing field `seed`"));

        let mut v = fixture_value();
        v["apps"][0]["adj_class"] = "visible".into();
        assert!(parse_value(&v).is_err());
    }

    #[test]
    fn rejects_semantic_errors() {
        type Mutation = fn(&mut serde_json::Value);
        let cases: &[(&str, Mutation)] = &[
            ("launch_fraction", |v| {
                v["apps"][0]["launch_fraction"] = 1.5.into()
            }),
            ("not in apps", |v| {
                v["scenario"]["foreground"][0] = "maps".into()
            }),
            ("more than once", |v| {
                v["scenario"]["background"][0] = "chrome".into()
            }),
            ("unknown scheme policy", |v| {
                v["scheme"]["policies"] = serde_json::json!(["x"])
            }),
            ("priority must be 1..=99", |v| {
                v["scheme"]["kthreads"] = serde_json::json!([{"comm": "kswapd", "policy": "fifo"}])
            }),
            (
                "nice must be -20..=19",
                |v| {
                    v["scheme"]["kthreads"] =
                        serde_json::json!([{"comm": "kswapd", "policy": "normal", "nice": -21}])
                },
            ),
            ("cpus must list CPU numbers", |v| {
                v["scheme"]["kthreads"] = serde_json::json!([
                    {"comm": "kswapd", "policy": "fifo", "priority": 1, "cpus": []}
                ])
            }),
            ("window_ms", |v| v["lmkd"]["window_ms"] = 100.into()),
            ("dwell_ms", |v| {
                v["scenario"]["dwell_ms"] = serde_json::json!([3000, 1500])
            }),
            ("must be [A-Za-z0-9_.-]+", |v| {
                v["apps"][0]["name"] = "../x".into()
            }),
            ("launch_threads must be 1..=16", |v| {
                v["apps"][0]["launch_threads"] = 0.into()
            }),
            ("peak_anon_mb must be >= anon_mb", |v| {
                v["apps"][0]["peak_anon_mb"] = 10.0.into()
            }),
            ("resume_work_ms must be >= 0", |v| {
                v["apps"][0]["resume_work_ms"] = (-1.0).into()
            }),
            ("background_use.every must be >= 1", |v| {
                v["scenario"]["background_use"] =
                    serde_json::json!({"every": 0, "dwell_ms": [1, 2], "apps": ["firefox"]})
            }),
            ("background_use.dwell_ms", |v| {
                v["scenario"]["background_use"] =
                    serde_json::json!({"every": 1, "dwell_ms": [2, 1], "apps": ["firefox"]})
            }),
            ("background_use.apps is empty", |v| {
                v["scenario"]["background_use"] =
                    serde_json::json!({"every": 1, "dwell_ms": [1, 2], "apps": []})
            }),
            ("not a background app", |v| {
                v["scenario"]["background_use"] =
                    serde_json::json!({"every": 1, "dwell_ms": [1, 2], "apps": ["chrome"]})
            }),
        ];
        for (needle, mutate) in cases {
            let mut v = fixture_value();
            mutate(&mut v);
            let err = format!("{:#}", parse_value(&v).unwrap_err());
            assert!(err.contains(needle), "expected {needle:?} in {err:?}");
        }
    }
}

//! The kill decision of lmkd's `mp_event_psi` (Android 14): given one
//! wakeup's meminfo, vmstat, watermarks and PSI, decide whether to kill,
//! why, and the lowest oom_score_adj that may be killed. Pure: the caller
//! reads the files and does the killing; time is milliseconds on any
//! monotonic clock.

use crate::spec::LmkdConfig;
use crate::sys::proc_files::{MemInfo, Watermarks};
use serde::Serialize;

/// lmkd measures memory in pages of this many kB.
pub const PAGE_KB: i64 = 4;
/// lmkd's `THRASHING_RESET_INTERVAL_MS`.
const THRASHING_RESET_INTERVAL_MS: u64 = 1000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Medium,
    Critical,
}

/// lmkd's `kill_reasons` (statslog.h), as they appear in events.jsonl.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KillReason {
    PressureAfterKill,
    NotResponding,
    LowSwapAndThrashing,
    LowMemAndSwap,
    LowMemAndSwapUtil,
    LowMemAndThrashing,
    DirectReclAndThrashing,
    LowFilecacheAfterThrashing,
}

/// The lowest zone watermark breached; ordered like lmkd's enum so that
/// `wmark < Wmark::Low` reads as in lmkd.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wmark {
    Min,
    Low,
    High,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reclaim {
    None,
    Kswapd,
    Direct,
}

/// The /proc/vmstat counters lmkd reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct VmCounters {
    pub nr_inactive_file: i64,
    pub nr_active_file: i64,
    /// `workingset_refault`, or `workingset_refault_file` on kernels >= 5.9.
    pub workingset_refault_file: i64,
    pub pgscan_kswapd: i64,
    pub pgscan_direct: i64,
}

impl VmCounters {
    pub fn from_vmstat(kv: &[(String, i64)]) -> VmCounters {
        let get = |key: &str| kv.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| *v);
        let refault = get("workingset_refault");
        VmCounters {
            nr_inactive_file: get("nr_inactive_file"),
            nr_active_file: get("nr_active_file"),
            workingset_refault_file: if refault != 0 {
                refault
            } else {
                get("workingset_refault_file")
            },
            pgscan_kswapd: get("pgscan_kswapd"),
            pgscan_direct: get("pgscan_direct"),
        }
    }

    fn file_lru(&self) -> i64 {
        self.nr_inactive_file + self.nr_active_file
    }
}

/// Everything one wakeup looks at.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    pub mem: MemInfo,
    pub vm: VmCounters,
    pub watermarks: Watermarks,
    /// PSI memory `full avg10`, if it could be read.
    pub psi_full_avg10: Option<f64>,
}

impl Snapshot {
    fn pages(kb: i64) -> i64 {
        kb / PAGE_KB
    }

    /// Free pages as lmkd counts them against the watermarks: less CMA.
    pub fn free_pages(&self) -> i64 {
        Self::pages(self.mem.mem_free) - Self::pages(self.mem.cma_free)
    }

    pub fn lowest_watermark(&self) -> Wmark {
        let free = self.free_pages();
        let w = &self.watermarks;
        if free < w.min {
            Wmark::Min
        } else if free < w.low {
            Wmark::Low
        } else if free < w.high {
            Wmark::High
        } else {
            Wmark::None
        }
    }
}

/// lmkd's `get_free_swap`: SwapFree, but at most easily available memory
/// (free + inactive file) × swap_compression_ratio, in pages.
pub fn free_swap_pages(mem: &MemInfo, compression_ratio: i64) -> i64 {
    let free_swap = mem.swap_free / PAGE_KB;
    if compression_ratio == 0 {
        return free_swap;
    }
    let easy_available = mem.mem_free / PAGE_KB + mem.inactive_file / PAGE_KB;
    free_swap.min(easy_available * compression_ratio)
}

/// lmkd's `calc_swap_utilization`: swapped-out share of swappable memory, %.
pub fn swap_utilization(mem: &MemInfo, compression_ratio: i64) -> i64 {
    let used = mem.swap_total / PAGE_KB - free_swap_pages(mem, compression_ratio);
    let swappable = (mem.active_anon + mem.inactive_anon + mem.shmem) / PAGE_KB + used;
    if swappable > 0 {
        used * 100 / swappable
    } else {
        0
    }
}

/// lmkd's `swap_is_low`: free swap (`free_swap_pages`) below
/// `swap_free_low_percentage` of SwapTotal; never with the percentage 0.
pub fn swap_is_low(cfg: &LmkdConfig, mem: &MemInfo) -> bool {
    let swap_low_threshold = mem.swap_total / PAGE_KB * cfg.swap_free_low_percentage / 100;
    cfg.swap_free_low_percentage > 0
        && free_swap_pages(mem, cfg.swap_compression_ratio) < swap_low_threshold
}

/// What a wakeup decided to kill.
#[derive(Debug, Clone, PartialEq)]
pub struct KillPlan {
    pub reason: KillReason,
    pub min_adj: i32,
    pub thrashing: i64,
    cut_thrashing_limit: bool,
}

#[cfg(test)]
impl KillPlan {
    pub fn new(reason: KillReason, min_adj: i32, thrashing: i64) -> KillPlan {
        KillPlan {
            reason,
            min_adj,
            thrashing,
            cut_thrashing_limit: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub kill: Option<KillPlan>,
    pub swap_is_low: bool,
    pub reclaim: Reclaim,
    /// The lowest watermark free memory was under.
    pub wmark: Wmark,
    /// The thrashing figure the kill reasons were checked against; `None`
    /// when the wakeup returned early (neither reclaim nor refaults).
    pub thrashing: Option<i64>,
}

/// The state `mp_event_psi` keeps across wakeups (its `static` locals).
#[derive(Debug, Clone)]
pub struct Decision {
    cfg: LmkdConfig,
    init_ws_refault: i64,
    prev_workingset_refault: i64,
    base_file_lru: i64,
    init_pgscan_kswapd: i64,
    init_pgscan_direct: i64,
    killing: bool,
    thrashing_limit: i64,
    /// `None` until the first thrashing window: lmkd's first window starts
    /// at boot, so its growth decays to nothing.
    thrashing_reset_ms: Option<u64>,
    prev_thrash_growth: i64,
    check_filecache: bool,
}

impl Decision {
    pub fn new(cfg: &LmkdConfig) -> Decision {
        Decision {
            cfg: cfg.clone(),
            init_ws_refault: 0,
            prev_workingset_refault: 0,
            base_file_lru: 0,
            init_pgscan_kswapd: 0,
            init_pgscan_direct: 0,
            killing: false,
            thrashing_limit: cfg.thrashing_limit,
            thrashing_reset_ms: None,
            prev_thrash_growth: 0,
            check_filecache: false,
        }
    }

    /// Whether the last wakeup killed (lmkd polls fast after a kill).
    pub fn killing(&self) -> bool {
        self.killing
    }

    /// Record a kill that freed memory.
    pub fn killed(&mut self, plan: &KillPlan) {
        self.killing = true;
        if plan.cut_thrashing_limit {
            self.thrashing_limit =
                self.thrashing_limit * (100 - self.cfg.thrashing_limit_decay) / 100;
        }
    }

    pub fn evaluate(&mut self, level: Level, event: bool, now_ms: u64, s: &Snapshot) -> Evaluation {
        let refault = s.vm.workingset_refault_file;
        let mut cycle_after_kill = false;
        if self.killing {
            self.killing = false;
            cycle_after_kill = true;
            self.base_file_lru = s.vm.file_lru();
            self.init_ws_refault = refault;
            self.thrashing_reset_ms = Some(now_ms);
            self.prev_thrash_growth = 0;
        }

        let swap_is_low = swap_is_low(&self.cfg, &s.mem);

        let reclaim = if s.vm.pgscan_direct != self.init_pgscan_direct {
            self.init_pgscan_direct = s.vm.pgscan_direct;
            self.init_pgscan_kswapd = s.vm.pgscan_kswapd;
            Reclaim::Direct
        } else if s.vm.pgscan_kswapd != self.init_pgscan_kswapd {
            self.init_pgscan_kswapd = s.vm.pgscan_kswapd;
            Reclaim::Kswapd
        } else if refault == self.prev_workingset_refault {
            // Neither reclaiming nor thrashing: nothing to do.
            return Evaluation {
                kill: None,
                swap_is_low,
                reclaim: Reclaim::None,
                wmark: s.lowest_watermark(),
                thrashing: None,
            };
        } else {
            Reclaim::None
        };
        self.prev_workingset_refault = refault;

        let thrashing = self.update_thrashing(now_ms, refault, s.vm.file_lru());
        let plan = self.choose(
            level,
            event,
            cycle_after_kill,
            swap_is_low,
            reclaim,
            thrashing,
            s,
        );
        Evaluation {
            kill: plan,
            swap_is_low,
            reclaim,
            wmark: s.lowest_watermark(),
            thrashing: Some(thrashing),
        }
    }

    /// Refaulted share (%) of the file LRU, per window of
    /// THRASHING_RESET_INTERVAL_MS, with the previous windows' growth
    /// decaying by half per window.
    fn update_thrashing(&mut self, now_ms: u64, refault: i64, file_lru: i64) -> i64 {
        let growth = (refault - self.init_ws_refault) * 100 / (self.base_file_lru + 1);
        let mut thrashing = 0;
        match self.thrashing_reset_ms {
            Some(reset) if now_ms.saturating_sub(reset) <= THRASHING_RESET_INTERVAL_MS => {
                thrashing = growth
            }
            reset => {
                let windows =
                    reset.map_or(u64::MAX, |r| (now_ms - r) / THRASHING_RESET_INTERVAL_MS);
                self.prev_thrash_growth = growth;
                // Keep over-the-limit growth of the window just crossed so a
                // kill is retried when an eligible process appears.
                if windows > 1 || growth < self.thrashing_limit {
                    self.prev_thrash_growth = if windows >= 63 { 0 } else { growth >> windows };
                }
                self.base_file_lru = file_lru;
                self.init_ws_refault = refault;
                self.thrashing_reset_ms = Some(now_ms);
                self.thrashing_limit = self.cfg.thrashing_limit;
            }
        }
        thrashing + self.prev_thrash_growth
    }

    #[allow(clippy::too_many_arguments)]
    fn choose(
        &mut self,
        level: Level,
        event: bool,
        cycle_after_kill: bool,
        swap_is_low: bool,
        reclaim: Reclaim,
        thrashing: i64,
        s: &Snapshot,
    ) -> Option<KillPlan> {
        use KillReason::*;
        let wmark = s.lowest_watermark();
        let perceptible_plus_one = self.cfg.perceptible_adj + 1;
        let critical_thrashing = self.cfg.thrashing_critical();
        // Perceptible apps are spared unless below the min watermark or
        // thrashing critically (the *_and_swap reasons) ...
        let spare_unless_min = if wmark > Wmark::Min && thrashing < critical_thrashing {
            perceptible_plus_one
        } else {
            0
        };
        // ... or unless thrashing critically (the *_and_thrashing reasons).
        let spare_unless_thrashing = if thrashing < critical_thrashing {
            perceptible_plus_one
        } else {
            0
        };

        let (reason, mut min_adj, cut) = if cycle_after_kill && wmark < Wmark::Low {
            (PressureAfterKill, 0, false)
        } else if level == Level::Critical && event {
            (NotResponding, 0, false)
        } else if swap_is_low && thrashing > self.cfg.thrashing_limit {
            self.check_filecache = true;
            (LowSwapAndThrashing, spare_unless_min, false)
        } else if swap_is_low && wmark < Wmark::High {
            (LowMemAndSwap, spare_unless_min, false)
        } else if wmark < Wmark::High
            && self.cfg.swap_util_max < 100
            && swap_utilization(&s.mem, self.cfg.swap_compression_ratio) > self.cfg.swap_util_max
        {
            (LowMemAndSwapUtil, 0, false)
        } else if wmark < Wmark::High && thrashing > self.thrashing_limit {
            self.check_filecache = true;
            (LowMemAndThrashing, spare_unless_thrashing, true)
        } else if reclaim == Reclaim::Direct && thrashing > self.thrashing_limit {
            self.check_filecache = true;
            (DirectReclAndThrashing, spare_unless_thrashing, true)
        } else if self.check_filecache {
            let file_lru_kb = s.vm.file_lru() * PAGE_KB;
            if file_lru_kb < self.cfg.filecache_min_kb {
                (LowFilecacheAfterThrashing, perceptible_plus_one, false)
            } else {
                self.check_filecache = false;
                return None;
            }
        } else {
            return None;
        };

        // Allow killing perceptible apps if the system is stalled.
        if s.psi_full_avg10
            .is_some_and(|avg10| avg10 > self.cfg.stall_limit_critical)
        {
            min_adj = 0;
        }
        Some(KillPlan {
            reason,
            min_adj,
            thrashing,
            cut_thrashing_limit: cut,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    fn config() -> LmkdConfig {
        Spec::parse(include_str!("../../tests/fixtures/spec.json"))
            .unwrap()
            .lmkd
    }

    /// 400 MB of RAM, 400 MB of swap; watermarks at 1000/2000/3000 pages.
    fn snapshot() -> Snapshot {
        Snapshot {
            mem: MemInfo {
                mem_total: 400_000,
                mem_free: 100_000,
                mem_available: 150_000,
                swap_total: 400_000,
                swap_free: 400_000,
                shmem: 0,
                active_anon: 100_000,
                inactive_anon: 100_000,
                inactive_file: 200_000,
                cma_free: 0,
            },
            vm: VmCounters {
                nr_inactive_file: 10_000,
                nr_active_file: 10_000,
                workingset_refault_file: 0,
                pgscan_kswapd: 0,
                pgscan_direct: 0,
            },
            watermarks: Watermarks {
                min: 1000,
                low: 2000,
                high: 3000,
            },
            psi_full_avg10: Some(0.0),
        }
    }

    /// Free memory, in pages, that breaches the given watermark.
    fn free_kb_at(w: Wmark) -> i64 {
        PAGE_KB
            * match w {
                Wmark::Min => 500,
                Wmark::Low => 1500,
                Wmark::High => 2500,
                Wmark::None => 25_000,
            }
    }

    /// A decision that has seen one quiet wakeup at t=0 (starting its
    /// thrashing window), then a wakeup at `t` with kswapd reclaiming,
    /// `refault_pages` refaults and the given watermark and free swap.
    fn run(
        level: Level,
        event: bool,
        wmark: Wmark,
        swap_free_kb: i64,
        refault_pages: i64,
    ) -> (Decision, Evaluation) {
        let mut d = Decision::new(&config());
        let mut s = snapshot();
        s.vm.pgscan_kswapd = 1;
        d.evaluate(Level::Medium, true, 0, &s);
        s.vm.pgscan_kswapd = 2;
        s.vm.workingset_refault_file = refault_pages;
        s.mem.mem_free = free_kb_at(wmark);
        s.mem.swap_free = swap_free_kb;
        let e = d.evaluate(level, event, 500, &s);
        (d, e)
    }

    const SWAP_LOW_KB: i64 = 50_000; // < 20% of 400 MB
    const SWAP_OK_KB: i64 = 400_000;
    /// 150% of the 20_000-page file LRU refaulted: above the limit (100)
    /// but below the critical limit (300).
    const THRASHING: i64 = 30_000;
    const CRITICAL_THRASHING: i64 = 80_000;

    fn plan(e: &Evaluation) -> (KillReason, i32) {
        let p = e.kill.as_ref().expect("a kill");
        (p.reason, p.min_adj)
    }

    #[test]
    fn quiet_system_does_not_kill() {
        let mut d = Decision::new(&config());
        let s = snapshot();
        let e = d.evaluate(Level::Medium, true, 0, &s);
        assert_eq!(
            e,
            Evaluation {
                kill: None,
                swap_is_low: false,
                reclaim: Reclaim::None,
                wmark: Wmark::None,
                thrashing: None,
            }
        );
        // Reclaim without thrashing, memory above the high watermark.
        let mut s2 = s;
        s2.vm.pgscan_kswapd = 5;
        let e = d.evaluate(Level::Medium, false, 100, &s2);
        assert_eq!((e.kill, e.reclaim), (None, Reclaim::Kswapd));
        assert_eq!((e.wmark, e.thrashing), (Wmark::None, Some(0)));
    }

    #[test]
    fn low_swap_and_thrashing_spares_perceptible_above_min() {
        let (_, e) = run(Level::Medium, true, Wmark::Low, SWAP_LOW_KB, THRASHING);
        assert!(e.swap_is_low);
        assert_eq!(plan(&e), (KillReason::LowSwapAndThrashing, 201));
        assert_eq!(
            e.kill.unwrap().thrashing,
            149,
            "30_000 * 100 / (20_000 + 1)"
        );
        let (_, e) = run(Level::Medium, true, Wmark::Min, SWAP_LOW_KB, THRASHING);
        assert_eq!(plan(&e), (KillReason::LowSwapAndThrashing, 0));
        let (_, e) = run(
            Level::Medium,
            true,
            Wmark::Low,
            SWAP_LOW_KB,
            CRITICAL_THRASHING,
        );
        assert_eq!(plan(&e), (KillReason::LowSwapAndThrashing, 0));
    }

    #[test]
    fn low_mem_and_swap() {
        let (_, e) = run(Level::Medium, false, Wmark::Low, SWAP_LOW_KB, 0);
        assert_eq!(plan(&e), (KillReason::LowMemAndSwap, 201));
        let (_, e) = run(Level::Medium, false, Wmark::Min, SWAP_LOW_KB, 0);
        assert_eq!(plan(&e), (KillReason::LowMemAndSwap, 0));
        // lmkd's "wmark < WMARK_HIGH" means the low watermark is breached.
        let (_, e) = run(Level::Medium, false, Wmark::High, SWAP_LOW_KB, 0);
        assert!(e.swap_is_low);
        assert_eq!(
            e.kill, None,
            "swap low but free memory above the low watermark"
        );
    }

    #[test]
    fn free_swap_is_capped_by_easily_available_memory() {
        // All swap free, but free + inactive file (1500 + 10_000 pages) is
        // below 20% of swap (20_000 pages): lmkd 14 calls swap low.
        let mut s = snapshot();
        s.mem.mem_free = free_kb_at(Wmark::Low);
        s.mem.inactive_file = 40_000;
        assert_eq!(free_swap_pages(&s.mem, 0), 100_000);
        assert_eq!(free_swap_pages(&s.mem, 1), 1500 + 10_000);
        assert_eq!(free_swap_pages(&s.mem, 2), 2 * (1500 + 10_000));
        let mut d = Decision::new(&config());
        s.vm.pgscan_kswapd = 1;
        let e = d.evaluate(Level::Medium, true, 0, &s);
        assert!(e.swap_is_low);
        assert_eq!(plan(&e), (KillReason::LowMemAndSwap, 201));
        let mut cfg = config();
        cfg.swap_compression_ratio = 0;
        let e = Decision::new(&cfg).evaluate(Level::Medium, true, 0, &s);
        assert_eq!((e.swap_is_low, e.kill), (false, None));
    }

    #[test]
    fn critical_event_is_not_responding_with_min_adj_0() {
        let (_, e) = run(Level::Critical, true, Wmark::None, SWAP_OK_KB, 0);
        assert_eq!(plan(&e), (KillReason::NotResponding, 0));
        let (_, e) = run(Level::Critical, false, Wmark::None, SWAP_OK_KB, 0);
        assert_eq!(e.kill, None, "polling at critical level is not an event");
    }

    #[test]
    fn low_mem_and_thrashing_cuts_the_limit_after_a_kill() {
        let (mut d, e) = run(Level::Medium, false, Wmark::Low, SWAP_OK_KB, THRASHING);
        assert!(!e.swap_is_low);
        let p = e.kill.clone().unwrap();
        assert_eq!((p.reason, p.min_adj), (KillReason::LowMemAndThrashing, 201));
        d.killed(&p);
        assert!(d.killing());
        assert_eq!(d.thrashing_limit, 90);
        // The next wakeup is a cycle after kill: below low -> pressure_after_kill.
        let mut s = snapshot();
        s.mem.mem_free = free_kb_at(Wmark::Min);
        s.vm.pgscan_kswapd = 3;
        s.vm.workingset_refault_file = THRASHING;
        let e = d.evaluate(Level::Medium, false, 600, &s);
        assert_eq!(plan(&e), (KillReason::PressureAfterKill, 0));
        assert!(!d.killing());
    }

    #[test]
    fn thrashing_limit_resets_after_a_window_and_growth_decays() {
        let (mut d, e) = run(Level::Medium, false, Wmark::Low, SWAP_OK_KB, THRASHING);
        d.killed(&e.kill.unwrap());
        let mut s = snapshot();
        s.vm.pgscan_kswapd = 3;
        s.vm.workingset_refault_file = THRASHING;
        d.evaluate(Level::Medium, false, 600, &s); // cycle after kill, quiet
        s.vm.pgscan_kswapd = 4;
        s.vm.workingset_refault_file = THRASHING + 2_000; // 10% of the LRU
        let e = d.evaluate(Level::Medium, false, 3_700, &s); // three windows later
        assert_eq!(
            d.thrashing_limit, 100,
            "limit restored when the window resets"
        );
        assert_eq!(
            d.prev_thrash_growth,
            9 >> 3,
            "9% refaulted, halved per window"
        );
        assert_eq!(e.kill, None);
    }

    #[test]
    fn direct_reclaim_and_thrashing() {
        let mut d = Decision::new(&config());
        let mut s = snapshot();
        s.vm.pgscan_kswapd = 1;
        d.evaluate(Level::Medium, true, 0, &s);
        s.vm.pgscan_direct = 7;
        s.vm.workingset_refault_file = THRASHING;
        let e = d.evaluate(Level::Medium, false, 200, &s);
        assert_eq!(e.reclaim, Reclaim::Direct);
        assert_eq!(plan(&e), (KillReason::DirectReclAndThrashing, 201));
    }

    #[test]
    fn critical_stall_allows_killing_perceptible() {
        let mut cfg = config();
        cfg.stall_limit_critical = 50.0;
        let mut d = Decision::new(&cfg);
        let mut s = snapshot();
        s.vm.pgscan_kswapd = 1;
        d.evaluate(Level::Medium, true, 0, &s);
        s.vm.pgscan_kswapd = 2;
        s.mem.swap_free = SWAP_LOW_KB;
        s.mem.mem_free = free_kb_at(Wmark::Low);
        s.psi_full_avg10 = Some(60.0);
        let e = d.evaluate(Level::Medium, false, 100, &s);
        assert_eq!(plan(&e), (KillReason::LowMemAndSwap, 0));
    }

    #[test]
    fn swap_utilization_reason_when_enabled() {
        let mut cfg = config();
        cfg.swap_util_max = 50;
        cfg.swap_compression_ratio = 0;
        let mut d = Decision::new(&cfg);
        let mut s = snapshot();
        s.vm.pgscan_kswapd = 1;
        d.evaluate(Level::Medium, true, 0, &s);
        s.vm.pgscan_kswapd = 2;
        s.mem.mem_free = free_kb_at(Wmark::Low);
        s.mem.swap_free = 100_000; // 300 MB swapped out vs 200 MB anon resident: 60%
        let e = d.evaluate(Level::Medium, false, 100, &s);
        assert_eq!(plan(&e), (KillReason::LowMemAndSwapUtil, 0));
    }

    #[test]
    fn vmstat_counters_prefer_workingset_refault_file_on_new_kernels() {
        let kv = vec![
            ("nr_inactive_file".to_string(), 5),
            ("workingset_refault_anon".to_string(), 99),
            ("workingset_refault_file".to_string(), 42),
            ("pgscan_direct".to_string(), 3),
        ];
        let v = VmCounters::from_vmstat(&kv);
        assert_eq!(
            (
                v.nr_inactive_file,
                v.workingset_refault_file,
                v.pgscan_direct
            ),
            (5, 42, 3)
        );
    }
}

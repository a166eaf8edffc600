//! `lmkd.csv`: one row per wakeup of lmkd's PSI handler that read the
//! system's state, with what it saw and decided, so that a run's kills,
//! and the kills it did not make, can be told from lmkd's own view
//! rather than reconstructed from 100-ms samples.
//!
//! Columns: `t_ms` (workload time, as events.jsonl), `level` (medium or
//! critical: the trigger whose handler ran), `event` (1 for a PSI event,
//! 0 for a polling wakeup), `reclaim` (direct, kswapd, none: whether
//! pgscan grew since the last wakeup; idle when neither it nor the file
//! refaults did, and the handler returned early), `swap_is_low` (0/1),
//! `wmark` (the lowest zone watermark free memory was under: min, low,
//! high, or none), `free_kb` (MemFree minus CMA free, what lmkd compares
//! with the watermarks), `swap_free_kb`, `thrashing` (the refaulted share
//! of the file LRU, %, as checked against the limit; empty when idle),
//! `reason` (the kill reason chosen, empty for none), `min_adj` (its
//! lowest oom_score_adj to kill), and `killed_kb` (the victim's RSS; 0
//! when no process at or above `min_adj` could be killed, or when SWAM's
//! OOM cleaner relieved swap instead, cleaner.rs; empty without a
//! reason). Wakeups while a victim is still exiting read nothing and have
//! no row.
//!
//! lmkd runs SCHED_FIFO, and a write to the run directory goes to the
//! host: the rows are kept in memory, reserved up front (the `run` process
//! is mlockall'd, so that memory is locked before the workload starts),
//! and written out once lmkd stops (`finish`). The header is written at
//! once, so that a run cut short still has a well-formed file.

use super::decision::{Evaluation, Level, Reclaim, Snapshot, Wmark, PAGE_KB};
use anyhow::{Context, Result};
use serde::Serialize;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

const HEADER: &str =
    "t_ms,level,event,reclaim,swap_is_low,wmark,free_kb,swap_free_kb,thrashing,reason,min_adj,killed_kb";
/// Room for about 25,000 rows before the buffer grows; a `paper` run has
/// 2,000-4,000.
const RESERVE_BYTES: usize = 2 << 20;

pub struct WakeupLog {
    path: PathBuf,
    rows: String,
}

impl WakeupLog {
    pub fn create(path: &Path) -> Result<WakeupLog> {
        let mut file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        writeln!(file, "{HEADER}").context("cannot write lmkd.csv")?;
        Ok(WakeupLog {
            path: path.to_path_buf(),
            rows: String::with_capacity(RESERVE_BYTES),
        })
    }

    /// Record one wakeup; `killed_kb` is the victim's RSS when the
    /// evaluation chose a reason (0: no process could be killed).
    pub fn record(
        &mut self,
        t_ms: u64,
        level: Level,
        event: bool,
        evaluation: &Evaluation,
        snapshot: &Snapshot,
        killed_kb: Option<i64>,
    ) {
        self.rows
            .push_str(&row(t_ms, level, event, evaluation, snapshot, killed_kb));
        self.rows.push('\n');
    }

    /// Append the rows recorded so far to the file.
    pub fn finish(&mut self) -> Result<()> {
        OpenOptions::new()
            .append(true)
            .open(&self.path)
            .and_then(|mut file| file.write_all(self.rows.as_bytes()))
            .with_context(|| format!("cannot write {}", self.path.display()))?;
        self.rows.clear();
        Ok(())
    }
}

/// A serde name (snake_case) as a CSV field.
fn name<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn row(
    t_ms: u64,
    level: Level,
    event: bool,
    e: &Evaluation,
    s: &Snapshot,
    killed_kb: Option<i64>,
) -> String {
    let reclaim = match (e.thrashing, e.reclaim) {
        (None, _) => "idle",
        (Some(_), Reclaim::Direct) => "direct",
        (Some(_), Reclaim::Kswapd) => "kswapd",
        (Some(_), Reclaim::None) => "none",
    };
    let wmark = match e.wmark {
        Wmark::Min => "min",
        Wmark::Low => "low",
        Wmark::High => "high",
        Wmark::None => "none",
    };
    let opt = |v: Option<i64>| v.map(|v| v.to_string()).unwrap_or_default();
    let (reason, min_adj) = match &e.kill {
        Some(plan) => (name(&plan.reason), plan.min_adj.to_string()),
        None => (String::new(), String::new()),
    };
    format!(
        "{t_ms},{},{},{reclaim},{},{wmark},{},{},{},{reason},{min_adj},{}",
        name(&level),
        u8::from(event),
        u8::from(e.swap_is_low),
        s.free_pages() * PAGE_KB,
        s.mem.swap_free,
        opt(e.thrashing),
        opt(e.kill.as_ref().map(|_| killed_kb.unwrap_or(0))),
    )
}

#[cfg(test)]
mod tests {
    use super::super::decision::{KillPlan, KillReason};
    use super::*;
    use crate::lmkd::decision::VmCounters;
    use crate::sys::proc_files::{MemInfo, Watermarks};

    fn snapshot() -> Snapshot {
        Snapshot {
            mem: MemInfo {
                mem_free: 24_000,
                cma_free: 0,
                swap_free: 1_024,
                ..MemInfo::default()
            },
            vm: VmCounters::default(),
            watermarks: Watermarks {
                min: 1000,
                low: 6000,
                high: 8000,
            },
            psi_full_avg10: None,
        }
    }

    fn evaluation(kill: Option<KillPlan>, thrashing: Option<i64>) -> Evaluation {
        Evaluation {
            kill,
            swap_is_low: true,
            reclaim: Reclaim::Kswapd,
            wmark: Wmark::Low,
            thrashing,
        }
    }

    #[test]
    fn rows_say_what_the_wakeup_saw_and_decided() {
        let s = snapshot();
        let plan = KillPlan::new(KillReason::LowMemAndSwap, 201, 12);
        let killed = row(
            1500,
            Level::Medium,
            true,
            &evaluation(Some(plan.clone()), Some(12)),
            &s,
            Some(40_000),
        );
        assert_eq!(
            killed,
            "1500,medium,1,kswapd,1,low,24000,1024,12,low_mem_and_swap,201,40000"
        );
        let no_victim = row(
            1510,
            Level::Medium,
            false,
            &evaluation(Some(plan), Some(12)),
            &s,
            None,
        );
        assert!(
            no_victim.ends_with(",low_mem_and_swap,201,0"),
            "{no_victim}"
        );
        let idle = row(
            1520,
            Level::Critical,
            false,
            &evaluation(None, None),
            &s,
            None,
        );
        assert_eq!(idle, "1520,critical,0,idle,1,low,24000,1024,,,,");
        assert_eq!(idle.split(',').count(), HEADER.split(',').count());
    }

    #[test]
    fn the_file_has_its_header_at_once_and_every_row_once_finished() {
        let dir = std::env::temp_dir().join(format!("pmr-lmkd-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("lmkd.csv");
        let quiet = evaluation(None, Some(0));
        let mut log = WakeupLog::create(&path).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{HEADER}\n")
        );
        for t in 0..3 {
            log.record(t, Level::Medium, false, &quiet, &snapshot(), None);
        }
        log.finish().unwrap();
        log.record(3, Level::Medium, false, &quiet, &snapshot(), None);
        log.finish().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 5);
        assert!(lines[4].starts_with("3,medium,"), "{}", lines[4]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

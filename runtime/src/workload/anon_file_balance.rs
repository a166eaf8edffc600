//! Skew rectification's swappiness feedback loop (`scheme.skew.balance`):
//! every period, the refaults of the period as a share of the LRU pages
//! of their kind (/proc/vmstat) move swappiness by `step` within [min,
//! max]. Anonymous refaults above `thrash_anon_pct` mean anonymous memory
//! thrashes: swappiness goes down. Otherwise, file refaults at or above
//! `file_refault_pct` mean the page cache is reclaimed too hard:
//! swappiness goes up. Thrashing wins when both hold.
//!
//! The loop starts from the swappiness in force, clamped into [min, max],
//! and writes /proc/sys/vm/swappiness when it changes. Every period adds
//! a row to skew_balance.csv: the time (ms since the workload start, the
//! clock of events.jsonl), the swappiness after the period's decision and
//! the two refault shares (%).

use crate::control::{spawn_thread, Control};
use crate::spec::{ms, AnonFileBalance};
use crate::sys::proc_files;
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

pub const FILE: &str = "skew_balance.csv";
const SWAPPINESS: &str = "/proc/sys/vm/swappiness";

/// The /proc/vmstat figures the loop works from.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Refaults {
    pub anon: u64,
    pub file: u64,
    /// nr_active_anon + nr_inactive_anon, pages.
    pub anon_lru: u64,
    /// nr_active_file + nr_inactive_file, pages.
    pub file_lru: u64,
}

impl Refaults {
    /// The figures of /proc/vmstat's text.
    pub fn parse(vmstat: &str) -> Result<Refaults> {
        let values = proc_files::parse_key_values(vmstat)?;
        let get = |key: &str| -> Result<u64> {
            values
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| (*v).max(0) as u64)
                .with_context(|| {
                    format!("/proc/vmstat has no {key}: skew's balance needs Linux >= 5.9")
                })
        };
        Ok(Refaults {
            anon: get("workingset_refault_anon")?,
            file: get("workingset_refault_file")?,
            anon_lru: get("nr_active_anon")? + get("nr_inactive_anon")?,
            file_lru: get("nr_active_file")? + get("nr_inactive_file")?,
        })
    }

    pub fn read() -> Result<Refaults> {
        Self::parse(&std::fs::read_to_string("/proc/vmstat").context("cannot read /proc/vmstat")?)
    }

    /// The refaults since `before`, % of the LRU pages of their kind now:
    /// (anonymous, file); 0 for an empty LRU.
    pub fn pcts_since(&self, before: &Refaults) -> (f64, f64) {
        let pct = |delta: u64, lru: u64| {
            if lru == 0 {
                0.0
            } else {
                100.0 * delta as f64 / lru as f64
            }
        };
        (
            pct(self.anon.saturating_sub(before.anon), self.anon_lru),
            pct(self.file.saturating_sub(before.file), self.file_lru),
        )
    }
}

/// The swappiness after a period with refault shares `anon_pct` and
/// `file_pct` (%), from `swappiness`.
pub fn next_swappiness(swappiness: u32, anon_pct: f64, file_pct: f64, b: &AnonFileBalance) -> u32 {
    if anon_pct > b.thrash_anon_pct {
        swappiness.saturating_sub(b.step).max(b.min)
    } else if file_pct >= b.file_refault_pct {
        (swappiness + b.step).min(b.max)
    } else {
        swappiness
    }
}

/// A skew_balance.csv row.
fn row(t_ms: u64, swappiness: u32, anon_pct: f64, file_pct: f64) -> String {
    let round = |pct: f64| (pct * 1e6).round() / 1e6;
    format!(
        "{t_ms},{swappiness},{},{}",
        round(anon_pct),
        round(file_pct)
    )
}

struct Balance {
    config: AnonFileBalance,
    out: BufWriter<File>,
    swappiness: u32,
    last: Refaults,
}

/// Clamp swappiness into [min, max], then start the loop writing
/// `out_dir/skew_balance.csv`, timed from `start`.
pub fn spawn(
    config: &AnonFileBalance,
    out_dir: &Path,
    start: Instant,
    control: Arc<Control>,
) -> Result<JoinHandle<()>> {
    let path = out_dir.join(FILE);
    let mut out = BufWriter::new(
        File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    writeln!(out, "t_ms,swappiness,anon_refault_pct,file_refault_pct")?;
    let text =
        std::fs::read_to_string(SWAPPINESS).with_context(|| format!("cannot read {SWAPPINESS}"))?;
    let now: u32 = text
        .trim()
        .parse()
        .with_context(|| format!("bad {SWAPPINESS}: {text:?}"))?;
    let swappiness = now.clamp(config.min, config.max);
    if swappiness != now {
        write_swappiness(swappiness)?;
    }
    let mut balance = Balance {
        config: config.clone(),
        out,
        swappiness,
        last: Refaults::read()?,
    };
    Ok(spawn_thread(&control.clone(), "skew-balance", move || {
        if let Err(e) = balance.run(start, &control) {
            control.fail(format!("skew balance: {e:#}"));
        }
    })?)
}

fn write_swappiness(value: u32) -> Result<()> {
    std::fs::write(SWAPPINESS, value.to_string())
        .with_context(|| format!("cannot write {value} to {SWAPPINESS}"))
}

impl Balance {
    fn run(&mut self, start: Instant, control: &Control) -> Result<()> {
        let period = ms(self.config.period_ms);
        control.every(Instant::now() + period, period, || {
            self.period(start.elapsed().as_millis() as u64)
        })?;
        self.out
            .flush()
            .with_context(|| format!("cannot write {FILE}"))
    }

    fn period(&mut self, t_ms: u64) -> Result<()> {
        let now = Refaults::read()?;
        let (anon_pct, file_pct) = now.pcts_since(&self.last);
        self.last = now;
        let next = next_swappiness(self.swappiness, anon_pct, file_pct, &self.config);
        if next != self.swappiness {
            write_swappiness(next)?;
            self.swappiness = next;
        }
        writeln!(self.out, "{}", row(t_ms, next, anon_pct, file_pct))
            .and_then(|()| self.out.flush())
            .with_context(|| format!("cannot write {FILE}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> AnonFileBalance {
        AnonFileBalance {
            period_ms: 1000.0,
            step: 10,
            min: 100,
            max: 200,
            thrash_anon_pct: 0.5,
            file_refault_pct: 0.1,
        }
    }

    #[test]
    fn file_refaults_raise_swappiness() {
        assert_eq!(next_swappiness(150, 0.0, 0.1, &config()), 160);
        assert_eq!(
            next_swappiness(150, 0.5, 3.0, &config()),
            160,
            "0.5 is no thrashing"
        );
    }

    #[test]
    fn anonymous_thrashing_lowers_swappiness() {
        assert_eq!(next_swappiness(150, 0.51, 0.0, &config()), 140);
    }

    #[test]
    fn thrashing_wins_over_file_refaults() {
        assert_eq!(next_swappiness(150, 2.0, 5.0, &config()), 140);
    }

    #[test]
    fn quiet_periods_hold_swappiness() {
        assert_eq!(next_swappiness(150, 0.5, 0.099, &config()), 150);
        assert_eq!(next_swappiness(150, 0.0, 0.0, &config()), 150);
    }

    #[test]
    fn swappiness_stays_within_bounds() {
        let c = config();
        assert_eq!(next_swappiness(195, 0.0, 1.0, &c), 200);
        assert_eq!(next_swappiness(200, 0.0, 1.0, &c), 200);
        assert_eq!(next_swappiness(105, 1.0, 0.0, &c), 100);
        assert_eq!(next_swappiness(100, 1.0, 0.0, &c), 100);
        let low = AnonFileBalance {
            min: 0,
            max: 5,
            ..c
        };
        assert_eq!(next_swappiness(3, 1.0, 0.0, &low), 0);
        assert_eq!(next_swappiness(3, 0.0, 1.0, &low), 5);
    }

    const VMSTAT: &str = "nr_free_pages 1000\nnr_inactive_anon 300\nnr_active_anon 700\n\
                          nr_inactive_file 1500\nnr_active_file 500\n\
                          workingset_refault_anon 40\nworkingset_refault_file 90\n";

    #[test]
    fn refault_shares_of_the_lru() {
        let before = Refaults::parse(VMSTAT).unwrap();
        assert_eq!(
            before,
            Refaults {
                anon: 40,
                file: 90,
                anon_lru: 1000,
                file_lru: 2000
            }
        );
        let now = Refaults {
            anon: 45,
            file: 92,
            ..before
        };
        assert_eq!(now.pcts_since(&before), (0.5, 0.1));
        let empty = Refaults::default();
        assert_eq!(now.pcts_since(&now), (0.0, 0.0));
        assert_eq!(
            empty.pcts_since(&before),
            (0.0, 0.0),
            "empty LRUs, counters reset"
        );
    }

    #[test]
    fn a_kernel_without_anon_refaults_is_named() {
        let old = VMSTAT.replace("workingset_refault_anon 40\n", "");
        let err = Refaults::parse(&old).unwrap_err().to_string();
        assert!(err.contains("no workingset_refault_anon"), "{err}");
    }

    #[test]
    fn rows() {
        assert_eq!(row(1000, 160, 0.0, 0.1234567), "1000,160,0,0.123457");
        assert_eq!(row(2000, 100, 2.5, 0.0), "2000,100,2.5,0");
    }
}

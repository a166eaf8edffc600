//! How full the swap got during the load phase of `pmr-guest reliability`:
//! a thread samples SwapFree in /proc/meminfo every SAMPLE_EVERY and keeps
//! the lowest value, when the swap was first seen full and how many samples
//! found it full. "Full" is SwapFree at most FULL_PERCENT of SwapTotal: the
//! slots the per-CPU swap slot caches hold and those freed by pages being
//! swapped back in keep it from reaching exactly 0 while reclaim and the OOM
//! killer already act as if the swap were full.
//!
//! With `swap_full` in the spec, the `swap_full` check (`verdict`) passes
//! only if that happened, and the load phase counts its sweeps from the
//! moment it first did.
//!
//! Each sample also reads /proc/swaps and keeps every area's peak use: with
//! a zram tier above the swap disk (a zram+flash profile), the `swap_tiers`
//! check (`tiers_verdict`) passes only if both tiers held pages, so that the
//! data checks covered pages that went to each.

use crate::control::{spawn_thread, Control};
use crate::sys::proc_files::{parse_meminfo, parse_swaps, SwapArea};
use anyhow::Context;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);
pub const FULL_PERCENT: f64 = 1.0;
/// The share of its size each tier must have held at its peak for
/// `swap_tiers` to pass. The zram tier, first by priority, fills up; the
/// disk takes the rest of the workload beyond RAM, over half of its size.
pub const TIER_MIN_PERCENT: f64 = 10.0;

/// A swap area's size and the most of it seen in use (kB).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AreaPeak {
    pub name: String,
    pub size_kb: i64,
    pub peak_used_kb: i64,
}

/// What the samples showed so far (sizes in kB).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SwapLevel {
    pub total_kb: i64,
    pub min_free_kb: Option<i64>,
    /// Seconds into the run of the first sample that found the swap full.
    pub first_full_s: Option<f64>,
    pub full_samples: u64,
    pub samples: u64,
    /// Each swap area of /proc/swaps, in the order it first appeared.
    pub areas: Vec<AreaPeak>,
}

impl SwapLevel {
    pub fn new(total_kb: i64) -> SwapLevel {
        SwapLevel {
            total_kb,
            ..SwapLevel::default()
        }
    }

    /// The most SwapFree that still counts as full.
    pub fn full_threshold_kb(&self) -> i64 {
        (self.total_kb as f64 * FULL_PERCENT / 100.0) as i64
    }

    pub fn note(&mut self, free_kb: i64, t_s: f64) {
        self.samples += 1;
        self.min_free_kb = Some(self.min_free_kb.map_or(free_kb, |m| m.min(free_kb)));
        if self.total_kb > 0 && free_kb <= self.full_threshold_kb() {
            self.full_samples += 1;
            self.first_full_s.get_or_insert(t_s);
        }
    }

    /// One reading of /proc/swaps.
    pub fn note_areas(&mut self, areas: &[SwapArea]) {
        for a in areas {
            match self.areas.iter_mut().find(|p| p.name == a.name) {
                Some(p) => {
                    p.size_kb = a.size_kb;
                    p.peak_used_kb = p.peak_used_kb.max(a.used_kb);
                }
                None => self.areas.push(AreaPeak {
                    name: a.name.clone(),
                    size_kb: a.size_kb,
                    peak_used_kb: a.used_kb,
                }),
            }
        }
    }

    pub fn ran_full(&self) -> bool {
        self.first_full_s.is_some()
    }
}

/// The `swap_full` check's verdict and detail line.
pub fn verdict(level: &SwapLevel, oom_kills: i64) -> (bool, String) {
    let mib = |kb: i64| kb as f64 / 1024.0;
    let every = SAMPLE_EVERY.as_millis();
    match (level.first_full_s, level.min_free_kb) {
        (_, None) => (
            false,
            "SwapFree was never sampled during the load phase".to_string(),
        ),
        (Some(t), Some(min)) => (
            true,
            format!(
                "SwapFree fell to {:.1} MiB of {:.0} MiB (full: <= {FULL_PERCENT}% = {:.1} MiB), first at {t:.0} s, \
                 full in {} of {} samples (every {every} ms); {oom_kills} OOM kills",
                mib(min),
                mib(level.total_kb),
                mib(level.full_threshold_kb()),
                level.full_samples,
                level.samples
            ),
        ),
        (None, Some(min)) => (
            false,
            format!(
                "the swap never ran full: SwapFree stayed at or above {:.1} MiB of {:.0} MiB ({:.1}%, needs <= {FULL_PERCENT}%) \
                 in {} samples (every {every} ms); {oom_kills} OOM kills",
                mib(min),
                mib(level.total_kb),
                100.0 * min as f64 / level.total_kb.max(1) as f64,
                level.samples
            ),
        ),
    }
}

/// The `swap_tiers` check's verdict and detail line: at least two swap
/// areas were seen, and each held TIER_MIN_PERCENT of its size at its peak.
pub fn tiers_verdict(level: &SwapLevel) -> (bool, String) {
    let mib = |kb: i64| kb as f64 / 1024.0;
    if level.areas.len() < 2 {
        return (
            false,
            format!(
                "{} swap area(s) in /proc/swaps during the load phase, not a zram tier and a disk",
                level.areas.len()
            ),
        );
    }
    let low: Vec<&AreaPeak> = level
        .areas
        .iter()
        .filter(|a| (a.peak_used_kb as f64) < a.size_kb as f64 * TIER_MIN_PERCENT / 100.0)
        .collect();
    let each = level
        .areas
        .iter()
        .map(|a| {
            format!(
                "{} {:.0} of {:.0} MiB",
                a.name,
                mib(a.peak_used_kb),
                mib(a.size_kb)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    match low.first() {
        None => (true, format!("every tier held pages at its peak: {each}")),
        Some(a) => (
            false,
            format!(
                "{} held less than {TIER_MIN_PERCENT}% of its size at its peak: {each}",
                a.name
            ),
        ),
    }
}

/// The sampling thread.
pub struct SwapWatch {
    handle: JoinHandle<()>,
    level: Arc<Mutex<SwapLevel>>,
    stop: Arc<Control>,
}

impl SwapWatch {
    pub fn spawn(
        total_kb: i64,
        control: &Arc<Control>,
        start: Instant,
    ) -> std::io::Result<SwapWatch> {
        let level = Arc::new(Mutex::new(SwapLevel::new(total_kb)));
        let stop = Arc::new(Control::default());
        let (lvl, stopped, failed) = (Arc::clone(&level), Arc::clone(&stop), Arc::clone(control));
        let handle = spawn_thread(control, "swap-watch", move || {
            while !stopped.stopped() {
                let read = |path: &str| {
                    std::fs::read_to_string(path)
                        .map_err(anyhow::Error::from)
                        .with_context(|| format!("cannot read {path}"))
                };
                let sample = read("/proc/meminfo")
                    .and_then(|text| parse_meminfo(&text))
                    .and_then(|m| Ok((m, parse_swaps(&read("/proc/swaps")?)?)));
                match sample {
                    Ok((m, areas)) => {
                        let mut level = lvl.lock().expect("swap level");
                        level.note(m.swap_free, start.elapsed().as_secs_f64());
                        level.note_areas(&areas);
                    }
                    Err(e) => {
                        failed.fail(format!("swap-watch: {e:#}"));
                        return;
                    }
                }
                std::thread::sleep(SAMPLE_EVERY);
            }
        })?;
        Ok(SwapWatch {
            handle,
            level,
            stop,
        })
    }

    /// What the samples showed so far.
    pub fn level(&self) -> SwapLevel {
        self.level.lock().expect("swap level").clone()
    }

    /// End the thread and return what it saw.
    pub fn finish(self) -> SwapLevel {
        self.stop.stop();
        let _ = self.handle.join();
        let level = self.level.lock().expect("swap level").clone();
        level
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_means_at_most_one_percent_free() {
        let mut level = SwapLevel::new(1_000_000);
        assert_eq!(level.full_threshold_kb(), 10_000);
        level.note(600_000, 1.0);
        level.note(10_001, 2.0);
        assert!(!level.ran_full());
        assert_eq!(level.min_free_kb, Some(10_001));
        level.note(10_000, 3.0);
        level.note(0, 4.0);
        level.note(500_000, 5.0);
        assert_eq!(
            (level.first_full_s, level.full_samples, level.samples),
            (Some(3.0), 2, 5)
        );
        assert_eq!(level.min_free_kb, Some(0));
        let mut no_swap = SwapLevel::new(0);
        no_swap.note(0, 1.0);
        assert!(!no_swap.ran_full(), "no swap is not a full swap");
    }

    #[test]
    fn the_check_fails_unless_the_swap_ran_full() {
        let mut level = SwapLevel::new(1_398_100);
        let (ok, detail) = verdict(&level, 0);
        assert!(!ok && detail.contains("never sampled"), "{detail}");
        level.note(409_600, 10.0);
        let (ok, detail) = verdict(&level, 0);
        assert!(!ok, "{detail}");
        assert!(
            detail.contains("never ran full") && detail.contains("400.0 MiB"),
            "{detail}"
        );
        level.note(2_048, 70.0);
        let (ok, detail) = verdict(&level, 3);
        assert!(ok, "{detail}");
        assert!(
            detail.contains("fell to 2.0 MiB") && detail.contains("first at 70 s"),
            "{detail}"
        );
        assert!(detail.contains("3 OOM kills"), "{detail}");
    }

    fn area(name: &str, size_kb: i64, used_kb: i64) -> SwapArea {
        SwapArea {
            name: name.into(),
            size_kb,
            used_kb,
        }
    }

    #[test]
    fn each_area_keeps_its_peak() {
        let mut level = SwapLevel::new(0);
        level.note_areas(&[area("/dev/vdb", 1000, 0)]);
        level.note_areas(&[area("/dev/vdb", 1000, 300), area("/dev/zram0", 100, 100)]);
        level.note_areas(&[area("/dev/vdb", 1000, 200), area("/dev/zram0", 100, 40)]);
        assert_eq!(
            level.areas,
            vec![
                AreaPeak {
                    name: "/dev/vdb".into(),
                    size_kb: 1000,
                    peak_used_kb: 300
                },
                AreaPeak {
                    name: "/dev/zram0".into(),
                    size_kb: 100,
                    peak_used_kb: 100
                },
            ]
        );
    }

    #[test]
    fn tiers_pass_only_if_both_held_pages() {
        let mut level = SwapLevel::new(0);
        let (ok, detail) = tiers_verdict(&level);
        assert!(!ok && detail.contains("0 swap area(s)"), "{detail}");
        level.note_areas(&[area("/dev/vdb", 3_584_000, 2_048_000)]);
        let (ok, detail) = tiers_verdict(&level);
        assert!(!ok && detail.contains("1 swap area(s)"), "{detail}");
        // zram set up but never used (a wrong priority would do this)
        level.note_areas(&[area("/dev/zram0", 174_080, 17_000)]);
        let (ok, detail) = tiers_verdict(&level);
        assert!(!ok, "{detail}");
        assert!(
            detail.starts_with("/dev/zram0 held less than 10%"),
            "{detail}"
        );
        level.note_areas(&[area("/dev/zram0", 174_080, 174_076)]);
        let (ok, detail) = tiers_verdict(&level);
        assert!(ok, "{detail}");
        assert!(
            detail.contains("/dev/vdb 2000 of 3500 MiB, /dev/zram0 170 of 170 MiB"),
            "{detail}"
        );
    }

    #[test]
    fn the_thread_samples_until_finished() {
        let control = Arc::new(Control::default());
        let watch = SwapWatch::spawn(1 << 20, &control, Instant::now()).unwrap();
        std::thread::sleep(SAMPLE_EVERY * 3);
        let level = watch.finish();
        assert!(
            level.samples >= 1 && level.min_free_kb.is_some(),
            "{level:?}"
        );
        assert_eq!(control.failure(), None);
    }
}

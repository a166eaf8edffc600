//! The time-dilation microbenchmark and the fixed CPU work loop.
//!
//! The host runs `pmr-guest bench` natively and inside the guest; the ratio
//! of the results tells how much slower the emulated phone is, so that the
//! harness can scale times. `cpu_work` is also what apps run for their
//! `init_work_ms`: `init_work_ms * work_iters_per_ms` iterations, where
//! `work_iters_per_ms` is this benchmark's result scaled by the harness.

use crate::pattern::{self, PAGE_SIZE};
use crate::workload::memory::AnonRegion;
use anyhow::{ensure, Result};
use serde::Serialize;
use std::hint::black_box;
use std::time::Instant;

/// Iterations of `cpu_work` timed in one benchmark round.
const WORK_ITERS_PER_ROUND: u64 = 20_000_000;

#[derive(Debug, Serialize)]
pub struct BenchResult {
    pub ns_per_page: f64,
    pub work_iters_per_ms: f64,
    /// The first round's time per page: each write faults a fresh zeroed
    /// page in. Not part of the dilation factor; the harness reports how
    /// much more a page fault slows down than a touch.
    pub fault_ns_per_page: f64,
}

impl BenchResult {
    /// The single JSON line `bench` prints.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).expect("two floats serialize")
    }
}

/// The fixed CPU work loop: a xorshift chain that cannot be vectorised or
/// folded away. Returns the final state so the work is observable.
// Never inlined: the benchmark, a cold launch's init work and a warm
// start's resume work must run the same machine code, or the calibration
// does not hold for them (inlined into the hot launch, the loop ran 5-7x
// slower under TCG than the calibrated one).
#[inline(never)]
pub fn cpu_work(iters: u64) -> u64 {
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    for i in 0..iters {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(i);
    }
    black_box(x)
}

pub fn run(pages: usize, rounds: usize) -> Result<BenchResult> {
    ensure!(pages > 0 && rounds > 0, "--pages and --rounds must be > 0");
    let region = AnonRegion::new(pages * PAGE_SIZE)?;
    let words = region.words();
    let salt = pattern::salt("bench", 0);
    let t = Instant::now();
    touch_round(words, salt, pages)?; // fault every page in first
    let fault_ns_per_page = t.elapsed().as_nanos() as f64 / pages as f64;

    let mut ns_per_page = Vec::with_capacity(rounds);
    let mut iters_per_ms = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let t = Instant::now();
        touch_round(words, salt, pages)?;
        ns_per_page.push(t.elapsed().as_nanos() as f64 / pages as f64);

        let t = Instant::now();
        cpu_work(WORK_ITERS_PER_ROUND + round as u64);
        iters_per_ms.push(WORK_ITERS_PER_ROUND as f64 / (t.elapsed().as_secs_f64() * 1e3));
    }
    Ok(BenchResult {
        ns_per_page: median(&mut ns_per_page),
        work_iters_per_ms: median(&mut iters_per_ms),
        fault_ns_per_page,
    })
}

/// Write one word into each page, then read every word back.
fn touch_round(words: &[std::sync::atomic::AtomicU64], salt: u64, pages: usize) -> Result<()> {
    use std::sync::atomic::Ordering::Relaxed;
    for page in 0..pages {
        words[page * pattern::WORDS_PER_PAGE].store(pattern::word(salt, page, 0), Relaxed);
    }
    for page in 0..pages {
        let found = words[page * pattern::WORDS_PER_PAGE].load(Relaxed);
        ensure!(
            pattern::verify(salt, page, found),
            "bench buffer corrupted at page {page}"
        );
    }
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn cpu_work_depends_on_iterations() {
        assert_ne!(cpu_work(1000), cpu_work(1001));
        assert_eq!(cpu_work(1000), cpu_work(1000));
    }

    #[test]
    fn bench_prints_one_json_line_with_its_three_fields() {
        let result = run(64, 3).unwrap();
        let line = result.to_line();
        assert!(!line.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let obj = v.as_object().unwrap();
        assert_eq!(obj.len(), 3);
        assert!(obj["ns_per_page"].as_f64().unwrap() > 0.0);
        assert!(obj["work_iters_per_ms"].as_f64().unwrap() > 0.0);
        assert!(obj["fault_ns_per_page"].as_f64().unwrap() > 0.0);
    }
}

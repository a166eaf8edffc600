//! `threads_cpu.json`: CPU seconds (utime + stime) used during the workload
//! by kernel threads whose name starts with one of `reclaim_threads`.
//! /proc/<pid>/stat is read at the start and at the end; a thread that
//! appears later counts from zero, one that is gone at the end is lost.
//! Threads with the same name are summed.
//!
//! `threads_cpu.csv` (written by the sampler, metrics.rs) holds the same
//! sums over time: one column per thread name found at the start, the CPU
//! seconds each used since the start, at every sample. Only the threads
//! found at the start are followed there. `threads_wait.csv` has the same
//! columns and rows for the seconds the threads waited on a runqueue
//! (runnable, but no CPU free for them: /proc/<pid>/schedstat), so that a
//! thread held to under a CPU by others shows as such.

use crate::sys::proc_files::{parse_proc_stat, parse_schedstat_run_delay};
use std::collections::{BTreeMap, HashMap};

/// pid -> (name, CPU ticks) of the matching kernel threads.
pub type ThreadTicks = HashMap<i32, (String, u64)>;

pub fn read(prefixes: &[String]) -> ThreadTicks {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return ThreadTicks::new();
    };
    dir.filter_map(|entry| {
        let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
        let stat =
            parse_proc_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?).ok()?;
        let wanted =
            stat.is_kernel_thread && prefixes.iter().any(|p| stat.comm.starts_with(p.as_str()));
        wanted.then_some((pid, (stat.comm, stat.cpu_ticks)))
    })
    .collect()
}

/// The threads of `start` again, now; those gone or renamed are left out.
pub fn reread(start: &ThreadTicks) -> ThreadTicks {
    start
        .iter()
        .filter_map(|(pid, (name, _))| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let stat = parse_proc_stat(&text).ok()?;
            (stat.comm == *name).then_some((*pid, (stat.comm, stat.cpu_ticks)))
        })
        .collect()
}

/// The ns each thread of `threads` (read() or reread(), which check the
/// names) has waited on a runqueue so far, in place of its CPU ticks
/// (csv_row with RUN_DELAY_PER_SECOND "ticks" gives seconds); a thread gone
/// since, or without schedstat, is left out.
pub fn run_delays(threads: &ThreadTicks) -> ThreadTicks {
    threads
        .iter()
        .filter_map(|(pid, (name, _))| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
            let delay = parse_schedstat_run_delay(&text).ok()?;
            Some((*pid, (name.clone(), delay)))
        })
        .collect()
}

/// run_delays' units: ns.
pub const RUN_DELAY_PER_SECOND: u64 = 1_000_000_000;

/// The thread names of `threads`, sorted, each once: threads_cpu.csv's columns.
pub fn names(threads: &ThreadTicks) -> Vec<String> {
    let names: std::collections::BTreeSet<&String> = threads.values().map(|(n, _)| n).collect();
    names.into_iter().cloned().collect()
}

/// A threads_cpu.csv row: CPU seconds since `start` for each of `names`
/// (empty where no thread of that name is left).
pub fn csv_row(
    t_ms: u64,
    names: &[String],
    start: &ThreadTicks,
    now: &ThreadTicks,
    ticks_per_second: u64,
) -> String {
    let cpu = cpu_seconds(start, now, ticks_per_second);
    let mut row = t_ms.to_string();
    for name in names {
        row.push(',');
        if let Some(s) = cpu.get(name) {
            row.push_str(&format!("{s:.2}"));
        }
    }
    row
}

pub fn cpu_seconds(
    start: &ThreadTicks,
    end: &ThreadTicks,
    ticks_per_second: u64,
) -> BTreeMap<String, f64> {
    let mut ticks: BTreeMap<String, u64> = BTreeMap::new();
    for (pid, (name, end_ticks)) in end {
        let start_ticks = start
            .get(pid)
            .filter(|(n, _)| n == name)
            .map_or(0, |(_, t)| *t);
        *ticks.entry(name.clone()).or_default() += end_ticks.saturating_sub(start_ticks);
    }
    ticks
        .into_iter()
        .map(|(name, t)| (name, t as f64 / ticks_per_second as f64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(threads: &[(i32, &str, u64)]) -> ThreadTicks {
        threads
            .iter()
            .map(|&(pid, name, t)| (pid, (name.to_string(), t)))
            .collect()
    }

    #[test]
    fn differences_new_threads_and_duplicates() {
        let start = ticks(&[(40, "kswapd0", 100), (41, "kshrinkd0", 7)]);
        let end = ticks(&[
            (40, "kswapd0", 1330),
            (41, "kshrinkd0", 457),
            (90, "pmr_unmap", 25), // appeared during the run
            (91, "pmr_unmap", 5),
        ]);
        let cpu = cpu_seconds(&start, &end, 100);
        assert_eq!(cpu.len(), 3);
        assert_eq!(cpu["kswapd0"], 12.3);
        assert_eq!(cpu["kshrinkd0"], 4.5);
        assert_eq!(cpu["pmr_unmap"], 0.3);
    }

    #[test]
    fn csv_columns_and_rows() {
        let start = ticks(&[(41, "kshrinkd0", 7), (40, "kswapd0", 100)]);
        let names = names(&start);
        assert_eq!(names, ["kshrinkd0", "kswapd0"]);
        let now = ticks(&[(40, "kswapd0", 350)]);
        // kshrinkd0 gone: its cell stays empty
        assert_eq!(csv_row(500, &names, &start, &now, 100), "500,,2.50");
        assert_eq!(csv_row(0, &names, &start, &start, 100), "0,0.00,0.00");
    }

    #[test]
    fn run_delays_read_the_threads_still_named_as_at_the_start() {
        // the test host's kernel has CONFIG_SCHED_INFO, as Debian's does
        let pid = std::process::id() as i32;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let comm = parse_proc_stat(&stat).unwrap().comm;
        let delays = run_delays(&reread(&ticks(&[(pid, &comm, 0)])));
        assert_eq!(
            delays.get(&pid).map(|(n, _)| n.as_str()),
            Some(comm.as_str())
        );
        // renamed since the start (reread leaves it out), or gone: left out
        assert!(run_delays(&reread(&ticks(&[(pid, "not-this-name", 0)]))).is_empty());
        assert!(run_delays(&ticks(&[(i32::MAX, "gone", 0)])).is_empty());
    }

    #[test]
    fn run_delay_rows_in_seconds() {
        let start = ticks(&[(40, "kswapd0", 1_000_000_000)]);
        let now = ticks(&[(40, "kswapd0", 1_250_000_000)]);
        let names = names(&start);
        assert_eq!(
            csv_row(1000, &names, &start, &now, RUN_DELAY_PER_SECOND),
            "1000,0.25"
        );
    }
}

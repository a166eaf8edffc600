//! What a launch cost the thread that ran it, so that a slow switch can be
//! told apart: slow on CPU, kept from a CPU, or blocked.
//!
//! - the wall time of each step of the launch (`files_ms`, `init_ms`,
//!   `heap_ms`, and `so_ms` for an app with shared objects' data) and in
//!   all (`wall_ms`); a hot launch's `so_regenerated`, the pages of that
//!   data it found swap-cleaned and relocated again (app.rs);
//! - its CPU time in user and in system mode (`user_ms`, `sys_ms`, from
//!   getrusage(RUSAGE_THREAD): the system time holds page faults and any
//!   direct reclaim);
//! - the time it was runnable but waited for a CPU (`runq_ms`, run_delay
//!   in /proc/thread-self/schedstat, CONFIG_SCHED_INFO);
//! - its major faults (`major_faults`);
//! - for a step whose work other threads did (a cold launch's heap, filled
//!   from `launch_threads` > 1 threads), the same figures of those threads,
//!   summed over them: `fill_threads`, `fill_wall_ms`, `fill_user_ms`,
//!   `fill_sys_ms`, `fill_runq_ms`, `fill_major_faults`.
//!   While they work the launch's own thread waits for them, so its figures
//!   count that step as sleep.
//!
//! The rest of the wall time the thread slept: on I/O, on a lock, or
//! throttled by reclaim. Without steal-time accounting in the guest, time
//! the host takes from the vCPU counts as CPU time. The CPU split is
//! sampled at the tick, so small launches read coarsely. The app sends the costs on its `ready` line
//! (protocol.rs); the activity manager logs them with the switch.

use crate::workload::protocol::Costs;
use std::time::Instant;

/// A thread's CPU, run-queue and fault figures at one moment.
#[derive(Debug, Clone, Copy, Default)]
struct ThreadUsage {
    user_us: i64,
    sys_us: i64,
    major_faults: i64,
    /// None without CONFIG_SCHED_INFO.
    runq_ns: Option<u64>,
}

impl ThreadUsage {
    fn now() -> ThreadUsage {
        // SAFETY: getrusage() writes only into the struct we pass.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        let ok = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) } == 0;
        let us = |tv: libc::timeval| tv.tv_sec * 1_000_000 + tv.tv_usec;
        ThreadUsage {
            user_us: if ok { us(ru.ru_utime) } else { 0 },
            sys_us: if ok { us(ru.ru_stime) } else { 0 },
            major_faults: if ok { ru.ru_majflt } else { 0 },
            runq_ns: std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .as_deref()
                .and_then(run_delay_ns),
        }
    }
}

/// run_delay, the second field of a schedstat line: `exec_ns run_delay_ns slices`.
fn run_delay_ns(schedstat: &str) -> Option<u64> {
    schedstat.split_whitespace().nth(1)?.parse().ok()
}

/// What one thread spent on a piece of work (`Spent::measure`): its wall
/// time, CPU time, run-queue wait and major faults.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spent {
    pub wall_ms: f64,
    pub user_ms: f64,
    pub sys_ms: f64,
    /// None without CONFIG_SCHED_INFO.
    pub runq_ms: Option<f64>,
    pub major_faults: f64,
}

impl Spent {
    /// Run `work` on the calling thread and say what it spent.
    pub fn measure(work: impl FnOnce()) -> Spent {
        let (start, before) = (Instant::now(), ThreadUsage::now());
        work();
        Spent::since(start, &before)
    }

    /// What the calling thread spent since `start`, when its usage was `before`.
    fn since(start: Instant, before: &ThreadUsage) -> Spent {
        let (wall, after) = (start.elapsed(), ThreadUsage::now());
        Spent {
            wall_ms: ms(wall),
            user_ms: (after.user_us - before.user_us) as f64 / 1e3,
            sys_ms: (after.sys_us - before.sys_us) as f64 / 1e3,
            runq_ms: before
                .runq_ns
                .zip(after.runq_ns)
                .map(|(a, b)| b.saturating_sub(a) as f64 / 1e6),
            major_faults: (after.major_faults - before.major_faults) as f64,
        }
    }

    /// The figures of several threads summed; the run-queue wait only if
    /// every thread has it.
    fn sum(all: &[Spent]) -> Spent {
        let total = |f: fn(&Spent) -> f64| all.iter().map(f).sum::<f64>();
        Spent {
            wall_ms: total(|s| s.wall_ms),
            user_ms: total(|s| s.user_ms),
            sys_ms: total(|s| s.sys_ms),
            runq_ms: all.iter().map(|s| s.runq_ms).sum(),
            major_faults: total(|s| s.major_faults),
        }
    }

    /// Into `costs` as `{prefix}wall_ms`, `{prefix}user_ms`, `{prefix}sys_ms`,
    /// `{prefix}runq_ms` (where known) and `{prefix}major_faults`.
    fn push_to(&self, costs: &mut Costs, prefix: &str) {
        costs.push((format!("{prefix}wall_ms"), self.wall_ms));
        costs.push((format!("{prefix}user_ms"), self.user_ms));
        costs.push((format!("{prefix}sys_ms"), self.sys_ms));
        if let Some(runq) = self.runq_ms {
            costs.push((format!("{prefix}runq_ms"), runq));
        }
        costs.push((format!("{prefix}major_faults"), self.major_faults));
    }
}

/// Measures one launch on the calling thread: `step()` after each step,
/// `finish()` at the end.
pub struct CostMeter {
    start: Instant,
    step_start: Instant,
    usage: ThreadUsage,
    costs: Costs,
    fill: Vec<Spent>,
}

impl CostMeter {
    pub fn start() -> CostMeter {
        let now = Instant::now();
        CostMeter {
            start: now,
            step_start: now,
            usage: ThreadUsage::now(),
            costs: Costs::new(),
            fill: Vec::new(),
        }
    }

    /// The threads that filled the heap, and what each spent: reported
    /// after the launch's own figures, summed over them (`fill_*`).
    pub fn fill_threads(&mut self, spent: Vec<Spent>) {
        self.fill = spent;
    }

    /// The step `name` just ended: its wall time goes in as `{name}_ms`.
    pub fn step(&mut self, name: &str) {
        let now = Instant::now();
        self.costs
            .push((format!("{name}_ms"), ms(now - self.step_start)));
        self.step_start = now;
    }

    /// A figure of the launch that is not a time, e.g. `so_regenerated`,
    /// under `name` as given.
    pub fn count(&mut self, name: &str, value: f64) {
        self.costs.push((name.to_string(), value));
    }

    pub fn finish(mut self) -> Costs {
        Spent::since(self.start, &self.usage).push_to(&mut self.costs, "");
        if !self.fill.is_empty() {
            self.costs
                .push(("fill_threads".into(), self.fill.len() as f64));
            Spent::sum(&self.fill).push_to(&mut self.costs, "fill_");
        }
        self.costs
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_delay_is_the_second_schedstat_field() {
        assert_eq!(run_delay_ns("123456 789 12\n"), Some(789));
        assert_eq!(run_delay_ns("123456\n"), None);
        assert_eq!(run_delay_ns(""), None);
    }

    #[test]
    fn a_launch_that_spins_shows_user_time_and_its_step() {
        let mut meter = CostMeter::start();
        let spin = Instant::now();
        let mut x = 0u64;
        while spin.elapsed().as_millis() < 30 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        meter.step("init");
        let costs = meter.finish();
        let get = |k: &str| costs.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        let init = get("init_ms").unwrap();
        let wall = get("wall_ms").unwrap();
        assert!(init >= 30.0 && wall >= init, "{costs:?}");
        // The thread spun for 30 ms: most of it on CPU, in user mode
        // (some may have been spent waiting for a CPU on a busy machine).
        let (user, sys) = (get("user_ms").unwrap(), get("sys_ms").unwrap());
        assert!(user > 0.0 && user + sys <= wall + 10.0, "{costs:?}");
        assert_eq!(get("major_faults"), Some(0.0));
        assert_eq!(get("fill_threads"), None, "no fill, no fill figures");
    }

    #[test]
    fn the_fill_threads_are_summed_after_the_launchs_own_figures() {
        let mut meter = CostMeter::start();
        let spent: Vec<Spent> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        Spent::measure(|| {
                            let spin = Instant::now();
                            let mut x = 0u64;
                            while spin.elapsed().as_millis() < 20 {
                                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                            }
                        })
                    })
                })
                .collect();
            workers.into_iter().map(|w| w.join().unwrap()).collect()
        });
        meter.step("heap");
        meter.fill_threads(spent.clone());
        let costs = meter.finish();
        let names: Vec<&str> = costs.iter().map(|(n, _)| n.as_str()).collect();
        let at = |k: &str| names.iter().position(|n| *n == k);
        assert!(at("fill_threads") > at("major_faults"), "{names:?}");
        let get = |k: &str| costs.iter().find(|(n, _)| n == k).map(|(_, v)| *v);
        assert_eq!(get("fill_threads"), Some(2.0));
        let wall = get("fill_wall_ms").unwrap();
        assert_eq!(wall, spent[0].wall_ms + spent[1].wall_ms);
        assert!(wall >= 40.0, "{costs:?}");
        // each spun 20 ms on its own thread, in user mode, none of it on
        // the launch's thread, which only waited
        let user = get("fill_user_ms").unwrap();
        assert!(user > 0.0 && user <= wall + 10.0, "{costs:?}");
        assert!(get("user_ms").unwrap() < user, "{costs:?}");
        assert_eq!(get("fill_major_faults"), Some(0.0));
    }
}

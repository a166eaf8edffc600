//! The scheduling a scheme gives kernel threads (`[[kthreads]]` in
//! schemes/*.toml, `scheme.kthreads` in spec.json). PMR unmaps and writes
//! back in kswapd, from a context the paper keeps from being preempted by
//! ordinary tasks (a high-priority thread on a big core, §4.3); the kernel
//! leaves a kernel thread's policy, priority and CPU affinity to user space,
//! as for any task. Each entry applies to every kernel thread named `comm`
//! or `comm` and a number (`kswapd` is kswapd0, kswapd1, ...), once, before
//! the workload starts; run.json (reliability.json in a reliability run)
//! records what was set.

use crate::spec::{KthreadSched, SchedPolicy};
use crate::sys::proc_files::parse_proc_stat;
use anyhow::{bail, Context, Result};
use serde::Serialize;

/// What one kernel thread was given.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Applied {
    pub comm: String,
    pub pid: i32,
    pub policy: SchedPolicy,
    pub priority: i32,
    pub nice: i32,
    pub cpus: Option<Vec<usize>>,
}

/// Whether a thread's `comm` is `name` or `name` followed by a number.
pub fn matches(comm: &str, name: &str) -> bool {
    comm.strip_prefix(name)
        .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
}

/// Set every entry's scheduling on the kernel threads it names.
pub fn apply(wanted: &[KthreadSched]) -> Result<Vec<Applied>> {
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let threads = kernel_threads()?;
    let mut applied = Vec::new();
    for w in wanted {
        let hits: Vec<&(i32, String)> = threads
            .iter()
            .filter(|(_, c)| matches(c, &w.comm))
            .collect();
        if hits.is_empty() {
            bail!(
                "scheme kthreads: no kernel thread named {}<N> in this kernel: check the name",
                w.comm
            );
        }
        for (pid, comm) in hits {
            set(*pid, w).with_context(|| {
                format!("scheme kthreads: cannot schedule {comm} (pid {pid}) as asked")
            })?;
            applied.push(Applied {
                comm: comm.clone(),
                pid: *pid,
                policy: w.policy,
                priority: w.priority,
                nice: w.nice,
                cpus: w.cpus.clone(),
            });
        }
    }
    Ok(applied)
}

/// (pid, comm) of every kernel thread.
/// Every kernel thread: pid and name.
pub fn kernel_threads() -> Result<Vec<(i32, String)>> {
    let dir = std::fs::read_dir("/proc").context("cannot list /proc")?;
    Ok(dir
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let stat = parse_proc_stat(&text).ok()?;
            stat.is_kernel_thread.then_some((pid, stat.comm))
        })
        .collect())
}

fn set(pid: i32, w: &KthreadSched) -> Result<()> {
    let (policy, priority) = match w.policy {
        SchedPolicy::Fifo => (libc::SCHED_FIFO, w.priority),
        SchedPolicy::Rr => (libc::SCHED_RR, w.priority),
        SchedPolicy::Normal => (libc::SCHED_OTHER, 0),
    };
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is valid for the call.
    if unsafe { libc::sched_setscheduler(pid, policy, &param) } != 0 {
        return Err(std::io::Error::last_os_error()).context("sched_setscheduler");
    }
    if w.policy == SchedPolicy::Normal {
        // SAFETY: plain syscall.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, pid as libc::id_t, w.nice) } != 0 {
            return Err(std::io::Error::last_os_error()).context("setpriority");
        }
    }
    if let Some(cpus) = &w.cpus {
        // SAFETY: an all-zero cpu_set_t is the empty set; CPU_SET stays in
        // bounds for the CPU numbers spec.rs accepts (< CPU_SETSIZE).
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        // SAFETY: `set` is valid for the call.
        if unsafe { libc::sched_setaffinity(pid, std::mem::size_of_val(&set), &set) } != 0 {
            return Err(std::io::Error::last_os_error()).context("sched_setaffinity");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_matches_itself_and_its_numbered_threads() {
        assert!(matches("kswapd0", "kswapd"));
        assert!(matches("kswapd12", "kswapd"));
        assert!(matches("kshrinkd", "kshrinkd"));
        assert!(!matches("kswapd0", "kshrinkd"));
        assert!(!matches("kswapd_x", "kswapd"));
        assert!(!matches("ksw", "kswapd"));
    }

    #[test]
    fn nothing_asked_touches_nothing() {
        assert_eq!(apply(&[]).unwrap(), Vec::new());
    }
}

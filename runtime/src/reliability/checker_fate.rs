//! How `pmr-guest reliability` judges what became of a checker process
//! during the run. A mismatch is always a data-integrity failure, and so is
//! a checker that ends by itself or by another signal (a SIGBUS on a failed
//! swap-in would be one). A checker killed by the OOM killer is expected
//! when the swap runs full (spec `swap_full`): it is reported, and its pages
//! are not verified again, but it fails nothing. "Killed by the OOM killer"
//! means SIGKILL and an `oom_kill` in its cgroup's memory.events, which
//! counts the cgroup's processes killed by any OOM killer, the global one
//! included.

use crate::sys::Exit;

/// In swap-full runs, checker n gets oom_score_adj OOM_ADJ_STEP x n (at
/// most OOM_ADJ_MAX): the OOM killer takes stress-ng's workers first
/// (stress-ng makes them 1000 and restarts them), then the newest checker,
/// and checker 0 last. Otherwise checkers keep the runtime's -1000.
pub const OOM_ADJ_STEP: i32 = 100;
pub const OOM_ADJ_MAX: i32 = 900;

pub fn oom_score_adj(index: u32) -> i32 {
    (OOM_ADJ_STEP.saturating_mul(index as i32)).min(OOM_ADJ_MAX)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    Running,
    /// Killed by the OOM killer while that is allowed.
    OomKilled,
    /// A data-integrity failure, described.
    Problem(String),
}

/// What became of the checker `label` (pid `pid`) so far: its reported
/// mismatch, its exit, the oom_kill count of its cgroup, and whether OOM
/// kills are allowed.
pub fn fate(
    label: &str,
    pid: u32,
    mismatch: Option<&str>,
    exit: Option<Exit>,
    oom_kills: u64,
    oom_allowed: bool,
) -> Fate {
    let describe = |e: Exit| match e {
        Exit::Code(c) => format!("exit status {c}"),
        Exit::Signal(s) => format!("signal {s}"),
    };
    match (mismatch, exit) {
        (Some(text), _) => Fate::Problem(format!("mismatch: {text}")),
        (None, None) => Fate::Running,
        (None, Some(Exit::Signal(libc::SIGKILL))) if oom_kills > 0 && oom_allowed => {
            Fate::OomKilled
        }
        (None, Some(e)) if oom_kills > 0 => Fate::Problem(format!(
            "{label} (pid {pid}) was killed by the OOM killer ({}) although the swap is sized to hold the workload",
            describe(e)
        )),
        (None, Some(e)) => Fate::Problem(format!(
            "{label} (pid {pid}) ended during the run: {}{}",
            describe(e),
            if oom_allowed {
                " (not the OOM killer: no oom_kill in its memory.events)"
            } else {
                " (the OOM killer?)"
            }
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KILL: Option<Exit> = Some(Exit::Signal(libc::SIGKILL));

    #[test]
    fn oom_kills_are_tolerated_only_when_allowed() {
        assert_eq!(fate("checker 3", 7, None, None, 0, true), Fate::Running);
        assert_eq!(fate("checker 3", 7, None, KILL, 1, true), Fate::OomKilled);
        let Fate::Problem(p) = fate("checker 3", 7, None, KILL, 1, false) else {
            panic!("an OOM kill with a swap that holds the workload is a failure");
        };
        assert!(
            p.contains("killed by the OOM killer") && p.contains("pid 7"),
            "{p}"
        );
    }

    #[test]
    fn mismatches_and_other_deaths_always_fail() {
        let Fate::Problem(p) = fate("checker 1", 9, Some("page 5 pass 3: stale"), KILL, 1, true)
        else {
            panic!("a mismatch is a failure");
        };
        assert_eq!(p, "mismatch: page 5 pass 3: stale");
        let bus = Some(Exit::Signal(libc::SIGBUS));
        let Fate::Problem(p) = fate("checker 1", 9, None, bus, 0, true) else {
            panic!("a SIGBUS is a failure");
        };
        assert!(
            p.contains("signal 7") && p.contains("not the OOM killer"),
            "{p}"
        );
        assert!(matches!(
            fate("checker 1", 9, None, KILL, 0, true),
            Fate::Problem(_)
        ));
        assert!(matches!(
            fate("checker 1", 9, None, Some(Exit::Code(1)), 0, false),
            Fate::Problem(p) if p.contains("(the OOM killer?)")
        ));
    }

    #[test]
    fn newer_checkers_are_the_oom_killers_first_choice() {
        assert_eq!(
            (0..5).map(oom_score_adj).collect::<Vec<_>>(),
            [0, 100, 200, 300, 400]
        );
        assert_eq!(oom_score_adj(40), OOM_ADJ_MAX);
    }
}

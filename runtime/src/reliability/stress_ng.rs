//! stress-ng beside the checker: `--vm <workers> --vm-bytes <bytes>
//! --vm-method all --verify`, in its own cgroup, its output in
//! stress-ng.log. Its `--timeout` is only a backstop: the runtime ends it
//! with SIGINT when the load phase is over, after which stress-ng stops its
//! workers, reports and exits 0 as at the end of a timeout. It passes if it
//! exits 0, says its run was successful, and reports no failure (its vm
//! stressor's `--verify` prints `fail:` lines on bit errors).

use crate::reliability::spec::StressSpec;
use crate::sys::cgroup;
use crate::sys::Exit;
use anyhow::{Context, Result};
use serde::Serialize;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Lines kept in the verdict (the log has them all).
const MAX_FAILURE_LINES: usize = 10;

pub struct StressNg {
    child: Child,
    log: PathBuf,
    started: Instant,
    pub args: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Verdict {
    pub ok: bool,
    /// "0", "2", "signal 9", ...
    pub exit: String,
    pub completed: bool,
    pub failure_lines: Vec<String>,
    pub oom_restarts: usize,
    pub ran_s: f64,
}

pub fn start(
    spec: &StressSpec,
    bytes: u64,
    timeout: Duration,
    cgroup: &Path,
    log: &Path,
) -> Result<StressNg> {
    let args: Vec<String> = [
        "--vm".to_string(),
        spec.workers.to_string(),
        "--vm-bytes".into(),
        format!("{}m", (bytes >> 20).max(1)),
        "--vm-method".into(),
        "all".into(),
        "--verify".into(),
        "--timeout".into(),
        format!("{}s", timeout.as_secs().max(1)),
        "--temp-path".into(),
        "/tmp".into(),
        "--metrics-brief".into(),
    ]
    .into();
    let out = File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let mut command = std::process::Command::new(&spec.path);
    command
        .args(&args)
        .current_dir("/tmp")
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    let child = cgroup::spawn_into(&mut command, cgroup)
        .with_context(|| format!("cannot start {}", spec.path.display()))?;
    Ok(StressNg {
        child,
        log: log.to_path_buf(),
        started: Instant::now(),
        args,
    })
}

impl StressNg {
    /// The exit status if stress-ng has already ended.
    pub fn try_exit(&mut self) -> Result<Option<ExitStatus>> {
        Ok(self.child.try_wait()?)
    }

    /// SIGINT, wait at most `grace` (then SIGKILL), and judge the run.
    pub fn stop(mut self, grace: Duration) -> Result<Verdict> {
        let ran_s = self.started.elapsed().as_secs_f64();
        let mut status = self.child.try_wait()?;
        if status.is_none() {
            // SAFETY: plain kill(2) on our own, not yet reaped, child.
            unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
            let end = Instant::now() + grace;
            while status.is_none() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(100));
                status = self.child.try_wait()?;
            }
        }
        let status = match status {
            Some(s) => s,
            None => {
                let _ = self.child.kill();
                self.child.wait()?
            }
        };
        let exit = match status.signal() {
            Some(sig) => Exit::Signal(sig),
            None => Exit::Code(status.code().unwrap_or(-1)),
        };
        let output = std::fs::read_to_string(&self.log).unwrap_or_default();
        Ok(judge(exit, &output, ran_s))
    }
}

fn is_failure_line(line: &str) -> bool {
    let failed_count = line
        .split("failed: ")
        .nth(1)
        .and_then(|rest| rest.chars().next())
        .is_some_and(|c| c.is_ascii_digit() && c != '0');
    line.contains("fail:")
        || line.contains("bit error")
        || line.contains("unsuccessful")
        || failed_count
}

/// Whether stress-ng's run passed, from its exit and its output.
pub fn judge(exit: Exit, output: &str, ran_s: f64) -> Verdict {
    let failure_lines: Vec<String> = output
        .lines()
        .filter(|l| is_failure_line(l))
        .map(|l| l.trim().to_string())
        .collect();
    let completed = output
        .lines()
        .any(|l| l.contains("successful run completed") && !l.contains("unsuccessful"));
    let oom_restarts = output.lines().filter(|l| l.contains("OOM killer")).count();
    let exit_text = match exit {
        Exit::Code(c) => c.to_string(),
        Exit::Signal(s) => format!("signal {s}"),
    };
    Verdict {
        ok: exit == Exit::Code(0) && completed && failure_lines.is_empty(),
        exit: exit_text,
        completed,
        failure_lines: failure_lines.into_iter().take(MAX_FAILURE_LINES).collect(),
        oom_restarts,
        ran_s: (ran_s * 10.0).round() / 10.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "stress-ng: info:  [311] setting to a 3600 second (1 hour, 0.00 secs) run per stressor\n\
        stress-ng: info:  [311] dispatching hogs: 2 vm\n\
        stress-ng: metrc: [311] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s\n\
        stress-ng: metrc: [311] vm               238272    600.02      3.10      2.97       397.11         39291.53\n\
        stress-ng: info:  [311] successful run completed in 600.04s (10 mins, 0.04 secs)\n";

    #[test]
    fn a_clean_run_passes() {
        let v = judge(Exit::Code(0), GOOD, 600.04);
        assert!(v.ok, "{v:?}");
        assert_eq!((v.exit.as_str(), v.oom_restarts), ("0", 0));
    }

    #[test]
    fn verify_failures_fail_even_with_exit_0() {
        let bad = GOOD.replacen(
            "stress-ng: metrc",
            "stress-ng: fail:  [313] vm: detected 7 bit errors while stressing memory\nstress-ng: metrc", 1,
        );
        let v = judge(Exit::Code(0), &bad, 1.0);
        assert!(!v.ok);
        assert_eq!(v.failure_lines.len(), 1);
        assert!(v.failure_lines[0].contains("7 bit errors"));
        let summary = GOOD.replace("successful run completed", "unsuccessful run completed")
            + "stress-ng: info:  [311] failed: 1: vm (1)\n";
        let v = judge(Exit::Code(2), &summary, 1.0);
        assert!(!v.ok && !v.completed && v.failure_lines.len() == 2, "{v:?}");
        assert!(!is_failure_line("stress-ng: info:  [311] failed: 0"));
    }

    #[test]
    fn a_killed_or_unfinished_run_fails() {
        assert!(!judge(Exit::Signal(9), GOOD, 1.0).ok);
        assert_eq!(judge(Exit::Signal(9), GOOD, 1.0).exit, "signal 9");
        let cut = GOOD.lines().take(2).collect::<Vec<_>>().join("\n");
        assert!(!judge(Exit::Code(0), &cut, 1.0).ok, "no completion line");
        let oom = format!("stress-ng: info:  [320] vm: assuming killed by OOM killer, restarting again (instance 1)\n{GOOD}");
        let v = judge(Exit::Code(0), &oom, 1.0);
        assert!(v.ok && v.oom_restarts == 1, "{v:?}");
    }
}

//! The knob-toggling plan of `pmr-guest reliability`: which value the n-th
//! write puts in the knob, when it is due, and how its result is judged.
//!
//! The knob starts as the scheme left it; writes 1..=count put the listed
//! values in turn starting from the second (so with two values every write
//! changes the knob), spread evenly over the run's swap-out progress, the
//! last at count/(count+1) of it. At the end the runtime writes the first
//! value back. A write that fails is a failure unless its value is listed
//! in `refused`, in which case a write that succeeds is the failure.

use anyhow::{ensure, Result};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::PathBuf;

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Toggle {
    pub path: PathBuf,
    pub values: Vec<String>,
    /// Values the kernel must refuse (the write returns an error).
    #[serde(default)]
    pub refused: Vec<String>,
    /// How many writes over the run.
    pub count: u32,
}

/// How one write went, judged against the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    Accepted,
    RefusedAsExpected,
    /// The write failed and was expected to succeed.
    Failed(String),
    /// The write succeeded and was expected to be refused.
    AcceptedUnexpectedly,
}

impl WriteOutcome {
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            WriteOutcome::Failed(_) | WriteOutcome::AcceptedUnexpectedly
        )
    }
}

impl Toggle {
    pub fn validate(&self) -> Result<()> {
        let path = self.path.display();
        ensure!(
            self.path.is_absolute(),
            "toggle path {path} is not absolute"
        );
        ensure!(
            self.values.len() >= 2,
            "toggle of {path} needs at least two values"
        );
        ensure!(
            self.values.iter().all(|v| !v.is_empty()),
            "toggle of {path} has an empty value"
        );
        ensure!(self.count >= 1, "toggle count must be at least 1");
        for r in &self.refused {
            ensure!(
                self.values.contains(r),
                "refused toggle value {r:?} is not one of the values"
            );
        }
        ensure!(
            !self.refused.contains(&self.values[0]),
            "the first toggle value {:?} is written back at the end: it cannot be one the kernel refuses",
            self.values[0]
        );
        Ok(())
    }

    /// The value of write `n` (1-based).
    pub fn value(&self, n: u32) -> &str {
        &self.values[n as usize % self.values.len()]
    }

    /// The value written back at the end.
    pub fn first(&self) -> &str {
        &self.values[0]
    }

    /// How many writes are due once `progress` (0..=1) of the run is done.
    pub fn due(&self, progress: f64) -> u32 {
        let p = if progress.is_nan() {
            0.0
        } else {
            progress.clamp(0.0, 1.0)
        };
        ((p * f64::from(self.count + 1)).floor() as u32).min(self.count)
    }

    pub fn judge(&self, value: &str, write: &std::io::Result<()>) -> WriteOutcome {
        let refused = self.refused.iter().any(|r| r == value);
        match (write, refused) {
            (Ok(()), false) => WriteOutcome::Accepted,
            (Ok(()), true) => WriteOutcome::AcceptedUnexpectedly,
            (Err(_), true) => WriteOutcome::RefusedAsExpected,
            (Err(e), false) => WriteOutcome::Failed(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toggle(values: &[&str], refused: &[&str], count: u32) -> Toggle {
        Toggle {
            path: "/sys/kernel/mm/pmr/enabled".into(),
            values: values.iter().map(|v| v.to_string()).collect(),
            refused: refused.iter().map(|v| v.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn values_rotate_starting_from_the_second() {
        let t = toggle(&["0", "1", "2"], &[], 7);
        let seq: Vec<&str> = (1..=7).map(|n| t.value(n)).collect();
        assert_eq!(seq, ["1", "2", "0", "1", "2", "0", "1"]);
        assert_eq!(t.first(), "0");
        let two = toggle(&["n", "y"], &[], 4);
        let seq: Vec<&str> = (1..=4).map(|n| two.value(n)).collect();
        assert_eq!(seq, ["y", "n", "y", "n"], "every write changes the knob");
    }

    #[test]
    fn writes_are_spread_over_the_run_and_all_done_at_the_end() {
        let t = toggle(&["0", "1"], &[], 4);
        assert_eq!(t.due(0.0), 0);
        assert_eq!(t.due(0.19), 0);
        assert_eq!(t.due(0.2), 1);
        assert_eq!(t.due(0.5), 2);
        assert_eq!(t.due(0.8), 4);
        assert_eq!(t.due(1.0), 4);
        assert_eq!(t.due(7.0), 4, "never more than planned");
        assert_eq!(t.due(-1.0), 0);
        assert_eq!(t.due(f64::NAN), 0);
        let many = toggle(&["0", "1"], &[], 100);
        let due: Vec<u32> = (0..=10).map(|i| many.due(f64::from(i) / 10.0)).collect();
        assert!(
            due.windows(2)
                .all(|w| w[1] - w[0] >= 9 && w[1] - w[0] <= 11),
            "{due:?}"
        );
    }

    #[test]
    fn refused_values_must_be_refused_and_others_accepted() {
        let t = toggle(&["0", "1", "7"], &["7"], 3);
        t.validate().unwrap();
        let einval = || Err(std::io::Error::from_raw_os_error(libc::EINVAL));
        assert_eq!(t.judge("1", &Ok(())), WriteOutcome::Accepted);
        assert_eq!(t.judge("7", &einval()), WriteOutcome::RefusedAsExpected);
        assert_eq!(t.judge("7", &Ok(())), WriteOutcome::AcceptedUnexpectedly);
        let failed = t.judge("1", &einval());
        assert!(
            failed.is_failure()
                && matches!(&failed, WriteOutcome::Failed(e) if e.contains("Invalid argument"))
        );
        assert!(!WriteOutcome::RefusedAsExpected.is_failure());
    }

    #[test]
    fn bad_plans_are_refused() {
        assert!(toggle(&["0"], &[], 3).validate().is_err());
        assert!(toggle(&["0", ""], &[], 3).validate().is_err());
        assert!(toggle(&["0", "1"], &[], 0).validate().is_err());
        assert!(toggle(&["0", "1"], &["2"], 3).validate().is_err());
        let err = toggle(&["0", "1"], &["0"], 3).validate().unwrap_err();
        assert!(err.to_string().contains("written back"), "{err}");
        let mut relative = toggle(&["0", "1"], &[], 3);
        relative.path = "proc/sys/vm/x".into();
        assert!(relative.validate().is_err());
    }
}

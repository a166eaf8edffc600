//! reliability.json: the checks of a reliability run, each with a status
//! (pass, fail, skipped), a one-line detail and its figures, plus the run's
//! headline figures. docs/guest-interface.md describes the file.

use crate::sys::kthread_sched::Applied;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Skipped,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skipped => "SKIP",
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub status: Status,
    pub detail: String,
    pub figures: Value,
}

impl Check {
    pub fn verdict(name: &'static str, ok: bool, detail: String, figures: Value) -> Check {
        let status = if ok { Status::Pass } else { Status::Fail };
        Check {
            name,
            status,
            detail,
            figures,
        }
    }

    pub fn skipped(name: &'static str, why: impl Into<String>) -> Check {
        Check {
            name,
            status: Status::Skipped,
            detail: why.into(),
            figures: Value::Null,
        }
    }
}

#[derive(Serialize)]
pub struct Report<'a> {
    /// "ok" when no check failed and nothing went wrong, else "failed".
    pub status: &'static str,
    /// A failure of the runtime itself (the checks may be incomplete).
    pub error: Option<String>,
    pub kernel: &'a str,
    pub scheme: &'a str,
    pub knobs: &'a BTreeMap<String, String>,
    pub kthreads: &'a [Applied],
    pub mem_total_kb: i64,
    pub swap_total_kb: i64,
    pub swap_dev: &'a str,
    pub started_at: String,
    pub duration_s: f64,
    pub figures: Value,
    pub checks: &'a [Check],
}

/// Whether a run with these checks and this error passed.
pub fn passed(checks: &[Check], error: Option<&str>) -> bool {
    error.is_none() && checks.iter().all(|c| c.status != Status::Fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn skipped_checks_do_not_fail_a_run_but_errors_do() {
        let checks = vec![
            Check::verdict("a", true, "fine".into(), json!({"mb": 1})),
            Check::skipped("b", "no PMR"),
        ];
        assert!(passed(&checks, None));
        assert!(!passed(&checks, Some("the runtime crashed")));
        let failed = [Check::verdict("c", false, "broken".into(), Value::Null)];
        assert!(!passed(&failed, None));
        let text = serde_json::to_string(&checks[1]).unwrap();
        assert!(text.contains(r#""status":"skipped""#), "{text}");
    }
}

//! The spec of `pmr-guest reliability` (spec.json in its output
//! directory): everything the host tells the guest for one reliability run.
//! Memory sizes are ratios of the guest's MemTotal, so the host need not
//! know what the kernel keeps for itself. Parsing is strict, as for `run`.

use crate::reliability::toggle_plan::Toggle;
use crate::spec::{Memory, Scheme, Swap};
use anyhow::{ensure, Context, Result};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReliabilitySpec {
    pub out_dir: PathBuf,
    /// Time for the load phase; the final checks come on top.
    pub deadline_s: f64,
    pub scheme: Scheme,
    pub memory: Memory,
    pub swap: Swap,
    /// The load phase ends when pswpout reaches this many times MemTotal.
    pub swap_factor: f64,
    pub checker: CheckerSpec,
    pub stress_ng: StressSpec,
    pub toggle: Option<Toggle>,
    /// The swap disk is sized to run full (`pmrtb reliability --swap-full`):
    /// setup wants a swap that holds the checkers but not stress-ng too, the
    /// checkers may be killed by the OOM killer, and the load phase ends
    /// `MIN_SWEEPS` sweeps after the swap first ran full instead of at
    /// `swap_factor`.
    #[serde(default)]
    pub swap_full: bool,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckerSpec {
    /// Checker processes, each in its own cgroup; one is killed mid-run
    /// and replaced.
    pub processes: u32,
    /// Their anonymous memory together, as a share of MemTotal.
    pub ram_ratio: f64,
    pub seed: u64,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StressSpec {
    pub path: PathBuf,
    /// `--vm` workers.
    pub workers: u32,
    /// `--vm-bytes` (all workers together), as a share of MemTotal.
    pub ram_ratio: f64,
}

/// The JSON Schema of a reliability spec.json, from the types above: what
/// schemas/reliability-spec.schema.json holds (`pmr-guest schema
/// reliability-spec`; a test keeps the two equal).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(ReliabilitySpec);
    serde_json::to_string_pretty(&schema).expect("a schema serializes") + "\n"
}

impl ReliabilitySpec {
    pub fn load(path: &Path) -> Result<ReliabilitySpec> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("bad spec {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<ReliabilitySpec> {
        let spec: ReliabilitySpec = serde_json::from_str(text)?;
        spec.validate()?;
        Ok(spec)
    }

    fn validate(&self) -> Result<()> {
        ensure!(self.deadline_s > 0.0, "deadline_s must be > 0");
        ensure!(self.swap_factor > 0.0, "swap_factor must be > 0");
        ensure!(
            self.scheme.background.is_none(),
            "scheme.background is for `pmr-guest run` only: the reliability check has no apps \
             to mark as background"
        );
        ensure!(
            self.scheme.skew.is_none(),
            "scheme.skew is for `pmr-guest run` only: the reliability check has no apps to \
             switch between"
        );
        ensure!(
            self.scheme.ice.is_none(),
            "scheme.ice is for `pmr-guest run` only: the reliability check has no apps to \
             freeze"
        );
        ensure!(
            self.scheme.swam.is_none(),
            "scheme.swam is for `pmr-guest run` only: the reliability check swaps on the swap \
             disk whole and has no apps to rank for lmkd"
        );
        self.scheme.validate()?;
        self.memory.validate()?;
        self.swap.validate()?;
        ensure!(
            self.checker.processes >= 2,
            "checker.processes must be at least 2 (one is killed mid-run)"
        );
        for (name, ratio) in [
            ("checker.ram_ratio", self.checker.ram_ratio),
            ("stress_ng.ram_ratio", self.stress_ng.ram_ratio),
        ] {
            ensure!(ratio > 0.0 && ratio <= 8.0, "{name} must be in (0, 8]");
        }
        ensure!(
            self.stress_ng.workers >= 1,
            "stress_ng.workers must be >= 1"
        );
        if let Some(t) = &self.toggle {
            t.validate()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_schema_is_the_types() {
        assert!(
            include_str!("../../../schemas/reliability-spec.schema.json") == json_schema(),
            "schemas/reliability-spec.schema.json is not the types' schema: run \
             `make schemas` and commit it"
        );
    }

    const SPEC: &str = r#"{
        "out_dir": "/tmp/rel",
        "deadline_s": 3600,
        "scheme": {"name": "original", "policies": [],
                   "knobs": [{"path": "/sys/kernel/mm/lru_gen/enabled", "value": "n"}]},
        "memory": {"watermark_scale_factor": 130, "min_free_kbytes": 4740, "swappiness": 100},
        "swap": {"serial": "pmrswap", "zram_mb": 0, "disk": true},
        "swap_factor": 4,
        "checker": {"processes": 4, "ram_ratio": 1.5, "seed": 1},
        "stress_ng": {"path": "/usr/bin/stress-ng", "workers": 2, "ram_ratio": 0.7},
        "toggle": {"path": "/sys/kernel/mm/lru_gen/enabled", "values": ["n", "y"], "count": 20}
    }"#;

    #[test]
    fn parses_the_documented_example() {
        let spec = ReliabilitySpec::parse(SPEC).unwrap();
        assert_eq!(spec.checker.processes, 4);
        let toggle = spec.toggle.unwrap();
        assert_eq!((toggle.count, toggle.refused.len()), (20, 0));
    }

    #[test]
    fn refuses_what_cannot_run() {
        let one_checker = SPEC.replace(r#""processes": 4"#, r#""processes": 1"#);
        let err = format!("{:#}", ReliabilitySpec::parse(&one_checker).unwrap_err());
        assert!(err.contains("at least 2"), "{err}");
        let typo = SPEC.replace("swap_factor", "swap_fcator");
        assert!(ReliabilitySpec::parse(&typo).is_err());
        let bad_toggle = SPEC.replace(r#"["n", "y"]"#, r#"["n"]"#);
        assert!(ReliabilitySpec::parse(&bad_toggle).is_err());
        let no_toggle = SPEC.replace(
            r#""toggle": {"path": "/sys/kernel/mm/lru_gen/enabled", "values": ["n", "y"], "count": 20}"#,
            r#""toggle": null"#,
        );
        assert!(ReliabilitySpec::parse(&no_toggle).unwrap().toggle.is_none());
    }

    #[test]
    fn refuses_background_marks() {
        let marked = SPEC.replace(
            r#""policies": [],"#,
            r#""policies": [], "background": {"file": "memory.acclaim_bg", "apps": "not-foreground"},"#,
        );
        let err = format!("{:#}", ReliabilitySpec::parse(&marked).unwrap_err());
        assert!(
            err.contains("scheme.background is for `pmr-guest run` only"),
            "{err}"
        );
        let unset = SPEC.replace(
            r#""policies": [],"#,
            r#""policies": [], "background": null,"#,
        );
        assert!(ReliabilitySpec::parse(&unset).is_ok());
    }

    #[test]
    fn refuses_skew() {
        let skewed = SPEC.replace(
            r#""policies": [],"#,
            r#""policies": [], "skew": {"advice": "pageout"},"#,
        );
        let err = format!("{:#}", ReliabilitySpec::parse(&skewed).unwrap_err());
        assert!(
            err.contains("scheme.skew is for `pmr-guest run` only"),
            "{err}"
        );
        let unset = SPEC.replace(r#""policies": [],"#, r#""policies": [], "skew": null,"#);
        assert!(ReliabilitySpec::parse(&unset).is_ok());
    }

    #[test]
    fn refuses_ice() {
        let ice = r#"{"rpf": "kernel", "poll_ms": 100, "protect_adj": 200, "spare_swapped": false,
                      "mdt": {"delta": 8, "thaw_ms": 1000, "max_freeze_ms": 64000,
                              "available": "mem_free"}}"#;
        let frozen = SPEC.replace(
            r#""policies": [],"#,
            &format!(r#""policies": [], "ice": {ice},"#),
        );
        let err = format!("{:#}", ReliabilitySpec::parse(&frozen).unwrap_err());
        assert!(
            err.contains("scheme.ice is for `pmr-guest run` only"),
            "{err}"
        );
        let unset = SPEC.replace(r#""policies": [],"#, r#""policies": [], "ice": null,"#);
        assert!(ReliabilitySpec::parse(&unset).is_ok());
    }

    #[test]
    fn refuses_swam() {
        let swam = SPEC.replace(
            r#""policies": [],"#,
            r#""policies": [], "swam": {"eoom": {"launch_adj_max": 100}},"#,
        );
        let err = format!("{:#}", ReliabilitySpec::parse(&swam).unwrap_err());
        assert!(
            err.contains("scheme.swam is for `pmr-guest run` only"),
            "{err}"
        );
        let unset = SPEC.replace(r#""policies": [],"#, r#""policies": [], "swam": null,"#);
        assert!(ReliabilitySpec::parse(&unset).is_ok());
    }

    #[test]
    fn swap_full_is_off_unless_asked() {
        assert!(!ReliabilitySpec::parse(SPEC).unwrap().swap_full);
        let full = SPEC.replace(
            r#""swap_factor": 4,"#,
            r#""swap_factor": 4, "swap_full": true,"#,
        );
        assert!(ReliabilitySpec::parse(&full).unwrap().swap_full);
        let typo = SPEC.replace(
            r#""swap_factor": 4,"#,
            r#""swap_factor": 4, "swapfull": true,"#,
        );
        assert!(ReliabilitySpec::parse(&typo).is_err());
    }
}

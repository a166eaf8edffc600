//! The line protocol between the activity manager and an app process.
//!
//! The activity manager writes one command per line on the app's stdin; the
//! app answers every command with one line `ready` on its stdout once the
//! command is done. After a launch (`cold`, `hot`) the line goes on with
//! what the launch cost, as `name=value` pairs (launch_cost.rs), e.g.
//! `ready heap_ms=41.250 files_ms=3.125 wall_ms=44.375 ...`. An app
//! reports errors (e.g. data corruption) on stderr and exits with a
//! non-zero status; it never exits on its own otherwise.
//!
//! | command | the app ...                                                  |
//! |---------|--------------------------------------------------------------|
//! | `cold`  | cold-launches: maps and reads its files, does its init work, |
//! |         | fills the launch part of its heap; then grows over growth_ms |
//! | `hot`   | hot-launches: touches its working set                        |
//! | `fg`    | becomes foreground: re-touches and churns every fg_period_ms |
//! |         | and, with `frame`, starts its render thread (frames.rs)      |
//! | `bg`    | becomes background: idle, or its `bg_touch`; the render      |
//! |         | thread ends after its frame, its ticks.csv rows are written  |
//!
//! `cold` is always the first command: the app allocates nothing before it,
//! so that all its memory is charged to its cgroup.

use anyhow::{bail, Context, Result};

pub const READY: &str = "ready";

/// What a command cost the app, in the order measured: `(name, value)`.
pub type Costs = Vec<(String, f64)>;

/// The `ready` line with `costs`.
pub fn ready_line(costs: &Costs) -> String {
    let mut line = READY.to_string();
    for (name, value) in costs {
        line.push_str(&format!(" {name}={value:.3}"));
    }
    line
}

/// The costs on a `ready` line; an error for any other line, and for a
/// cost that is not a finite number or is named twice.
pub fn parse_ready(line: &str) -> Result<Costs> {
    let mut words = line.split_whitespace();
    if words.next() != Some(READY) {
        bail!("{:?} is not a {READY:?} line", line.trim());
    }
    let mut costs = Costs::new();
    for word in words {
        let (name, value) = word
            .split_once('=')
            .with_context(|| format!("no `=` in {word:?} on {:?}", line.trim()))?;
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .with_context(|| format!("{word:?} on {:?} is not a finite number", line.trim()))?;
        if costs.iter().any(|(n, _)| n == name) {
            bail!("{name} twice on {:?}", line.trim());
        }
        costs.push((name.to_string(), value));
    }
    Ok(costs)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Cold,
    Hot,
    Fg,
    Bg,
}

impl Command {
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Cold => "cold",
            Command::Hot => "hot",
            Command::Fg => "fg",
            Command::Bg => "bg",
        }
    }

    pub fn parse(line: &str) -> Result<Command> {
        Ok(match line.trim() {
            "cold" => Command::Cold,
            "hot" => Command::Hot,
            "fg" => Command::Fg,
            "bg" => Command::Bg,
            other => bail!("unknown command {other:?}"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_round_trip() {
        for c in [Command::Cold, Command::Hot, Command::Fg, Command::Bg] {
            assert_eq!(Command::parse(&format!("{}\n", c.as_str())).unwrap(), c);
        }
        assert!(Command::parse("launch").is_err());
    }

    #[test]
    fn ready_lines_round_trip_with_and_without_costs() {
        assert_eq!(parse_ready("ready\n").unwrap(), Costs::new());
        let costs = vec![
            ("heap_ms".to_string(), 41.25),
            ("major_faults".to_string(), 3.0),
        ];
        let line = ready_line(&costs);
        assert_eq!(line, "ready heap_ms=41.250 major_faults=3.000");
        assert_eq!(parse_ready(&line).unwrap(), costs);
        assert!(parse_ready("done").is_err());
        assert!(parse_ready("ready heap_ms").is_err());
        assert!(parse_ready("ready heap_ms=fast").is_err());
        assert!(parse_ready("ready heap_ms=NaN").is_err());
        assert!(parse_ready("ready heap_ms=inf").is_err());
        assert!(parse_ready("ready heap_ms=1 heap_ms=2").is_err());
    }
}

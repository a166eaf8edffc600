//! The line protocol between the activity manager and an app process.
//!
//! The activity manager writes one command per line on the app's stdin; the
//! app answers every command with one line `ready` on its stdout once the
//! command is done. An app reports errors (e.g. data corruption) on stderr
//! and exits with a non-zero status; it never exits on its own otherwise.
//!
//! | command | the app ...                                                  |
//! |---------|--------------------------------------------------------------|
//! | `cold`  | cold-launches: maps and reads its files, does its init work, |
//! |         | fills the launch part of its heap; then grows over growth_ms |
//! | `hot`   | hot-launches: touches its working set                        |
//! | `fg`    | becomes foreground: re-touches and churns every fg_period_ms |
//! | `bg`    | becomes background: idle, or its `bg_touch`                  |
//!
//! `cold` is always the first command: the app allocates nothing before it,
//! so that all its memory is charged to its cgroup.

use anyhow::{bail, Result};

pub const READY: &str = "ready";

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
}

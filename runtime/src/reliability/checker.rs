//! The reliability checker process (`pmr-guest checker`, spawned by
//! `pmr-guest reliability` into its own cgroup): anonymous memory filled
//! with self-checking pages (checked_page.rs) and swept over and over.
//! Each sweep verifies every page against the pass that last wrote it and
//! rewrites it as the next pass, so every page is dirtied, swapped out and
//! read back again and again. Sweeps alternate direction, which varies the
//! swap readahead patterns.
//!
//! Line protocol, checker to runtime on stdout:
//!
//! ```text
//! filled            every page holds pass 0
//! at <pages>        the current sweep has done this many pages (every 4096)
//! pass <k>          sweep k verified every page and rewrote it as pass k
//! verified <pages>  after `stop`: every page verified once more, nothing written
//! mismatch <text>   a page is not what was written; the process then exits 1
//! ```
//!
//! and runtime to checker on stdin: `stop` (leave the sweep, verify every
//! page, answer `verified`, then hold the memory), then end of input (exit).

use crate::pattern::PAGE_SIZE;
use crate::reliability::checked_page::{self, PageId, PAGE_WORDS};
use crate::sys;
use crate::workload::memory::AnonRegion;
use anyhow::{bail, ensure, Context, Result};
use std::io::{BufRead, Write};
use std::os::fd::AsFd;
use std::time::Duration;

/// Pages between two looks at stdin during a sweep.
const STDIN_CHECK_PAGES: usize = 256;
/// Pages between two `at` reports.
const AT_REPORT_PAGES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    Filled,
    At(u64),
    Pass(u32),
    Verified(u64),
    Mismatch(String),
}

impl Report {
    pub fn line(&self) -> String {
        match self {
            Report::Filled => "filled".into(),
            Report::At(n) => format!("at {n}"),
            Report::Pass(k) => format!("pass {k}"),
            Report::Verified(n) => format!("verified {n}"),
            Report::Mismatch(text) => format!("mismatch {}", text.replace('\n', " ")),
        }
    }

    pub fn parse(line: &str) -> Result<Report> {
        let line = line.trim_end();
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        Ok(match word {
            "filled" if rest.is_empty() => Report::Filled,
            "at" => Report::At(rest.parse().with_context(|| format!("bad line {line:?}"))?),
            "pass" => Report::Pass(rest.parse().with_context(|| format!("bad line {line:?}"))?),
            "verified" => {
                Report::Verified(rest.parse().with_context(|| format!("bad line {line:?}"))?)
            }
            "mismatch" => Report::Mismatch(rest.to_string()),
            _ => bail!("unknown checker line {line:?}"),
        })
    }
}

pub const STOP: &str = "stop";

struct Runtime<'a> {
    label: &'a str,
    stdin: std::io::StdinLock<'static>,
    stdout: std::io::StdoutLock<'static>,
}

impl Runtime<'_> {
    fn report(&mut self, r: &Report) -> Result<()> {
        writeln!(self.stdout, "{}", r.line())?;
        self.stdout.flush().context("cannot report to the runtime")
    }

    /// Whether the runtime has asked to stop (never blocks).
    fn stop_requested(&mut self) -> Result<bool> {
        let mut fds = [sys::pollfd(std::io::stdin().as_fd(), libc::POLLIN)];
        if sys::poll(&mut fds, Some(Duration::ZERO))? == 0 {
            return Ok(false);
        }
        let mut line = String::new();
        ensure!(
            self.stdin.read_line(&mut line)? > 0,
            "{}: the runtime closed stdin during a sweep",
            self.label
        );
        ensure!(
            line.trim() == STOP,
            "{}: unknown command {:?}",
            self.label,
            line.trim()
        );
        Ok(true)
    }

    fn mismatch(&mut self, m: &checked_page::Mismatch) -> anyhow::Error {
        let text = format!("{}: {m}", self.label);
        // The runtime records the line; the console gets it too.
        let _ = self.report(&Report::Mismatch(text.clone()));
        anyhow::anyhow!("data corruption: {text}")
    }
}

/// `pmr-guest checker`: run until stdin ends.
pub fn main(label: &str, seed: u64, pages: usize) -> Result<()> {
    ensure!(pages > 0, "a checker needs at least one page");
    let mut rt = Runtime {
        label,
        stdin: std::io::stdin().lock(),
        stdout: std::io::stdout().lock(),
    };
    let mut region = AnonRegion::new(pages * PAGE_SIZE)?;
    let memory = region.words_mut();
    let mut passes = vec![0u32; pages];
    for (index, page) in memory.chunks_exact_mut(PAGE_WORDS).enumerate() {
        checked_page::fill(page, id(seed, index, 0));
    }
    rt.report(&Report::Filled)?;

    let mut sweep = 0u32;
    'sweeps: loop {
        sweep += 1;
        for step in 0..pages {
            if step % STDIN_CHECK_PAGES == 0 && rt.stop_requested()? {
                break 'sweeps;
            }
            if step % AT_REPORT_PAGES == 0 && step > 0 {
                rt.report(&Report::At(step as u64))?;
            }
            let index = if sweep % 2 == 1 {
                step
            } else {
                pages - 1 - step
            };
            let page = &mut memory[index * PAGE_WORDS..(index + 1) * PAGE_WORDS];
            let written = id(seed, index, passes[index]);
            if let Err(m) = checked_page::verify(page, written) {
                return Err(rt.mismatch(&m));
            }
            checked_page::fill(page, written.with_pass(sweep));
            passes[index] = sweep;
        }
        rt.report(&Report::Pass(sweep))?;
    }

    for (index, page) in memory.chunks_exact(PAGE_WORDS).enumerate() {
        if let Err(m) = checked_page::verify(page, id(seed, index, passes[index])) {
            return Err(rt.mismatch(&m));
        }
    }
    rt.report(&Report::Verified(pages as u64))?;
    // Hold the memory until the runtime has looked at the cgroup.
    let mut rest = String::new();
    while rt.stdin.read_line(&mut rest)? > 0 {
        rest.clear();
    }
    Ok(())
}

fn id(seed: u64, index: usize, pass: u32) -> PageId {
    PageId {
        seed,
        index: index as u64,
        pass,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_lines_round_trip() {
        for r in [
            Report::Filled,
            Report::At(4096),
            Report::Pass(7),
            Report::Verified(125_000),
            Report::Mismatch("checker 2: page 5 pass 3: word 0 ...".into()),
        ] {
            assert_eq!(Report::parse(&r.line()).unwrap(), r);
        }
        assert_eq!(
            Report::Mismatch("a\nb".into()).line(),
            "mismatch a b",
            "one line"
        );
        assert!(Report::parse("pass x").is_err());
        assert!(Report::parse("hello").is_err());
    }
}

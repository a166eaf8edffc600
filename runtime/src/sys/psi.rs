//! Pressure stall information for memory: trigger fds (what lmkd waits on)
//! and parsing /proc/pressure/memory (what the sampler records).
//!
//! A trigger is a file descriptor on /proc/pressure/memory opened
//! `O_RDWR | O_NONBLOCK` into which `"<some|full> <stall us> <window us>"`
//! was written; the kernel then raises `POLLPRI` on it at most once per
//! window when tasks stalled on memory for longer than the threshold
//! within the window (Documentation/accounting/psi.rst).

use anyhow::{bail, Context, Result};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::Duration;

pub const PSI_MEMORY: &str = "/proc/pressure/memory";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stall {
    Some,
    Full,
}

pub struct Trigger {
    file: File,
}

impl Trigger {
    pub fn new(stall: Stall, threshold: Duration, window: Duration) -> Result<Trigger> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(PSI_MEMORY)
            .with_context(|| format!("cannot open {PSI_MEMORY} (kernel without CONFIG_PSI?)"))?;
        let kind = match stall {
            Stall::Some => "some",
            Stall::Full => "full",
        };
        let line = format!("{kind} {} {}", threshold.as_micros(), window.as_micros());
        // The kernel overwrites the last byte written with a NUL
        // (psi_write), so send the terminator as lmkd does.
        file.write_all(format!("{line}\0").as_bytes())
            .with_context(|| format!("cannot install the PSI trigger {line:?}"))?;
        Ok(Trigger { file })
    }
}

impl AsFd for Trigger {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// One line of a PSI file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PsiLine {
    pub avg10: f64,
    pub total_us: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemoryPressure {
    pub some: PsiLine,
    pub full: PsiLine,
}

pub fn parse(text: &str) -> Result<MemoryPressure> {
    let mut pressure = MemoryPressure::default();
    let (mut some, mut full) = (false, false);
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let target = match fields.next() {
            Some("some") => {
                some = true;
                &mut pressure.some
            }
            Some("full") => {
                full = true;
                &mut pressure.full
            }
            _ => continue,
        };
        for kv in fields {
            match kv.split_once('=') {
                Some(("avg10", v)) => target.avg10 = v.parse().context("bad avg10")?,
                Some(("total", v)) => target.total_us = v.parse().context("bad total")?,
                _ => {}
            }
        }
    }
    if !(some && full) {
        bail!("{PSI_MEMORY} lacks a some or full line");
    }
    Ok(pressure)
}

pub fn read() -> Result<MemoryPressure> {
    parse(&std::fs::read_to_string(PSI_MEMORY)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_some_and_full() {
        let text = "some avg10=12.50 avg60=3.00 avg300=0.50 total=123456\n\
                    full avg10=1.25 avg60=0.00 avg300=0.00 total=789\n";
        let p = parse(text).unwrap();
        assert_eq!(
            p.some,
            PsiLine {
                avg10: 12.5,
                total_us: 123456
            }
        );
        assert_eq!(
            p.full,
            PsiLine {
                avg10: 1.25,
                total_us: 789
            }
        );
        assert!(parse("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").is_err());
    }
}

//! The runtime's side of one checker process (checker.rs): spawning it into
//! its cgroup, reading its reports without blocking, asking it to stop and
//! letting it go, and what it has said so far.

use crate::reliability::checker::{Report, STOP};
use crate::sys::cgroup;
use crate::sys::{self, Exit};
use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::Duration;

pub struct Checker {
    pub index: u32,
    pub seed: u64,
    pub pages: usize,
    pub cgroup: PathBuf,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    pending: Vec<u8>,
    stdout_closed: bool,
    pub filled: bool,
    /// Completed sweeps.
    pub sweeps: u32,
    /// Pages done in the current sweep.
    pub sweep_pages: u64,
    /// Pages checked by the final verification, once done.
    pub verified: Option<u64>,
    pub mismatch: Option<String>,
    pub exit: Option<Exit>,
}

impl Checker {
    pub fn label(index: u32) -> String {
        format!("checker {index}")
    }

    pub fn spawn(
        exe: &Path,
        index: u32,
        seed: u64,
        pages: usize,
        cgroup: PathBuf,
    ) -> Result<Checker> {
        let mut command = std::process::Command::new(exe);
        command
            .arg("checker")
            .args(["--label", &Self::label(index)])
            .args(["--seed", &seed.to_string()])
            .args(["--pages", &pages.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cgroup::spawn_into(&mut command, &cgroup)
            .with_context(|| format!("cannot spawn checker {index} into {}", cgroup.display()))?;
        Ok(Checker {
            index,
            seed,
            pages,
            cgroup,
            stdin: child.stdin.take(),
            stdout: child.stdout.take().expect("stdout is piped"),
            child,
            pending: Vec::new(),
            stdout_closed: false,
            filled: false,
            sweeps: 0,
            sweep_pages: 0,
            verified: None,
            mismatch: None,
            exit: None,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    pub fn bytes(&self) -> u64 {
        (self.pages * crate::pattern::PAGE_SIZE) as u64
    }

    /// Sweeps done, with the current one's share: 2.5 is half way through the third.
    pub fn sweep_progress(&self) -> f64 {
        f64::from(self.sweeps) + self.sweep_pages as f64 / self.pages as f64
    }

    /// Page verifications done so far (every sweep checks every page).
    pub fn page_checks(&self) -> u64 {
        u64::from(self.sweeps) * self.pages as u64 + self.verified.unwrap_or(0)
    }

    /// Read what the checker has reported, waiting at most `wait`; also
    /// notes its exit (looked at first, so that every line it wrote before
    /// exiting is read in the same call).
    pub fn poll(&mut self, wait: Duration) -> Result<()> {
        if self.exit.is_none() {
            if let Some(status) = self.child.try_wait()? {
                self.exit = Some(match status.signal() {
                    Some(sig) => Exit::Signal(sig),
                    None => Exit::Code(status.code().unwrap_or(-1)),
                });
            }
        }
        let mut wait = wait;
        while !self.stdout_closed {
            let mut fds = [sys::pollfd(self.stdout.as_fd(), libc::POLLIN)];
            if sys::poll(&mut fds, Some(wait))? == 0 {
                break;
            }
            let mut buf = [0u8; 4096];
            let n = self.stdout.read(&mut buf).unwrap_or(0);
            self.stdout_closed = n == 0;
            self.pending.extend_from_slice(&buf[..n]);
            wait = Duration::ZERO;
        }
        if self.stdout_closed && self.exit.is_none() {
            std::thread::sleep(wait);
        }
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            match Report::parse(&String::from_utf8_lossy(&line))? {
                Report::Filled => self.filled = true,
                Report::At(n) => self.sweep_pages = n,
                Report::Pass(k) => {
                    self.sweeps = k;
                    self.sweep_pages = 0;
                }
                Report::Verified(n) => self.verified = Some(n),
                Report::Mismatch(text) => {
                    self.mismatch.get_or_insert(text);
                }
            }
        }
        Ok(())
    }

    /// Ask for the final verification; false if the checker is gone.
    pub fn stop(&mut self) -> bool {
        self.stdin
            .as_mut()
            .is_some_and(|s| writeln!(s, "{STOP}").and_then(|()| s.flush()).is_ok())
    }

    /// Close stdin: the checker exits and frees its memory.
    pub fn release(&mut self) {
        self.stdin = None;
    }

    /// Wait for the exit (after `release` or a kill) at most `wait`.
    pub fn wait_exit(&mut self, wait: Duration) -> Result<Option<Exit>> {
        let end = std::time::Instant::now() + wait;
        while self.exit.is_none() && std::time::Instant::now() < end {
            self.poll(Duration::from_millis(50))?;
        }
        Ok(self.exit)
    }

    /// SIGKILL the process (when it would not exit).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
    }
}

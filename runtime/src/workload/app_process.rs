//! The activity manager's side of one app process: spawning `pmr-guest app`
//! straight into its cgroup, sending protocol commands, and waiting for
//! replies in slices so the caller can do other work (log deaths, check
//! the deadline) while an app launches.

use crate::sys;
use crate::sys::cgroup;
use crate::workload::protocol::{self, Command, Costs};
use anyhow::{Context, Result};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Stdio};
use std::time::Duration;

/// How to start app processes: this binary, the spec and the data directory.
pub struct AppCommand {
    pub exe: PathBuf,
    pub spec: PathBuf,
    pub data_dir: PathBuf,
}

pub struct AppProcess {
    pub pid: i32,
    stdin: ChildStdin,
    stdout: ChildStdout,
    pending: Vec<u8>,
}

#[derive(Debug, PartialEq)]
pub enum Reply {
    /// Done, with what it cost the process (empty but for launches).
    Ready(Costs),
    /// The process closed its stdout: it died.
    Gone,
    /// No reply yet.
    Pending,
}

impl AppCommand {
    /// Spawn process `index` of `app`; it joins `cgroup` before it
    /// executes anything of the app.
    pub fn spawn(&self, app: &str, index: u32, cgroup: &Path) -> Result<AppProcess> {
        let mut command = std::process::Command::new(&self.exe);
        command
            .arg("app")
            .arg("--spec")
            .arg(&self.spec)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--name", app, "--index", &index.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = cgroup::spawn_into(&mut command, cgroup)
            .with_context(|| format!("cannot spawn {app}[{index}] into {}", cgroup.display()))?;
        Ok(AppProcess {
            pid: child.id() as i32,
            stdin: child.stdin.take().expect("stdin is piped"),
            stdout: child.stdout.take().expect("stdout is piped"),
            pending: Vec::new(),
        })
    }
}

impl AppProcess {
    /// Send a command; false if the process is gone.
    pub fn send(&mut self, command: Command) -> bool {
        writeln!(self.stdin, "{}", command.as_str())
            .and_then(|()| self.stdin.flush())
            .is_ok()
    }

    /// Wait at most `wait` for the reply line.
    pub fn poll_reply(&mut self, wait: Duration) -> Result<Reply> {
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                let line = String::from_utf8_lossy(&line);
                let costs = protocol::parse_ready(&line)
                    .with_context(|| format!("app process {} replied wrongly", self.pid))?;
                return Ok(Reply::Ready(costs));
            }
            let mut fds = [sys::pollfd(self.stdout.as_fd(), libc::POLLIN)];
            if sys::poll(&mut fds, Some(wait))? == 0 {
                return Ok(Reply::Pending);
            }
            let mut buf = [0u8; 64];
            match self.stdout.read(&mut buf) {
                Ok(0) | Err(_) => return Ok(Reply::Gone),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
            }
        }
    }
}

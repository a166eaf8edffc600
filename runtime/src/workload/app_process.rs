//! The activity manager's side of one app process (forked by the zygote,
//! zygote.rs): sending protocol commands, and waiting for replies in
//! slices so the caller can do other work (log deaths, check the deadline)
//! while an app launches.

use crate::sys;
use crate::workload::protocol::{self, Command, Costs};
use anyhow::{Context, Result};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

pub struct AppProcess {
    pub pid: i32,
    stdin: File,
    stdout: File,
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

impl AppProcess {
    /// The process `pid`, with the write end of its stdin and the read end
    /// of its stdout.
    pub fn new(pid: i32, stdin: OwnedFd, stdout: OwnedFd) -> AppProcess {
        AppProcess {
            pid,
            stdin: stdin.into(),
            stdout: stdout.into(),
            pending: Vec::new(),
        }
    }

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

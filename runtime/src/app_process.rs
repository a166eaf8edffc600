//! The activity manager's side of one app process: spawning `pmr-guest app`
//! straight into its cgroup, sending protocol commands, and waiting for
//! replies in slices so the caller can do other work (log deaths, check
//! the deadline) while an app launches.

use crate::protocol::{Command, READY};
use crate::sys;
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
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

#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    Ready,
    /// The process closed its stdout: it died.
    Gone,
    /// No reply yet.
    Pending,
}

impl AppCommand {
    /// Spawn process `index` of `app`; it joins the cgroup whose
    /// `cgroup.procs` is given before it executes anything of the app.
    pub fn spawn(&self, app: &str, index: u32, cgroup_procs: &Path) -> Result<AppProcess> {
        let procs = CString::new(cgroup_procs.as_os_str().as_bytes())?;
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
        // SAFETY: the hook runs in the forked child and only makes
        // async-signal-safe system calls on memory prepared before fork.
        unsafe {
            command.pre_exec(move || {
                let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0" moves the writing process.
                let written = libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
                if written != 1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command.spawn().with_context(|| {
            format!(
                "cannot spawn {app}[{index}] into {}",
                cgroup_procs.display()
            )
        })?;
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
                if line.trim() != READY {
                    bail!(
                        "app process {} replied {:?} instead of {READY:?}",
                        self.pid,
                        line.trim()
                    );
                }
                return Ok(Reply::Ready);
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

//! The zygote: the parent every app process is forked from, as on Android.
//!
//! Android starts an app by forking zygote, which has preloaded the
//! framework's classes and resources. Apps share its dirty pages
//! copy-on-write (in `dumpsys meminfo` of an app, the Dalvik heap's and the
//! boot image's "Shared Dirty"), and the Java heap they allocate in is a
//! mapping inherited from it: what an app writes there is its own, in an
//! `anon_vma` of its own under the zygote's root `anon_vma`, which all apps
//! share. The testbed's zygote (`pmr-guest zygote`) has the same structure
//! at guest scale:
//!
//! - it maps one private anonymous region: `zygote.shared_mb` that it
//!   writes before any fork (the preload; every cold launch reads and
//!   checks it, so that it is also a data-integrity canary), followed by
//!   room for the largest heap of any app process, which each app writes
//!   after the fork (app.rs);
//! - the activity manager asks it for an app process over a Unix socket,
//!   its stdin, passing the app's stdin and stdout pipes (SCM_RIGHTS). It
//!   forks twice: the grandchild joins the app's cgroup, replies with its
//!   pid and serves the app protocol; the middle process exits at once, so
//!   the app is reparented to the runtime, a child subreaper
//!   (PR_SET_CHILD_SUBREAPER), whose child reaper learns how it ended.
//!
//! The zygote stays single-threaded: fork() copies the calling thread only.

use crate::pattern::{self, PAGE_SIZE, WORDS_PER_PAGE};
use crate::spec::Spec;
use crate::sys;
use crate::sys::cgroup;
use crate::workload::app::{self, ProcessModel};
use crate::workload::app_files::pages_of_mb;
use crate::workload::app_process::AppProcess;
use crate::workload::memory::AnonRegion;
use anyhow::{bail, ensure, Context, Result};
use nix::sys::socket::{recvmsg, sendmsg, ControlMessage, ControlMessageOwned, MsgFlags};
use nix::unistd::{fork, ForkResult};
use serde::{Deserialize, Serialize};
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the zygote may take to preload, and to fork an app process.
const READY_WITHIN: Duration = Duration::from_secs(120);
const FORK_WITHIN: Duration = Duration::from_secs(60);

/// What the activity manager asks for: one line of JSON, with the app's
/// stdin (read end) and stdout (write end) attached.
#[derive(Debug, Serialize, Deserialize)]
struct ForkRequest {
    app: String,
    index: u32,
    cgroup: PathBuf,
    /// When the workload started, CLOCK_MONOTONIC nanoseconds: the clock
    /// of events.jsonl, on which the app times its ticks.csv rows. The
    /// zygote is started before the workload's clock is (it preloads
    /// during setup), so the start cannot be inherited and comes with each
    /// request; CLOCK_MONOTONIC is the same in every process of the guest.
    start_mono_ns: u64,
}

/// The app process's answer, one line of JSON: its pid once it is in its
/// cgroup, or why it could not start.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum ForkReply {
    Pid(i32),
    Error(String),
}

/// The zygote's region: pages to preload, then room for an app's heap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub shared_pages: usize,
    pub heap_pages: usize,
}

impl Layout {
    /// The preload of `spec.zygote`, and room for the largest peak heap of
    /// any process of any app.
    pub fn of(spec: &Spec) -> Layout {
        let heap_pages = spec
            .apps
            .iter()
            .flat_map(|a| (0..a.processes).map(move |i| ProcessModel::new(spec, a, i).peak_pages))
            .max()
            .unwrap_or(0);
        Layout {
            shared_pages: pages_of_mb(spec.zygote.shared_mb),
            heap_pages,
        }
    }
}

/// The pages the zygote wrote before forking, as every app sees them.
pub struct Preload<'a> {
    words: &'a [AtomicU64],
}

impl Preload<'_> {
    fn salt() -> u64 {
        pattern::salt("zygote", 0)
    }

    /// Read every page and check its word.
    pub fn check(&self) -> Result<()> {
        let salt = Self::salt();
        for page in 0..self.words.len() / WORDS_PER_PAGE {
            let found = self.words[page * WORDS_PER_PAGE].load(Ordering::Relaxed);
            ensure!(
                pattern::verify(salt, page, found),
                "data corruption: zygote page {page} holds {found:#018x}, expected {:#018x}",
                pattern::word(salt, page, 0)
            );
        }
        Ok(())
    }
}

/// The activity manager's handle on the zygote process.
pub struct Zygote {
    pub pid: i32,
    sock: UnixStream,
    pending: Vec<u8>,
}

impl Zygote {
    /// Start `exe zygote` in `cgroup` and wait until it has preloaded.
    pub fn start(exe: &Path, spec: &Path, data_dir: &Path, cgroup: &Path) -> Result<Zygote> {
        let (sock, theirs) = UnixStream::pair().context("socketpair for the zygote failed")?;
        let mut command = Command::new(exe);
        command
            .arg("zygote")
            .arg("--spec")
            .arg(spec)
            .arg("--data-dir")
            .arg(data_dir)
            .stdin(Stdio::from(OwnedFd::from(theirs)));
        let child = cgroup::spawn_into(&mut command, cgroup)
            .with_context(|| format!("cannot spawn the zygote into {}", cgroup.display()))?;
        let mut zygote = Zygote {
            pid: child.id() as i32,
            sock,
            pending: Vec::new(),
        };
        let line = zygote.read_line(READY_WITHIN, "preload")?;
        ensure!(line == "ready", "the zygote said {line:?} instead of ready");
        Ok(zygote)
    }

    /// Fork process `index` of `app`, in `cgroup`, from the zygote;
    /// `start_mono` is the workload's start on CLOCK_MONOTONIC
    /// (`EventLog::start_monotonic`).
    pub fn fork_app(
        &mut self,
        app: &str,
        index: u32,
        cgroup: &Path,
        start_mono: Duration,
    ) -> Result<AppProcess> {
        let (app_stdin, to_app) = std::io::pipe().context("pipe failed")?;
        let (from_app, app_stdout) = std::io::pipe().context("pipe failed")?;
        let mut line = serde_json::to_string(&ForkRequest {
            app: app.into(),
            index,
            cgroup: cgroup.into(),
            start_mono_ns: start_mono.as_nanos() as u64,
        })?;
        line.push('\n');
        let fds = [app_stdin.as_raw_fd(), app_stdout.as_raw_fd()];
        let sent = sendmsg::<()>(
            self.sock.as_raw_fd(),
            &[IoSlice::new(line.as_bytes())],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::MSG_NOSIGNAL,
            None,
        );
        match sent {
            Ok(n) if n == line.len() => {}
            Ok(n) => bail!("the zygote took {n} of {} bytes of a request", line.len()),
            Err(e) => bail!("the zygote is gone ({e}): cannot fork {app}[{index}]"),
        }
        // Only the app holds these ends now: its death closes its stdout.
        drop((app_stdin, app_stdout));
        let reply = self.read_line(FORK_WITHIN, &format!("fork of {app}[{index}]"))?;
        match serde_json::from_str(&reply)
            .with_context(|| format!("the zygote's app process replied {reply:?}"))?
        {
            ForkReply::Pid(pid) => Ok(AppProcess::new(pid, to_app.into(), from_app.into())),
            ForkReply::Error(e) => bail!("cannot start {app}[{index}]: {e}"),
        }
    }

    /// Kill the zygote (the end of the run); the child reaper reaps it.
    pub fn stop(&self) {
        // Already gone is fine.
        let _ = sys::kill(self.pid);
    }

    fn read_line(&mut self, within: Duration, what: &str) -> Result<String> {
        let until = Instant::now() + within;
        loop {
            if let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Ok(String::from_utf8_lossy(&line).trim_end().to_string());
            }
            let left = until.saturating_duration_since(Instant::now());
            ensure!(
                !left.is_zero(),
                "the zygote did not answer within {} s ({what})",
                within.as_secs()
            );
            let mut fds = [sys::pollfd(self.sock.as_fd(), libc::POLLIN)];
            if sys::poll(&mut fds, Some(left))? == 0 {
                continue;
            }
            let mut buf = [0u8; 256];
            match self.sock.read(&mut buf) {
                Ok(0) => bail!("the zygote is gone ({what}); its error is in console.log"),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e) => bail!("cannot read from the zygote ({what}): {e}"),
            }
        }
    }
}

/// `pmr-guest zygote`: preload, then fork app processes on request until
/// stdin, the activity manager's socket, closes.
pub fn main(spec_path: &Path, data_dir: &Path) -> Result<()> {
    let spec = Spec::load(spec_path)?;
    // SAFETY: fd 0 is the socket the activity manager passed as stdin; it
    // is owned here from now on, and nothing else uses stdin.
    let mut sock = unsafe { UnixStream::from_raw_fd(0) };
    let layout = Layout::of(&spec);
    let region = AnonRegion::new((layout.shared_pages + layout.heap_pages) * PAGE_SIZE)
        .context("cannot map the zygote's region")?;
    let words = region.words();
    let shared = &words[..layout.shared_pages * WORDS_PER_PAGE];
    for page in 0..layout.shared_pages {
        shared[page * WORDS_PER_PAGE]
            .store(pattern::word(Preload::salt(), page, 0), Ordering::Relaxed);
    }
    writeln!(sock, "ready").context("cannot tell the activity manager")?;

    let mut buf = [0u8; 4096];
    loop {
        let mut cmsg = nix::cmsg_space!([RawFd; 2]);
        let mut iov = [IoSliceMut::new(&mut buf)];
        let msg = recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg),
            MsgFlags::MSG_CMSG_CLOEXEC,
        )
        .context("recvmsg from the activity manager failed")?;
        let mut fds: Vec<OwnedFd> = Vec::new();
        for c in msg.cmsgs().context("bad control message")? {
            if let ControlMessageOwned::ScmRights(received) = c {
                // SAFETY: the kernel installed these fds for us.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        let len = msg.bytes;
        if len == 0 {
            return Ok(()); // the activity manager closed its end
        }
        let request: ForkRequest = serde_json::from_slice(&buf[..len])
            .with_context(|| format!("bad request {:?}", String::from_utf8_lossy(&buf[..len])))?;
        let [app_stdin, app_stdout]: [OwnedFd; 2] = fds
            .try_into()
            .map_err(|_| anyhow::anyhow!("a request must carry two fds"))?;
        let preload = Preload { words: shared };
        let heap = HeapRoom {
            region: &region,
            offset: layout.shared_pages * PAGE_SIZE,
        };
        // SAFETY: the zygote is single-threaded.
        match unsafe { fork() }.context("fork failed")? {
            ForkResult::Parent { child } => {
                drop((app_stdin, app_stdout));
                nix::sys::wait::waitpid(child, None).context("waitpid failed")?;
            }
            ForkResult::Child => {
                // SAFETY: still single-threaded.
                match unsafe { fork() } {
                    // SAFETY: _exit() ends the middle process at once.
                    Ok(ForkResult::Parent { .. }) => unsafe { libc::_exit(0) },
                    Ok(ForkResult::Child) => become_app(
                        &spec,
                        data_dir,
                        &mut sock,
                        request,
                        [app_stdin, app_stdout],
                        preload,
                        heap,
                    ),
                    Err(e) => {
                        reply(&mut sock, &ForkReply::Error(format!("fork failed: {e}")));
                        // SAFETY: as above.
                        unsafe { libc::_exit(1) }
                    }
                }
            }
        }
    }
}

/// The part of the zygote's region an app process writes its heap in.
struct HeapRoom<'a> {
    region: &'a AnonRegion,
    offset: usize,
}

fn reply(sock: &mut UnixStream, reply: &ForkReply) {
    let mut line = serde_json::to_string(reply).expect("a reply serializes");
    line.push('\n');
    // The activity manager times out if this is lost.
    let _ = sock.write_all(line.as_bytes());
}

/// In the forked app process: join the cgroup, reply, take the pipes as
/// stdin and stdout, serve the app protocol, exit. Never returns to the
/// zygote's loop, so nothing of the zygote is dropped here.
fn become_app(
    spec: &Spec,
    data_dir: &Path,
    sock: &mut UnixStream,
    request: ForkRequest,
    [app_stdin, app_stdout]: [OwnedFd; 2],
    preload: Preload<'_>,
    heap: HeapRoom<'_>,
) -> ! {
    if let Err(e) = std::fs::write(request.cgroup.join("cgroup.procs"), "0") {
        let e = format!("cannot join {}: {e}", request.cgroup.display());
        reply(sock, &ForkReply::Error(e));
        std::process::exit(1);
    }
    reply(sock, &ForkReply::Pid(std::process::id() as i32));
    // The socket is fd 0: from here on, it is the app's stdin.
    if let Err(e) =
        nix::unistd::dup2_stdin(&app_stdin).and_then(|()| nix::unistd::dup2_stdout(&app_stdout))
    {
        eprintln!(
            "pmr-guest app {}[{}]: dup2 failed: {e}",
            request.app, request.index
        );
        std::process::exit(1);
    }
    drop((app_stdin, app_stdout));
    let label = format!("{}[{}]", request.app, request.index);
    let since_start = sys::monotonic().saturating_sub(Duration::from_nanos(request.start_mono_ns));
    let clock = Instant::now()
        .checked_sub(since_start)
        .unwrap_or_else(Instant::now);
    // SAFETY: this process owns its copy of the room from now on and never
    // returns to the zygote's loop, whose region is therefore never dropped.
    let region = unsafe { heap.region.tail(heap.offset) };
    // A panic must end this process, not unwind into the zygote's loop.
    let served = std::panic::catch_unwind(AssertUnwindSafe(|| {
        app::serve(
            spec,
            data_dir,
            &request.app,
            request.index,
            region,
            &preload,
            clock,
        )
    }));
    let code = match served {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("pmr-guest app {label}: error: {e:#}");
            1
        }
        Err(_) => 1, // the panic message is on stderr already
    };
    std::process::exit(code)
}

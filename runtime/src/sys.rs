//! Thin safe wrappers over the Linux system calls the runtime needs and std
//! does not offer: pidfds, process_mrelease, process_madvise, poll,
//! mlockall, mount, swapon and swapoff, fallocate, waitpid, scheduling.
//! Its modules are the runtime's other ways into the kernel: cgroups and
//! their memory.stat, /proc and /sys parsers, PSI, tracefs, kernel-thread
//! scheduling and CPU time.

pub mod cgroup;
pub mod kthread_sched;
pub mod memcg_stat;
pub mod proc_files;
pub mod psi;
pub mod threads_cpu;
pub mod trace_events;
pub mod tracefs;

use std::ffi::CString;
use std::io::{Error, Result};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

fn check(ret: libc::c_long) -> Result<libc::c_long> {
    if ret < 0 {
        Err(Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cstring(path: &Path) -> Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(Error::other)
}

pub fn pidfd_open(pid: i32) -> Result<OwnedFd> {
    // SAFETY: plain syscall; on success the kernel returns a new fd we own.
    let fd = check(unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) })?;
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

pub fn pidfd_kill(pidfd: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: plain syscall on a valid pidfd, no siginfo.
    check(unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            pidfd.as_raw_fd(),
            libc::SIGKILL,
            std::ptr::null::<u8>(),
            0,
        )
    })?;
    Ok(())
}

/// Free a killed process's memory now rather than when it gets to exit.
pub fn process_mrelease(pidfd: BorrowedFd<'_>) -> Result<()> {
    // SAFETY: plain syscall on a valid pidfd.
    check(unsafe { libc::syscall(libc::SYS_process_mrelease, pidfd.as_raw_fd(), 0) })?;
    Ok(())
}

/// The most iovecs one process_madvise call takes (UIO_MAXIOV).
pub const MAX_IOVECS: usize = 1024;

/// process_madvise(2): give `advice` for `ranges` (byte addresses) of the
/// process behind `pidfd`, at most `MAX_IOVECS` of them. The bytes
/// advised: those of the leading ranges advised in full, so a range that
/// failed is the one after them.
pub fn process_madvise(
    pidfd: BorrowedFd<'_>,
    ranges: &[std::ops::Range<u64>],
    advice: i32,
) -> Result<u64> {
    let iovecs: Vec<libc::iovec> = ranges
        .iter()
        .map(|r| libc::iovec {
            iov_base: r.start as *mut libc::c_void,
            iov_len: (r.end - r.start) as usize,
        })
        .collect();
    // SAFETY: the iovecs are valid for the call; they describe addresses
    // of the other process and are never dereferenced here.
    let advised = check(unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd.as_raw_fd(),
            iovecs.as_ptr(),
            iovecs.len(),
            advice,
            0,
        )
    })?;
    Ok(advised as u64)
}

/// poll(2) that retries on EINTR; the timeout is rounded up to whole
/// milliseconds and `None` waits forever.
pub fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> Result<usize> {
    let ms = timeout.map_or(-1, |t| {
        t.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
    });
    loop {
        // SAFETY: `fds` is a valid, exclusively borrowed array.
        let ret = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if ret >= 0 {
            return Ok(ret as usize);
        }
        let err = Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

pub fn pollfd(fd: BorrowedFd<'_>, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    }
}

pub fn mlockall() -> Result<()> {
    // SAFETY: no pointers involved.
    check(unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) }.into())?;
    Ok(())
}

pub fn mount(source: &str, target: &Path, fstype: &str) -> Result<()> {
    mount_with_flags(source, target, fstype, 0)
}

/// mount(2) with MS_RDONLY.
pub fn mount_read_only(source: &str, target: &Path, fstype: &str) -> Result<()> {
    mount_with_flags(source, target, fstype, libc::MS_RDONLY)
}

fn mount_with_flags(source: &str, target: &Path, fstype: &str, flags: libc::c_ulong) -> Result<()> {
    let (source, fstype) = (CString::new(source)?, CString::new(fstype)?);
    let target = cstring(target)?;
    // SAFETY: valid NUL-terminated strings, no data argument.
    check(
        unsafe {
            libc::mount(
                source.as_ptr(),
                target.as_ptr(),
                fstype.as_ptr(),
                flags,
                std::ptr::null(),
            )
        }
        .into(),
    )?;
    Ok(())
}

pub fn swapon(device: &Path, priority: u16) -> Result<()> {
    const SWAP_FLAG_PREFER: i32 = 0x8000;
    const SWAP_FLAG_PRIO_MASK: i32 = 0x7fff;
    let device = cstring(device)?;
    let flags = SWAP_FLAG_PREFER | (i32::from(priority) & SWAP_FLAG_PRIO_MASK);
    // SAFETY: valid NUL-terminated path.
    check(unsafe { libc::swapon(device.as_ptr(), flags) }.into())?;
    Ok(())
}

/// swapon(2) without a priority: the kernel gives each such area a lower
/// one than the last, below every area swapped on with one.
pub fn swapon_default_priority(file: &Path) -> Result<()> {
    let file = cstring(file)?;
    // SAFETY: valid NUL-terminated path.
    check(unsafe { libc::swapon(file.as_ptr(), 0) }.into())?;
    Ok(())
}

pub fn swapoff(file: &Path) -> Result<()> {
    let file = cstring(file)?;
    // SAFETY: valid NUL-terminated path.
    check(unsafe { libc::swapoff(file.as_ptr()) }.into())?;
    Ok(())
}

/// fallocate(2) mode 0: allocate `len` bytes of `file` from offset 0.
pub fn fallocate(file: &std::fs::File, len: u64) -> Result<()> {
    let len = libc::off_t::try_from(len).map_err(Error::other)?;
    // SAFETY: plain syscall on an open fd.
    check(unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len) }.into())?;
    Ok(())
}

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// Wait for any child; `Ok(None)` when there is none.
pub fn wait_any_child() -> Result<Option<(i32, Exit)>> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid out pointer.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid > 0 {
            let exit = if libc::WIFSIGNALED(status) {
                Exit::Signal(libc::WTERMSIG(status))
            } else {
                Exit::Code(libc::WEXITSTATUS(status))
            };
            return Ok(Some((pid, exit)));
        }
        let err = Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::ECHILD) => return Ok(None),
            _ => return Err(err),
        }
    }
}

/// Make the calling process a child subreaper: orphans among its
/// descendants become its children (the zygote's app processes).
pub fn set_child_subreaper() -> Result<()> {
    // SAFETY: plain prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }.into())?;
    Ok(())
}

pub fn kill(pid: i32) -> Result<()> {
    // SAFETY: plain syscall.
    check(unsafe { libc::kill(pid, libc::SIGKILL) }.into())?;
    Ok(())
}

/// Make the calling thread SCHED_FIFO at `priority`, as lmkd does for itself.
pub fn set_fifo(priority: i32) -> Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is valid for the call; 0 means the calling thread.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) }.into())?;
    Ok(())
}

/// Set the nice value of the calling thread.
pub fn set_thread_nice(nice: i32) -> Result<()> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    // SAFETY: plain syscall; PRIO_PROCESS with a thread id sets that thread.
    check(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) }.into())?;
    Ok(())
}

/// CLOCK_MONOTONIC now: the clock of `Instant` on Linux, and the same in
/// every process of the guest.
pub fn monotonic() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf has no memory effects.
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64
}

//! The cgroup v2 layout of the guest:
//!
//! ```text
//! <cgroup2 mount>/pmr/system           the runtime (activity manager, lmkd, sampler)
//! <cgroup2 mount>/pmr/<group>/<child>  the workload: `apps/<app>` for `run`,
//!                                      `reliability/<n>` for `reliability`
//! ```
//!
//! +memory (and +cpu where the kernel offers it) is enabled in
//! `cgroup.subtree_control` on the path down to `pmr/<group>`. cgroup2 is
//! mounted at /sys/fs/cgroup if it is not mounted anywhere yet. Workload
//! processes are spawned straight into their cgroup (`spawn_into`).

use crate::sys;
use crate::sys::proc_files::mount_point;
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};

const DEFAULT_MOUNT: &str = "/sys/fs/cgroup";

pub struct Cgroups {
    root: PathBuf,
    pmr: PathBuf,
    group: PathBuf,
}

impl Cgroups {
    /// `pmr/system` and `pmr/<group>/<child>` for each of `children`.
    pub fn setup(group: &str, children: &[&str]) -> Result<Cgroups> {
        let root = match mount_point(&fs::read_to_string("/proc/mounts")?, "cgroup2") {
            Some(root) => root,
            None => {
                let root = PathBuf::from(DEFAULT_MOUNT);
                sys::mount("none", &root, "cgroup2").with_context(|| {
                    format!("cannot mount cgroup2 at {DEFAULT_MOUNT} (kernel without CONFIG_CGROUPS/MEMCG?)")
                })?;
                root
            }
        };
        let pmr = root.join("pmr");
        let group = pmr.join(group);
        for dir in [pmr.join("system"), group.clone()]
            .into_iter()
            .chain(children.iter().map(|c| group.join(c)))
        {
            fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create cgroup {}", dir.display()))?;
        }
        for dir in [root.clone(), pmr.clone(), group.clone()] {
            enable_controllers(&dir)?;
        }
        Ok(Cgroups { root, pmr, group })
    }

    /// Move the calling process (all its threads) into `pmr/system`.
    pub fn join_system(&self) -> Result<()> {
        let procs = self.pmr.join("system/cgroup.procs");
        fs::write(&procs, std::process::id().to_string())
            .with_context(|| format!("cannot move the runtime into {}", procs.display()))
    }

    /// The directory holding the workload's cgroups (one per app for `run`).
    pub fn group_dir(&self) -> PathBuf {
        self.group.clone()
    }

    /// `pmr/<name>`, a cgroup beside `system` and the group (created if needed).
    pub fn sibling(&self, name: &str) -> Result<PathBuf> {
        let dir = self.pmr.join(name);
        fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create cgroup {}", dir.display()))?;
        Ok(dir)
    }

    /// The cgroup2 mount point (the root cgroup).
    pub fn root(&self) -> &Path {
        &self.root
    }
}

/// Spawn `command` with the child moved into `cgroup` before it executes
/// anything, so that every page it touches is charged there.
pub fn spawn_into(command: &mut Command, cgroup: &Path) -> std::io::Result<Child> {
    let procs = CString::new(cgroup.join("cgroup.procs").as_os_str().as_bytes())?;
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
    command.spawn()
}

/// Write `value` into the interface file `file` of `cgroup`. The file is
/// not created: a cgroup without it (or a cgroup removed) is ENOENT.
pub fn write_file(cgroup: &Path, file: &str, value: &str) -> std::io::Result<()> {
    fs::OpenOptions::new()
        .write(true)
        .open(cgroup.join(file))?
        .write_all(value.as_bytes())
}

fn enable_controllers(dir: &Path) -> Result<()> {
    let available = fs::read_to_string(dir.join("cgroup.controllers"))
        .with_context(|| format!("cannot read {}/cgroup.controllers", dir.display()))?;
    let has = |c: &str| available.split_whitespace().any(|a| a == c);
    if !has("memory") {
        bail!(
            "the memory controller is not available in {} (kernel without CONFIG_MEMCG?)",
            dir.display()
        );
    }
    let control = dir.join("cgroup.subtree_control");
    fs::write(&control, "+memory")
        .with_context(|| format!("cannot enable +memory in {}", control.display()))?;
    if has("cpu") {
        if let Err(e) = fs::write(&control, "+cpu") {
            eprintln!(
                "pmr-guest: warning: cannot enable +cpu in {}: {e}",
                control.display()
            );
        }
    }
    Ok(())
}

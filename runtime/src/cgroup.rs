//! The cgroup v2 layout of the phone:
//!
//! ```text
//! <cgroup2 mount>/pmr/system       the runtime (activity manager, lmkd, sampler)
//! <cgroup2 mount>/pmr/apps/<app>   each app's processes
//! ```
//!
//! +memory (and +cpu where the kernel offers it) is enabled in
//! `cgroup.subtree_control` on the path down to `pmr/apps`. cgroup2 is
//! mounted at /sys/fs/cgroup if it is not mounted anywhere yet.

use crate::proc_files::mount_point;
use crate::sys;
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};

const DEFAULT_MOUNT: &str = "/sys/fs/cgroup";

pub struct Cgroups {
    pmr: PathBuf,
}

impl Cgroups {
    pub fn setup(apps: &[&str]) -> Result<Cgroups> {
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
        for dir in [pmr.join("system"), pmr.join("apps")]
            .into_iter()
            .chain(apps.iter().map(|a| pmr.join("apps").join(a)))
        {
            fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create cgroup {}", dir.display()))?;
        }
        for dir in [root.clone(), pmr.clone(), pmr.join("apps")] {
            enable_controllers(&dir)?;
        }
        Ok(Cgroups { pmr })
    }

    /// Move the calling process (all its threads) into `pmr/system`.
    pub fn join_system(&self) -> Result<()> {
        let procs = self.pmr.join("system/cgroup.procs");
        fs::write(&procs, std::process::id().to_string())
            .with_context(|| format!("cannot move the runtime into {}", procs.display()))
    }

    /// The directory holding one cgroup per app.
    pub fn apps_dir(&self) -> PathBuf {
        self.pmr.join("apps")
    }
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

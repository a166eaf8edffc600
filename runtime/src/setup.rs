//! Turning the fresh virtme-ng guest into the phone the spec describes,
//! before the workload starts: checks, cgroups, memory sysctls, swap (the
//! disk, zram, or both with zram first; with SWAM's swap-file daemon the
//! disk is an ext4 filesystem for its swap files instead), the data disk
//! with the apps' files (made on the host, mounted read-only), the scheme's
//! knobs, and finally an empty page cache. Every failure here is a setup
//! error (exit 2) whose message says how to fix it.
//!
//! The guest shares the host's root filesystem read-only, so mkswap and
//! mkfs.ext4 are the host's; /tmp is a fresh tmpfs for the mount points.

use crate::pattern::{self, PAGE_SIZE};
use crate::spec::{Knob, Memory, Spec, Swap, Swapd};
use crate::sys;
use crate::sys::cgroup::Cgroups;
use crate::sys::kthread_sched;
use crate::sys::proc_files::{self, MemInfo};
use crate::sys::psi;
use crate::workload::app_files::{self, app_files, DATA_MOUNT};
use crate::workload::swam::SWAP_FILE_DIR;
use crate::workload::unused_anon::idle_bitmap;
use anyhow::{bail, ensure, Context, Result};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

const SYS_BLOCK: &str = "/sys/block";
/// Memory the runtime needs besides the largest app to start at all.
const RUNTIME_RESERVE_KB: i64 = 64 * 1024;
const ZRAM_PRIORITY: u16 = 100;
const DISK_SWAP_PRIORITY: u16 = 10;
/// Directories searched for mkswap and mkfs.ext4 besides $PATH.
const SBIN_DIRS: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The prepared phone, as run.json reports it.
pub struct Phone {
    pub kernel: String,
    pub knobs: BTreeMap<String, String>,
    pub kthreads: Vec<kthread_sched::Applied>,
    pub swap_dev: String,
    /// (major, minor) of the swap disk.
    pub swap_dev_number: (u32, u32),
    /// The zram device swapped on (`zram0`), if any.
    pub zram_dev: Option<String>,
    pub cgroups: Cgroups,
    pub mem_total_kb: i64,
    pub swap_total_kb: i64,
}

pub fn prepare(spec: &Spec) -> Result<Phone> {
    require_root("pmr-guest run")?;
    ensure!(
        Path::new(psi::PSI_MEMORY).exists(),
        "{} is missing: boot a kernel with CONFIG_PSI=y and without psi=0",
        psi::PSI_MEMORY
    );
    if spec.scheme.skew.is_some() {
        idle_bitmap::require()?;
    }
    let swap_dev = require_disk("swap", &spec.swap.serial)?;
    let data_dev = require_disk("data", &spec.data_disk.serial)?;
    check_memory(read_meminfo()?.mem_available, spec)?;
    require_no_swap()?;
    create_out_dir(&spec.out_dir)?;

    let names: Vec<&str> = spec.apps.iter().map(|a| a.name.as_str()).collect();
    let cgroups = Cgroups::setup("apps", &names)?;
    cgroups.join_system()?;
    // The kernel's OOM killer must pick apps, never the runtime.
    protect_from_oom_killer()?;
    apply_memory(&spec.memory)?;
    let swapd = spec.scheme.swam.as_ref().and_then(|s| s.swapd.as_ref());
    let zram_dev = setup_swap(&swap_dev, &spec.swap, swapd)?;
    mount_data_disk(&data_dev, spec)?;
    let knobs = apply_knobs(&spec.scheme.knobs)?;
    let kthreads = kthread_sched::apply(&spec.scheme.kthreads)?;
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    write("/proc/sys/vm/drop_caches", "3")?;

    let mem = read_meminfo()?;
    Ok(Phone {
        kernel: kernel_release()?,
        knobs,
        kthreads,
        swap_dev_number: dev_numbers(&swap_dev)?,
        swap_dev,
        zram_dev,
        cgroups,
        mem_total_kb: mem.mem_total,
        swap_total_kb: mem.swap_total,
    })
}

/// The steps of `prepare` that other guest commands (`reliability`) share.
pub fn require_root(command: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    ensure!(
        unsafe { libc::geteuid() } == 0,
        "`{command}` must run as root inside the guest"
    );
    Ok(())
}

pub fn require_no_swap() -> Result<()> {
    let active_swaps = fs::read_to_string("/proc/swaps")?
        .lines()
        .count()
        .saturating_sub(1);
    ensure!(active_swaps == 0, "swap is already active ({active_swaps} devices in /proc/swaps): boot the guest without swap");
    Ok(())
}

pub fn create_out_dir(out_dir: &Path) -> Result<()> {
    fs::create_dir_all(out_dir).with_context(|| {
        format!(
            "cannot create out_dir {}: share it read-write",
            out_dir.display()
        )
    })
}

/// oom_score_adj -1000 for the calling process: the OOM killer must pick
/// the workload, never the runtime.
pub fn protect_from_oom_killer() -> Result<()> {
    write("/proc/self/oom_score_adj", "-1000")
}

/// The spec's watermark and swappiness sysctls.
pub fn apply_memory(m: &Memory) -> Result<()> {
    write(
        "/proc/sys/vm/watermark_scale_factor",
        &m.watermark_scale_factor.to_string(),
    )?;
    write(
        "/proc/sys/vm/min_free_kbytes",
        &m.min_free_kbytes.to_string(),
    )?;
    write("/proc/sys/vm/swappiness", &m.swappiness.to_string())
}

/// Unless `swap.disk` is false, the swap disk: mkswap and swapon, or with
/// SWAM's `swapd` an ext4 filesystem on `SWAP_FILE_DIR` for its swap files
/// (none swapped on yet); then the zram device if `swap.zram_mb` > 0: the
/// zram device's name, if any.
pub fn setup_swap(swap_dev: &str, swap: &Swap, swapd: Option<&Swapd>) -> Result<Option<String>> {
    if swap.disk {
        match swapd {
            None => setup_disk_swap(swap_dev)?,
            Some(_) => setup_swap_file_disk(swap_dev, Path::new(SWAP_FILE_DIR))?,
        }
    }
    if swap.zram_mb > 0.0 {
        return setup_zram(swap.zram_mb).map(Some);
    }
    Ok(None)
}

pub fn kernel_release() -> Result<String> {
    Ok(fs::read_to_string("/proc/sys/kernel/osrelease")?
        .trim()
        .to_string())
}

pub fn read_meminfo() -> Result<MemInfo> {
    proc_files::parse_meminfo(&fs::read_to_string("/proc/meminfo")?)
}

fn write(path: &str, value: &str) -> Result<()> {
    fs::write(path, value).with_context(|| format!("cannot write {value:?} to {path}"))
}

/// The virtio-blk disk (`vd*`) whose serial is `serial`.
pub fn find_disk(sys_block: &Path, serial: &str) -> Result<Option<String>> {
    let mut names: Vec<String> = fs::read_dir(sys_block)
        .with_context(|| format!("cannot list {}", sys_block.display()))?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("vd"))
        .collect();
    names.sort();
    Ok(names.into_iter().find(|n| {
        fs::read_to_string(sys_block.join(n).join("serial")).is_ok_and(|s| s.trim() == serial)
    }))
}

pub fn require_disk(role: &str, serial: &str) -> Result<String> {
    find_disk(Path::new(SYS_BLOCK), serial)?.with_context(|| {
        format!("no {role} disk: no /sys/block/vd*/serial is {serial:?}; attach a virtio-blk disk with serial={serial}")
    })
}

/// `MAJOR:MINOR` of /sys/block/<dev>/dev.
pub fn parse_dev_numbers(text: &str) -> Result<(u32, u32)> {
    let (major, minor) = text
        .trim()
        .split_once(':')
        .with_context(|| format!("bad device number {text:?}"))?;
    Ok((major.parse()?, minor.parse()?))
}

pub fn dev_numbers(dev: &str) -> Result<(u32, u32)> {
    parse_dev_numbers(&fs::read_to_string(
        Path::new(SYS_BLOCK).join(dev).join("dev"),
    )?)
}

/// Enough MemAvailable for the runtime and the largest app, or an error.
/// An app takes its heap, its files, and its private copies of their
/// first `so_mb` (its shared objects' data).
pub fn check_memory(mem_available_kb: i64, spec: &Spec) -> Result<()> {
    let footprint = |a: &crate::spec::AppSpec| a.anon_mb + a.file_mb + a.so_mb;
    let Some(largest) = spec
        .apps
        .iter()
        .max_by(|a, b| footprint(a).total_cmp(&footprint(b)))
    else {
        bail!("the spec has no apps");
    };
    let app_kb = (footprint(largest) * 1024.0).ceil() as i64;
    if mem_available_kb < RUNTIME_RESERVE_KB + app_kb {
        bail!(
            "MemAvailable is {mem_available_kb} kB but the runtime needs {RUNTIME_RESERVE_KB} kB plus \
             {app_kb} kB for the largest app ({}): boot the guest with more memory or shrink the profile",
            largest.name
        );
    }
    Ok(())
}

fn find_tool(tool: &str) -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(tool))
        .find(|p| p.is_file())
        .with_context(|| {
            format!("{tool} not found: install it on the host (the guest uses the host's tools)")
        })
}

pub(crate) fn run_tool(tool: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(find_tool(tool)?)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {tool}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        bail!(
            "`{tool} {}` failed ({}): {}",
            args.join(" "),
            out.status,
            stderr.trim().replace('\n', "; ")
        );
    }
    Ok(())
}

fn setup_disk_swap(dev: &str) -> Result<()> {
    let node = format!("/dev/{dev}");
    run_tool("mkswap", &["-f", &node])?;
    sys::swapon(Path::new(&node), DISK_SWAP_PRIORITY)
        .with_context(|| format!("swapon {node} failed (kernel without CONFIG_SWAP?)"))
}

/// mkfs.ext4 on the swap disk, mounted read-write on `dir`: where SWAM's
/// daemon makes its swap files (workload/swam.rs). Its inode tables are
/// written now rather than by the kernel in the background, which would
/// add writes to the disk's figures during the run. Swap files need no
/// journal, few inodes and no blocks reserved for root, so that the
/// files get all but about 1% of the disk.
fn setup_swap_file_disk(dev: &str, dir: &Path) -> Result<()> {
    let node = format!("/dev/{dev}");
    let args = ["-q", "-F", "-O", "^has_journal", "-m", "0", "-N", "64"];
    let eager = "lazy_itable_init=0";
    run_tool("mkfs.ext4", &[&args[..], &["-E", eager, &node]].concat())?;
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    sys::mount(&node, dir, "ext4")
        .with_context(|| format!("cannot mount {node} on {} (CONFIG_EXT4_FS?)", dir.display()))
}

/// Size the first zram device (hot-adding one if there is none), swap on
/// it and name it.
fn setup_zram(mb: f64) -> Result<String> {
    let name = if Path::new("/sys/block/zram0").exists() {
        "zram0".to_string()
    } else {
        let id = fs::read_to_string("/sys/class/zram-control/hot_add")
            .context("no zram device: boot a kernel with CONFIG_ZRAM=y")?;
        format!("zram{}", id.trim())
    };
    let sys = Path::new(SYS_BLOCK).join(&name);
    fs::write(sys.join("comp_algorithm"), "lz4")
        .context("zram: cannot select lz4 (CONFIG_CRYPTO_LZ4?)")?;
    let bytes = (mb * (1u64 << 20) as f64) as u64;
    fs::write(sys.join("disksize"), bytes.to_string())
        .with_context(|| format!("zram: cannot set disksize of {name}"))?;
    let node = format!("/dev/{name}");
    run_tool("mkswap", &["-f", &node])?;
    sys::swapon(Path::new(&node), ZRAM_PRIORITY)
        .with_context(|| format!("swapon {node} failed"))?;
    Ok(name)
}

/// Mount the data disk read-only: the host made it (`pmr-guest app-files`,
/// then `mkfs.ext4 -d`) and every guest of a campaign shares it; check
/// that it holds every app's files, whole.
fn mount_data_disk(dev: &str, spec: &Spec) -> Result<()> {
    let node = format!("/dev/{dev}");
    fs::create_dir_all(DATA_MOUNT)?;
    sys::mount_read_only(&node, Path::new(DATA_MOUNT), "ext4")
        .with_context(|| format!("cannot mount {node} on {DATA_MOUNT} (CONFIG_EXT4_FS?)"))?;
    check_app_files(Path::new(DATA_MOUNT), spec)
}

/// Every app file is under `data_dir` with its size in whole pages.
pub fn check_app_files(data_dir: &Path, spec: &Spec) -> Result<()> {
    for app in &spec.apps {
        let dir = app_files::app_dir(data_dir, &app.name);
        for file in app_files(app) {
            let path = file.path(&dir);
            let len = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            ensure!(
                len == (file.pages * PAGE_SIZE) as u64,
                "the data disk has no {} of {} pages: the host makes the disk from \
                 `pmr-guest app-files` with this spec (data_disk.py)",
                path.display(),
                file.pages
            );
        }
    }
    Ok(())
}

/// Create every app's files under `data_dir` (`pmr-guest app-files`).
pub fn write_app_files(data_dir: &Path, spec: &Spec) -> Result<()> {
    let mut page = vec![0u8; PAGE_SIZE];
    for app in &spec.apps {
        let dir = app_files::app_dir(data_dir, &app.name);
        fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for file in app_files(app) {
            let path = file.path(&dir);
            let mut out = BufWriter::with_capacity(
                1 << 20,
                File::create(&path).with_context(|| format!("cannot create {}", path.display()))?,
            );
            for p in 0..file.pages {
                pattern::fill_file_page(&mut page, file.salt, p);
                out.write_all(&page)
                    .with_context(|| format!("cannot write {}", path.display()))?;
            }
            out.into_inner().map_err(|e| e.into_error())?;
        }
    }
    Ok(())
}

/// Write each knob in order and record what reading it back gives.
pub fn apply_knobs(knobs: &[Knob]) -> Result<BTreeMap<String, String>> {
    knobs
        .iter()
        .map(|k| {
            let path = k.path.display().to_string();
            fs::write(&k.path, &k.value).with_context(|| {
                format!("scheme knob: cannot write {:?} to {path}: does this kernel have the scheme's patches and config?", k.value)
            })?;
            let read_back = fs::read_to_string(&k.path).with_context(|| format!("scheme knob: cannot read back {path}"))?;
            Ok((path, read_back.trim().to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> Spec {
        Spec::parse(include_str!("../tests/fixtures/spec.json")).unwrap()
    }

    #[test]
    fn memory_check_names_the_largest_app() {
        let spec = fixture(); // chrome: 120 + 20 MB is the largest
        let need = 64 * 1024 + 140 * 1024;
        assert!(check_memory(need, &spec).is_ok());
        let err = check_memory(need - 1, &spec).unwrap_err().to_string();
        assert!(
            err.contains("chrome") && err.contains("more memory"),
            "{err}"
        );
    }

    #[test]
    fn finds_disks_by_serial() {
        let root = std::env::temp_dir().join(format!("pmr-sysblock-{}", std::process::id()));
        for (dev, serial) in [
            ("vda", "root"),
            ("vdb", "pmrswap"),
            ("vdc", "pmrdata"),
            ("sda", "pmrdata"),
        ] {
            fs::create_dir_all(root.join(dev)).unwrap();
            fs::write(root.join(dev).join("serial"), format!("{serial}\n")).unwrap();
        }
        assert_eq!(find_disk(&root, "pmrswap").unwrap().as_deref(), Some("vdb"));
        assert_eq!(find_disk(&root, "pmrdata").unwrap().as_deref(), Some("vdc"));
        assert_eq!(find_disk(&root, "missing").unwrap(), None);
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn device_numbers() {
        assert_eq!(parse_dev_numbers("254:16\n").unwrap(), (254, 16));
        assert!(parse_dev_numbers("254").is_err());
    }
}

//! Memory cgroups being born and dying under load: reading a cgroup's
//! memory figures, killing everything in it (`cgroup.kill`) and removing it
//! (rmdir), waiting for pages on PMR's victim lists, and counting the dying
//! memcgs the kernel still holds (`nr_dying_descendants` in the root's
//! cgroup.stat: removed cgroups whose memory is not all freed yet), and
//! counting a cgroup's OOM kills (memory.events).

use crate::sys::memcg_stat::{self, MemoryStat};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const POLL: Duration = Duration::from_millis(50);
/// rmdir right after the last process left may see EBUSY for a moment.
const RMDIR_ATTEMPTS: u32 = 50;

pub fn memory_stat(cgroup: &Path) -> Result<MemoryStat> {
    let path = cgroup.join("memory.stat");
    memcg_stat::parse(
        &fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?,
    )
}

/// A one-number cgroup file such as memory.current or memory.swap.current.
pub fn read_number(cgroup: &Path, file: &str) -> Result<u64> {
    let path = cgroup.join(file);
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    text.trim()
        .parse()
        .with_context(|| format!("bad number in {}", path.display()))
}

/// `oom_kill` of a memory.events text: the cgroup's processes killed by
/// any OOM killer (the global one included).
pub fn parse_oom_kills(memory_events: &str) -> Result<u64> {
    memory_events
        .lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .context("memory.events has no oom_kill")?
        .trim()
        .parse()
        .context("bad oom_kill in memory.events")
}

pub fn oom_kills(cgroup: &Path) -> Result<u64> {
    let path = cgroup.join("memory.events");
    parse_oom_kills(
        &fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?,
    )
}

/// `nr_dying_descendants` of a cgroup.stat text.
pub fn parse_dying(cgroup_stat: &str) -> Result<u64> {
    cgroup_stat
        .lines()
        .find_map(|l| l.strip_prefix("nr_dying_descendants "))
        .context("cgroup.stat has no nr_dying_descendants")?
        .trim()
        .parse()
        .context("bad nr_dying_descendants")
}

pub fn dying_descendants(root: &Path) -> Result<u64> {
    parse_dying(&fs::read_to_string(root.join("cgroup.stat"))?)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VictimWait {
    /// memory.stat counts no victims: the kernel has no PMR.
    NoVictimList,
    /// Bytes on the victim lists when they were first seen.
    Seen(i64),
    NotSeen,
}

/// Wait at most `timeout` for the cgroup to have pages on the victim lists.
pub fn wait_for_victims(cgroup: &Path, timeout: Duration) -> Result<VictimWait> {
    let end = Instant::now() + timeout;
    loop {
        match memcg_stat::victim(&memory_stat(cgroup)?) {
            None => return Ok(VictimWait::NoVictimList),
            Some(v) if v > 0 => return Ok(VictimWait::Seen(v)),
            Some(_) if Instant::now() >= end => return Ok(VictimWait::NotSeen),
            Some(_) => std::thread::sleep(POLL),
        }
    }
}

fn populated(cgroup: &Path) -> Result<bool> {
    let events = fs::read_to_string(cgroup.join("cgroup.events"))?;
    Ok(events.lines().any(|l| l.trim() == "populated 1"))
}

/// Wait at most `timeout` for the cgroup to have no process left.
pub fn wait_empty(cgroup: &Path, timeout: Duration) -> Result<Duration> {
    let start = Instant::now();
    while populated(cgroup)? {
        if start.elapsed() > timeout {
            bail!(
                "{} still has processes {:.0} s after they were killed",
                cgroup.display(),
                timeout.as_secs_f64()
            );
        }
        std::thread::sleep(POLL);
    }
    Ok(start.elapsed())
}

/// Kill every process of the cgroup and wait until it is empty; returns
/// how long emptying took.
pub fn kill_all(cgroup: &Path, timeout: Duration) -> Result<Duration> {
    let kill = cgroup.join("cgroup.kill");
    fs::write(&kill, "1").with_context(|| {
        format!(
            "cannot write 1 to {} (kernel older than 5.14?)",
            kill.display()
        )
    })?;
    wait_empty(cgroup, timeout)
}

/// rmdir an empty cgroup, retrying briefly on EBUSY.
pub fn remove(cgroup: &Path) -> Result<()> {
    let mut attempt = 0;
    loop {
        match fs::remove_dir(cgroup) {
            Ok(()) => return Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && attempt < RMDIR_ATTEMPTS => {
                attempt += 1;
                std::thread::sleep(POLL);
            }
            Err(e) => return Err(e).with_context(|| format!("cannot rmdir {}", cgroup.display())),
        }
    }
}

/// Every cgroup under `root` (root included) with pages on the victim
/// list, as (path, bytes); empty on a kernel without PMR.
pub fn cgroups_with_victims(root: &Path) -> Result<Vec<(PathBuf, i64)>> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if let Ok(text) = fs::read_to_string(dir.join("memory.stat")) {
            if let Some(v) = memcg_stat::victim(&memcg_stat::parse(&text)?).filter(|&v| v != 0) {
                found.push((dir.clone(), v));
            }
        }
        for entry in fs::read_dir(&dir)?.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dying_count_from_cgroup_stat() {
        assert_eq!(
            parse_dying("nr_descendants 7\nnr_dying_descendants 2\n").unwrap(),
            2
        );
        assert!(parse_dying("nr_descendants 7\n").is_err());
    }

    #[test]
    fn oom_kills_from_memory_events() {
        let events = "low 0\nhigh 0\nmax 0\noom 0\noom_kill 2\noom_group_kill 0\n";
        assert_eq!(parse_oom_kills(events).unwrap(), 2);
        assert!(parse_oom_kills("low 0\n").is_err());
    }

    #[test]
    fn victims_are_found_anywhere_in_the_tree() {
        let root = std::env::temp_dir().join(format!("pmr-cg-{}", std::process::id()));
        let a = root.join("pmr/reliability/0");
        fs::create_dir_all(&a).unwrap();
        fs::write(
            root.join("memory.stat"),
            "anon 1\nvictim_anon 0\nvictim_file 0\n",
        )
        .unwrap();
        fs::write(
            a.join("memory.stat"),
            "anon 1\nvictim_anon 4096\nvictim_file 4096\n",
        )
        .unwrap();
        assert_eq!(
            cgroups_with_victims(&root).unwrap(),
            vec![(a.clone(), 8192)]
        );
        fs::write(a.join("memory.stat"), "anon 1\n").unwrap();
        assert_eq!(
            wait_for_victims(&a, Duration::ZERO).unwrap(),
            VictimWait::NoVictimList
        );
        fs::remove_dir_all(root).unwrap();
    }
}

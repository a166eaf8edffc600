//! Parsers for the kernel's text files under /proc and /sys that the
//! runtime reads: meminfo, swaps, vmstat, zoneinfo, block device stat,
//! zram's mm_stat, and a process's maps, stat, status and statm. Pure functions over the file text so
//! they can be tested with synthetic input.

use anyhow::{bail, Context, Result};
use std::collections::HashMap;

/// `key value` lines (/proc/vmstat), in file order.
pub fn parse_key_values(text: &str) -> Result<Vec<(String, i64)>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let mut it = line.split_whitespace();
            let (Some(k), Some(v)) = (it.next(), it.next()) else {
                bail!("bad line {line:?}");
            };
            Ok((
                k.to_string(),
                v.parse()
                    .with_context(|| format!("bad value in {line:?}"))?,
            ))
        })
        .collect()
}

/// The /proc/meminfo fields the runtime uses, in kB.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct MemInfo {
    pub mem_total: i64,
    pub mem_free: i64,
    pub mem_available: i64,
    pub swap_total: i64,
    pub swap_free: i64,
    pub shmem: i64,
    pub active_anon: i64,
    pub inactive_anon: i64,
    pub inactive_file: i64,
    pub cma_free: i64,
}

pub fn parse_meminfo(text: &str) -> Result<MemInfo> {
    let mut fields = HashMap::new();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if let (Some(k), Some(v)) = (it.next(), it.next()) {
            fields.insert(
                k.trim_end_matches(':'),
                v.parse::<i64>()
                    .with_context(|| format!("bad line {line:?}"))?,
            );
        }
    }
    let get = |k: &str| fields.get(k).copied();
    let required = |k: &str| get(k).with_context(|| format!("meminfo has no {k}"));
    Ok(MemInfo {
        mem_total: required("MemTotal")?,
        mem_free: required("MemFree")?,
        mem_available: required("MemAvailable")?,
        swap_total: required("SwapTotal")?,
        swap_free: required("SwapFree")?,
        shmem: required("Shmem")?,
        active_anon: required("Active(anon)")?,
        inactive_anon: required("Inactive(anon)")?,
        inactive_file: required("Inactive(file)")?,
        cma_free: get("CmaFree").unwrap_or(0),
    })
}

/// One swap area of /proc/swaps, sizes in kB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwapArea {
    /// The device or file (`/dev/zram0`, `/dev/vdb`), as /proc/swaps
    /// writes it (a space in a path is `\040`).
    pub name: String,
    pub size_kb: i64,
    pub used_kb: i64,
}

/// /proc/swaps: a header line, then `name type size used priority` per area.
pub fn parse_swaps(text: &str) -> Result<Vec<SwapArea>> {
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let [name, _kind, size, used, _prio] = f[..] else {
                bail!("bad /proc/swaps line {line:?}");
            };
            let kb = |v: &str| {
                v.parse::<i64>()
                    .with_context(|| format!("bad size in /proc/swaps line {line:?}"))
            };
            Ok(SwapArea {
                name: name.to_string(),
                size_kb: kb(size)?,
                used_kb: kb(used)?,
            })
        })
        .collect()
}

/// One line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsLine<'a> {
    pub range: std::ops::Range<u64>,
    /// `rwxp`: read, write, execute, and `p` private or `s` shared.
    pub perms: &'a str,
    /// The file mapped, a bracketed name (`[heap]`), or empty (anonymous).
    pub path: &'a str,
}

impl MapsLine<'_> {
    /// Private (copy on write) and writable.
    pub fn private_writable(&self) -> bool {
        let p = self.perms.as_bytes();
        p.len() == 4 && p[1] == b'w' && p[3] == b'p'
    }
}

/// A line of /proc/PID/maps: `start-end perms offset dev inode [path]`;
/// None if it is not one.
pub fn parse_maps_line(line: &str) -> Option<MapsLine<'_>> {
    let mut rest = line;
    let mut fields = [""; 5];
    for field in &mut fields {
        let trimmed = rest.trim_start();
        let end = trimmed.find(' ').unwrap_or(trimmed.len());
        *field = &trimmed[..end];
        rest = &trimmed[end..];
    }
    let [range, perms, _offset, _dev, inode] = fields;
    if perms.len() != 4 || inode.is_empty() {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let start = u64::from_str_radix(start, 16).ok()?;
    let end = u64::from_str_radix(end, 16).ok()?;
    (start < end).then_some(MapsLine {
        range: start..end,
        perms,
        path: rest.trim(),
    })
}

/// Sum of each populated zone's watermark plus its largest lowmem
/// protection, in pages, as lmkd's `calc_zone_watermarks` computes them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Watermarks {
    pub min: i64,
    pub low: i64,
    pub high: i64,
}

pub fn parse_zoneinfo_watermarks(text: &str) -> Result<Watermarks> {
    #[derive(Default)]
    struct Zone {
        min: i64,
        low: i64,
        high: i64,
        present: i64,
        max_protection: i64,
    }
    let mut zones: Vec<Zone> = Vec::new();
    for line in text.lines() {
        if line.starts_with("Node ") && line.contains(", zone") {
            zones.push(Zone::default());
            continue;
        }
        let Some(zone) = zones.last_mut() else {
            continue;
        };
        let trimmed = line.trim_start();
        if let Some(list) = trimmed.strip_prefix("protection:") {
            zone.max_protection = list
                .split(|c: char| c == '(' || c == ')' || c == ',' || c.is_whitespace())
                .filter_map(|v| v.parse::<i64>().ok())
                .max()
                .unwrap_or(0)
                .max(0);
            continue;
        }
        let mut it = trimmed.split_whitespace();
        let (Some(key), Some(value)) = (it.next(), it.next()) else {
            continue;
        };
        let slot = match key {
            "min" => &mut zone.min,
            "low" => &mut zone.low,
            "high" => &mut zone.high,
            "present" => &mut zone.present,
            _ => continue,
        };
        *slot = value
            .parse()
            .with_context(|| format!("bad zoneinfo line {line:?}"))?;
    }
    if zones.is_empty() {
        bail!("zoneinfo has no zones");
    }
    Ok(zones
        .iter()
        .filter(|z| z.present > 0)
        .fold(Watermarks::default(), |w, z| Watermarks {
            min: w.min + z.max_protection + z.min,
            low: w.low + z.max_protection + z.low,
            high: w.high + z.max_protection + z.high,
        }))
}

/// The sum of every zone's `high` watermark, in pages, without lowmem
/// protection (Ice's H_wm: the high watermark of the whole system).
pub fn parse_zoneinfo_high(text: &str) -> Result<i64> {
    let mut zones = 0;
    let mut high = 0;
    for line in text.lines() {
        if line.starts_with("Node ") && line.contains(", zone") {
            zones += 1;
            continue;
        }
        let mut it = line.split_whitespace();
        if zones > 0 && it.next() == Some("high") {
            let value = it.next().unwrap_or_default();
            high += value
                .parse::<i64>()
                .with_context(|| format!("bad zoneinfo line {line:?}"))?;
        }
    }
    if zones == 0 {
        bail!("zoneinfo has no zones");
    }
    Ok(high)
}

/// Names of the 17 fields of /sys/block/<dev>/stat
/// (Documentation/block/stat.rst).
pub const DISKSTAT_FIELDS: [&str; 17] = [
    "read_ios",
    "read_merges",
    "read_sectors",
    "read_ticks",
    "write_ios",
    "write_merges",
    "write_sectors",
    "write_ticks",
    "in_flight",
    "io_ticks",
    "time_in_queue",
    "discard_ios",
    "discard_merges",
    "discard_sectors",
    "discard_ticks",
    "flush_ios",
    "flush_ticks",
];

/// The first fields of a zram device's /sys/block/<dev>/mm_stat, bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZramMmStat {
    /// Data stored, uncompressed.
    pub orig_data: u64,
    /// Data stored, compressed.
    pub compr_data: u64,
    /// Memory the device uses, its allocator's overhead included.
    pub mem_used: u64,
}

pub fn parse_zram_mm_stat(text: &str) -> Result<ZramMmStat> {
    let fields: Vec<u64> = text
        .split_whitespace()
        .take(3)
        .map(str::parse)
        .collect::<std::result::Result<_, _>>()
        .with_context(|| format!("bad zram mm_stat {text:?}"))?;
    let [orig_data, compr_data, mem_used] = fields[..] else {
        bail!("bad zram mm_stat {text:?}: fewer than 3 fields");
    };
    Ok(ZramMmStat {
        orig_data,
        compr_data,
        mem_used,
    })
}

pub fn parse_diskstat(text: &str) -> Result<[u64; 17]> {
    let values: Vec<u64> = text
        .split_whitespace()
        .map(|v| {
            v.parse()
                .with_context(|| format!("bad block stat value {v:?}"))
        })
        .collect::<Result<_>>()?;
    values
        .try_into()
        .map_err(|v: Vec<u64>| anyhow::anyhow!("block stat has {} fields, expected 17", v.len()))
}

/// What the runtime needs from /proc/<pid>/stat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcStat {
    pub comm: String,
    pub is_kernel_thread: bool,
    /// utime + stime, in clock ticks.
    pub cpu_ticks: u64,
}

const PF_KTHREAD: u64 = 0x0020_0000;

pub fn parse_proc_stat(text: &str) -> Result<ProcStat> {
    // The comm may contain spaces and parentheses: it ends at the last ')'.
    let open = text.find('(').context("stat has no comm")?;
    let close = text.rfind(')').context("stat has no comm")?;
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] is field 3 (state); flags is field 9, utime 14, stime 15.
    let field = |n: usize| -> Result<u64> {
        rest.get(n - 3)
            .context("stat is too short")?
            .parse()
            .context("bad stat field")
    };
    Ok(ProcStat {
        comm: text[open + 1..close].to_string(),
        is_kernel_thread: field(9)? & PF_KTHREAD != 0,
        cpu_ticks: field(14)? + field(15)?,
    })
}

/// The time a task has waited on a runqueue, in ns: the second field of
/// /proc/<pid>/schedstat (`on-CPU ns, run-delay ns, timeslices`, present
/// with CONFIG_SCHED_INFO).
pub fn parse_schedstat_run_delay(text: &str) -> Result<u64> {
    text.split_whitespace()
        .nth(1)
        .context("schedstat is too short")?
        .parse()
        .context("bad schedstat run delay")
}

/// A `Tag:   123 kB` value from /proc/<pid>/status.
pub fn parse_status_kb(text: &str, tag: &str) -> Option<i64> {
    text.lines()
        .find_map(|l| l.strip_prefix(tag))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Resident pages from /proc/<pid>/statm (its second field).
pub fn parse_statm_rss(text: &str) -> Option<i64> {
    text.split_whitespace().nth(1).and_then(|v| v.parse().ok())
}

/// The mount point of the first filesystem of type `fstype` in /proc/mounts.
pub fn mount_point(mounts: &str, fstype: &str) -> Option<std::path::PathBuf> {
    mounts.lines().find_map(|line| {
        let mut it = line.split_whitespace();
        let (_, point, kind) = (it.next()?, it.next()?, it.next()?);
        (kind == fstype).then(|| point.into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_are_parsed() {
        let line =
            "7f1000000000-7f1000400000 rw-p 00000000 fe:10 12  /tmp/pmr/data/chrome/res-000.bin";
        assert_eq!(
            parse_maps_line(line),
            Some(MapsLine {
                range: 0x7f10_0000_0000..0x7f10_0040_0000,
                perms: "rw-p",
                path: "/tmp/pmr/data/chrome/res-000.bin",
            })
        );
        let anon = parse_maps_line("7f3000000000-7f3000004000 rw-p 00000000 00:00 0").unwrap();
        assert_eq!((anon.perms, anon.path), ("rw-p", ""));
        let heap = parse_maps_line("55d0c0a00000-55d0c0a21000 rw-p 00000000 00:00 0   [heap]");
        assert_eq!(heap.unwrap().path, "[heap]");
        for bad in [
            "",
            "zz-7f00 rw-p 00000000 00:00 0",
            "7f0000004000-7f0000000000 rw-p 00000000 00:00 0",
            "7f0000000000-7f0000004000 rw-p 00000000 00:00",
            "7f0000000000-7f0000004000 rw 00000000 00:00 0",
        ] {
            assert_eq!(parse_maps_line(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn swaps_lists_each_area_with_its_use() {
        let text = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n\
                    /dev/vdb                                partition\t3579900\t\t1024\t\t-2\n\
                    /dev/zram0                              partition\t174760\t\t174756\t\t100\n";
        let areas = parse_swaps(text).unwrap();
        assert_eq!(
            areas,
            vec![
                SwapArea {
                    name: "/dev/vdb".into(),
                    size_kb: 3_579_900,
                    used_kb: 1024
                },
                SwapArea {
                    name: "/dev/zram0".into(),
                    size_kb: 174_760,
                    used_kb: 174_756
                },
            ]
        );
        assert!(parse_swaps("Filename Type Size Used Priority\n")
            .unwrap()
            .is_empty());
        let err = parse_swaps("header\n/dev/vdb partition 12 x -2\n").unwrap_err();
        assert!(err.to_string().contains("bad size"), "{err}");
        assert!(parse_swaps("header\n/dev/vdb partition 12\n").is_err());
    }

    const ZONEINFO: &str = "\
Node 0, zone      DMA
  per-node stats
      nr_inactive_anon 10
      nr_inactive_file 20
  pages free     3840
        boost    0
        min      32
        low      40
        high     48
        spanned  4095
        present  3998
        managed  3840
        cma      0
        protection: (0, 1901, 1901, 1901, 1901)
      nr_free_pages 3840
  pagesets
    cpu: 0
              count: 0
              high:  0
Node 0, zone    DMA32
  pages free     100000
        boost    0
        min      2000
        low      2500
        high     3000
        spanned  520160
        present  520160
        managed  490000
        cma      0
        protection: (0, 0, 0, 0, 0)
      nr_free_pages 100000
  pagesets
Node 0, zone   Normal
  pages free     0
        boost    0
        min      0
        low      0
        high     0
        spanned  0
        present  0
        managed  0
        protection: (0, 0, 0, 0, 0)
";

    #[test]
    fn zoneinfo_sums_populated_zones_with_protection() {
        let w = parse_zoneinfo_watermarks(ZONEINFO).unwrap();
        assert_eq!(
            w,
            Watermarks {
                min: 1901 + 32 + 2000,
                low: 1901 + 40 + 2500,
                high: 1901 + 48 + 3000
            }
        );
        assert!(parse_zoneinfo_watermarks("nothing here").is_err());
    }

    #[test]
    fn zoneinfo_high_sums_every_zone_without_protection() {
        // 48 + 3000 + 0; the pagesets' `high:` is not a watermark
        assert_eq!(parse_zoneinfo_high(ZONEINFO).unwrap(), 3048);
        assert!(parse_zoneinfo_high("nothing here").is_err());
    }

    #[test]
    fn vmstat_keeps_file_order() {
        let kv = parse_key_values("nr_free_pages 12\nworkingset_refault_file 7\npgscan_direct 0\n")
            .unwrap();
        assert_eq!(kv[0], ("nr_free_pages".to_string(), 12));
        assert_eq!(kv[1].1, 7);
        assert_eq!(kv.len(), 3);
        assert!(parse_key_values("nr_free_pages x\n").is_err());
    }

    #[test]
    fn meminfo_fields() {
        let text = "MemTotal: 2000000 kB\nMemFree: 100000 kB\nMemAvailable: 500000 kB\n\
                    Shmem: 10 kB\nActive(anon): 1 kB\nInactive(anon): 2 kB\nInactive(file): 3 kB\n\
                    SwapTotal: 350000 kB\nSwapFree: 300000 kB\nHugePages_Total: 0\n";
        let m = parse_meminfo(text).unwrap();
        assert_eq!(
            (m.mem_total, m.mem_available, m.swap_free, m.inactive_file),
            (2000000, 500000, 300000, 3)
        );
        assert_eq!(m.cma_free, 0);
        assert!(parse_meminfo("MemTotal: 1 kB\n").is_err());
    }

    #[test]
    fn zram_mm_stat_gives_its_first_three_fields() {
        let text =
            "  6217728  1520478  1810432        0  1810432      318        0        0        0\n";
        assert_eq!(
            parse_zram_mm_stat(text).unwrap(),
            ZramMmStat {
                orig_data: 6217728,
                compr_data: 1520478,
                mem_used: 1810432
            }
        );
        assert_eq!(parse_zram_mm_stat("1 2 3").unwrap().mem_used, 3);
        assert!(parse_zram_mm_stat("1 2").is_err());
        assert!(parse_zram_mm_stat("1 x 3 4").is_err());
        assert!(parse_zram_mm_stat("").is_err());
    }

    #[test]
    fn diskstat_has_17_fields() {
        let text = "     120        3     9600      50    4000       10   320000    9000        0     7000     9050        0        0        0        0       12       3\n";
        let s = parse_diskstat(text).unwrap();
        assert_eq!(s[0], 120);
        assert_eq!(s[6], 320000);
        assert_eq!(s[16], 3);
        assert!(parse_diskstat("1 2 3").is_err());
    }

    #[test]
    fn proc_stat_with_odd_comm() {
        let text = "42 (kswapd0) S 2 0 0 0 -1 2129984 0 0 0 0 150 250 0 0 20 0 1 0 4 0 0";
        let s = parse_proc_stat(text).unwrap();
        assert_eq!(
            s,
            ProcStat {
                comm: "kswapd0".into(),
                is_kernel_thread: true,
                cpu_ticks: 400
            }
        );
        let user = "7 (a) b) R 1 0 0 0 -1 4194304 0 0 0 0 3 4 0 0 20 0 1 0 4 0 0";
        let s = parse_proc_stat(user).unwrap();
        assert_eq!(
            (s.comm.as_str(), s.is_kernel_thread, s.cpu_ticks),
            ("a) b", false, 7)
        );
    }

    #[test]
    fn schedstat_run_delay() {
        assert_eq!(
            parse_schedstat_run_delay("1513390104 274620355 20817\n").unwrap(),
            274_620_355
        );
        assert!(parse_schedstat_run_delay("1513390104").is_err());
        assert!(parse_schedstat_run_delay("1 x 3").is_err());
    }

    #[test]
    fn finds_mount_points_by_type() {
        let mounts = "proc /proc proc rw 0 0\nnone /sys/fs/cgroup cgroup2 rw 0 0\n\
                      tracefs /sys/kernel/tracing tracefs rw 0 0\n";
        assert_eq!(
            mount_point(mounts, "cgroup2"),
            Some("/sys/fs/cgroup".into())
        );
        assert_eq!(
            mount_point(mounts, "tracefs"),
            Some("/sys/kernel/tracing".into())
        );
        assert_eq!(mount_point(mounts, "cgroup"), None);
    }

    #[test]
    fn status_and_statm() {
        let status = "Name:\tchrome\nVmRSS:\t   40000 kB\nVmSwap:\t  100 kB\n";
        assert_eq!(parse_status_kb(status, "VmRSS:"), Some(40000));
        assert_eq!(parse_status_kb("Name:\tzombie\n", "VmRSS:"), None);
        assert_eq!(parse_statm_rss("5000 1234 100 1 0 300 0\n"), Some(1234));
    }
}

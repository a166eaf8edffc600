//! A memory cgroup's `memory.stat` and the check that its accounting adds
//! up: the pages charged as anon + file are the pages on its LRU lists.
//!
//! Linux 6.1 (cgroup v2, every figure in bytes): `anon` is NR_ANON_MAPPED,
//! `file` is NR_FILE_PAGES (page cache and shmem; the swap cache is counted
//! there only node-wide, not per memcg). The LRU lists hold every mapped anon
//! page, every file page, and the unmapped swap cache pages (swap readahead,
//! pages whose last mapping is gone but whose swap slot lives on), which
//! `anon + file` does not count and `swapcached` bounds. Pages isolated
//! from the LRU for reclaim or migration, or waiting in a per-CPU batch,
//! are charged but on no list; per-CPU counter batching blurs every figure
//! a little. So, with `lru` the sum of the lists (and PMR's victim lists
//! when the kernel has them):
//!
//! ```text
//! -tolerance <= lru - (anon + file) <= swapcached + tolerance
//! tolerance = max(1% of anon + file, 4 MiB)
//! ```

use crate::sys::proc_files::parse_key_values;
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// The LRU lists of 6.1's memory.stat; PMR adds its victim lists.
pub const LRU_KEYS: [&str; 5] = [
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
];
/// PMR's victim lists: one per type since v1's patch 26 of the series, one
/// (`victim`, both types) before.
pub const VICTIM_KEYS: [&str; 2] = ["victim_anon", "victim_file"];
pub const ONE_LIST_VICTIM_KEY: &str = "victim";
const TOLERANCE_FRACTION: f64 = 0.01;
const TOLERANCE_MIN_BYTES: i64 = 4 << 20;

pub type MemoryStat = BTreeMap<String, i64>;

pub fn parse(text: &str) -> Result<MemoryStat> {
    Ok(parse_key_values(text)?.into_iter().collect())
}

/// Bytes on PMR's victim lists, if the kernel has them.
pub fn victim(stat: &MemoryStat) -> Option<i64> {
    victim_total(stat, ONE_LIST_VICTIM_KEY, VICTIM_KEYS)
}

/// The victims of both types in a flat-keyed file (memory.stat,
/// /proc/vmstat): `one_list` where the kernel has one list (it then also
/// counts the file ones apart, which must not be added), else the sum of
/// `per_type`; None unless the kernel counts them.
pub fn victim_total(stat: &MemoryStat, one_list: &str, per_type: [&str; 2]) -> Option<i64> {
    if let Some(&v) = stat.get(one_list) {
        return Some(v);
    }
    per_type.iter().map(|k| stat.get(*k).copied()).sum()
}

/// The figures of one accounting check, in bytes.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Accounting {
    pub anon: i64,
    pub file: i64,
    pub lru: i64,
    pub swapcached: i64,
    pub victim: Option<i64>,
    /// lru - (anon + file)
    pub difference: i64,
    pub tolerance: i64,
    pub ok: bool,
}

impl Accounting {
    pub fn of(stat: &MemoryStat) -> Result<Accounting> {
        let get = |k: &str| {
            stat.get(k)
                .copied()
                .with_context(|| format!("memory.stat has no {k}"))
        };
        let (anon, file) = (get("anon")?, get("file")?);
        let swapcached = get("swapcached")?;
        let victim = victim(stat);
        let mut lru = victim.unwrap_or(0);
        for k in LRU_KEYS {
            lru += get(k)?;
        }
        let charged = anon + file;
        let tolerance = ((charged as f64 * TOLERANCE_FRACTION) as i64).max(TOLERANCE_MIN_BYTES);
        let difference = lru - charged;
        Ok(Accounting {
            anon,
            file,
            lru,
            swapcached,
            victim,
            difference,
            tolerance,
            ok: -tolerance <= difference && difference <= swapcached + tolerance,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: i64 = 1 << 20;

    fn stat(anon: i64, file: i64, lists: [i64; 5], swapcached: i64, victim: Option<i64>) -> String {
        let mut text = format!(
            "anon {anon}\nfile {file}\nkernel 1234\nsock 0\nshmem 0\nfile_mapped 0\n\
             swapcached {swapcached}\npgfault 99\n"
        );
        for (k, v) in LRU_KEYS.iter().zip(lists) {
            text.push_str(&format!("{k} {v}\n"));
        }
        if let Some(v) = victim {
            text.push_str(&format!("victim {v}\n"));
        }
        text.push_str("workingset_refault_anon 5\nthp_fault_alloc 0\n");
        text
    }

    fn check(text: &str) -> Accounting {
        Accounting::of(&parse(text).unwrap()).unwrap()
    }

    #[test]
    fn lists_that_hold_the_charged_pages_add_up() {
        let a = check(&stat(
            400 * MB,
            8 * MB,
            [300 * MB, 100 * MB, 5 * MB, 3 * MB, 0],
            0,
            None,
        ));
        assert!(a.ok, "{a:?}");
        assert_eq!((a.lru, a.difference, a.victim), (408 * MB, 0, None));
    }

    #[test]
    fn pages_in_flight_are_tolerated_up_to_one_percent() {
        // 1000 MB charged: 10 MB tolerance either way.
        let lists = |anon_lists: i64| [anon_lists, 0, 0, 0, 0];
        assert!(check(&stat(1000 * MB, 0, lists(991 * MB), 0, None)).ok);
        assert!(!check(&stat(1000 * MB, 0, lists(989 * MB), 0, None)).ok);
        assert!(!check(&stat(1000 * MB, 0, lists(1011 * MB), 0, None)).ok);
        // A small cgroup gets 4 MiB.
        assert!(check(&stat(10 * MB, 0, lists(7 * MB), 0, None)).ok);
    }

    #[test]
    fn unmapped_swap_cache_may_sit_on_the_lists_uncharged_as_anon() {
        let text = stat(500 * MB, 0, [530 * MB, 0, 0, 0, 0], 40 * MB, None);
        assert!(check(&text).ok);
        let beyond = stat(500 * MB, 0, [560 * MB, 0, 0, 0, 0], 40 * MB, None);
        assert!(!check(&beyond).ok, "more than swapcached is a leak");
    }

    #[test]
    fn the_victim_list_counts_when_the_kernel_has_one() {
        let a = check(&stat(
            500 * MB,
            0,
            [300 * MB, 100 * MB, 0, 0, 0],
            0,
            Some(100 * MB),
        ));
        assert!(a.ok && a.victim == Some(100 * MB), "{a:?}");
        let lost = check(&stat(500 * MB, 0, [300 * MB, 100 * MB, 0, 0, 0], 0, None));
        assert!(!lost.ok, "100 MB charged but on no list");
        assert_eq!(lost.difference, -100 * MB);
    }

    #[test]
    fn the_victim_lists_of_both_types_add_up() {
        let text = stat(500 * MB, 0, [300 * MB, 100 * MB, 0, 0, 0], 0, None)
            + "victim_anon 60000000\nvictim_file 40000000\n";
        assert_eq!(victim(&parse(&text).unwrap()), Some(100_000_000));
        let half = stat(500 * MB, 0, [0; 5], 0, None) + "victim_anon 1\n";
        assert_eq!(victim(&parse(&half).unwrap()), None, "both lists or none");
        let one_list = stat(500 * MB, 0, [0; 5], 0, Some(100)) + "victim_file 30\n";
        assert_eq!(
            victim(&parse(&one_list).unwrap()),
            Some(100),
            "file ones counted once"
        );
    }

    #[test]
    fn a_stat_without_the_lists_is_an_error() {
        let err = Accounting::of(&parse("anon 1\nfile 2\n").unwrap()).unwrap_err();
        assert!(err.to_string().contains("no swapcached"), "{err}");
        assert!(parse("anon x\n").is_err());
    }
}

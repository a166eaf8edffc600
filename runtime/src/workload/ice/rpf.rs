//! Refault-driven process freezing (Ice §4.2.1), its decisions: which
//! apps may be frozen, and when the user-space variant (ice-us) freezes
//! one. Pure; the daemon (daemon.rs) applies them.
//!
//! An app may be frozen while its current oom_score_adj is above
//! `protect_adj` (200: the foreground app at 0 and perceptible apps at
//! 200 are never frozen) and it is not a system app (class
//! `persistent`); a dead app has no adj and is not freezable.
//!
//! ice-us reads each freezable app's memory.stat every `poll_ms` and
//! freezes the app when `workingset_refault_anon + workingset_refault_file`
//! went up since the last read while it was freezable; the first read
//! after it became freezable only sets the baseline, so that refaults in
//! front never freeze it.

use crate::sys::memcg_stat::MemoryStat;
use anyhow::{ensure, Result};

/// The memory.stat counters whose sum is an app's refaults.
pub const REFAULT_KEYS: [&str; 2] = ["workingset_refault_anon", "workingset_refault_file"];

/// Whether an app with oom_score_adj `adj` (None: dead) may be frozen.
pub fn freezable(adj: Option<i32>, persistent: bool, protect_adj: i32) -> bool {
    !persistent && adj.is_some_and(|adj| adj > protect_adj)
}

/// The app's refaults, from its memory.stat.
pub fn refaults(stat: &MemoryStat) -> Result<u64> {
    let mut sum = 0;
    for key in REFAULT_KEYS {
        let v = stat.get(key).copied();
        ensure!(
            v.is_some(),
            "memory.stat has no {key} (Ice's RPF needs Linux >= 5.9)"
        );
        sum += v.unwrap_or(0).max(0) as u64;
    }
    Ok(sum)
}

/// Whether ice-us freezes an app whose refaults were `before` at the last
/// read (None: no baseline yet) and are `now`.
pub fn refaulted(before: Option<u64>, now: u64) -> bool {
    before.is_some_and(|b| now > b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::memcg_stat;

    #[test]
    fn only_live_apps_above_protect_adj_and_not_persistent_are_freezable() {
        assert!(freezable(Some(900), false, 200));
        assert!(freezable(Some(700), false, 200), "the previous app");
        assert!(freezable(Some(201), false, 200));
        assert!(!freezable(Some(200), false, 200), "perceptible");
        assert!(!freezable(Some(0), false, 200), "foreground");
        assert!(!freezable(None, false, 200), "dead");
        assert!(
            !freezable(Some(900), true, -1000),
            "persistent, whatever its adj"
        );
    }

    #[test]
    fn refaults_are_anon_plus_file() {
        let stat = memcg_stat::parse(
            "anon 1\nworkingset_refault_anon 5\nworkingset_refault_file 7\nworkingset_activate_anon 3\n",
        )
        .unwrap();
        assert_eq!(refaults(&stat).unwrap(), 12);
        let old = memcg_stat::parse("anon 1\nworkingset_refault 9\n").unwrap();
        let err = refaults(&old).unwrap_err().to_string();
        assert!(err.contains("workingset_refault_anon"), "{err}");
    }

    #[test]
    fn a_rise_since_the_baseline_freezes() {
        assert!(!refaulted(None, 100), "the first read is the baseline");
        assert!(!refaulted(Some(100), 100));
        assert!(refaulted(Some(100), 101));
        assert!(!refaulted(Some(100), 90), "a counter that went down");
    }
}

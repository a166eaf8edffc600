//! Victim selection of lmkd's `find_and_kill_process`: walk oom_score_adj
//! from 1000 down to the minimum; at each value take the heaviest process
//! (with `kill_heaviest_task`, and always at or below the perceptible adj)
//! or else the one that has held that adj longest (the tail of lmkd's adj
//! list). The caller tries the candidates in the returned order until one
//! kill succeeds (a process may have died meanwhile).
//!
//! SWAM's EOOM (eoom.rs) may reorder that list by relaunch cost first.
//! Ice+ (`scheme.ice.spare_swapped`) then reorders it (`spare_swapped`):
//! the candidates whose app is frozen and holds swap go last (the
//! paper's "unkillable" apps, §4.3.2: killing a frozen app whose memory
//! was already compressed frees little RAM and wastes the reclaim), so
//! that one is killed only when no other candidate can be. The caller
//! decides which apps those are (lmkd.rs).

/// A registered process as lmkd sees it at kill time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub pid: i32,
    pub adj: i32,
    /// Registration order (see `proc_registry`): smaller is older.
    pub seq: u64,
    /// Resident pages (/proc/<pid>/statm), read at kill time.
    pub rss_pages: i64,
}

pub fn kill_order(
    candidates: &[Candidate],
    min_adj: i32,
    kill_heaviest: bool,
    perceptible_adj: i32,
) -> Vec<i32> {
    let mut eligible: Vec<&Candidate> = candidates
        .iter()
        .filter(|c| c.adj >= min_adj)
        // lmkd's heaviest search only takes a process larger than 0 pages.
        .filter(|c| !(kill_heaviest || c.adj <= perceptible_adj) || c.rss_pages > 0)
        .collect();
    eligible.sort_by(|a, b| {
        b.adj.cmp(&a.adj).then_with(|| {
            if kill_heaviest || a.adj <= perceptible_adj {
                // Heaviest first; among equals lmkd keeps the first found
                // from the head of the list, i.e. the newest.
                b.rss_pages.cmp(&a.rss_pages).then(b.seq.cmp(&a.seq))
            } else {
                a.seq.cmp(&b.seq)
            }
        })
    });
    eligible.iter().map(|c| c.pid).collect()
}

/// Ice+'s order over `order` (kill_order's, or EOOM's over it): the
/// candidates that are not
/// `unkillable`, then those that are, each in their order; with each, how
/// many unkillable candidates its kill passes over (those before it in
/// `order`; none for an unkillable one itself).
pub fn spare_swapped(order: &[i32], unkillable: impl Fn(i32) -> bool) -> Vec<(i32, u32)> {
    let mut passed = 0;
    let (mut first, mut last) = (Vec::new(), Vec::new());
    for &pid in order {
        if unkillable(pid) {
            passed += 1;
            last.push((pid, 0));
        } else {
            first.push((pid, passed));
        }
    }
    first.extend(last);
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(pid: i32, adj: i32, seq: u64, rss_pages: i64) -> Candidate {
        Candidate {
            pid,
            adj,
            seq,
            rss_pages,
        }
    }

    fn procs() -> Vec<Candidate> {
        vec![
            c(1, 0, 0, 90_000),   // foreground
            c(2, 700, 1, 50_000), // previous
            c(3, 900, 2, 10_000), // cached, most recent
            c(4, 910, 3, 20_000), // cached
            c(5, 910, 4, 30_000), // cached, same adj, registered later
            c(6, 200, 5, 40_000), // perceptible
            c(7, 200, 6, 60_000), // perceptible, heavier
        ]
    }

    #[test]
    fn highest_adj_first_then_heaviest() {
        assert_eq!(
            kill_order(&procs(), 0, true, 200),
            vec![5, 4, 3, 2, 7, 6, 1]
        );
    }

    #[test]
    fn without_kill_heaviest_the_oldest_registration_goes_first() {
        // Within adj 910, pid 4 was registered before pid 5; at or below
        // the perceptible adj lmkd still takes the heaviest.
        assert_eq!(
            kill_order(&procs(), 0, false, 200),
            vec![4, 5, 3, 2, 7, 6, 1]
        );
    }

    #[test]
    fn min_adj_protects_lower_adjs() {
        assert_eq!(kill_order(&procs(), 201, true, 200), vec![5, 4, 3, 2]);
        assert_eq!(kill_order(&procs(), 901, true, 200), vec![5, 4]);
        assert!(kill_order(&procs(), 1000, true, 200).is_empty());
    }

    #[test]
    fn ice_plus_passes_over_the_candidates_that_hold_swap() {
        let order = kill_order(&procs(), 0, true, 200); // 5, 4, 3, 2, 7, 6, 1
        let swapped = |pid: i32| [5, 3].contains(&pid);
        assert_eq!(
            spare_swapped(&order, swapped),
            vec![(4, 1), (2, 2), (7, 2), (6, 2), (1, 2), (5, 0), (3, 0)]
        );
        // nothing holds swap: the usual order, nothing spared
        assert_eq!(
            spare_swapped(&order, |_| false),
            order.iter().map(|&p| (p, 0)).collect::<Vec<_>>()
        );
        // everything does: the usual order as the fallback
        assert_eq!(
            spare_swapped(&order, |_| true),
            order.iter().map(|&p| (p, 0)).collect::<Vec<_>>()
        );
        // min_adj still rules: only what kill_order lists is reordered
        let order = kill_order(&procs(), 901, true, 200); // 5, 4
        assert_eq!(spare_swapped(&order, swapped), vec![(4, 1), (5, 0)]);
    }

    #[test]
    fn heaviest_search_skips_empty_processes() {
        let list = vec![c(1, 900, 0, 0), c(2, 900, 1, 5)];
        assert_eq!(kill_order(&list, 0, true, 200), vec![2]);
        assert_eq!(kill_order(&list, 0, false, 200), vec![1, 2]);
    }
}

//! SWAM's EOOM Killer (MobiCom'23): lmkd kills the app cheapest to
//! relaunch first. SWAM's kernel adds a per-process launch_score_adj to
//! oom_score_adj (/proc/PID/launch_score_adj) and leaves its value to a
//! launch-cost manager, a stub in the public code; here lmkd derives it
//! from the relaunch costs the activity manager measured.
//!
//! - An app's relaunch cost (`RelaunchCosts`): the mean of `files_ms +
//!   init_ms` (+ `so_ms` for an app with shared objects' data, `so_mb`)
//!   over its cold launches in this run, as each launch's event logs them
//!   (its slowest process): the reading of the app's files, the
//!   relocation of its shared objects' data and its init work, where the
//!   paper counts SO-symbol lookup and XML-UI conversion.
//! - At kill time (`eoom_order`), over kill_order's candidates whose app
//!   has a cost: launch_adj = round(launch_adj_max × (cost_max − cost) /
//!   (cost_max − cost_min)) (the scale is ours: the paper gives none), so
//!   the cheapest gets `launch_adj_max` and the costliest 0; 0 for all when
//!   the costs are equal, and 0 for an app with no measured cold launch.
//!   The candidates go in (oom_score_adj + launch_adj) descending order,
//!   ties in kill_order's order. EOOM changes the order only: which
//!   processes qualify is still decided by their oom_score_adj.

use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The relaunch cost of each app, fed by the activity manager at every
/// measured cold launch and read by lmkd at kill time.
#[derive(Default)]
pub struct RelaunchCosts {
    inner: Mutex<HashMap<String, Mean>>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Mean {
    sum_ms: f64,
    launches: u32,
}

impl RelaunchCosts {
    /// A cold launch of `app` whose cost is `cost` (its event's `cost`);
    /// one without `files_ms` and `init_ms` is not counted.
    pub fn record(&self, app: &str, cost: &BTreeMap<String, f64>) {
        let Some(ms) = relaunch_ms(cost) else {
            return;
        };
        let mut inner = self.inner.lock().expect("relaunch costs lock");
        let mean = inner.entry(app.to_string()).or_default();
        mean.sum_ms += ms;
        mean.launches += 1;
    }

    /// The mean relaunch cost of `app`, ms; None before its first
    /// measured cold launch.
    pub fn mean_ms(&self, app: &str) -> Option<f64> {
        let inner = self.inner.lock().expect("relaunch costs lock");
        inner
            .get(app)
            .filter(|m| m.launches > 0)
            .map(|m| m.sum_ms / f64::from(m.launches))
    }
}

/// What a cold launch's costs say its relaunch costs: `files_ms` +
/// `init_ms` (launch_cost.rs), None if either is missing, + `so_ms` where
/// the app relocated shared objects' data (app.rs).
pub fn relaunch_ms(cost: &BTreeMap<String, f64>) -> Option<f64> {
    let so_ms = cost.get("so_ms").copied().unwrap_or(0.0);
    Some(cost.get("files_ms")? + cost.get("init_ms")? + so_ms)
}

/// What lmkd needs for EOOM: the scale of launch_adj and the costs.
pub struct Eoom {
    pub launch_adj_max: i32,
    pub costs: Arc<RelaunchCosts>,
}

/// A candidate as EOOM sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranked {
    pub pid: i32,
    pub adj: i32,
    /// Its app's relaunch cost, ms; None if not measured yet.
    pub relaunch_ms: Option<f64>,
}

/// What EOOM made of a candidate, for its `kill` event.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Score {
    pub launch_adj: i32,
    /// The relaunch cost it used, ms to the microsecond; null if unknown.
    pub relaunch_ms: Option<f64>,
}

/// The launch_adj of each cost in `costs`: `launch_adj_max` for the
/// cheapest known, 0 for the costliest and for an unknown one, linear in
/// between; all 0 when the known costs are all equal.
pub fn launch_adjs(costs: &[Option<f64>], launch_adj_max: i32) -> Vec<i32> {
    let known = costs.iter().flatten().copied();
    let min = known.clone().fold(f64::INFINITY, f64::min);
    let max = known.fold(f64::NEG_INFINITY, f64::max);
    costs
        .iter()
        .map(|cost| match cost {
            Some(c) if max > min => {
                (f64::from(launch_adj_max) * (max - c) / (max - min)).round() as i32
            }
            _ => 0,
        })
        .collect()
}

/// EOOM's order over `order` (kill_order's candidates, in its order):
/// (oom_score_adj + launch_adj) descending, ties kept in `order`'s order;
/// each with its score.
pub fn eoom_order(order: &[Ranked], launch_adj_max: i32) -> Vec<(i32, Score)> {
    let costs: Vec<Option<f64>> = order.iter().map(|c| c.relaunch_ms).collect();
    let adjs = launch_adjs(&costs, launch_adj_max);
    let mut ranked: Vec<(i32, i32, Score)> = order
        .iter()
        .zip(adjs)
        .map(|(c, launch_adj)| {
            let score = Score {
                launch_adj,
                relaunch_ms: c.relaunch_ms.map(|ms| (ms * 1e3).round() / 1e3),
            };
            (c.pid, c.adj + launch_adj, score)
        })
        .collect();
    // A stable sort: equal sums keep kill_order's order.
    ranked.sort_by_key(|&(_, sum, _)| std::cmp::Reverse(sum));
    ranked
        .into_iter()
        .map(|(pid, _, score)| (pid, score))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(pid: i32, adj: i32, relaunch_ms: Option<f64>) -> Ranked {
        Ranked {
            pid,
            adj,
            relaunch_ms,
        }
    }

    fn pids(order: &[(i32, Score)]) -> Vec<i32> {
        order.iter().map(|(pid, _)| *pid).collect()
    }

    #[test]
    fn launch_adj_is_linear_from_the_cheapest_to_the_costliest() {
        assert_eq!(
            launch_adjs(&[Some(100.0), Some(300.0), Some(200.0), Some(250.0)], 100),
            vec![100, 0, 50, 25]
        );
        assert_eq!(
            launch_adjs(&[Some(10.0), Some(11.0), Some(12.0)], 1),
            vec![1, 1, 0],
            "0.5 rounds away from zero"
        );
    }

    #[test]
    fn an_unknown_cost_gets_0_and_is_left_out_of_the_extremes() {
        assert_eq!(
            launch_adjs(&[None, Some(50.0), Some(150.0), None], 100),
            vec![0, 100, 0, 0]
        );
        assert_eq!(launch_adjs(&[None, None], 100), vec![0, 0]);
        assert!(launch_adjs(&[], 100).is_empty());
    }

    #[test]
    fn equal_costs_give_0() {
        assert_eq!(
            launch_adjs(&[Some(80.0), Some(80.0), None], 100),
            vec![0, 0, 0]
        );
        assert_eq!(launch_adjs(&[Some(80.0)], 100), vec![0], "one known cost");
    }

    #[test]
    fn the_cheapest_app_goes_first_among_equal_adjs() {
        // kill_order's order at adj 900: 1, 2, 3 (heaviest or oldest first)
        let order = [
            r(1, 900, Some(300.0)),
            r(2, 900, Some(100.0)),
            r(3, 900, Some(200.0)),
        ];
        let ranked = eoom_order(&order, 100);
        assert_eq!(pids(&ranked), vec![2, 3, 1]);
        assert_eq!(
            ranked[0].1,
            Score {
                launch_adj: 100,
                relaunch_ms: Some(100.0)
            }
        );
        assert_eq!(ranked[1].1.launch_adj, 50);
        assert_eq!(ranked[2].1.launch_adj, 0);
    }

    #[test]
    fn an_adj_gap_larger_than_launch_adj_max_keeps_the_adj_order() {
        // the cached app (950) costs the most, the previous app (700) the least
        let order = [r(1, 950, Some(900.0)), r(2, 700, Some(10.0))];
        assert_eq!(pids(&eoom_order(&order, 100)), vec![1, 2]);
        assert_eq!(
            pids(&eoom_order(&order, 250)),
            vec![1, 2],
            "700 + 250 ties 950"
        );
        assert_eq!(pids(&eoom_order(&order, 251)), vec![2, 1]);
        // a smaller gap is bridged
        let order = [r(1, 910, Some(900.0)), r(2, 900, Some(10.0))];
        assert_eq!(pids(&eoom_order(&order, 100)), vec![2, 1]);
    }

    #[test]
    fn unknown_and_equal_costs_keep_kill_orders_order() {
        let order = [
            r(1, 910, None),
            r(2, 900, Some(100.0)),
            r(3, 900, None),
            r(4, 200, Some(100.0)),
        ];
        let ranked = eoom_order(&order, 100);
        assert_eq!(pids(&ranked), vec![1, 2, 3, 4]);
        assert!(ranked.iter().all(|(_, s)| s.launch_adj == 0));
        assert_eq!(ranked[0].1.relaunch_ms, None);
        // a known cheap one passes the unknown one at a slightly higher adj
        let order = [r(1, 910, None), r(2, 900, Some(1.0)), r(3, 900, Some(2.0))];
        assert_eq!(pids(&eoom_order(&order, 100)), vec![2, 1, 3]);
    }

    #[test]
    fn ice_plus_partitions_eooms_order() {
        use crate::lmkd::victim::spare_swapped;
        // kill_order: 1, 2, 3, 4; launch_adjs 0, 25, 100, 100: 950, 965, 1030, 800
        let order = [
            r(1, 950, Some(500.0)),
            r(2, 940, Some(400.0)),
            r(3, 930, Some(100.0)),
            r(4, 700, Some(100.0)),
        ];
        let ranked = pids(&eoom_order(&order, 100));
        assert_eq!(ranked, vec![3, 2, 1, 4]);
        // 3 is frozen and holds swap: Ice+ passes over it
        assert_eq!(
            spare_swapped(&ranked, |pid| pid == 3),
            vec![(2, 1), (1, 1), (4, 1), (3, 0)]
        );
    }

    #[test]
    fn the_cost_is_reported_to_the_microsecond() {
        let ranked = eoom_order(&[r(1, 900, Some(12.345_678))], 100);
        assert_eq!(ranked[0].1.relaunch_ms, Some(12.346));
    }

    #[test]
    fn costs_are_the_mean_of_files_and_init_over_cold_launches() {
        let costs = RelaunchCosts::default();
        let cost = |files: f64, init: f64| {
            BTreeMap::from([
                ("files_ms".to_string(), files),
                ("init_ms".to_string(), init),
                ("heap_ms".to_string(), 500.0),
                ("wall_ms".to_string(), 900.0),
            ])
        };
        assert_eq!(costs.mean_ms("chrome"), None);
        costs.record("chrome", &cost(40.0, 60.0));
        costs.record("chrome", &cost(100.0, 100.0));
        costs.record("whatsapp", &cost(5.0, 5.0));
        // a launch without the two steps is not counted
        costs.record("chrome", &BTreeMap::from([("wall_ms".to_string(), 1.0)]));
        assert_eq!(costs.mean_ms("chrome"), Some(150.0));
        assert_eq!(costs.mean_ms("whatsapp"), Some(10.0));
        assert_eq!(costs.mean_ms("youtube"), None);
        assert_eq!(relaunch_ms(&cost(1.5, 2.25)), Some(3.75));
        // the relocation of shared objects' data is part of it where measured
        let mut with_so = cost(1.5, 2.25);
        with_so.insert("so_ms".to_string(), 4.0);
        assert_eq!(relaunch_ms(&with_so), Some(7.75));
        with_so.remove("init_ms");
        assert_eq!(relaunch_ms(&with_so), None);
    }
}

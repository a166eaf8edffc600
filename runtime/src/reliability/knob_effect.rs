//! What an accepted knob write must have done, where user space can see
//! it, checked by the toggler after each accepted write (a knob without an
//! entry here is only written). `vm.kswapd_threads=N` leaves exactly N
//! kswapd threads on every node that has a kswapd: `kswapd<nid>` and
//! `kswapd<nid>:<n>`. The kernel starts and stops them before the write
//! returns; a stopped thread may still be listed in /proc for a moment
//! until it is reaped, so the count is read again for up to SETTLE.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

const SETTLE: Duration = Duration::from_secs(2);
const RETRY: Duration = Duration::from_millis(50);

/// None when the write had its effect (or the knob has no check), else
/// what is wrong.
pub fn check(path: &Path, value: &str) -> Option<String> {
    if path != Path::new("/proc/sys/vm/kswapd_threads") {
        return None;
    }
    let Ok(want) = value.trim().parse::<usize>() else {
        return Some(format!("kswapd_threads value {value:?} is not a count"));
    };
    let until = Instant::now() + SETTLE;
    loop {
        let comms = match crate::sys::kthread_sched::kernel_threads() {
            Ok(threads) => threads
                .into_iter()
                .map(|(_, comm)| comm)
                .collect::<Vec<_>>(),
            Err(e) => return Some(format!("cannot count the kswapd threads: {e:#}")),
        };
        let wrong = kswapd_counts_off(&kswapd_threads_per_node(&comms), want);
        if wrong.is_none() || Instant::now() >= until {
            return wrong;
        }
        std::thread::sleep(RETRY);
    }
}

/// Node -> kswapd threads, from kernel thread names.
fn kswapd_threads_per_node(comms: &[String]) -> BTreeMap<u32, usize> {
    let mut nodes = BTreeMap::new();
    for comm in comms {
        let Some(rest) = comm.strip_prefix("kswapd") else {
            continue;
        };
        let (node, extra) = rest.split_once(':').unwrap_or((rest, "1"));
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if let (true, true, Ok(nid)) = (digits(node), digits(extra), node.parse::<u32>()) {
            *nodes.entry(nid).or_insert(0) += 1;
        }
    }
    nodes
}

/// None when every node runs `want` threads, else which do not.
fn kswapd_counts_off(nodes: &BTreeMap<u32, usize>, want: usize) -> Option<String> {
    if nodes.is_empty() {
        return Some("no kswapd thread found".into());
    }
    let off: Vec<String> = nodes
        .iter()
        .filter(|(_, &n)| n != want)
        .map(|(nid, n)| format!("node {nid} runs {n} kswapd threads"))
        .collect();
    (!off.is_empty()).then(|| format!("{}, not {want}", off.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn threads_are_counted_per_node() {
        let comms = names(&[
            "kswapd0",
            "kswapd0:1",
            "kswapd0:3",
            "kswapd1",
            "kshrinkd0",
            "kswapd_x",
            "kswapd0:",
            "kworker/0:1",
        ]);
        let nodes = kswapd_threads_per_node(&comms);
        assert_eq!(nodes, BTreeMap::from([(0, 3), (1, 1)]));
        assert_eq!(
            kswapd_counts_off(&nodes, 3).as_deref(),
            Some("node 1 runs 1 kswapd threads, not 3")
        );
        let even =
            kswapd_threads_per_node(&names(&["kswapd0", "kswapd0:1", "kswapd1", "kswapd1:1"]));
        assert_eq!(kswapd_counts_off(&even, 2), None);
        assert!(kswapd_counts_off(&BTreeMap::new(), 1).is_some());
    }

    #[test]
    fn other_knobs_are_not_checked() {
        assert_eq!(check(Path::new("/sys/kernel/mm/pmr/enabled"), "2"), None);
        assert!(check(Path::new("/proc/sys/vm/kswapd_threads"), "two").is_some());
    }
}

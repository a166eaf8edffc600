//! The app processes lmkd knows about, with their oom_score_adj: what the
//! activity manager reports to lmkd over its socket on Android
//! (`LMK_PROCPRIO` / `LMK_PROCREMOVE`).
//!
//! lmkd keeps one list per oom_score_adj value; a process whose adj is set
//! (again) is put at the head of its new list, and lmkd's non-heaviest
//! victim is the tail, i.e. the process that has held that adj longest.
//! `seq` records that order: a smaller `seq` was registered earlier.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub app: String,
    pub adj: i32,
    pub seq: u64,
}

#[derive(Default)]
pub struct ProcRegistry {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    procs: HashMap<i32, Entry>,
    next_seq: u64,
}

impl ProcRegistry {
    /// Register `pid` or move it to `adj`; returns whether anything changed
    /// (the caller then writes /proc/<pid>/oom_score_adj).
    pub fn set_adj(&self, pid: i32, app: &str, adj: i32) -> bool {
        let mut inner = self.inner.lock().expect("registry lock");
        if inner.procs.get(&pid).is_some_and(|e| e.adj == adj) {
            return false;
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.procs.insert(
            pid,
            Entry {
                app: app.to_string(),
                adj,
                seq,
            },
        );
        true
    }

    pub fn remove(&self, pid: i32) -> Option<Entry> {
        self.inner.lock().expect("registry lock").procs.remove(&pid)
    }

    pub fn snapshot(&self) -> Vec<(i32, Entry)> {
        let inner = self.inner.lock().expect("registry lock");
        inner
            .procs
            .iter()
            .map(|(pid, e)| (*pid, e.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn re_registering_with_a_new_adj_makes_it_newest() {
        let r = ProcRegistry::default();
        assert!(r.set_adj(10, "a", 900));
        assert!(r.set_adj(11, "b", 900));
        assert!(
            !r.set_adj(10, "a", 900),
            "same adj: no change, keeps its place"
        );
        assert!(r.set_adj(10, "a", 0));
        assert!(r.set_adj(10, "a", 900));
        let snap: HashMap<_, _> = r.snapshot().into_iter().collect();
        assert!(snap[&10].seq > snap[&11].seq);
        assert_eq!(r.remove(11).unwrap().app, "b");
        assert_eq!(r.snapshot().len(), 1);
    }
}

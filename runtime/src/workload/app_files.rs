//! The layout of each app's files (its code and resources) on the data
//! disk: `<data mount>/<app>/res-NNN.bin`.
//!
//! `file_mb` is split into files of at most `MAX_FILE_MB`, their number
//! rounded up to a multiple of the app's process count; process `p` maps
//! the files whose index is `p` modulo the process count, so every process
//! maps an even share. `pmr-guest app-files` writes the files on the host,
//! which makes the data disk of them; app processes map them (and, with
//! `so_mb`, the first pages of their share a second time, privately, as
//! their shared objects' data: app.rs).

use crate::pattern::{self, PAGE_SIZE};
use crate::spec::AppSpec;
use std::path::{Path, PathBuf};

/// Where setup mounts the data disk (guest /tmp is a fresh tmpfs).
pub const DATA_MOUNT: &str = "/tmp/pmr/data";
const MAX_FILE_MB: usize = 4;
const PAGES_PER_MB: f64 = (1 << 20) as f64 / PAGE_SIZE as f64;

#[derive(Debug, Clone, PartialEq)]
pub struct AppFile {
    pub index: usize,
    pub pages: usize,
    pub salt: u64,
}

impl AppFile {
    pub fn path(&self, app_dir: &Path) -> PathBuf {
        app_dir.join(format!("res-{:03}.bin", self.index))
    }
}

/// The directory holding an app's files under the data directory.
pub fn app_dir(data_dir: &Path, app: &str) -> PathBuf {
    data_dir.join(app)
}

/// Whole pages in `mb` MiB.
pub fn pages_of_mb(mb: f64) -> usize {
    (mb * PAGES_PER_MB).round() as usize
}

/// All files of an app, in index order.
pub fn app_files(app: &AppSpec) -> Vec<AppFile> {
    let total = pages_of_mb(app.file_mb);
    let processes = app.processes as usize;
    let max_pages = pages_of_mb(MAX_FILE_MB as f64);
    let count = total.div_ceil(max_pages).max(1).next_multiple_of(processes);
    (0..count)
        .map(|index| AppFile {
            index,
            pages: total / count + usize::from(index < total % count),
            salt: pattern::salt(&app.name, 1000 + index as u32),
        })
        .filter(|f| f.pages > 0)
        .collect()
}

/// The salt of the word a process writes into each page of file `index`
/// of `app` that it maps as its shared objects' data (`so_mb`): its
/// relocation, unlike any word of the file's (whose salts are
/// `salt(app, 1000 + index)`) or of a heap's (`salt(app, process)`).
pub fn reloc_salt(app: &str, index: usize) -> u64 {
    pattern::salt(app, RELOC_SALT_BASE + index as u32)
}

const RELOC_SALT_BASE: u32 = 1 << 30;

/// The files process `process` of the app maps.
pub fn process_files(app: &AppSpec, process: u32) -> Vec<AppFile> {
    app_files(app)
        .into_iter()
        .filter(|f| f.index % app.processes as usize == process as usize)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Spec;

    fn app(file_mb: f64, processes: u32) -> AppSpec {
        let spec = Spec::parse(include_str!("../../tests/fixtures/spec.json")).unwrap();
        AppSpec {
            file_mb,
            processes,
            ..spec.apps[0].clone()
        }
    }

    #[test]
    fn files_cover_file_mb_and_are_at_most_4_mib() {
        let files = app_files(&app(10.0, 1));
        assert_eq!(files.len(), 3);
        assert_eq!(files.iter().map(|f| f.pages).sum::<usize>(), 2560);
        assert!(files.iter().all(|f| f.pages <= 1024));
    }

    #[test]
    fn processes_get_even_shares() {
        let a = app(20.0, 2);
        let p0: usize = process_files(&a, 0).iter().map(|f| f.pages).sum();
        let p1: usize = process_files(&a, 1).iter().map(|f| f.pages).sum();
        assert_eq!(p0 + p1, 5120);
        assert!(p0.abs_diff(p1) <= 1, "{p0} vs {p1}");
    }

    #[test]
    fn relocation_salts_are_their_own() {
        let a = app(10.0, 1);
        for f in app_files(&a) {
            let reloc = reloc_salt(&a.name, f.index);
            assert_ne!(reloc, f.salt);
            assert_ne!(reloc, pattern::salt(&a.name, 0), "a heap's salt");
            assert_ne!(pattern::word(reloc, 3, 0), pattern::word(f.salt, 3, 0));
        }
        assert_ne!(reloc_salt("chrome", 0), reloc_salt("chrome", 1));
    }

    #[test]
    fn tiny_or_empty_file_budget() {
        assert!(app_files(&app(0.0, 1)).is_empty());
        let files = app_files(&app(0.01, 3)); // 3 pages over 3 processes
        assert_eq!(files.len(), 3);
        assert_eq!(process_files(&app(0.01, 3), 2).len(), 1);
    }
}

//! /sys/kernel/mm/page_idle/bitmap (CONFIG_IDLE_PAGE_TRACKING;
//! Documentation/admin-guide/mm/idle_page_tracking.rst): one bit per PFN,
//! read and written as u64 words, word i covering PFNs 64i..64i+63 at byte
//! offset 8i. Writing a word marks idle the pages whose bits are set
//! (clearing their young bits in the page tables); reading it gives 1 for
//! the pages still idle, a page touched since being marked reading 0.
//!
//! Pages are marked and checked by word: the words of the pages are
//! grouped into runs of consecutive words, each run one pwrite or pread.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

pub const PATH: &str = "/sys/kernel/mm/page_idle/bitmap";
const WORD_BYTES: u64 = 8;
const PFNS_PER_WORD: u64 = 64;

/// The bitmap exists, or a setup error that says which config lacks.
pub fn require() -> anyhow::Result<()> {
    anyhow::ensure!(
        Path::new(PATH).exists(),
        "skew needs CONFIG_IDLE_PAGE_TRACKING: {PATH} missing"
    );
    Ok(())
}

/// The bitmap words that mark `pfns`: word index -> bits.
pub fn words(pfns: impl IntoIterator<Item = u64>) -> BTreeMap<u64, u64> {
    let mut words = BTreeMap::new();
    for pfn in pfns {
        *words.entry(pfn / PFNS_PER_WORD).or_insert(0) |= 1 << (pfn % PFNS_PER_WORD);
    }
    words
}

/// Ascending word indexes grouped into runs of consecutive ones.
pub fn runs(indexes: impl IntoIterator<Item = u64>) -> Vec<Range<u64>> {
    let mut runs: Vec<Range<u64>> = Vec::new();
    for i in indexes {
        match runs.last_mut() {
            Some(run) if run.end == i => run.end += 1,
            _ => runs.push(i..i + 1),
        }
    }
    runs
}

/// Bitmap words read back: word index -> the bits of the pages still idle.
pub struct IdleWords(BTreeMap<u64, u64>);

impl IdleWords {
    /// `pfn` was read as idle; a PFN whose word was not read is not.
    pub fn is_idle(&self, pfn: u64) -> bool {
        self.0
            .get(&(pfn / PFNS_PER_WORD))
            .is_some_and(|w| w & (1 << (pfn % PFNS_PER_WORD)) != 0)
    }
}

impl FromIterator<(u64, u64)> for IdleWords {
    fn from_iter<I: IntoIterator<Item = (u64, u64)>>(words: I) -> Self {
        IdleWords(words.into_iter().collect())
    }
}

/// The open bitmap.
pub struct IdleBitmap {
    file: File,
}

impl IdleBitmap {
    pub fn open(path: &Path) -> io::Result<IdleBitmap> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        Ok(IdleBitmap { file })
    }

    /// Mark the pages `pfns` idle.
    pub fn mark(&self, pfns: impl IntoIterator<Item = u64>) -> io::Result<()> {
        let words = words(pfns);
        let mut bytes = Vec::new();
        for run in runs(words.keys().copied()) {
            bytes.clear();
            for i in run.clone() {
                bytes.extend_from_slice(&words[&i].to_ne_bytes());
            }
            self.file.write_all_at(&bytes, run.start * WORD_BYTES)?;
        }
        Ok(())
    }

    /// Read the words of `pfns` (which clears the idle bit of the pages
    /// touched since they were marked).
    pub fn read(&self, pfns: impl IntoIterator<Item = u64>) -> io::Result<IdleWords> {
        let indexes: BTreeSet<u64> = pfns.into_iter().map(|p| p / PFNS_PER_WORD).collect();
        let mut words = BTreeMap::new();
        for run in runs(indexes) {
            let mut bytes = vec![0u8; ((run.end - run.start) * WORD_BYTES) as usize];
            self.read_at(&mut bytes, run.start * WORD_BYTES)?;
            for (i, word) in run.zip(bytes.chunks_exact(WORD_BYTES as usize)) {
                words.insert(i, u64::from_ne_bytes(word.try_into().expect("8 bytes")));
            }
        }
        Ok(IdleWords(words))
    }

    /// Fill `buf` from `offset`; what lies past the end (PFNs beyond the
    /// last) stays 0.
    fn read_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.file.read_at(buf, offset) {
                Ok(0) => break,
                Ok(n) => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfns_become_words() {
        let w = words([0, 1, 63, 64, 130, 1, 64 * 10 + 5]);
        assert_eq!(
            w.into_iter().collect::<Vec<_>>(),
            vec![(0, 1 | 2 | 1 << 63), (1, 1), (2, 1 << 2), (10, 1 << 5)]
        );
        assert!(words([]).is_empty());
    }

    #[test]
    fn consecutive_words_make_one_run() {
        assert_eq!(runs([0, 1, 2, 10, 12, 13]), vec![0..3, 10..11, 12..14]);
        assert_eq!(runs([7]), vec![7..8]);
        assert!(runs([]).is_empty());
    }

    #[test]
    fn read_words_tell_idle_pages() {
        let idle: IdleWords = [(0, 1 << 3), (2, 1 << 63)].into_iter().collect();
        assert!(idle.is_idle(3));
        assert!(idle.is_idle(191));
        assert!(!idle.is_idle(2) && !idle.is_idle(64 + 3) && !idle.is_idle(190));
    }

    /// A regular file stands in for the bitmap: a write stores its words,
    /// so what is marked reads back as idle.
    #[test]
    fn marks_and_reads_words_at_their_offsets() {
        let path = std::env::temp_dir().join(format!("pmr-idle-bitmap-{}", std::process::id()));
        std::fs::write(&path, []).unwrap();
        let bitmap = IdleBitmap::open(&path).unwrap();
        bitmap.mark([5, 64, 65, 64 * 3]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 32, "words 0 and 1, then word 3");
        assert_eq!(bytes[0..8], (1u64 << 5).to_ne_bytes());
        assert_eq!(bytes[8..16], 3u64.to_ne_bytes());
        assert_eq!(bytes[16..24], [0; 8], "word 2 was not written");
        let idle = bitmap.read([5, 6, 65, 64 * 3, 64 * 100]).unwrap();
        assert!(idle.is_idle(5) && idle.is_idle(65) && idle.is_idle(64 * 3));
        assert!(!idle.is_idle(6) && !idle.is_idle(64 * 100));
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn a_missing_bitmap_names_the_config() {
        if Path::new(PATH).exists() {
            return;
        }
        let err = require().unwrap_err().to_string();
        assert_eq!(
            err,
            "skew needs CONFIG_IDLE_PAGE_TRACKING: /sys/kernel/mm/page_idle/bitmap missing"
        );
    }
}

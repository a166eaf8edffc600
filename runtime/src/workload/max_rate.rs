//! `pmr-guest alloc`: a max-rate allocator, the paper's memtester (§3.1.1,
//! Fig. 4a) without its reads. Each of `threads` threads keeps a ring of
//! `chunk`-sized anonymous mappings, `mb / threads` in all, and replaces
//! the oldest with a fresh one, one word written per page, as fast as page
//! faults allow, until `seconds` have passed. Once the rings exceed RAM,
//! every fresh page needs one reclaimed: the oldest chunks are the coldest
//! pages, so reclaim swaps them out and their unmapping frees the swap.
//! Nothing is ever read back from swap, so swap writes measure reclaim
//! alone. Prints one JSON line: the pages it wrote, in how long.

use crate::pattern::{PAGE_SIZE, WORDS_PER_PAGE};
use crate::workload::memory::AnonRegion;
use anyhow::{ensure, Result};
use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Each thread's ring is made of mappings of this size.
pub const CHUNK_MB: usize = 8;

/// A thread's ring: `chunks` mappings of `chunk_pages`, the oldest first.
pub struct Ring {
    chunks: VecDeque<AnonRegion>,
    capacity: usize,
    chunk_pages: usize,
}

impl Ring {
    pub fn new(pages: usize, chunk_pages: usize) -> Ring {
        let capacity = pages.div_ceil(chunk_pages).max(1);
        Ring {
            chunks: VecDeque::with_capacity(capacity),
            capacity,
            chunk_pages,
        }
    }

    /// Map a fresh chunk, write one word of each of its pages, and unmap the
    /// oldest once the ring is full. Returns the pages written.
    pub fn step(&mut self, stamp: u64) -> Result<usize> {
        if self.chunks.len() == self.capacity {
            self.chunks.pop_front();
        }
        let chunk = AnonRegion::new(self.chunk_pages * PAGE_SIZE)?;
        let words = chunk.words();
        for page in 0..self.chunk_pages {
            words[page * WORDS_PER_PAGE].store(stamp ^ page as u64, Ordering::Relaxed);
        }
        self.chunks.push_back(chunk);
        Ok(self.chunk_pages)
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }
}

pub fn run(mb: usize, threads: usize, seconds: f64) -> Result<String> {
    ensure!(
        mb > 0 && threads > 0 && seconds > 0.0,
        "--mb, --threads and --seconds must be > 0"
    );
    let chunk_pages = CHUNK_MB * (1 << 20) / PAGE_SIZE;
    let per_thread = mb * (1 << 20) / PAGE_SIZE / threads;
    let until = Instant::now() + Duration::from_secs_f64(seconds);
    let start = Instant::now();
    let written: Vec<Result<usize>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let mut ring = Ring::new(per_thread, chunk_pages);
                    let mut pages = 0;
                    let mut stamp = (t as u64) << 48;
                    while Instant::now() < until {
                        stamp += 1;
                        pages += ring.step(stamp)?;
                    }
                    Ok(pages)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("allocator thread panicked"))
            .collect()
    });
    let pages = written.into_iter().sum::<Result<usize>>()?;
    let secs = start.elapsed().as_secs_f64();
    Ok(serde_json::json!({
        "pages": pages,
        "seconds": secs,
        "mbps": pages as f64 * PAGE_SIZE as f64 / f64::from(1 << 20) / secs,
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_its_size_and_replaces_the_oldest() {
        let mut ring = Ring::new(10, 4);
        assert!(ring.is_empty());
        for i in 0..3 {
            assert_eq!(ring.step(i).unwrap(), 4);
        }
        assert_eq!(ring.len(), 3, "10 pages in chunks of 4: 3 chunks");
        ring.step(9).unwrap();
        assert_eq!(ring.len(), 3);
        let newest = ring.chunks.back().unwrap().words();
        assert_eq!(newest[WORDS_PER_PAGE].load(Ordering::Relaxed), 9 ^ 1);
    }

    #[test]
    fn run_reports_what_it_wrote() {
        let line = run(16, 2, 0.05).unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(v["pages"].as_u64().unwrap() >= 2 * (CHUNK_MB as u64) * 256);
        assert!(v["mbps"].as_f64().unwrap() > 0.0);
        assert!(run(0, 1, 1.0).is_err());
    }
}

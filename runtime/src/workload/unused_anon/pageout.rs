//! Advising a process's idle pages: the pages still idle are coalesced
//! into address ranges and given to process_madvise in batches of at most
//! `MAX_IOVECS` ranges. A range the kernel refuses (unmapped or changed
//! since it was read: ENOMEM, EINVAL, EFAULT) is skipped and the rest of
//! the batch advised; a process that ended is left with what was advised.

use super::idle_bitmap::IdleWords;
use super::pagemap::{is_gone, Page};
use crate::pattern::PAGE_SIZE;
use crate::sys::{self, MAX_IOVECS};
use std::io;
use std::ops::Range;
use std::os::fd::AsFd;

/// MADV_COLD: deactivate the pages.
pub const MADV_COLD: i32 = 20;
/// MADV_PAGEOUT: reclaim the pages.
pub const MADV_PAGEOUT: i32 = 21;

/// The address ranges of the `pages` (in address order) that `idle`
/// tells are idle, adjacent pages coalesced.
pub fn idle_ranges(pages: &[Page], idle: &IdleWords) -> Vec<Range<u64>> {
    let page = PAGE_SIZE as u64;
    let mut ranges: Vec<Range<u64>> = Vec::new();
    for p in pages.iter().filter(|p| idle.is_idle(p.pfn)) {
        match ranges.last_mut() {
            Some(r) if r.end == p.addr => r.end += page,
            _ => ranges.push(p.addr..p.addr + page),
        }
    }
    ranges
}

/// The ranges in batches of one process_madvise call each.
pub fn batches(ranges: &[Range<u64>]) -> std::slice::Chunks<'_, Range<u64>> {
    ranges.chunks(MAX_IOVECS)
}

/// How many of the leading `ranges` `advised` bytes cover in full.
pub fn ranges_done(ranges: &[Range<u64>], advised: u64) -> usize {
    let mut left = advised;
    ranges
        .iter()
        .take_while(|r| {
            let len = r.end - r.start;
            let whole = len <= left;
            left = left.saturating_sub(len);
            whole
        })
        .count()
}

/// Give `advice` for `ranges` of `pid`: the bytes advised (0 if the
/// process is gone).
pub fn advise(pid: i32, ranges: &[Range<u64>], advice: i32) -> io::Result<u64> {
    if ranges.is_empty() {
        return Ok(0);
    }
    let pidfd = match sys::pidfd_open(pid) {
        Ok(fd) => fd,
        Err(e) if is_gone(&e) => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut advised = 0;
    for batch in batches(ranges) {
        let mut next = 0;
        while next < batch.len() {
            let left = &batch[next..];
            match sys::process_madvise(pidfd.as_fd(), left, advice) {
                Ok(n) => {
                    advised += n;
                    // The range after those done failed: skip it.
                    next += ranges_done(left, n) + 1;
                }
                Err(e) if is_gone(&e) => return Ok(advised),
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ENOMEM | libc::EINVAL | libc::EFAULT)
                    ) =>
                {
                    next += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(advised)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = PAGE_SIZE as u64;

    fn page(n: u64, pfn: u64) -> Page {
        Page { addr: n * P, pfn }
    }

    #[test]
    fn idle_pages_coalesce_into_ranges() {
        // pfn 1..=7 idle but 4; the pages of pfn 5 and 6 are not adjacent
        let idle: IdleWords = [(0, 0b1110_1110)].into_iter().collect();
        let pages = [
            page(10, 1),
            page(11, 2),
            page(12, 3),
            page(13, 4),
            page(14, 5),
            page(20, 6),
            page(21, 7),
            page(22, 64),
        ];
        assert_eq!(
            idle_ranges(&pages, &idle),
            vec![10 * P..13 * P, 14 * P..15 * P, 20 * P..22 * P]
        );
        assert!(idle_ranges(&pages[3..4], &idle).is_empty());
        assert!(idle_ranges(&[], &idle).is_empty());
    }

    #[test]
    fn batches_hold_at_most_uio_maxiov_ranges() {
        // every other page idle: one range each
        let pages: Vec<Page> = (0..2 * 2500).map(|n| page(n, n)).collect();
        let idle: IdleWords = (0..80).map(|w| (w, 0x5555_5555_5555_5555)).collect();
        let ranges = idle_ranges(&pages, &idle);
        assert_eq!(ranges.len(), 2500);
        let sizes: Vec<usize> = batches(&ranges).map(<[_]>::len).collect();
        assert_eq!(sizes, vec![1024, 1024, 452]);
        assert!(batches(&[]).next().is_none());
    }

    #[test]
    fn advised_bytes_tell_the_ranges_done() {
        let ranges = [0..P, 4 * P..6 * P, 10 * P..11 * P];
        assert_eq!(ranges_done(&ranges, 0), 0);
        assert_eq!(ranges_done(&ranges, P), 1);
        assert_eq!(ranges_done(&ranges, 2 * P), 1, "the second is not whole");
        assert_eq!(ranges_done(&ranges, 3 * P), 2);
        assert_eq!(ranges_done(&ranges, 4 * P), 3);
    }

    #[test]
    fn advises_this_process() {
        // MADV_COLD only deactivates: harmless to the test process.
        let heap = vec![1u8; 16 * PAGE_SIZE];
        let start = (heap.as_ptr() as u64).div_ceil(P) * P;
        let pid = std::process::id() as i32;
        let ranges = [start..start + 4 * P, start + 8 * P..start + 12 * P];
        assert_eq!(advise(pid, &ranges, MADV_COLD).unwrap(), 8 * P);
        // an unmapped range is skipped, the rest advised
        let unmapped = [P..2 * P, start..start + P];
        assert_eq!(advise(pid, &unmapped, MADV_COLD).unwrap(), P);
        assert_eq!(
            advise(i32::MAX, &ranges, MADV_COLD).unwrap(),
            0,
            "no such process"
        );
        std::hint::black_box(&heap);
    }
}

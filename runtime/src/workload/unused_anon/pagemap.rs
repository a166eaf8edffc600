//! /proc/PID/pagemap: which physical page (PFN) backs each virtual page
//! of a process. One little-endian u64 per virtual page, at byte offset
//! 8 × (address / page size): bit 63 present in RAM, bit 62 swapped, bit
//! 61 a file page or shared anonymous memory, bits 0-54 the PFN
//! (Documentation/admin-guide/mm/pagemap.rst). Only a process with
//! CAP_SYS_ADMIN sees PFNs; others read 0, which is taken as no page.

use crate::pattern::PAGE_SIZE;
use std::fs::File;
use std::io;
use std::ops::Range;
use std::os::unix::fs::FileExt;

const PRESENT: u64 = 1 << 63;
const FILE_OR_SHARED: u64 = 1 << 61;
const PFN_MASK: u64 = (1 << 55) - 1;
/// Pagemap entries read at once (128 KiB).
const CHUNK_PAGES: usize = 16 * 1024;

/// A virtual page of a process and the physical page backing it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// The address of the virtual page.
    pub addr: u64,
    pub pfn: u64,
}

/// The PFN of a pagemap entry that is a private anonymous page in RAM;
/// None for a page not present (never touched, or swapped out), a file
/// or shared page, or a PFN hidden from an unprivileged reader.
pub fn private_pfn(entry: u64) -> Option<u64> {
    if entry & PRESENT == 0 || entry & FILE_OR_SHARED != 0 {
        return None;
    }
    Some(entry & PFN_MASK).filter(|&pfn| pfn != 0)
}

/// The private anonymous pages in RAM of `pid` within `vmas`, in address
/// order. A process that ended meanwhile is an error of kind ESRCH (see
/// `is_gone`).
pub fn scan(pid: i32, vmas: &[Range<u64>]) -> io::Result<Vec<Page>> {
    let file = File::open(format!("/proc/{pid}/pagemap"))?;
    let page = PAGE_SIZE as u64;
    let mut buf = vec![0u8; CHUNK_PAGES * 8];
    let mut pages = Vec::new();
    for vma in vmas {
        let mut first = vma.start / page;
        let end = vma.end.div_ceil(page);
        while first < end {
            let n = (end - first).min(CHUNK_PAGES as u64) as usize;
            read_full_at(&file, &mut buf[..n * 8], first * 8)?;
            for (i, entry) in buf[..n * 8].chunks_exact(8).enumerate() {
                let entry = u64::from_le_bytes(entry.try_into().expect("8 bytes"));
                if let Some(pfn) = private_pfn(entry) {
                    let addr = (first + i as u64) * page;
                    pages.push(Page { addr, pfn });
                }
            }
            first += n as u64;
        }
    }
    Ok(pages)
}

/// Fill `buf` from `offset`; the pagemap of a process whose memory is
/// gone reads as end of file, which is ESRCH here.
fn read_full_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => io::Error::from_raw_os_error(libc::ESRCH),
        _ => e,
    })
}

/// The error says the process ended: its /proc directory or its memory
/// is gone.
pub fn is_gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_entries() {
        assert_eq!(private_pfn(PRESENT | 0x1234), Some(0x1234));
        assert_eq!(private_pfn(PRESENT | PFN_MASK), Some(PFN_MASK));
        // bits 55-60 (soft-dirty, exclusive, ...) do not matter
        assert_eq!(private_pfn(PRESENT | (1 << 56) | (1 << 55) | 7), Some(7));
        assert_eq!(private_pfn(0x1234), None, "not present");
        assert_eq!(private_pfn((1 << 62) | 0x55), None, "swapped");
        assert_eq!(
            private_pfn(PRESENT | FILE_OR_SHARED | 0x1234),
            None,
            "file or shared"
        );
        assert_eq!(private_pfn(PRESENT), None, "PFN hidden");
        assert_eq!(private_pfn(0), None);
    }

    #[test]
    fn scans_this_process() {
        // Root sees PFNs; anyone else sees none.
        let root = unsafe { libc::geteuid() } == 0;
        let mut heap = vec![1u8; 64 * PAGE_SIZE];
        heap.iter_mut().step_by(PAGE_SIZE).for_each(|b| *b = 2);
        // VMAs are whole pages
        let start = heap.as_ptr() as u64 / PAGE_SIZE as u64 * PAGE_SIZE as u64;
        let vma = start..heap.as_ptr() as u64 + heap.len() as u64;
        let pages = scan(std::process::id() as i32, std::slice::from_ref(&vma)).unwrap();
        if root {
            assert!(pages.len() >= 64, "{}", pages.len());
            assert!(pages
                .iter()
                .all(|p| vma.contains(&p.addr) && p.addr % PAGE_SIZE as u64 == 0));
            assert!(pages.windows(2).all(|w| w[0].addr < w[1].addr));
        } else {
            assert!(pages.is_empty());
        }
        std::hint::black_box(&heap);
    }

    #[test]
    fn a_process_gone_is_told_apart() {
        let vma = 0..4096;
        let err = scan(i32::MAX, std::slice::from_ref(&vma)).unwrap_err();
        assert!(is_gone(&err), "{err}");
        assert!(is_gone(&io::Error::from_raw_os_error(libc::ESRCH)));
        assert!(!is_gone(&io::Error::from_raw_os_error(libc::EIO)));
    }
}

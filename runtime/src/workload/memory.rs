//! Memory mappings the app model touches: an anonymous heap, read-only
//! file mappings, and private writable ones (shared objects' data).
//!
//! The heap is exposed as a slice of `AtomicU64` so that the app's command
//! thread and its activity thread may touch the same pages without data
//! races; relaxed atomic loads and stores compile to plain moves.

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;

/// A private anonymous mapping (`MAP_PRIVATE | MAP_ANONYMOUS`), untouched
/// until written.
pub struct AnonRegion {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

// The region is plain memory accessed through atomics only.
unsafe impl Send for AnonRegion {}
unsafe impl Sync for AnonRegion {}

impl AnonRegion {
    pub fn new(len: usize) -> Result<AnonRegion> {
        let ptr = map(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
        )
        .context("mmap of the anonymous heap failed")?;
        Ok(AnonRegion { ptr, len })
    }

    /// The region from `offset` on, as a region of its own.
    ///
    /// # Safety
    /// `self` must never be dropped nor used past `offset` afterwards: the
    /// new region owns that part. The zygote's forked app processes hold to
    /// this, as they never return to the zygote's loop (zygote.rs).
    pub unsafe fn tail(&self, offset: usize) -> AnonRegion {
        assert!(offset.is_multiple_of(crate::pattern::PAGE_SIZE) && offset <= self.len);
        let len = self.len - offset;
        if len == 0 {
            return AnonRegion {
                ptr: NonNull::dangling(),
                len,
            };
        }
        // SAFETY: in bounds of the mapping (checked above).
        let ptr =
            unsafe { NonNull::new_unchecked(self.ptr.as_ptr().cast::<u8>().add(offset).cast()) };
        AnonRegion { ptr, len }
    }

    pub fn words(&self) -> &[AtomicU64] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the mapping is readable and writable, page aligned, lives
        // as long as `self`, and zeroed memory is a valid AtomicU64.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().cast(), self.len / 8) }
    }

    /// Free the pages of `len` bytes from `offset` (page aligned; the
    /// kernel's MADV_DONTNEED): the next write faults in a new zeroed page.
    pub fn discard(&self, offset: usize, len: usize) -> Result<()> {
        let page = crate::pattern::PAGE_SIZE;
        assert!(offset.is_multiple_of(page) && len.is_multiple_of(page));
        assert!(offset + len <= self.len, "discard past the region's end");
        if len == 0 {
            return Ok(());
        }
        dontneed(self.ptr, offset, len)
    }

    /// The region as plain words, for a single user that holds it exclusively.
    pub fn words_mut(&mut self) -> &mut [u64] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as for `words`; `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), self.len / 8) }
    }
}

impl Drop for AnonRegion {
    fn drop(&mut self) {
        unmap(self.ptr, self.len);
    }
}

/// A file mapped read-only and shared (its pages are page cache).
pub struct FileMapping {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

unsafe impl Send for FileMapping {}
unsafe impl Sync for FileMapping {}

impl FileMapping {
    pub fn open(path: &Path) -> Result<FileMapping> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let len = file.metadata()?.len() as usize;
        if len == 0 {
            bail!("{} is empty", path.display());
        }
        let ptr = map(len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd())
            .with_context(|| format!("mmap of {} failed", path.display()))?;
        Ok(FileMapping { ptr, len })
    }

    pub fn pages(&self) -> usize {
        self.len / crate::pattern::PAGE_SIZE
    }

    /// The first word of `page`; reading it faults the page in.
    pub fn first_word(&self, page: usize) -> u64 {
        assert!(page < self.pages(), "page {page} outside the mapping");
        // SAFETY: in bounds (checked above), aligned, and mapped readable;
        // nothing writes the mapping.
        unsafe {
            self.ptr
                .as_ptr()
                .cast::<u64>()
                .add(page * crate::pattern::WORDS_PER_PAGE)
                .read_volatile()
        }
    }
}

impl Drop for FileMapping {
    fn drop(&mut self) {
        unmap(self.ptr, self.len);
    }
}

/// The first pages of a file mapped private and writable (`MAP_PRIVATE`,
/// `PROT_READ | PROT_WRITE`), as a shared object's data is: a page reads
/// the file until it is written, then holds a private copy of its own,
/// anonymous memory that goes to swap and that swap-clean
/// (MADV_SWAPCLEAN) may drop once it is there, after which the page reads
/// the file again. Exposed as `AtomicU64` words, as the heap is, so that
/// the command thread and the activity thread may both touch it.
pub struct PrivateFileMapping {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

// The mapping is plain memory accessed through atomics only.
unsafe impl Send for PrivateFileMapping {}
unsafe impl Sync for PrivateFileMapping {}

impl PrivateFileMapping {
    /// Map the first `pages` pages of `path` (which must hold them).
    pub fn open(path: &Path, pages: usize) -> Result<PrivateFileMapping> {
        let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let len = pages * crate::pattern::PAGE_SIZE;
        let size = file.metadata()?.len() as usize;
        if len == 0 || len > size {
            bail!(
                "{} has {size} bytes: cannot map {pages} pages of it",
                path.display()
            );
        }
        let ptr = map(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE,
            file.as_raw_fd(),
        )
        .with_context(|| format!("private mmap of {} failed", path.display()))?;
        Ok(PrivateFileMapping { ptr, len })
    }

    pub fn pages(&self) -> usize {
        self.len / crate::pattern::PAGE_SIZE
    }

    /// The first word of `page`: a load reads the page (from the file, or
    /// its private copy, from swap if need be), a store writes its private
    /// copy.
    pub fn first_word(&self, page: usize) -> &AtomicU64 {
        assert!(page < self.pages(), "page {page} outside the mapping");
        // SAFETY: the mapping is readable and writable, page aligned and
        // lives as long as `self`; any bit pattern is a valid AtomicU64.
        unsafe {
            &*self
                .ptr
                .as_ptr()
                .cast::<AtomicU64>()
                .add(page * crate::pattern::WORDS_PER_PAGE)
        }
    }

    /// Drop `page`'s private copy (MADV_DONTNEED), so that it reads the
    /// file again: what swap-clean does to a copy in swap, for the tests.
    #[cfg(test)]
    pub fn revert(&self, page: usize) -> Result<()> {
        assert!(page < self.pages(), "page {page} outside the mapping");
        let page_size = crate::pattern::PAGE_SIZE;
        dontneed(self.ptr, page * page_size, page_size)
    }
}

impl Drop for PrivateFileMapping {
    fn drop(&mut self) {
        unmap(self.ptr, self.len);
    }
}

fn map(len: usize, prot: i32, flags: i32, fd: i32) -> std::io::Result<NonNull<libc::c_void>> {
    if len == 0 {
        return Ok(NonNull::dangling());
    }
    // SAFETY: a fresh mapping chosen by the kernel; arguments are checked by it.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, flags, fd, 0) };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(NonNull::new(ptr).expect("mmap never returns NULL on success"))
}

/// MADV_DONTNEED on `len` bytes at `offset` into the mapping at `ptr`; the
/// caller checks that the range is page aligned and inside the mapping.
fn dontneed(ptr: NonNull<libc::c_void>, offset: usize, len: usize) -> Result<()> {
    // SAFETY: a page-aligned range inside a mapping that stays mapped.
    let ret = unsafe {
        libc::madvise(
            ptr.as_ptr().cast::<u8>().add(offset).cast(),
            len,
            libc::MADV_DONTNEED,
        )
    };
    if ret != 0 {
        bail!(
            "madvise(MADV_DONTNEED): {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

fn unmap(ptr: NonNull<libc::c_void>, len: usize) {
    if len > 0 {
        // SAFETY: the mapping was created by `map` with this length.
        unsafe { libc::munmap(ptr.as_ptr(), len) };
    }
}

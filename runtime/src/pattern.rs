//! Page contents: one 64-bit word per 4 KiB page, derived from a salt (the
//! app process or file) and the page index.
//!
//! Every page gets a different non-zero word, so no page is the zero page
//! and no two pages are identical (nothing for dedup to merge). Because the
//! word is a function of the page index, a reader can check that a page
//! that went to swap and came back holds what was written: the
//! data-integrity canary. The top byte is a generation that writers may
//! change to give a page new content; `verify` ignores it.

pub const PAGE_SIZE: usize = 4096;
pub const WORDS_PER_PAGE: usize = PAGE_SIZE / 8;
const GENERATION_SHIFT: u32 = 56;
const IDENTITY_MASK: u64 = (1 << GENERATION_SHIFT) - 1;

/// The word for `page` under `salt`, with generation `generation`.
pub fn word(salt: u64, page: usize, generation: u8) -> u64 {
    let identity = splitmix64(salt ^ (page as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1;
    identity ^ (u64::from(generation) << GENERATION_SHIFT)
}

/// Whether `found` is a word that `word(salt, page, _)` could have written.
pub fn verify(salt: u64, page: usize, found: u64) -> bool {
    (found ^ word(salt, page, 0)) & IDENTITY_MASK == 0
}

/// A salt from a name and an index (FNV-1a), stable across runs.
pub fn salt(name: &str, index: u32) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in name.bytes().chain(index.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Fill one page of a file: its word first, then filler derived from it so
/// that the file's blocks are neither zero nor alike.
pub fn fill_file_page(buf: &mut [u8], salt: u64, page: usize) {
    let mut x = word(salt, page, 0);
    for chunk in buf.chunks_exact_mut(8) {
        chunk.copy_from_slice(&x.to_le_bytes());
        x = splitmix64(x);
    }
}

/// SplitMix64's output function: one well-mixed word from another.
pub fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_differ_by_page_and_salt_and_verify_any_generation() {
        let s = salt("chrome", 0);
        assert_ne!(s, salt("chrome", 1));
        assert_ne!(word(s, 1, 0), word(s, 2, 0));
        assert_ne!(word(s, 1, 0), word(salt("youtube", 0), 1, 0));
        assert_ne!(word(s, 7, 0), word(s, 7, 3), "generation changes content");
        assert!(verify(s, 7, word(s, 7, 3)));
        assert!(!verify(s, 8, word(s, 7, 3)), "wrong page is detected");
        assert!(!verify(s, 7, 0), "a zeroed page is detected");
    }

    #[test]
    fn file_page_starts_with_its_word() {
        let mut buf = vec![0u8; PAGE_SIZE];
        fill_file_page(&mut buf, 5, 9);
        let first = u64::from_le_bytes(buf[..8].try_into().unwrap());
        assert!(verify(5, 9, first));
        assert!(buf[8..].iter().any(|&b| b != 0));
    }
}

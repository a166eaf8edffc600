//! Self-checking page contents for the reliability checker.
//!
//! Every 4 KiB page holds 511 words of an xorshift64* stream seeded from
//! (process seed, page index, pass) and, in its last word, a checksum of
//! those words keyed by the same three numbers. A page read back after a
//! trip through swap must be exactly what its last pass wrote, so a lost
//! page (zeros), a stale page (an older pass's content, whose checksum is
//! keyed by its own pass), another page's content or a flipped bit all fail
//! `verify`, and the mismatch says what the page looks like instead.

use crate::pattern::{splitmix64, PAGE_SIZE};
use std::fmt;

pub const PAGE_WORDS: usize = PAGE_SIZE / 8;
const DATA_WORDS: usize = PAGE_WORDS - 1;
/// How many passes after the expected one a mismatch is compared with.
const LATER_PASSES_SEARCHED: u32 = 2;

/// Which content a page should hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageId {
    pub seed: u64,
    pub index: u64,
    pub pass: u32,
}

impl PageId {
    pub fn with_pass(self, pass: u32) -> PageId {
        PageId { pass, ..self }
    }

    fn key(self) -> u64 {
        splitmix64(
            splitmix64(self.seed ^ 0x5851_F42D_4C95_7F2D)
                ^ splitmix64(self.index)
                ^ splitmix64(0xD1B5_4A32_D192_ED03 ^ u64::from(self.pass)),
        )
    }
}

/// xorshift64*: cheap, full-period, and no output word is zero twice in a row.
struct Stream(u64);

impl Stream {
    fn new(key: u64) -> Stream {
        Stream(if key == 0 { 0x9E37_79B9_7F4A_7C15 } else { key })
    }

    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

struct Checksum(u64);

impl Checksum {
    fn new(key: u64) -> Checksum {
        Checksum(key ^ 0x94D0_49BB_1331_11EB)
    }

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(23) ^ word).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        splitmix64(self.0)
    }
}

/// Write the content of `id` into `page` (PAGE_WORDS words).
pub fn fill(page: &mut [u64], id: PageId) {
    assert_eq!(page.len(), PAGE_WORDS, "a page is {PAGE_WORDS} words");
    let key = id.key();
    let (mut stream, mut sum) = (Stream::new(key), Checksum::new(key));
    for word in &mut page[..DATA_WORDS] {
        let v = stream.next();
        *word = v;
        sum.add(v);
    }
    page[DATA_WORDS] = sum.finish();
}

/// The first word of `page` that differs from the content of `id`, with
/// the word expected there.
fn first_difference(page: &[u64], id: PageId) -> Option<(usize, u64)> {
    assert_eq!(page.len(), PAGE_WORDS, "a page is {PAGE_WORDS} words");
    let key = id.key();
    let (mut stream, mut sum) = (Stream::new(key), Checksum::new(key));
    for (i, &found) in page[..DATA_WORDS].iter().enumerate() {
        let expected = stream.next();
        if found != expected {
            return Some((i, expected));
        }
        sum.add(expected);
    }
    let expected = sum.finish();
    (page[DATA_WORDS] != expected).then_some((DATA_WORDS, expected))
}

/// Whether `page` holds exactly the content of `id`.
pub fn matches(page: &[u64], id: PageId) -> bool {
    first_difference(page, id).is_none()
}

/// Check `page` against the content of `id`.
pub fn verify(page: &[u64], id: PageId) -> Result<(), Mismatch> {
    match first_difference(page, id) {
        None => Ok(()),
        Some((word, expected)) => Err(Mismatch::diagnose(page, id, word, expected)),
    }
}

/// What a page that failed verification holds instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LooksLike {
    ZeroPage,
    /// Exactly this page's content of another pass: stale if earlier.
    OtherPass(u32),
    /// Neither: flipped bits, another page's data, garbage.
    Corrupt,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub id: PageId,
    /// The first differing word (PAGE_WORDS - 1 is the checksum).
    pub word: usize,
    pub expected: u64,
    pub found: u64,
    pub differing_words: usize,
    pub looks_like: LooksLike,
}

impl Mismatch {
    fn diagnose(page: &[u64], id: PageId, word: usize, expected: u64) -> Mismatch {
        let mut want = vec![0u64; PAGE_WORDS];
        fill(&mut want, id);
        let differing_words = page.iter().zip(&want).filter(|(a, b)| a != b).count();
        let looks_like = if page.iter().all(|&w| w == 0) {
            LooksLike::ZeroPage
        } else {
            (0..=id.pass + LATER_PASSES_SEARCHED)
                .filter(|&p| p != id.pass)
                .find(|&p| matches(page, id.with_pass(p)))
                .map_or(LooksLike::Corrupt, LooksLike::OtherPass)
        };
        Mismatch {
            id,
            word,
            expected,
            found: page[word],
            differing_words,
            looks_like,
        }
    }
}

impl fmt::Display for LooksLike {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LooksLike::ZeroPage => write!(f, "a zero page (lost)"),
            LooksLike::OtherPass(p) => write!(f, "this page's pass-{p} content"),
            LooksLike::Corrupt => write!(f, "no pass of this page (corrupt)"),
        }
    }
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "page {} pass {}: word {} expected {:#018x} found {:#018x}; {} of {PAGE_WORDS} words differ; \
             the page holds {}",
            self.id.index,
            self.id.pass,
            self.word,
            self.expected,
            self.found,
            self.differing_words,
            self.looks_like
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(id: PageId) -> Vec<u64> {
        let mut p = vec![0u64; PAGE_WORDS];
        fill(&mut p, id);
        p
    }

    const ID: PageId = PageId {
        seed: 42,
        index: 1234,
        pass: 5,
    };

    #[test]
    fn a_page_verifies_as_what_was_written() {
        assert_eq!(verify(&page(ID), ID), Ok(()));
    }

    #[test]
    fn a_page_from_pass_k_does_not_verify_as_pass_k_plus_1() {
        let old = page(ID);
        let err = verify(&old, ID.with_pass(6)).unwrap_err();
        assert_eq!(err.looks_like, LooksLike::OtherPass(5), "{err}");
        assert!(err.to_string().contains("pass-5 content"), "{err}");
        assert!(verify(&old, ID.with_pass(4)).is_err());
    }

    #[test]
    fn a_flipped_byte_is_detected_anywhere_in_the_page() {
        for byte in [0, 8 * 200 + 3, PAGE_SIZE - 9, PAGE_SIZE - 1] {
            let mut p = page(ID);
            let (w, shift) = (byte / 8, (byte % 8) * 8);
            p[w] ^= 0x01 << shift;
            let err = verify(&p, ID).unwrap_err();
            assert_eq!(err.word, w);
            assert_eq!(err.differing_words, 1);
            assert_eq!(err.looks_like, LooksLike::Corrupt, "byte {byte}");
        }
    }

    #[test]
    fn lost_and_misplaced_pages_are_told_apart() {
        let err = verify(&[0u64; PAGE_WORDS], ID).unwrap_err();
        assert_eq!(err.looks_like, LooksLike::ZeroPage);
        let neighbour = page(PageId { index: 1235, ..ID });
        assert_eq!(
            verify(&neighbour, ID).unwrap_err().looks_like,
            LooksLike::Corrupt
        );
        let other_process = page(PageId { seed: 43, ..ID });
        assert!(verify(&other_process, ID).is_err());
    }

    #[test]
    fn pages_are_filled_with_distinct_non_zero_content() {
        let p = page(ID);
        let zero_bytes = p
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .filter(|&b| b == 0)
            .count();
        assert!(zero_bytes < PAGE_SIZE / 64, "{zero_bytes} zero bytes");
        let mut words = p.clone();
        words.sort_unstable();
        words.dedup();
        assert_eq!(words.len(), PAGE_WORDS, "no word repeats");
        assert_ne!(p, page(ID.with_pass(6)));
        assert_ne!(p[DATA_WORDS], page(ID.with_pass(6))[DATA_WORDS]);
    }
}

//! Template memory that no worker touches, kept out of every fork (`MADV_DONTFORK`).
//!
//! fork(2) copies the page-table entries of each of the template's private mappings
//! into every worker, and the worker's exit tears them down again: a per-page cost paid
//! once per program. One mapping of the template is never touched by a worker: the
//! engine binding's (v8x's) cache of the Temporal polyfill's compiled bytecode, about
//! 1.4 MB (a quarter of the template's anonymous pages), which the binding reads only
//! when it creates a context. A worker never creates one: it runs its program in the
//! context it inherits, and programs reach no API that makes another (`ShadowRealm` is
//! not in their global scope). So [`exclude_engine_caches`] marks that mapping
//! `MADV_DONTFORK` in the template, after the engine is made and before the sandbox
//! hides `/proc`. Measured with `cargo bench -p codemode --bench execute -- cpu`: 6–16%
//! more programs a second at 16 in flight, in four sets of ten runs each against the
//! unchanged worker (`scripts/compare/README.md`, issue 27).
//!
//! The cache is private to the binding, so it is recognised by what it is: an anonymous
//! mapping that holds exactly one glibc `mmap`ped chunk (the chunk's size word is the
//! mapping's length with the `IS_MMAPPED` bit) and whose first page names the polyfill
//! ([`is_engine_cache`]). Finding none is not an error (another binding version, or
//! the V8 engine): the template then forks without the exclusion.

use std::ops::Range;
use std::os::unix::fs::FileExt;

/// The name the polyfill's bytecode carries in its first page.
const CACHE_MARK: &[u8] = b"<temporal-polyfill>";

/// Smallest mapping worth looking at: the cache is over a megabyte.
const MIN_CACHE_BYTES: usize = 1 << 20;

/// glibc's flag, in a chunk's size word, for a chunk with a mapping of its own.
const IS_MMAPPED: u64 = 0x2;

/// glibc's per-chunk flag bits (`PREV_INUSE`, `IS_MMAPPED`, `NON_MAIN_ARENA`).
const CHUNK_FLAG_BITS: u64 = 0x7;

/// A private, readable and writable mapping with no file or name behind it, from one
/// line of `/proc/self/maps`; `None` for every other line.
pub fn anonymous_private_rw(maps_line: &str) -> Option<Range<usize>> {
    let mut fields = maps_line.split_whitespace();
    let range = fields.next()?;
    let perms = fields.next()?;
    // offset, device, inode; a sixth field is a path or a name such as [heap].
    let (offset, _device, inode, name) = (fields.next()?, fields.next()?, fields.next()?, fields.next());
    if perms != "rw-p" || name.is_some() || inode != "0" || offset != "00000000" {
        return None;
    }
    let (start, end) = range.split_once('-')?;
    let (start, end) = (usize::from_str_radix(start, 16).ok()?, usize::from_str_radix(end, 16).ok()?);
    (start < end).then_some(start..end)
}

/// True when `first_page` (the start of a mapping of `len` bytes) is the engine
/// binding's bytecode cache: one glibc `mmap`ped chunk that fills the mapping and names
/// the Temporal polyfill.
pub fn is_engine_cache(len: usize, first_page: &[u8]) -> bool {
    if len < MIN_CACHE_BYTES || first_page.len() < 16 {
        return false;
    }
    let mut size_word = [0u8; 8];
    size_word.copy_from_slice(&first_page[8..16]);
    let size_word = u64::from_le_bytes(size_word);
    let one_mmapped_chunk = size_word & IS_MMAPPED != 0 && (size_word & !CHUNK_FLAG_BITS) == len as u64;
    one_mmapped_chunk && first_page.windows(CACHE_MARK.len()).any(|w| w == CACHE_MARK)
}

/// Marks the engine binding's caches `MADV_DONTFORK`; returns the bytes excluded (0
/// when there is none). Reads `/proc/self/maps` and `/proc/self/mem`, so it runs before
/// the sandbox.
pub fn exclude_engine_caches() -> std::io::Result<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let memory = std::fs::File::open("/proc/self/mem")?;
    let mut excluded = 0;
    let mut first_page = vec![0u8; 4096];
    for range in maps.lines().filter_map(anonymous_private_rw) {
        let len = range.end - range.start;
        if len < MIN_CACHE_BYTES {
            continue;
        }
        let Ok(read) = memory.read_at(&mut first_page, range.start as u64) else { continue };
        if !is_engine_cache(len, &first_page[..read]) {
            continue;
        }
        // SAFETY: madvise(2) with MADV_DONTFORK changes only what a later fork copies;
        // the range is a whole mapping of this process, read from /proc/self/maps.
        if unsafe { libc::madvise(range.start as *mut libc::c_void, len, libc::MADV_DONTFORK) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        excluded += len;
    }
    Ok(excluded)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_nameless_private_rw_mappings_are_candidates() {
        assert_eq!(
            anonymous_private_rw("7f86b2d6d000-7f86b2ec5000 rw-p 00000000 00:00 0 "),
            Some(0x7f86b2d6d000..0x7f86b2ec5000)
        );
        assert_eq!(anonymous_private_rw("55990c169000-55990c4ed000 rw-p 00000000 00:00 0  [heap]"), None);
        assert_eq!(
            anonymous_private_rw("5598da80f000-5598da812000 rw-p 010ef000 fe:01 1234  /work/sandbox-worker"),
            None
        );
        assert_eq!(anonymous_private_rw("7f86b3493000-7f86b3494000 ---p 00000000 00:00 0 "), None);
        assert_eq!(anonymous_private_rw("7f86b3493000-7f86b3494000 rw-s 00000000 00:01 7 "), None);
        assert_eq!(anonymous_private_rw("garbage"), None);
    }

    /// The first page of a chunk with this size word, holding `text`.
    fn chunk(size_word: u64, text: &[u8]) -> Vec<u8> {
        let mut page = vec![0u8; 4096];
        page[8..16].copy_from_slice(&size_word.to_le_bytes());
        page[64..64 + text.len()].copy_from_slice(text);
        page
    }

    #[test]
    fn the_cache_is_one_mmapped_chunk_that_names_the_polyfill() {
        let len = 0x158000;
        assert!(is_engine_cache(len, &chunk(len as u64 | IS_MMAPPED, b"&<temporal-polyfill>")));
        // Not a chunk of its own mapping, or not the whole mapping.
        assert!(!is_engine_cache(len, &chunk(len as u64 | 0x1, b"<temporal-polyfill>")));
        assert!(!is_engine_cache(len, &chunk((len as u64 - 4096) | IS_MMAPPED, b"<temporal-polyfill>")));
        // Something else, or too small to be the cache.
        assert!(!is_engine_cache(len, &chunk(len as u64 | IS_MMAPPED, b"<other-script>")));
        assert!(!is_engine_cache(4096 * 16, &chunk((4096 * 16) | IS_MMAPPED, b"<temporal-polyfill>")));
        assert!(!is_engine_cache(len, &[0u8; 8]));
    }
}

//! The template's fork exclusion against the real engine: the binding's bytecode cache
//! is found and marked `MADV_DONTFORK` (the kernel shows the mapping's `dc` flag), and
//! nothing else is. If an engine update moves or drops the cache, this fails, and the
//! exclusion (and its measured gain) is gone.
#![cfg(feature = "quickjs")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use sandbox_worker::engine::Engine;
use sandbox_worker::fork_exclusions::exclude_engine_caches;

/// The mappings of this process flagged "do not copy on fork", as (start, length).
fn dont_copy_mappings() -> Vec<(usize, usize)> {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut current = None;
    let mut flagged = Vec::new();
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((start, end)) = first.split_once('-') {
            if let (Ok(start), Ok(end)) = (usize::from_str_radix(start, 16), usize::from_str_radix(end, 16)) {
                current = Some((start, end - start));
                continue;
            }
        }
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            if flags.split_whitespace().any(|f| f == "dc") {
                flagged.extend(current);
            }
        }
    }
    flagged
}

#[test]
fn the_engine_cache_is_kept_out_of_forks_and_nothing_else_is() {
    let _engine = Engine::new(None).unwrap();
    assert!(dont_copy_mappings().is_empty(), "nothing is excluded before the template asks");
    let excluded = exclude_engine_caches().unwrap();
    let flagged = dont_copy_mappings();
    assert_eq!(flagged.len(), 1, "exactly one mapping is excluded: {flagged:x?}");
    assert_eq!(flagged[0].1, excluded);
    assert!(excluded >= 1 << 20, "the cache is over a megabyte, not {excluded} bytes");
    // Asking again finds the same mapping and changes nothing.
    assert_eq!(exclude_engine_caches().unwrap(), excluded);
    assert_eq!(dont_copy_mappings(), flagged);
}

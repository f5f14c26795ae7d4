//! The memory limit: the engine's heap limit, backed by the operating system.
//!
//! The isolate's heap limit is set per program ([`set_heap_limit`]); when the heap nears
//! it, the callback records the trip and terminates the isolate, so the program ends
//! with a memory-limit outcome instead of an engine abort. Allocations the engine does
//! not count (backing stores, native buffers) hit `RLIMIT_DATA` instead
//! (sized by [`os_backstop_bytes`], applied with the other resource limits by
//! `crate::sandbox::lock_worker`), which makes them fail rather than grow without bound.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use deno_core::v8::IsolateHandle;
use deno_core::JsRuntime;

/// Headroom of the OS backstop over the heap limit: the worker's own data
/// (stacks, buffers, the channel) and the engine's bookkeeping.
const OS_HEADROOM_BYTES: u64 = 64 * 1024 * 1024;

/// Set once the program reached its memory limit: the heap neared its limit, or the
/// engine failed an allocation it does not count (see `op_codemode_out_of_memory`).
#[derive(Clone)]
pub struct MemoryTrip {
    tripped: Arc<AtomicBool>,
    isolate: IsolateHandle,
}

impl MemoryTrip {
    /// A trip that stops `runtime`'s isolate.
    pub fn new(runtime: &mut JsRuntime) -> Self {
        Self { tripped: Arc::new(AtomicBool::new(false)), isolate: runtime.v8_isolate().thread_safe_handle() }
    }

    /// Records the limit and stops the program.
    pub fn trip(&self) {
        self.tripped.store(true, Ordering::Release);
        self.isolate.terminate_execution();
    }

    /// True once the memory limit stopped the program.
    pub fn tripped(&self) -> bool {
        self.tripped.load(Ordering::Acquire)
    }
}

/// Sets this program's heap limit on an already created runtime and arms the callback
/// that trips `trip` when the heap nears it.
pub fn set_heap_limit(runtime: &mut JsRuntime, limit_bytes: u64, trip: &MemoryTrip) {
    let limit = usize::try_from(limit_bytes).unwrap_or(usize::MAX);
    // `remove_near_heap_limit_callback(limit)` is the engine-neutral way to (re)set the
    // limit of a live isolate; it needs a registered callback to remove.
    runtime.add_near_heap_limit_callback(|current, _| current);
    runtime.remove_near_heap_limit_callback(limit);
    let trip = trip.clone();
    runtime.add_near_heap_limit_callback(move |current, _initial| {
        trip.trip();
        // Give the engine room to unwind the terminated script instead of aborting.
        current.saturating_add(current / 2)
    });
}

/// Sets the heap limit with no callback armed. The QuickJS backend measures the whole
/// heap after every script and module evaluation while a callback is armed, which makes
/// loading a plugin's hundreds of package modules quadratic; a plugin loads its modules
/// under this limit alone (going over it terminates the isolate) and arms the callback
/// with [`set_heap_limit`] afterwards.
pub fn set_heap_limit_unarmed(runtime: &mut JsRuntime, limit_bytes: u64) {
    let limit = usize::try_from(limit_bytes).unwrap_or(usize::MAX);
    runtime.add_near_heap_limit_callback(|current, _| current);
    runtime.remove_near_heap_limit_callback(limit);
}

/// The process's private writable memory right now (`VmData`), in bytes.
pub fn current_data_bytes() -> std::io::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmData:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| std::io::Error::other("VmData missing from /proc/self/status"))
}

/// The `RLIMIT_DATA` value for a program: what the process used before the program,
/// plus the heap limit, plus headroom.
pub fn os_backstop_bytes(base_data_bytes: u64, heap_limit_bytes: u64) -> u64 {
    base_data_bytes
        .saturating_add(heap_limit_bytes.saturating_add(heap_limit_bytes / 2))
        .saturating_add(OS_HEADROOM_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backstop_is_base_plus_one_and_a_half_limits_plus_headroom() {
        assert_eq!(os_backstop_bytes(10, 100), 10 + 150 + OS_HEADROOM_BYTES);
        assert_eq!(os_backstop_bytes(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn reads_vmdata() {
        #[allow(clippy::unwrap_used)]
        let bytes = current_data_bytes().unwrap();
        assert!(bytes > 0);
    }
}

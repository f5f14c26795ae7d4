//! The memory limit: the engine's heap limit, backed by the operating system.
//!
//! The isolate's heap limit is set per program ([`set_heap_limit`]); when the heap nears
//! it, the callback records the trip and terminates the isolate, so the program ends
//! with a memory-limit outcome instead of an engine abort. Allocations the engine does
//! not count (backing stores, large strings, native buffers, what the allocator keeps)
//! hit `RLIMIT_DATA` instead (sized by [`program_backstop_bytes`], applied with the
//! other resource limits by the lock step, `crate::sandbox::setup::Setup::lock`), which makes them fail
//! rather than grow: the program then ends as the memory limit too (a thrown
//! `out of memory`, or the abort handler of `crate::report_aborts`).
//!
//! `RLIMIT_DATA` bounds the process's private writable memory (`VmData`): every heap
//! the engine and the allocator map, thread stacks, and memory reserved but not yet
//! touched. A program's worker has nothing else to grow (no files, no shared memory,
//! its stack bounded by `RLIMIT_STACK`), so its peak RSS stays within the limit (plus a
//! small headroom) above a trivial worker's. The base is what the template holds just
//! before it enters its sandbox (which hides `/proc`), so what every worker it forks
//! starts with; what a worker adds before its program (the watchdog's 64 KiB stack, the
//! event loop) fits the fixed part of the headroom. (The spawn path, which makes its
//! engine after the sandbox hides `/proc`, allows a fixed 128 MiB for it instead.)
//!
//! Measured (issue 33, 2-core VM, `python3 tests/hostile/run.py target/release/codemode
//! memory`: 8 programs at once, `memory_mib = 64`, each worker's peak RSS from the
//! kernel when it is reaped): a trivial worker peaks at 11.3 MiB. With the earlier
//! backstop (base + 1.5 x limit + 64 MiB, the heap limit at the limit) a worker filling
//! 4 MiB typed arrays peaked at 164-171 MiB. Now: typed arrays filled 79.1 MiB,
//! untouched 11.5, strings 79.3, arrays 58.7, maps 63.9, typed arrays then small
//! objects 71.8 (at most 106% of the limit above a trivial worker). With the heap limit
//! at the limit, a `Map` flood reached the backstop first and ended as "threw a value:
//! null" (QuickJS could not allocate its error): hence [`program_heap_limit_bytes`]. A
//! program that hands a 48 MiB string to a tool call needs about 300 MiB (the string,
//! its JSON text, the call's copies): it no longer fits under 256 MiB.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use deno_core::v8::IsolateHandle;
use deno_core::JsRuntime;

/// Headroom of a plugin's OS backstop over its heap limit: a plugin loads its modules
/// (sources, compiled functions, the module map) after it locks down, so its base is
/// not known when the limit is set.
const PLUGIN_HEADROOM_BYTES: u64 = 64 * 1024 * 1024;

/// The fixed part of a program's headroom over its limit: what a forked worker adds to
/// the template's base before its program, the engine's unwinding and the outcome's
/// report when the limit is reached.
const PROGRAM_HEADROOM_FIXED_BYTES: u64 = 1024 * 1024;

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

/// The engine heap limit for a program whose memory limit is `limit_bytes`: three
/// quarters of it. The engine counts the usable size of its own allocations only, not
/// the allocator's per-chunk overhead (measured: a heap of small objects, a `Map` of
/// `{ i, s }` entries, holds about 15% more than the engine counts), and the QuickJS
/// backend refuses allocations only 1/8 above the limit where the callback fires. At
/// three quarters, a heap that grows ends at the engine's limit (a clean trip) before
/// it reaches [`program_backstop_bytes`], where a failed allocation may leave QuickJS
/// unable to make the error it throws; memory the engine does not count (backing
/// stores) is still bounded by the backstop.
pub fn program_heap_limit_bytes(limit_bytes: u64) -> u64 {
    limit_bytes / 4 * 3
}

/// The `RLIMIT_DATA` value for a program: what the worker held before the program
/// (`base_data_bytes`, measured with [`current_data_bytes`]), plus the
/// program's limit, plus a headroom of 1/32 of the limit and 1 MiB (4.1% at 64 MiB, 3.5%
/// at the default 256 MiB, 9.4% at the smallest limit, 16 MiB), so that the worker's
/// peak stays within 110% of the limit above its start.
pub fn program_backstop_bytes(base_data_bytes: u64, limit_bytes: u64) -> u64 {
    base_data_bytes
        .saturating_add(limit_bytes)
        .saturating_add(limit_bytes / 32)
        .saturating_add(PROGRAM_HEADROOM_FIXED_BYTES)
}

/// The `RLIMIT_DATA` value for a plugin: what the process used before it loaded its
/// modules, plus one and a half heap limits, plus [`PLUGIN_HEADROOM_BYTES`].
pub fn plugin_backstop_bytes(base_data_bytes: u64, heap_limit_bytes: u64) -> u64 {
    base_data_bytes
        .saturating_add(heap_limit_bytes.saturating_add(heap_limit_bytes / 2))
        .saturating_add(PLUGIN_HEADROOM_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_backstop_stays_within_a_tenth_of_the_limit() {
        const MIB: u64 = 1024 * 1024;
        assert_eq!(program_backstop_bytes(10, 64 * MIB), 10 + 64 * MIB + 2 * MIB + MIB);
        assert_eq!(program_backstop_bytes(0, 256 * MIB), 256 * MIB + 8 * MIB + MIB);
        for limit_mib in [16, 64, 256, 1024, 64 * 1024] {
            let over = program_backstop_bytes(0, limit_mib * MIB) - limit_mib * MIB;
            assert!(over * 10 <= limit_mib * MIB, "{limit_mib} MiB: {over} bytes over");
        }
        assert_eq!(program_backstop_bytes(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn plugin_backstop_is_base_plus_one_and_a_half_limits_plus_headroom() {
        assert_eq!(plugin_backstop_bytes(10, 100), 10 + 150 + PLUGIN_HEADROOM_BYTES);
        assert_eq!(plugin_backstop_bytes(u64::MAX, 1), u64::MAX);
    }

    #[test]
    fn reads_vmdata() {
        #[allow(clippy::unwrap_used)]
        let bytes = current_data_bytes().unwrap();
        assert!(bytes > 0);
    }
}

//! The filesystem view: an empty, read-only tmpfs as the root, and Landlock with no
//! access granted.
//!
//! [`pivot_to_empty_root`] replaces the root with an empty tmpfs (the `pivot_root(".",
//! ".")` idiom: the old root is stacked under the new one and detached), then makes it
//! read-only. [`restrict_with_landlock`] handles every filesystem and network right the
//! kernel knows, grants none, and scopes abstract unix sockets and signals to the domain.

use std::io;

use landlock::{
    Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, ABI,
};
use nix::mount::{mount, umount2, MntFlags, MsFlags};

/// The highest Landlock ABI this build knows; the kernel may offer less.
const LANDLOCK_ABI: ABI = ABI::V7;

/// Makes an empty read-only tmpfs the root of this mount namespace.
pub fn pivot_to_empty_root() -> io::Result<()> {
    let none: Option<&str> = None;
    mount(none, "/", none, MsFlags::MS_REC | MsFlags::MS_PRIVATE, none).map_err(io::Error::from)?;
    let new_root = "/tmp";
    mount(
        Some("tmpfs"),
        new_root,
        Some("tmpfs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        Some("size=16k,mode=0555"),
    )
    .map_err(io::Error::from)?;
    nix::unistd::chdir(new_root).map_err(io::Error::from)?;
    nix::unistd::pivot_root(".", ".").map_err(io::Error::from)?;
    umount2(".", MntFlags::MNT_DETACH).map_err(io::Error::from)?;
    nix::unistd::chdir("/").map_err(io::Error::from)?;
    mount(
        none,
        "/",
        none,
        MsFlags::MS_REMOUNT
            | MsFlags::MS_BIND
            | MsFlags::MS_RDONLY
            | MsFlags::MS_NOSUID
            | MsFlags::MS_NODEV
            | MsFlags::MS_NOEXEC,
        none,
    )
    .map_err(io::Error::from)?;
    Ok(())
}

/// How completely Landlock applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LandlockStatus {
    /// Every right this build knows is enforced.
    Full,
    /// The kernel enforces only part of them.
    Partial,
    /// The kernel has no Landlock.
    Missing,
}

/// Lets this process read `folder` (and what is beneath it) and nothing else: no other
/// file, no writes, no network, no abstract unix sockets or signals out (the plugin
/// reader of `sandbox-worker detect`, which parses untrusted files).
pub fn restrict_to_reading(folder: &std::path::Path) -> Result<LandlockStatus, landlock::RulesetError> {
    restrict(&[folder])
}

/// Denies every filesystem and network access and scopes abstract unix sockets and
/// signals, for this process and what it forks.
pub fn restrict_with_landlock() -> Result<LandlockStatus, landlock::RulesetError> {
    restrict(&[])
}

/// Denies every filesystem and network access but reading beneath `readable`, and
/// scopes abstract unix sockets and signals, for this process and what it forks.
fn restrict(readable: &[&std::path::Path]) -> Result<LandlockStatus, landlock::RulesetError> {
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(LANDLOCK_ABI))?
        .handle_access(AccessNet::from_all(LANDLOCK_ABI))?
        .scope(Scope::from_all(LANDLOCK_ABI))?
        .create()?
        .add_rules(landlock::path_beneath_rules(readable, AccessFs::from_read(LANDLOCK_ABI)))?
        .restrict_self()?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => LandlockStatus::Full,
        RulesetStatus::PartiallyEnforced => LandlockStatus::Partial,
        _ => LandlockStatus::Missing,
    })
}

//! The sandbox as the host sees it from outside: a running worker's /proc status,
//! descriptors and environment, the template's, and the pool cgroup. The attacks
//! themselves are in tests/escape (run by scripts/test.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use codemode::{LaunchMode, Limits, OutcomeKind};
use common::*;

/// These tests look at this process's children; run them one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What every worker shows from outside, running a program or waiting in the warm pool.
fn assert_locked_down(pid: i32) {
    // A warm worker locks itself down once it has read its prepare message: give it
    // the moment that takes.
    for _ in 0..100 {
        if status_field(pid, "Threads") == "2" {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(status_field(pid, "NoNewPrivs"), "1");
    assert_eq!(status_field(pid, "Seccomp"), "2", "seccomp filter mode");
    assert_eq!(status_field(pid, "CapEff"), "0000000000000000");
    assert_eq!(status_field(pid, "CapPrm"), "0000000000000000");
    assert_eq!(status_field(pid, "CapBnd"), "0000000000000000");
    assert_eq!(status_field(pid, "Threads"), "2", "the program's thread and its step watchdog (pid {pid})");
    // pid 1 of its own pid namespace.
    let nspid = status_field(pid, "NSpid");
    assert_eq!(nspid.split_whitespace().last(), Some("1"), "NSpid: {nspid}");
    // One descriptor: the channel, a socket.
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .map(|e| std::fs::read_link(e.path()).map(|p| p.display().to_string()).unwrap_or_default())
        .collect();
    assert_eq!(fds.len(), 1, "{fds:?}");
    assert!(fds[0].starts_with("socket:"), "{fds:?}");
    // No environment.
    assert_eq!(std::fs::read(format!("/proc/{pid}/environ")).unwrap(), Vec::<u8>::new());
    // Its root is the empty tmpfs, not the host's.
    let root: Vec<_> =
        std::fs::read_dir(format!("/proc/{pid}/root")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(root.is_empty(), "the worker's root holds {} entries", root.len());
    // Not dumpable (PR_SET_DUMPABLE 0): the kernel then gives its /proc files to root
    // instead of the user it runs as (65534 here), so processes of that user cannot read
    // its memory or attach to it.
    let euid: u32 = status_field(pid, "Uid").split_whitespace().nth(1).unwrap().parse().unwrap();
    assert_eq!(euid, 65534, "the worker runs as nobody");
    for file in ["mem", "environ", "maps", "fd"] {
        let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(format!("/proc/{pid}/{file}")).unwrap());
        assert_eq!(owner, 0, "/proc/{pid}/{file} belongs to uid {owner}: the worker is dumpable");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_worker_is_locked_down() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ex = std::sync::Arc::new(executor().await);
    let template = ex.template_pid().await.unwrap();
    let running = {
        let ex = ex.clone();
        tokio::spawn(async move { ex.run("return await tools.slow.wait({ ms: 1500 })").await })
    };
    // Find the workers: the test's children that are not the template. One runs the
    // program; the others wait in the warm pool, already locked down.
    let mut workers = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        workers = child_pids(Some(template))
            .into_iter()
            .filter(|&pid| {
                // An earlier test's executor may still be reaping its workers: a
                // zombie is not one of this executor's.
                if exited(pid) {
                    return false;
                }
                let nspid = status_field(pid, "NSpid");
                nspid.split_whitespace().count() > 1 && nspid.split_whitespace().last() == Some("1")
            })
            .collect();
        let warm = ex.warm_workers();
        if warm.len() >= codemode::launcher::default_warm_workers() - 1 && workers.len() == warm.len() + 1 {
            break;
        }
    }
    // The pool is full, or all but the worker the program took (a program arriving at a
    // quiet host has its replacement forked once it ends).
    let warm = ex.warm_workers();
    assert!(warm.len() >= codemode::launcher::default_warm_workers() - 1, "the warm pool waits: {warm:?}");
    assert!(warm.iter().all(|pid| workers.contains(pid)), "warm {warm:?}, workers {workers:?}");
    assert_eq!(workers.len(), warm.len() + 1, "one running worker besides the warm ones: {workers:?}");
    for pid in workers {
        assert_locked_down(pid);
    }
    assert_eq!(running.await.unwrap().agent_text(), "waited 1500");
    assert_healthy(&ex).await;
}

#[tokio::test]
async fn the_template_is_sandboxed_too() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ex = executor().await;
    let pid = ex.template_pid().await.unwrap();
    assert_eq!(status_field(pid, "NoNewPrivs"), "1");
    assert_eq!(status_field(pid, "Seccomp"), "2");
    assert_eq!(status_field(pid, "Threads"), "1", "the template forks: it must stay single-threaded");
    assert_eq!(std::fs::read(format!("/proc/{pid}/environ")).unwrap(), Vec::<u8>::new());
    assert_eq!(std::fs::read_dir(format!("/proc/{pid}/fd")).unwrap().count(), 1, "only the control channel");
    let user_ns = std::fs::read_link(format!("/proc/{pid}/ns/user")).unwrap();
    assert_ne!(user_ns, std::fs::read_link("/proc/self/ns/user").unwrap(), "a user namespace of its own");
    assert_ne!(
        std::fs::read_link(format!("/proc/{pid}/ns/mnt")).unwrap(),
        std::fs::read_link("/proc/self/ns/mnt").unwrap()
    );
    assert!(ex.sandbox_missing().is_empty(), "{:?}", ex.sandbox_missing());
}

#[tokio::test]
async fn outcomes_under_the_full_sandbox_list_no_missing_layer() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ex = executor().await;
    let outcome = ex.run("return 1").await;
    assert!(outcome.sandbox_missing.is_empty());
    assert!(!outcome.agent_text().contains("weaker sandbox"));
}

#[tokio::test]
async fn a_disabled_sandbox_is_named_in_every_outcome() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ex = codemode::Executor::builder()
        .launch_mode(LaunchMode::Template)
        .sandbox(codemode::SandboxPolicy::InsecureDisabled)
        .limits(Limits::default())
        .catalog(test_catalog())
        .build()
        .await
        .unwrap();
    let outcome = ex.run("return 1").await;
    assert_eq!(outcome.kind, OutcomeKind::Ok { value: Some("1".into()) });
    assert!(
        outcome.sandbox_missing.iter().any(|l| l.layer == protocol::worker::Layer::Seccomp),
        "{:?}",
        outcome.sandbox_missing
    );
    assert!(
        outcome.agent_text().contains("[warning: this program ran with a weaker sandbox; missing layers:"),
        "{}",
        outcome.agent_text()
    );
}

#[test]
fn sandbox_check_reports_every_layer_active_here() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_codemode")).arg("sandbox-check").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    for layer in [
        "user_namespace",
        "empty_root",
        "landlock",
        "seccomp",
        "capabilities",
        "rlimits",
        "pid_namespace",
        "network",
        "cgroup",
    ] {
        let line = text.lines().find(|l| l.starts_with(layer)).unwrap_or_else(|| panic!("no {layer} line in:\n{text}"));
        assert!(line.contains("active"), "{line}");
    }
    assert!(text.contains("Landlock ABI"), "{text}");
}

/// A warm worker killed while it waits (by an administrator, the OOM killer) never
/// costs a program: one that takes it before its death is noticed runs in a fresh
/// worker instead, and the pool refills.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_workers_killed_while_they_wait_cost_no_program() {
    let _one = ONE_AT_A_TIME.lock().await;
    let ex = executor().await;
    let size = codemode::launcher::default_warm_workers();
    for _ in 0..3 {
        assert!(eventually(Duration::from_secs(10), || ex.warm_workers().len() == size).await, "the pool filled");
        for pid in ex.warm_workers() {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL).unwrap();
        }
        // At once: the first warm worker may still be dying.
        assert_eq!(ex.run("return await tools.math.add({ a: 40, b: 2 })").await.agent_text(), "42");
    }
    assert_healthy(&ex).await;
}

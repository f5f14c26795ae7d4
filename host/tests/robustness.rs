//! The host survives whatever a worker does: crashing, hanging, flooding the channel,
//! sending garbage, or its template dying; and it leaves no process or descriptor
//! behind. Fake workers are small shell scripts run through the spawn path; real
//! workers are killed from the outside.
//!
//! One test function: it counts this process's children and descriptors, which other
//! tests running in parallel would disturb.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use codemode::{Executor, LaunchMode, Limits, OutcomeKind};
use common::*;

fn fake_worker(dir: &std::path::Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

async fn fake(path: PathBuf, limits: Limits) -> Executor {
    Executor::builder()
        .worker_path(path)
        .launch_mode(LaunchMode::Spawn)
        .limits(limits)
        .catalog(test_catalog())
        .build()
        .await
        .unwrap()
}

fn crash_reason(kind: &OutcomeKind) -> &str {
    match kind {
        OutcomeKind::WorkerCrash { reason } => reason,
        other => panic!("expected a worker crash, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_host_survives_every_kind_of_broken_worker_and_leaks_nothing() {
    let dir = std::env::temp_dir().join(format!("codemode-fake-workers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut catalog = test_catalog();
    let mut tool_started = add_watched_tool(&mut catalog);
    let fds_before = open_fds();
    let real = executor_with(LaunchMode::Template, Limits::default(), catalog).await;
    let template = real.template_pid().await;
    assert_healthy(&real).await;
    let quick = Limits::default().with_wall_clock(Duration::from_millis(500));

    // A worker that exits at once.
    let ex = fake(fake_worker(&dir, "exits", "exit 3"), quick).await;
    let reason = crash_reason(&ex.run("1").await.kind).to_string();
    assert!(reason.starts_with("the worker ended with exit code 3 before reporting an outcome ("), "{reason}");

    // A worker that writes garbage: the length prefix announces an oversized frame.
    let ex = fake(fake_worker(&dir, "garbage", "printf 'garbage and more garbage' >&3; sleep 5"), quick).await;
    let outcome = ex.run("1").await;
    assert_eq!(
        crash_reason(&outcome.kind),
        "the worker sent an invalid message: frame of 1734439522 bytes exceeds the 67108864-byte limit"
    );

    // A worker that sends a well-framed payload that is not a message.
    let ex = fake(fake_worker(&dir, "badjson", "printf '\\000\\000\\000\\005hello' >&3; sleep 5"), quick).await;
    assert!(crash_reason(&ex.run("1").await.kind).starts_with("the worker sent an invalid message: undecodable frame"));

    // A worker that reads the program, then closes the channel in the middle of a frame.
    let ex = fake(
        fake_worker(
            &dir,
            "midframe",
            "timeout 0.2 cat <&3 >/dev/null; printf '\\000\\000\\000\\100{\"con' >&3; exit 0",
        ),
        quick,
    )
    .await;
    let reason = crash_reason(&ex.run("1").await.kind).to_string();
    assert!(reason.contains("mid-frame"), "{reason}");

    // A worker that floods the channel with endless bytes.
    let ex = fake(fake_worker(&dir, "flood", "yes flood >&3"), quick).await;
    assert!(crash_reason(&ex.run("1").await.kind).starts_with("the worker sent an invalid message"));

    // A worker that hangs without a word: the wall clock ends it.
    let ex = fake(fake_worker(&dir, "hangs", "exec sleep 60"), quick).await;
    assert_eq!(ex.run("1").await.kind, OutcomeKind::WallClockLimit { limit_ms: 500 });

    // A worker binary that does not exist.
    let ex = fake(dir.join("missing"), quick).await;
    match ex.run("1").await.kind {
        OutcomeKind::Internal { reason } => {
            assert!(reason.contains("cannot start the worker") && reason.contains("CODEMODE_WORKER"), "{reason}")
        }
        other => panic!("{other:?}"),
    }

    // A real worker killed from outside while it waits for a tool.
    let killer = tokio::spawn(async move {
        tool_started.recv().await.unwrap();
        for pid in child_pids(template) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
        }
    });
    let outcome = real.run("await tools.watch.wait({}); return 'survived'").await;
    killer.await.unwrap();
    assert_eq!(
        crash_reason(&outcome.kind),
        "the worker ended with signal 9 (SIGKILL) before reporting an outcome (the peer closed the channel)"
    );
    assert_healthy(&real).await;

    // The template dies: the next program starts a new one.
    let old = real.template_pid().await.unwrap();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(old), nix::sys::signal::Signal::SIGKILL).unwrap();
    assert!(eventually(Duration::from_secs(5), || exited(old)).await, "the template outlived SIGKILL");
    assert_healthy(&real).await;
    // The pool's workers may serve those programs; its refill starts the new template.
    let mut new = None;
    for _ in 0..500 {
        new = real.template_pid().await.filter(|&pid| pid != old && !exited(pid));
        if new.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let new = new.expect("a new template started after the old one died");

    // Many programs later, nothing is left behind: no worker, no zombie, no descriptor.
    for _ in 0..20 {
        assert_healthy(&real).await;
        let limited = Limits::default().with_cpu_step(Duration::from_millis(50));
        assert_eq!(
            real.run(codemode::Program::new("while (true) {}").limits(limited)).await.kind,
            OutcomeKind::CpuLimit { limit_ms: 50 }
        );
    }
    // While the executor runs, its children are the template and the warm pool's
    // workers, waiting for programs: nothing else.
    let only_the_pool = || {
        let mut children = child_pids(Some(new));
        let mut warm = real.warm_workers();
        children.sort_unstable();
        warm.sort_unstable();
        children == warm && warm.len() == codemode::launcher::default_warm_workers()
    };
    assert!(
        eventually(Duration::from_secs(5), only_the_pool).await,
        "workers or zombies were left behind: children {:?}, warm {:?}",
        child_pids(Some(new)),
        real.warm_workers()
    );
    // Once both executors are gone, so is every process and descriptor they held.
    drop(ex);
    drop(real);
    eventually(Duration::from_secs(5), || child_pids(None).is_empty() && open_fds() == fds_before).await;
    assert_eq!(child_pids(None), Vec::<i32>::new(), "workers or zombies were left behind");
    assert_eq!(open_fds(), fds_before, "descriptors leaked");
    std::fs::remove_dir_all(&dir).unwrap();
}

//! The files `tools.$search` reads, put in place by an attacker (issue 33), against the
//! real binary: the search model's weights and the embeddings cache each as a link to
//! `/dev/zero`, a FIFO, a sparse 8 GiB file and a copy with a flipped byte.
//!
//! - `codemode run` of a searching program ends (no FIFO keeps it waiting), with the
//!   host's peak RSS under [`HOST_PEAK_LIMIT_MIB`]: a damaged model is said on stderr
//!   and search ranks by words alone ("BM25"); a damaged cache is said on stderr and
//!   rewritten (search still ranks by meaning), and the next run reads it silently.
//! - `codemode serve` answers `/healthz` within a second of its start whatever lies
//!   there, becomes ready once the model has loaded or failed, says what was wrong,
//!   and stays under the same RSS bound.
//!
//! Needs the search model (`CODEMODE_SEARCH_MODEL`, as scripts/test.sh sets it:
//! `ensure_search_model`); without it the test says so and checks nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::Digest;

/// The host's peak RSS in every case, at most: a run with the packed model loaded and
/// the cache read peaks at 60 MiB, `serve` at 65 MiB, one that refuses the weights at
/// 19–42 MiB (measured: the figures are printed); the largest file the host reads is
/// the weights, at most 128 MiB. Before the fix a link to `/dev/zero` passed 1.5 GiB in
/// seconds.
const HOST_PEAK_LIMIT_MIB: u64 = 200;
/// A run that takes longer than this hangs (before the fix: a FIFO, forever).
const RUN_DEADLINE: Duration = Duration::from_secs(90);
/// The searching program: the ranker its hit names.
const PROGRAM: &str =
    r#"const hits = await tools.$search("will it rain tomorrow", { limit: 1 }); return hits[0].ranker;"#;
const FUSED: &str = "all-MiniLM-L6-v2 + BM25";
const REINSTALL: &str = "reinstall the model: scripts/install-search-model.sh CODEMODE_BINARY MODEL_FOLDER";

/// What an attacker puts in a file's place.
#[derive(Debug, Clone, Copy)]
enum Hostile {
    LinkToDevZero,
    Fifo,
    /// A sparse 8 GiB file starting with the file's own first bytes.
    SparseHuge,
    /// The file with one byte flipped in its middle.
    FlippedByte,
}

const HOSTILE: [Hostile; 4] = [Hostile::LinkToDevZero, Hostile::Fifo, Hostile::SparseHuge, Hostile::FlippedByte];

/// Puts `hostile` in place of `path` (which holds the sound file).
fn replace(path: &Path, hostile: Hostile) {
    let sound = std::fs::read(path).unwrap();
    std::fs::remove_file(path).unwrap();
    match hostile {
        Hostile::LinkToDevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Hostile::Fifo => nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap(),
        Hostile::SparseHuge => {
            let mut file = std::fs::File::create(path).unwrap();
            file.write_all(&sound[..64.min(sound.len())]).unwrap();
            file.set_len(8 << 30).unwrap();
        }
        Hostile::FlippedByte => {
            let mut damaged = sound;
            let middle = damaged.len() / 2;
            damaged[middle] ^= 0xff;
            std::fs::write(path, damaged).unwrap();
        }
    }
}

/// What the host says of `path` holding `hostile` (the file's own part of the message).
fn problem(path: &Path, hostile: Hostile, bound: u64) -> String {
    let path = path.display();
    match hostile {
        Hostile::LinkToDevZero => {
            format!("{path} is a symbolic link, which codemode does not follow here: put the file itself there")
        }
        Hostile::Fifo => format!("{path} is a FIFO, not a regular file: put the file itself there"),
        Hostile::SparseHuge => {
            format!("{path} holds 8589934592 bytes, more than the {bound} such a file may hold: replace it")
        }
        Hostile::FlippedByte => unreachable!("said by each caller"),
    }
}

fn hex(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// A folder of its own for one case: `config.toml` naming `model`, and the cache and
/// data folders the host is given.
struct Case {
    dir: PathBuf,
    config: PathBuf,
}

impl Case {
    fn new(name: &str, model: &Path) -> Self {
        let dir = std::env::temp_dir().join(format!("codemode-model-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("cache")).unwrap();
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let config = dir.join("config.toml");
        std::fs::write(
            &config,
            format!("example_tools = true\n\n[server]\nsearch_model = {:?}\n", model.display().to_string()),
        )
        .unwrap();
        Self { dir, config }
    }

    fn env(&self) -> Vec<(&'static str, PathBuf)> {
        vec![
            ("XDG_CACHE_HOME", self.dir.join("cache")),
            ("XDG_DATA_HOME", self.dir.join("data")),
            ("HOME", self.dir.clone()),
        ]
    }

    /// The cache file of the model whose weights have the SHA-256 `weights`.
    fn cache_file(&self, weights: &str) -> PathBuf {
        self.dir.join(format!("cache/codemode/embeddings/all-MiniLM-L6-v2-{}.bin", &weights[..16]))
    }
}

impl Drop for Case {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A copy of the installed model in `to` (a case damages its copy).
fn copy_model(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

fn status_kib(pid: i32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len() + 1..].trim().trim_end_matches("kB").trim().parse().ok()
}

/// `codemode run --config CONFIG -` of [`PROGRAM`]: (exit code, stdout, stderr, peak
/// RSS in MiB). Killed, and the test failed, past [`RUN_DEADLINE`] or the RSS bound.
// Reaped by `wait4` (for its peak RSS), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn run(case: &Case) -> (i32, String, String, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["run", "--config", case.config.to_str().unwrap(), "-"])
        .envs(case.env())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(PROGRAM.as_bytes()).unwrap();
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let out = collect(Box::new(child.stdout.take().unwrap()));
    let err = collect(Box::new(child.stderr.take().unwrap()));
    let pid = child.id() as i32;
    let started = Instant::now();
    let (status, peak_kib) = loop {
        let mut status = 0;
        // SAFETY: `usage` is a zeroed rusage that wait4 fills; `status` an int it writes.
        let (reaped, usage) = unsafe {
            let mut usage: libc::rusage = std::mem::zeroed();
            (libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage), usage)
        };
        if reaped == pid {
            break (status, usage.ru_maxrss as u64);
        }
        let peak = status_kib(pid, "VmHWM").unwrap_or(0);
        if peak > HOST_PEAK_LIMIT_MIB << 10 || started.elapsed() > RUN_DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "codemode run was killed after {:.1} s at a peak RSS of {} MiB (bounds: {RUN_DEADLINE:?}, {HOST_PEAK_LIMIT_MIB} MiB); stderr so far: {}",
                started.elapsed().as_secs_f64(),
                peak >> 10,
                err.join().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let code = if libc::WIFEXITED(status) { libc::WEXITSTATUS(status) } else { -1 };
    (code, out.join().unwrap(), err.join().unwrap(), peak_kib >> 10)
}

/// A `GET path` on `addr`: the status code.
fn get(addr: &str, path: &str) -> u16 {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// `codemode serve` in `case`: `/healthz` within a second of its start, `/readyz` once
/// the model has loaded or failed, then `said` on stderr; the peak RSS (MiB).
fn serve(case: &Case, said: &str) -> u64 {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args([
            "serve",
            "--config",
            case.config.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--ops-listen",
            "127.0.0.1:0",
        ])
        .envs(case.env())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    let lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let (ops_tx, ops_rx) = std::sync::mpsc::channel();
    {
        let lines = Arc::clone(&lines);
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(at) = line.find("serving /healthz, /readyz and /metrics on http://") {
                    let _ =
                        ops_tx.send(line[at + "serving /healthz, /readyz and /metrics on http://".len()..].to_string());
                }
                lines.lock().unwrap().push(line);
            }
        });
    }
    let stderr = |lines: &Arc<Mutex<Vec<String>>>| lines.lock().unwrap().join("\n");
    let outcome = (|| -> Result<u64, String> {
        let ops = ops_rx.recv_timeout(Duration::from_secs(1)).map_err(|_| "no operations listener within 1 s")?;
        let health = get(&ops, "/healthz");
        let answered = started.elapsed();
        if health != 200 || answered > Duration::from_secs(1) {
            return Err(format!("/healthz answered {health} after {:.2} s", answered.as_secs_f64()));
        }
        while get(&ops, "/readyz") != 200 {
            if started.elapsed() > RUN_DEADLINE {
                return Err("never ready".into());
            }
            if status_kib(pid, "VmHWM").unwrap_or(0) > HOST_PEAK_LIMIT_MIB << 10 {
                return Err("over the RSS bound before it was ready".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // The cache is read when the tools are embedded, after the model is ready.
        while !stderr(&lines).contains(said) {
            if started.elapsed() > RUN_DEADLINE {
                return Err(format!("never said {said:?}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(status_kib(pid, "VmHWM").unwrap_or(u64::MAX) >> 10)
    })();
    let _ = child.kill();
    let _ = child.wait();
    match outcome {
        Ok(peak) => peak,
        Err(e) => panic!("codemode serve: {e}; stderr: {}", stderr(&lines)),
    }
}

#[test]
fn a_hostile_model_or_cache_ends_in_a_message_never_a_hang_or_unbounded_memory() {
    let Some(installed) = std::env::var_os("CODEMODE_SEARCH_MODEL").map(PathBuf::from) else {
        eprintln!("CODEMODE_SEARCH_MODEL is not set (scripts/test.sh installs the model): nothing checked");
        return;
    };
    let weights_sha = hex(&std::fs::read(installed.join("model.safetensors")).unwrap());
    let mut figures = Vec::new();

    // The weights: each hostile form ends in BM25 with the reason on stderr.
    for hostile in HOSTILE {
        let name = format!("{hostile:?}").to_lowercase();
        let dir = std::env::temp_dir().join(format!("codemode-model-copy-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        copy_model(&installed, &dir);
        let weights = dir.join("model.safetensors");
        replace(&weights, hostile);
        let reason = match hostile {
            Hostile::FlippedByte => format!(
                "{} is damaged: its SHA-256 is {}, not the {weights_sha} its folder's SHA256SUMS records",
                weights.display(),
                hex(&std::fs::read(&weights).unwrap())
            ),
            other => problem(&weights, other, codemode::tool::encoder::WEIGHTS_BOUND),
        };
        let said = format!(
            "codemode: the search model cannot be used ({reason}; {REINSTALL}); tools.$search ranks by words alone"
        );
        let case = Case::new(&format!("weights-{name}"), &dir);
        let (code, out, err, peak) = run(&case);
        assert_eq!((code, out.as_str()), (0, "BM25\n"), "weights {hostile:?}: {err}");
        assert!(err.lines().any(|l| l == said), "weights {hostile:?}: {err}");
        let served_peak = serve(&case, &said);
        figures.push(format!("weights {hostile:?}: run peak {peak} MiB, serve peak {served_peak} MiB"));
        assert!(served_peak <= HOST_PEAK_LIMIT_MIB, "weights {hostile:?}: serve peaked at {served_peak} MiB");
        let _ = std::fs::remove_dir_all(&dir);
    }

    // The cache: each hostile form is said, and the cache rewritten; search keeps
    // ranking by meaning, and the next run reads the rewritten cache without a word.
    let bound = codemode::tool::semantic::cache_bound(2);
    for hostile in HOSTILE {
        let name = format!("{hostile:?}").to_lowercase();
        let case = Case::new(&format!("cache-{name}"), &installed);
        let (code, out, err, clean_peak) = run(&case);
        assert_eq!((code, out.as_str()), (0, format!("{FUSED}\n").as_str()), "a sound model: {err}");
        let cache = case.cache_file(&weights_sha);
        assert!(cache.is_file(), "the first run wrote {}: {err}", cache.display());
        replace(&cache, hostile);
        let reason = match hostile {
            Hostile::FlippedByte => format!("{} has a damaged record (number 1)", cache.display()),
            other => problem(&cache, other, bound),
        };
        let said = format!("the embedding cache is not used ({reason}); it is rewritten with this catalog's vectors");
        let (code, out, err, peak) = run(&case);
        assert_eq!((code, out.as_str()), (0, format!("{FUSED}\n").as_str()), "cache {hostile:?}: {err}");
        assert!(err.contains(&said), "cache {hostile:?}: {err}");
        assert!(std::fs::symlink_metadata(&cache).unwrap().file_type().is_file(), "cache {hostile:?} rewritten");
        let (code, out, err, _) = run(&case);
        assert_eq!((code, out.as_str(), err.as_str()), (0, format!("{FUSED}\n").as_str(), ""), "cache {hostile:?}");
        replace(&cache, hostile);
        let served_peak = serve(&case, &said);
        figures.push(format!(
            "cache {hostile:?}: run peak {peak} MiB (a sound run {clean_peak} MiB), serve peak {served_peak} MiB"
        ));
        assert!(served_peak <= HOST_PEAK_LIMIT_MIB, "cache {hostile:?}: serve peaked at {served_peak} MiB");
    }
    for line in figures {
        println!("{line}");
    }
}

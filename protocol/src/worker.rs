//! The worker process's contract with the host, outside the channel: how it is started
//! ([`WorkerCommand`], its command line), how strict its sandbox is ([`SandboxMode`]),
//! the sandbox layers it reports ([`Layer`], [`MissingLayer`], [`ProbeReport`]), its
//! engine ([`Engine`]) and how it ends ([`WorkerExit`]).
//!
//! The host builds command lines with [`WorkerCommand::to_args`] and the worker parses
//! them with [`WorkerCommand::parse`]; both sides use these types and nothing else, so
//! the two cannot drift apart.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Why a worker process exited, when it says so with its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkerExit {
    /// The host went away: nobody is left to report to.
    HostGone,
    /// The worker could not set itself up (its sandbox or its engine); it said why on
    /// standard error.
    SetupFailed,
    /// The step watchdog ended a program that ignored termination (blocked outside
    /// JavaScript, as in `Atomics.wait`): the CPU limit.
    CpuLimit,
    /// The worker panicked; it reported the panic on its channel first when it could.
    Panicked,
    /// The worker aborted: an allocation was refused at its memory backstop
    /// (`RLIMIT_DATA`), which is the memory limit; it reported that first when it could.
    Aborted,
}

impl WorkerExit {
    /// Every variant.
    pub const ALL: [WorkerExit; 5] = [
        WorkerExit::HostGone,
        WorkerExit::SetupFailed,
        WorkerExit::CpuLimit,
        WorkerExit::Panicked,
        WorkerExit::Aborted,
    ];

    /// The process exit code.
    pub const fn code(self) -> i32 {
        match self {
            WorkerExit::HostGone => 70,
            WorkerExit::SetupFailed => 71,
            WorkerExit::CpuLimit => 72,
            WorkerExit::Panicked => 73,
            WorkerExit::Aborted => 74,
        }
    }

    /// The variant an exit code stands for, if any.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.code() == code)
    }
}

/// The JavaScript engine a worker binary was built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    /// QuickJS-ng under deno_core's V8 API: an interpreter whose initialised state can be
    /// forked.
    QuickJs,
    /// Real V8: cannot be forked after initialisation.
    V8,
}

impl Engine {
    /// True when a process holding an initialised engine may fork workers from it.
    pub fn can_fork(self) -> bool {
        self == Engine::QuickJs
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Engine::QuickJs => "quickjs",
            Engine::V8 => "v8",
        })
    }
}

/// Whether a missing sandbox layer stops the worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Every layer must apply (the default).
    #[default]
    Required,
    /// Run with the layers that apply; report the others.
    AllowWeaker,
    /// Apply no layer at all: only for measuring what the sandbox costs.
    Disabled,
}

impl SandboxMode {
    /// The value of `--sandbox`.
    pub fn as_arg(self) -> &'static str {
        match self {
            SandboxMode::Required => "required",
            SandboxMode::AllowWeaker => "allow-weaker",
            SandboxMode::Disabled => "disabled",
        }
    }

    fn from_arg(value: &str) -> Option<Self> {
        [SandboxMode::Required, SandboxMode::AllowWeaker, SandboxMode::Disabled]
            .into_iter()
            .find(|m| m.as_arg() == value)
    }
}

/// A layer of the sandbox, in the order the worker applies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// An empty environment.
    Environment,
    /// A new session.
    Session,
    /// A user namespace of its own.
    UserNamespace,
    /// An unprivileged user outside the namespace (so the kernel's per-user limits apply).
    UnprivilegedUser,
    /// New mount, ipc and uts namespaces.
    MountIpcUtsNamespaces,
    /// A network namespace of its own, empty.
    NetworkNamespace,
    /// A pid namespace of its own, where the worker is pid 1.
    PidNamespace,
    /// An empty, read-only tmpfs as the root.
    EmptyRoot,
    /// `PR_SET_NO_NEW_PRIVS`.
    NoNewPrivs,
    /// Landlock: no filesystem or network access, scoped sockets and signals.
    Landlock,
    /// Capabilities dropped.
    Capabilities,
    /// Not dumpable, no core dumps.
    NotDumpable,
    /// No descriptor but the channel.
    Descriptors,
    /// Parent-death signal with a recheck.
    ParentDeath,
    /// Resource limits.
    Rlimits,
    /// The seccomp allowlist.
    Seccomp,
}

impl Layer {
    /// Every layer, in setup order.
    pub const ALL: [Layer; 16] = [
        Layer::Environment,
        Layer::Session,
        Layer::UserNamespace,
        Layer::UnprivilegedUser,
        Layer::MountIpcUtsNamespaces,
        Layer::NetworkNamespace,
        Layer::PidNamespace,
        Layer::EmptyRoot,
        Layer::NoNewPrivs,
        Layer::Landlock,
        Layer::Capabilities,
        Layer::NotDumpable,
        Layer::Descriptors,
        Layer::ParentDeath,
        Layer::Rlimits,
        Layer::Seccomp,
    ];

    /// The layer's name as reports show it (`user_namespace`).
    pub fn name(self) -> &'static str {
        match self {
            Layer::Environment => "environment",
            Layer::Session => "session",
            Layer::UserNamespace => "user_namespace",
            Layer::UnprivilegedUser => "unprivileged_user",
            Layer::MountIpcUtsNamespaces => "mount_ipc_uts_namespaces",
            Layer::NetworkNamespace => "network_namespace",
            Layer::PidNamespace => "pid_namespace",
            Layer::EmptyRoot => "empty_root",
            Layer::NoNewPrivs => "no_new_privs",
            Layer::Landlock => "landlock",
            Layer::Capabilities => "capabilities",
            Layer::NotDumpable => "not_dumpable",
            Layer::Descriptors => "descriptors",
            Layer::ParentDeath => "parent_death",
            Layer::Rlimits => "rlimits",
            Layer::Seccomp => "seccomp",
        }
    }

    /// What the layer does when it is active.
    pub fn description(self) -> &'static str {
        match self {
            Layer::Environment => "an empty environment",
            Layer::Session => "a new session: no controlling terminal",
            Layer::UserNamespace => "a user namespace of its own (uid 0 inside)",
            Layer::UnprivilegedUser => "an unprivileged uid outside the user namespace, so the kernel's per-user process limit (RLIMIT_NPROC 0) applies",
            Layer::MountIpcUtsNamespaces => "new mount, ipc and uts namespaces",
            Layer::NetworkNamespace => "an empty network namespace, entered once by the template: no interface is up, so no UDP, TCP (Fast Open and MPTCP included) or netlink view of the host, even below seccomp",
            Layer::PidNamespace => "each worker is pid 1 of a new pid namespace: it sees and signals no other process",
            Layer::EmptyRoot => "pivot_root onto an empty read-only tmpfs: no host file is visible",
            Layer::NoNewPrivs => "PR_SET_NO_NEW_PRIVS",
            Layer::Landlock => "no filesystem or TCP access granted; abstract unix sockets and signals scoped",
            Layer::Capabilities => "every capability dropped in workers (the template keeps CAP_SYS_ADMIN and CAP_SETPCAP of its own user namespace)",
            Layer::NotDumpable => "not dumpable, no core dumps",
            Layer::Descriptors => "every descriptor closed but the channel",
            Layer::ParentDeath => "SIGKILL when the host dies, rechecked through the channel",
            Layer::Rlimits => "resource limits: memory backstop, descriptors, no processes, no file writes, no core dumps, CPU seconds",
            Layer::Seccomp => "a system call allowlist; anything else kills the worker",
        }
    }

    /// How to enable the layer when it is missing.
    pub fn hint(self) -> &'static str {
        match self {
            Layer::UserNamespace
            | Layer::MountIpcUtsNamespaces
            | Layer::NetworkNamespace
            | Layer::PidNamespace
            | Layer::EmptyRoot => {
                "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0) or run the host as root"
            }
            Layer::UnprivilegedUser => "run the host as root (it maps workers to an unprivileged uid) or as an unprivileged user",
            Layer::Landlock => "boot a kernel with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and \"landlock\" in the lsm= list)",
            Layer::Seccomp => "boot a kernel with seccomp filters (CONFIG_SECCOMP_FILTER=y)",
            Layer::Environment
            | Layer::Session
            | Layer::NoNewPrivs
            | Layer::Capabilities
            | Layer::NotDumpable
            | Layer::Descriptors
            | Layer::ParentDeath
            | Layer::Rlimits => "this layer needs no kernel feature; the reason says what refused it",
        }
    }

    /// The layer named `name` (as [`Layer::name`] spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.name() == name)
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A layer that is not active, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingLayer {
    /// The layer.
    pub layer: Layer,
    /// What refused it.
    pub reason: String,
}

impl fmt::Display for MissingLayer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.layer, self.reason)
    }
}

/// What `sandbox-worker probe` reports: the machine's sandbox features and which layers
/// a worker set up here would miss.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeReport {
    /// The worker's engine.
    pub engine: Engine,
    /// The kernel release.
    pub kernel: String,
    /// The Landlock ABI the kernel offers (`None`: no Landlock).
    pub landlock_abi: Option<u32>,
    /// True when the kernel has seccomp filters.
    pub seccomp_available: bool,
    /// `v2`, `v1` or `none`.
    pub cgroup: String,
    /// The uid a worker has outside its user namespace (what per-user limits count).
    pub outside_uid: Option<u32>,
    /// Layers that did not apply, with the reason.
    pub missing: Vec<MissingLayer>,
    /// The resource limits a worker applies (the memory and CPU values are those of a
    /// program with a 1 GiB heap and a 10 s wall clock).
    #[serde(default)]
    pub rlimits: Vec<RlimitReport>,
    /// The worker's seccomp table, summed up.
    #[serde(default)]
    pub seccomp: SeccompReport,
}

/// A resource a worker limits (`setrlimit(2)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Resource {
    /// `RLIMIT_DATA`: private writable memory.
    Data,
    /// `RLIMIT_NOFILE`: open descriptors.
    Nofile,
    /// `RLIMIT_NPROC`: processes and threads of the (outside) user.
    Nproc,
    /// `RLIMIT_FSIZE`: the size a file may grow to.
    Fsize,
    /// `RLIMIT_CORE`: core dump size.
    Core,
    /// `RLIMIT_MEMLOCK`: locked memory.
    Memlock,
    /// `RLIMIT_MSGQUEUE`: POSIX message queue bytes.
    Msgqueue,
    /// `RLIMIT_CPU`: CPU seconds.
    Cpu,
}

impl Resource {
    /// The name without `RLIMIT_` (`NPROC`).
    pub fn name(self) -> &'static str {
        match self {
            Resource::Data => "DATA",
            Resource::Nofile => "NOFILE",
            Resource::Nproc => "NPROC",
            Resource::Fsize => "FSIZE",
            Resource::Core => "CORE",
            Resource::Memlock => "MEMLOCK",
            Resource::Msgqueue => "MSGQUEUE",
            Resource::Cpu => "CPU",
        }
    }
}

/// What `sandbox-worker info` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkerInfo {
    /// The engine the binary was built with.
    pub engine: Engine,
}

/// One resource limit as the worker applies it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RlimitReport {
    /// The resource.
    pub resource: Resource,
    /// The soft and hard value (the same unless they differ).
    pub soft: u64,
    /// The hard value.
    pub hard: u64,
    /// Why, and how the value is chosen.
    pub reason: String,
}

/// The worker's seccomp table, summed up for reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeccompReport {
    /// System calls allowed (some only with certain arguments).
    pub allowed: Vec<String>,
    /// System calls answered with an errno instead (`clone3: ENOSYS`).
    pub refused: Vec<String>,
}

/// How the host starts a `sandbox-worker` process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkerCommand {
    /// Serve fork requests on the control channel at descriptor `control_fd`.
    Template {
        /// The control channel's descriptor.
        control_fd: i32,
        /// The host's pid (the parent-death check).
        host_pid: i32,
        /// Sandbox strictness.
        sandbox: SandboxMode,
    },
    /// Run one program on the channel at `channel_fd` (the spawn path).
    Run {
        /// The channel's descriptor.
        channel_fd: i32,
        /// The host's pid.
        host_pid: i32,
        /// Sandbox strictness.
        sandbox: SandboxMode,
    },
    /// Run a native payload under the worker's policy (`codemode sandbox-exec`).
    Exec {
        /// The host's pid.
        host_pid: i32,
        /// Sandbox strictness.
        sandbox: SandboxMode,
        /// The shared object to load.
        payload: PathBuf,
        /// Its arguments.
        args: Vec<String>,
        /// Layers left out on purpose; accepted only by a worker built with the
        /// `insecure-test-switches` feature (the escape suite's below-seccomp cases).
        skip_layers: Vec<Layer>,
    },
    /// Serve a JavaScript plugin on standard input and output.
    Plugin {
        /// The plugin's folder, or its one module file.
        dir: PathBuf,
        /// Its format, as the host detected it (`manifest`, `zhin`, ...).
        format: String,
        /// The name the host gives it.
        name: String,
        /// The host's pid.
        host_pid: i32,
        /// Sandbox strictness.
        sandbox: SandboxMode,
        /// The plugin runtime's heap limit, in MiB.
        memory_mib: u64,
        /// JavaScript time between two host messages, in ms.
        cpu_step_ms: u64,
        /// The highest folder whose `node_modules` the plugin's bare imports may come
        /// from (Node's walk up from the plugin's folder stops there: the host passes `/`);
        /// `None`: only the plugin's own folder.
        modules_bound: Option<PathBuf>,
    },
    /// Read a JavaScript plugin's files and print its layout (plugin-format's
    /// `detect`) as JSON on standard output: the host reads untrusted plugin folders
    /// in a process of its own, so a module that would overflow a parser's stack or
    /// exhaust its memory ends this process, not the host.
    Detect {
        /// The plugin's folder, or its one module file.
        dir: PathBuf,
        /// The format the configuration forces, when it does.
        format: Option<String>,
    },
    /// Report the sandbox layers as a [`ProbeReport`] on standard output.
    Probe,
    /// Print the engine as JSON (`{"engine":"quickjs"}`).
    Info,
}

/// Why a worker command line could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0}; sandbox-worker is started by the codemode host (modes: template, run, exec, plugin, detect, probe, info)"
)]
pub struct CommandError(String);

/// Most address space `sandbox-worker detect` lets itself map, in MiB: its 64 MiB parser
/// stack, the plugin files it reads (16 MiB in all at most) and their syntax trees.
pub const DETECT_MEMORY_MIB: u64 = 2048;
/// Most CPU `sandbox-worker detect` lets itself use, in seconds.
pub const DETECT_CPU_SECONDS: u64 = 20;

impl WorkerCommand {
    /// The mode word that starts the command line.
    pub fn mode(&self) -> &'static str {
        match self {
            WorkerCommand::Template { .. } => "template",
            WorkerCommand::Run { .. } => "run",
            WorkerCommand::Exec { .. } => "exec",
            WorkerCommand::Plugin { .. } => "plugin",
            WorkerCommand::Detect { .. } => "detect",
            WorkerCommand::Probe => "probe",
            WorkerCommand::Info => "info",
        }
    }

    /// The command line (without the program name).
    pub fn to_args(&self) -> Vec<String> {
        fn flag(args: &mut Vec<String>, name: &str, value: impl ToString) {
            args.push(name.to_string());
            args.push(value.to_string());
        }
        let mut args = vec![self.mode().to_string()];
        match self {
            WorkerCommand::Template { control_fd, host_pid, sandbox } => {
                flag(&mut args, "--control-fd", control_fd);
                flag(&mut args, "--host-pid", host_pid);
                flag(&mut args, "--sandbox", sandbox.as_arg());
            }
            WorkerCommand::Run { channel_fd, host_pid, sandbox } => {
                flag(&mut args, "--channel-fd", channel_fd);
                flag(&mut args, "--host-pid", host_pid);
                flag(&mut args, "--sandbox", sandbox.as_arg());
            }
            WorkerCommand::Exec { host_pid, sandbox, payload, args: payload_args, skip_layers } => {
                flag(&mut args, "--host-pid", host_pid);
                flag(&mut args, "--sandbox", sandbox.as_arg());
                flag(&mut args, "--payload", payload.display());
                for layer in skip_layers {
                    flag(&mut args, "--skip-layer", layer.name());
                }
                args.push("--".into());
                args.extend(payload_args.iter().cloned());
            }
            WorkerCommand::Plugin { dir, format, name, host_pid, sandbox, memory_mib, cpu_step_ms, modules_bound } => {
                if let Some(bound) = modules_bound {
                    flag(&mut args, "--modules-bound", bound.display());
                }
                flag(&mut args, "--dir", dir.display());
                flag(&mut args, "--format", format);
                flag(&mut args, "--name", name);
                flag(&mut args, "--host-pid", host_pid);
                flag(&mut args, "--sandbox", sandbox.as_arg());
                flag(&mut args, "--memory-mib", memory_mib);
                flag(&mut args, "--cpu-step-ms", cpu_step_ms);
            }
            WorkerCommand::Detect { dir, format } => {
                flag(&mut args, "--dir", dir.display());
                if let Some(format) = format {
                    flag(&mut args, "--format", format);
                }
            }
            WorkerCommand::Probe | WorkerCommand::Info => {}
        }
        args
    }

    /// Reads a command line (without the program name).
    pub fn parse(args: &[String]) -> Result<Self, CommandError> {
        let (mode, rest) = args.split_first().ok_or_else(|| CommandError("no mode given".into()))?;
        let dashes = rest.iter().position(|a| a == "--").unwrap_or(rest.len());
        let (flags, trailing) = (&rest[..dashes], rest.get(dashes + 1..).unwrap_or_default());
        if flags.len() % 2 != 0 {
            return Err(CommandError(format!("the flags of `{mode}` must come in pairs (--name value): {flags:?}")));
        }
        let pairs: Vec<(&str, &str)> = flags.chunks(2).map(|p| (p[0].as_str(), p[1].as_str())).collect();
        let known: &[&str] = match mode.as_str() {
            "template" => &["--control-fd", "--host-pid", "--sandbox"],
            "run" => &["--channel-fd", "--host-pid", "--sandbox"],
            "exec" => &["--host-pid", "--sandbox", "--payload", "--skip-layer"],
            "plugin" => &[
                "--dir",
                "--format",
                "--name",
                "--host-pid",
                "--sandbox",
                "--memory-mib",
                "--cpu-step-ms",
                "--modules-bound",
            ],
            "detect" => &["--dir", "--format"],
            "probe" | "info" => &[],
            other => return Err(CommandError(format!("unknown mode `{other}`"))),
        };
        if let Some((name, _)) = pairs.iter().find(|(name, _)| !known.contains(name)) {
            return Err(CommandError(format!("`{mode}` takes no flag {name}")));
        }
        if !trailing.is_empty() && mode != "exec" {
            return Err(CommandError(format!("`{mode}` takes no arguments after --")));
        }
        let value = |name: &str| pairs.iter().rev().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let required = |name: &str| value(name).ok_or_else(|| CommandError(format!("`{mode}` needs {name}")));
        let number = |name: &str| -> Result<i64, CommandError> {
            let text = required(name)?;
            text.parse().map_err(|_| CommandError(format!("{name} must be a number, not {text:?}")))
        };
        let fd = |name: &str| {
            number(name).and_then(|n| i32::try_from(n).map_err(|_| CommandError(format!("{name} is out of range"))))
        };
        let sandbox = || match value("--sandbox") {
            None => Ok(SandboxMode::Required),
            Some(text) => SandboxMode::from_arg(text).ok_or_else(|| {
                CommandError(format!("--sandbox must be required, allow-weaker or disabled, not {text:?}"))
            }),
        };
        Ok(match mode.as_str() {
            "template" => WorkerCommand::Template {
                control_fd: fd("--control-fd")?,
                host_pid: fd("--host-pid")?,
                sandbox: sandbox()?,
            },
            "run" => {
                WorkerCommand::Run { channel_fd: fd("--channel-fd")?, host_pid: fd("--host-pid")?, sandbox: sandbox()? }
            }
            "exec" => WorkerCommand::Exec {
                host_pid: fd("--host-pid")?,
                sandbox: sandbox()?,
                payload: PathBuf::from(required("--payload")?),
                args: trailing.to_vec(),
                skip_layers: pairs
                    .iter()
                    .filter(|(n, _)| *n == "--skip-layer")
                    .map(|(_, v)| {
                        Layer::from_name(v)
                            .ok_or_else(|| CommandError(format!("--skip-layer: there is no layer {v:?}")))
                    })
                    .collect::<Result<_, _>>()?,
            },
            "plugin" => WorkerCommand::Plugin {
                dir: PathBuf::from(required("--dir")?),
                format: value("--format").unwrap_or("manifest").to_string(),
                name: required("--name")?.to_string(),
                host_pid: fd("--host-pid")?,
                sandbox: sandbox()?,
                memory_mib: number("--memory-mib")
                    .and_then(|n| u64::try_from(n).map_err(|_| CommandError("--memory-mib must be positive".into())))?,
                cpu_step_ms: number("--cpu-step-ms").and_then(|n| {
                    u64::try_from(n).map_err(|_| CommandError("--cpu-step-ms must be positive".into()))
                })?,
                modules_bound: value("--modules-bound").map(PathBuf::from),
            },
            "detect" => WorkerCommand::Detect {
                dir: PathBuf::from(required("--dir")?),
                format: value("--format").map(str::to_string),
            },
            "probe" => WorkerCommand::Probe,
            _ => WorkerCommand::Info,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_distinct_and_map_back() {
        for exit in WorkerExit::ALL {
            assert_eq!(WorkerExit::from_code(exit.code()), Some(exit));
            assert_eq!(WorkerExit::ALL.iter().filter(|e| e.code() == exit.code()).count(), 1);
        }
        assert_eq!(WorkerExit::from_code(0), None);
        assert_eq!(WorkerExit::from_code(1), None);
    }

    #[test]
    fn every_command_round_trips() {
        let commands = [
            WorkerCommand::Template { control_fd: 3, host_pid: 42, sandbox: SandboxMode::Required },
            WorkerCommand::Run { channel_fd: 3, host_pid: 42, sandbox: SandboxMode::Disabled },
            WorkerCommand::Exec {
                host_pid: 1,
                sandbox: SandboxMode::AllowWeaker,
                payload: "/tmp/p.so".into(),
                args: vec!["--not-a-flag".into(), "x".into()],
                skip_layers: vec![Layer::Seccomp, Layer::Landlock],
            },
            WorkerCommand::Plugin {
                dir: "/srv/plug in".into(),
                format: "zhin".into(),
                name: "hello".into(),
                host_pid: 7,
                sandbox: SandboxMode::Required,
                memory_mib: 128,
                cpu_step_ms: 500,
                modules_bound: Some("/home/ann".into()),
            },
            WorkerCommand::Probe,
            WorkerCommand::Info,
        ];
        for command in commands {
            assert_eq!(WorkerCommand::parse(&command.to_args()), Ok(command.clone()), "{:?}", command.to_args());
        }
    }

    #[test]
    fn mistakes_are_named() {
        let parse = |args: &[&str]| {
            WorkerCommand::parse(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>()).unwrap_err().to_string()
        };
        assert!(parse(&[]).starts_with("no mode given; sandbox-worker is started by the codemode host"));
        assert!(parse(&["dance"]).starts_with("unknown mode `dance`"));
        assert!(parse(&["run", "--channel-fd", "3"]).starts_with("`run` needs --host-pid"));
        assert!(parse(&["run", "--channel-fd", "three", "--host-pid", "1"])
            .starts_with("--channel-fd must be a number, not \"three\""));
        assert!(parse(&["run", "--channel-fd", "3", "--host-pid", "1", "--sandbox", "off"])
            .starts_with("--sandbox must be required, allow-weaker or disabled, not \"off\""));
        assert!(parse(&["template", "--payload", "x"]).starts_with("`template` takes no flag --payload"));
        assert!(parse(&["exec", "--host-pid", "1", "--payload", "p", "--skip-layer", "moat"])
            .starts_with("--skip-layer: there is no layer \"moat\""));
    }

    #[test]
    fn layers_have_names_descriptions_and_hints() {
        for layer in Layer::ALL {
            assert_eq!(Layer::from_name(layer.name()), Some(layer));
            assert!(!layer.description().is_empty());
            assert_eq!(serde_json::to_value(layer).unwrap_or_default(), serde_json::Value::String(layer.name().into()));
        }
        assert!(Layer::Seccomp.hint().contains("CONFIG_SECCOMP_FILTER"));
        assert!(Layer::Landlock.hint().contains("CONFIG_SECURITY_LANDLOCK"));
    }

    #[test]
    fn the_probe_report_is_json_both_ways() {
        let report = ProbeReport {
            engine: Engine::QuickJs,
            kernel: "6.18".into(),
            landlock_abi: Some(7),
            seccomp_available: true,
            cgroup: "v2".into(),
            outside_uid: Some(65534),
            missing: vec![MissingLayer { layer: Layer::Landlock, reason: "no".into() }],
            rlimits: vec![RlimitReport {
                resource: Resource::Nproc,
                soft: 0,
                hard: 0,
                reason: "no new processes".into(),
            }],
            seccomp: SeccompReport { allowed: vec!["read".into()], refused: vec!["clone3: ENOSYS".into()] },
        };
        let text = serde_json::to_string(&report).unwrap_or_default();
        assert!(text.contains("\"engine\":\"quickjs\"") && text.contains("\"layer\":\"landlock\""), "{text}");
        assert!(text.contains("\"resource\":\"NPROC\""), "{text}");
        assert_eq!(serde_json::from_str::<ProbeReport>(&text).ok(), Some(report));
    }
}

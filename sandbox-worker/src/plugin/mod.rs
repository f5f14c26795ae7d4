//! The JavaScript plugin runtime: one long-lived, sandboxed deno_core process per
//! plugin, speaking the process-plugin protocol (`protocol/PLUGINS.md`) on its standard
//! input and output.
//!
//! The host starts it as a process plugin (`sandbox-worker plugin --dir PATH --format F
//! ...`), so restarts, backoff, call timeouts and `tool/cancel` work as for any process
//! plugin. The order, in one function ([`run`]):
//! 1. find the plugin's layout in the format the host detected (`plugin-format`) and
//!    copy its folder into memory ([`folder`]): what its modules may import, and nothing
//!    outside it but the `node_modules` of the folders above it up to the bound the
//!    host gives (the user's home: Node's walk up for bare imports);
//! 2. enter the sandbox of a spawned worker (the same layers as a program's worker,
//!    keeping only standard input, output and error) and fork into a new pid namespace;
//! 3. wait for the host's `initialize`, which carries the plugin's settings;
//! 4. create the runtime with the plugin ops ([`ops`]), the module loader ([`modules`])
//!    and the plugin runtime's JavaScript ([`PLUGIN_RUNTIME_JS`], `js/` here);
//! 5. start the CPU watchdog (JavaScript time between two host messages), lock the
//!    process (resource limits, the worker's seccomp table), set the heap limit;
//! 6. load and evaluate the layout's modules, then hand them to `plugin.js`, whose
//!    format adapter turns them into tools, and which serves the host's requests.
//!
//! The plugin never reaches the network itself: `fetch` and `api.net.fetch` are
//! `host/fetch` requests that the host performs against the plugin's allowlist. A
//! plugin stopped by a limit answers every unanswered request with the reason and
//! exits; the host starts it again on the next call.

pub mod cjs;
pub mod folder;
pub mod modules;
pub mod ops;

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use deno_core::{v8, PollEventLoopOptions};
use plugin_format::Format;

use crate::memory::{self, MemoryTrip};
use crate::sandbox::setup::{Role, Setup};
use crate::sandbox::{rlimits, Environment, SandboxOptions};
use crate::step_clock::StepClock;
use folder::PluginFolder;
use modules::PluginModules;
use ops::{codemode_plugin, HostReader, PluginDriver, PluginLink, PluginSetup};

/// The plugin runtime's JavaScript: `js/common.js` (shared with programs), then this
/// module's `js/plugin_schema.js` (the schema forms), `js/plugin_web.js` (the web
/// pieces), `js/plugin_formats.js` (the seed formats' adapters) and `js/plugin.js` (the
/// runtime itself): modules with explicit imports that the bundle step (`build.rs`)
/// makes one script of, inside one function of deno_core's primordials.
const PLUGIN_RUNTIME_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/plugin_runtime.js"));

/// What the host passes on the command line.
#[derive(Debug, Clone)]
pub struct PluginOptions {
    /// The plugin's folder, or its one module file.
    pub dir: PathBuf,
    /// Its format, as the host detected it.
    pub format: String,
    /// The name the host gives it (`tools.<name>`).
    pub name: String,
    /// The host's pid (the parent-death check).
    pub host_pid: i32,
    /// How strict the sandbox is.
    pub sandbox: SandboxOptions,
    /// The JavaScript heap limit.
    pub memory_bytes: u64,
    /// The highest folder whose `node_modules` bare imports may come from.
    pub modules_bound: Option<PathBuf>,
    /// The longest JavaScript may run without waiting for the host.
    pub cpu_step: Duration,
}

/// Runs the plugin until the host closes its input, a limit stops it, or it fails.
pub fn run(options: PluginOptions) -> ! {
    crate::report_panics(None);
    let mut setup = Setup::new(Role::Plugin, &options.sandbox);
    setup.die_with_host(Some(options.host_pid)).unwrap_or_else(|e| crate::fail(&e.to_string()));
    let link = Rc::new(PluginLink::new(HostReader::stdin()));
    let name = options.name.clone();
    let Some(format) = Format::parse(&options.format) else {
        refuse(&link, &format!("plugin {name}: this runtime does not know the format {:?}", options.format))
    };
    let layout = plugin_format::detect(&options.dir, Some(format))
        .unwrap_or_else(|e| refuse(&link, &format!("plugin {name} cannot load: {e}")));
    let (folder, above) =
        PluginFolder::read_packages_above(&layout.root, layout.only_file.as_deref(), options.modules_bound.as_deref())
            .unwrap_or_else(|e| refuse(&link, &format!("plugin {name} cannot load: {e}")));
    let base = memory::current_data_bytes().unwrap_or_else(|e| crate::fail(&format!("cannot measure memory: {e}")))
        + crate::SPAWNED_ENGINE_ALLOWANCE;

    if let Err(e) =
        setup.enter_template(&[0, 1, 2], crate::engine::ENGINE_GENERATES_CODE, Environment::EngineSwitchesOnly)
    {
        refuse(&link, &format!("plugin {name} cannot enter its sandbox: {e}"));
    }
    setup.fork_and_mirror().unwrap_or_else(|e| crate::fail(&e.to_string()));
    if let Err(e) = setup.enter_worker(&[0, 1, 2], Some(0)) {
        refuse(&link, &format!("plugin {name} cannot enter its sandbox: {e}"));
    }
    let initialize = link.wait_for_initialize();

    let entries: Vec<String> = layout.entries.iter().map(|e| e.module.clone()).collect();
    let modules = Rc::new(
        PluginModules::new(Arc::clone(&folder.fs), folder.real_root.clone())
            .with_entries(&entries)
            .with_packages_above(above),
    );
    let mut runtime = crate::engine::new_runtime(
        vec![codemode_plugin::init()],
        Some(Rc::clone(&modules) as Rc<dyn deno_core::ModuleLoader>),
        Some(options.memory_bytes),
    )
    .unwrap_or_else(|e| refuse(&link, &format!("plugin {name}: {e}")));
    let manifest = layout.manifest.as_ref();
    runtime.op_state().borrow_mut().put(Rc::clone(&link));
    runtime.op_state().borrow_mut().put(Rc::clone(&modules));
    runtime.op_state().borrow_mut().put(PluginSetup {
        plugin: name.clone(),
        version: manifest.map_or_else(String::new, |m| m.version.clone()),
        format: format.as_str(),
        may_provide_tools: manifest.is_none_or(|m| m.may_provide_tools()),
        settings: initialize.settings,
        skipped: layout.skipped.clone(),
    });
    if let Err(e) = runtime.execute_script("codemode:plugin", PLUGIN_RUNTIME_JS) {
        refuse(&link, &format!("plugin {name}: the plugin runtime did not start: {e}"));
    }
    let Some(driver) = runtime.op_state().borrow().try_borrow::<PluginDriver>().map(|d| d.0.clone()) else {
        refuse(&link, &format!("plugin {name}: the plugin runtime registered no driver"))
    };

    let clock = StepClock::start(options.cpu_step);
    if let Err(e) = clock.spawn_watchdog(runtime.v8_isolate().thread_safe_handle()) {
        refuse(&link, &format!("plugin {name}: cannot start the CPU watchdog: {e}"));
    }
    runtime.op_state().borrow_mut().put(Arc::clone(&clock));
    // A long-lived process: no CPU-seconds backstop (the watchdog bounds each step).
    let limits = rlimits::worker_rlimits(memory::plugin_backstop_bytes(base, options.memory_bytes), u64::MAX);
    if let Err(e) = setup.lock(&limits) {
        refuse(&link, &format!("plugin {name} cannot enter its sandbox: {e}"));
    }
    let memory_trip = MemoryTrip::new(&mut runtime);
    memory::set_heap_limit_unarmed(&mut runtime, options.memory_bytes);

    let event_loop = event_loop(&link, &clock)
        .unwrap_or_else(|e| refuse(&link, &format!("plugin {name}: cannot start the event loop: {e}")));
    let ended = event_loop.block_on(async {
        let mut loaded = Vec::new();
        for (index, entry) in layout.entries.iter().enumerate() {
            let url = PluginModules::url_of(&entry.module)?;
            let id = if index == 0 {
                runtime.load_main_es_module(&url).await
            } else {
                runtime.load_side_es_module(&url).await
            }
            .map_err(|e| format!("{} does not load: {e}", entry.module))?;
            let evaluated = runtime.mod_evaluate(id);
            runtime
                .with_event_loop_future(evaluated, PollEventLoopOptions::default())
                .await
                .map_err(|e| format!("{} threw while it was evaluated: {e}", entry.module))?;
            let namespace = runtime.get_module_namespace(id).map_err(|e| e.to_string())?;
            loaded.push((entry.clone(), namespace));
        }
        memory::set_heap_limit(&mut runtime, options.memory_bytes, &memory_trip);
        let entries = {
            deno_core::scope!(scope, &mut runtime);
            let list = v8::Array::new(scope, 0);
            for (index, (entry, namespace)) in loaded.iter().enumerate() {
                let item = v8::Object::new(scope);
                let set = |scope: &mut v8::PinScope, key: &str, value: v8::Local<v8::Value>| {
                    if let Some(key) = v8::String::new(scope, key) {
                        item.set(scope, key.into(), value);
                    }
                };
                let module = v8::String::new(scope, &entry.module).map(Into::into);
                let tool = entry.tool.as_deref().and_then(|t| v8::String::new(scope, t)).map(Into::into);
                let undefined: v8::Local<v8::Value> = v8::undefined(scope).into();
                set(scope, "module", module.unwrap_or(undefined));
                set(scope, "tool", tool.unwrap_or(undefined));
                let owner = entry.owner.as_deref().and_then(|o| v8::String::new(scope, o)).map(Into::into);
                set(scope, "owner", owner.unwrap_or(undefined));
                let namespace = v8::Local::new(scope, namespace);
                set(scope, "namespace", namespace.into());
                list.set_index(scope, u32::try_from(index).unwrap_or(u32::MAX), item.into());
            }
            v8::Global::new(scope, v8::Local::<v8::Value>::from(list))
        };
        let serve = runtime.call_with_args(&driver, &[entries]);
        runtime
            .with_event_loop_promise(Box::pin(serve), PollEventLoopOptions::default())
            .await
            .map_err(|e| e.to_string())?;
        Ok::<(), String>(())
    });
    // While the modules loaded, only the heap limit itself stood (no callback): a
    // termination the CPU limit did not cause was the memory limit.
    if ended.is_err() && runtime.v8_isolate().is_execution_terminating() && !clock.tripped() {
        memory_trip.trip();
    }
    let reason = stop_reason(ended, &options, &memory_trip, &clock);
    link.fail_in_flight(&|tool| match tool {
        Some(tool) => format!("tool {name}.{tool} failed: {reason}"),
        None => format!("plugin {name}: {reason}"),
    });
    drop(runtime);
    crate::exit_now(if clock.tripped() {
        protocol::worker::WorkerExit::CpuLimit.code()
    } else {
        protocol::worker::WorkerExit::SetupFailed.code()
    })
}

/// Why the plugin stopped serving. Limits win over the error their termination caused.
fn stop_reason(ended: Result<(), String>, options: &PluginOptions, memory: &MemoryTrip, clock: &StepClock) -> String {
    if memory.tripped() {
        return format!(
            "the plugin used more than its memory limit of {} MiB and was stopped; it restarts on the next call (raise memory_mib in its configuration if it needs more)",
            options.memory_bytes >> 20
        );
    }
    if clock.tripped() {
        return format!(
            "the plugin ran JavaScript for more than {} ms without waiting for the host and was stopped; it restarts on the next call (long work must await the host, or raise cpu_step_ms in its configuration)",
            options.cpu_step.as_millis()
        );
    }
    match ended {
        Ok(()) => "the plugin runtime stopped serving".into(),
        Err(e) => e,
    }
}

/// The plugin's event loop: a single-threaded tokio runtime with no I/O driver. When
/// nothing can run, the plugin is waiting for the host, so the park hook reads the
/// host's next message ([`PluginLink::wait_for_host`]).
fn event_loop(link: &Rc<PluginLink>, clock: &Arc<StepClock>) -> std::io::Result<tokio::runtime::Runtime> {
    WAITING_LINK.with(|l| *l.borrow_mut() = Some(Rc::clone(link)));
    let clock = Arc::clone(clock);
    tokio::runtime::Builder::new_current_thread()
        .on_thread_park(move || {
            WAITING_LINK.with(|l| {
                if let Some(link) = l.borrow().as_deref() {
                    link.wait_for_host(&clock);
                }
            })
        })
        .build()
}

thread_local! {
    /// The link, for the event loop's park hook (which must be `Send`).
    static WAITING_LINK: std::cell::RefCell<Option<Rc<PluginLink>>> = const { std::cell::RefCell::new(None) };
}

/// Refuses to start: answers the host's requests (at least `initialize`) with
/// `message`, so the host can say why, and exits.
fn refuse(link: &PluginLink, message: &str) -> ! {
    eprintln!("{message}");
    link.fail_in_flight(&|_| message.to_string());
    crate::exit_as(protocol::worker::WorkerExit::SetupFailed)
}

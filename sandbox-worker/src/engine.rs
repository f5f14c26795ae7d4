//! The JavaScript engine of one worker process: a deno_core runtime with the codemode
//! extension, bootstrapped and scrubbed so that only the language, `tools` and
//! `console` remain.
//!
//! [`Engine::new`] is the expensive part (about 17 ms). The template process does it
//! once and forks every worker from the result; the spawn path does it per program.

use deno_core::{v8, JsRuntime, RuntimeOptions};
use protocol::JsFailure;

use crate::ops::{codemode, Describer, Driver, Reseeder};
use crate::source::{self, Positions, Prepared};

#[cfg(not(any(feature = "quickjs", feature = "v8")))]
compile_error!("enable one engine feature: `quickjs` (default) or `v8`");

/// The engine this worker was built with.
pub const ENGINE: protocol::worker::Engine =
    if cfg!(feature = "v8") { protocol::worker::Engine::V8 } else { protocol::worker::Engine::QuickJs };

/// True when the engine compiles JavaScript to machine code at run time (V8's JIT),
/// which needs executable memory; QuickJS is an interpreter and gets none.
pub const ENGINE_GENERATES_CODE: bool = cfg!(feature = "v8");

/// The script name under which programs are compiled; their stack frames show it.
pub const PROGRAM_NAME: &str = "program.js";

/// The engine's JavaScript stack, in KiB (V8's flag; QuickJS honours it too).
const STACK_FLAG: &str = "--stack-size=4096";

/// The program runtime's JavaScript: `js/common.js` (what both runtimes share) and
/// `js/bootstrap.js`, modules with explicit imports that the bundle step (`build.rs`)
/// makes one script of, inside one function of deno_core's primordials (so none of it
/// is a global). The plugin runtime's JavaScript is the plugin module's
/// ([`crate::plugin`]): a program's process never evaluates it.
pub const PROGRAM_RUNTIME_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/program_runtime.js"));

/// Why the engine could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// deno_core refused to create the runtime.
    #[error("creating the JavaScript runtime failed: {0}")]
    Create(String),
    /// The bootstrap script threw (for example, the global scope could not be cleaned).
    #[error("bootstrapping the JavaScript runtime failed: {0}")]
    Bootstrap(String),
}

/// A bootstrapped runtime, ready for one program.
pub struct Engine {
    /// The deno_core runtime.
    pub runtime: JsRuntime,
}

/// Why a program did not become a function of `tools`.
#[derive(Debug)]
pub enum CompileError {
    /// It does not parse, or its top-level code threw (a program may close its wrapper
    /// and run code outside it).
    Threw(JsFailure),
    /// Its top-level code made a native allocation fail.
    OutOfMemory,
    /// The engine stopped it (a limit); the limit decides the outcome.
    Terminated,
}

/// What running a script left behind.
enum Evaluated {
    /// Its completion value.
    Value(v8::Global<v8::Value>),
    /// It does not compile: the SyntaxError.
    Invalid(v8::Global<v8::Value>),
    /// It threw while running.
    Threw(v8::Global<v8::Value>),
    /// The engine terminated it.
    Terminated,
}

/// Creates a deno_core runtime with codemode's engine settings: `extensions`, an
/// optional module loader (plugins load ES modules; programs never do) and an initial
/// heap limit.
pub fn new_runtime(
    extensions: Vec<deno_core::Extension>,
    module_loader: Option<std::rc::Rc<dyn deno_core::ModuleLoader>>,
    heap_limit_bytes: Option<u64>,
) -> Result<JsRuntime, EngineError> {
    // QuickJS's default 1 MiB of JS stack stops recursion at about a thousand frames;
    // the main thread has 8 MiB, so give the engine 4 MiB of it.
    v8::V8::set_flags_from_string(STACK_FLAG);
    let create_params = heap_limit_bytes
        .map(|limit| v8::CreateParams::default().heap_limits(0, usize::try_from(limit).unwrap_or(usize::MAX)));
    JsRuntime::try_new(RuntimeOptions { extensions, module_loader, create_params, ..Default::default() })
        .map_err(|e| EngineError::Create(e.to_string()))
}

impl Engine {
    /// Creates and bootstraps a runtime. `heap_limit_bytes` is the isolate's initial
    /// heap limit (each program sets its own before it runs).
    pub fn new(heap_limit_bytes: Option<u64>) -> Result<Self, EngineError> {
        let mut runtime = new_runtime(vec![codemode::init()], None, heap_limit_bytes)?;
        runtime
            .execute_script("codemode:bootstrap", PROGRAM_RUNTIME_JS)
            .map_err(|e| EngineError::Bootstrap(e.to_string()))?;
        let state = runtime.op_state();
        let state = state.borrow();
        if !state.has::<Driver>() || !state.has::<Describer>() || !state.has::<Reseeder>() {
            return Err(EngineError::Bootstrap(
                "the bootstrap did not register its driver, describer and reseeder".into(),
            ));
        }
        drop(state);
        Ok(Self { runtime })
    }

    /// Compiles a program into a function of `tools`: [`source::prepare`] decides its
    /// form (and strips TypeScript), the engine compiles the result once.
    ///
    /// A syntax error is reported with the program's own line and column numbers.
    /// Whatever the program's text runs while it is compiled is described by the
    /// bootstrap's describer, never by deno_core's conversion.
    pub fn compile(&mut self, code: &str) -> Result<(v8::Global<v8::Value>, Prepared), CompileError> {
        self.compile_named(code, PROGRAM_NAME)
    }

    /// [`Engine::compile`] under the script name `name`. A warm worker's rehearsal uses
    /// its own name: the QuickJS backend keeps the last source run under each name and
    /// places a later error's columns with it, so a rehearsal run as `program.js` would
    /// shift the columns of a program that fails to compile (never run, so never
    /// recorded).
    pub fn compile_named(&mut self, code: &str, name: &str) -> Result<(v8::Global<v8::Value>, Prepared), CompileError> {
        let prepared = source::prepare(code).map_err(|refused| {
            CompileError::Threw(JsFailure {
                name: "SyntaxError".into(),
                message: refused.message,
                stack: None,
                line: Some(refused.line),
                column: Some(refused.column),
                unhandled_rejection: false,
            })
        })?;
        match self.evaluate(&prepared.source, name) {
            Evaluated::Value(function) => self.expect_function(function, prepared),
            Evaluated::Invalid(exception) | Evaluated::Threw(exception) => {
                Err(self.describe(&exception, &prepared.positions))
            }
            Evaluated::Terminated => Err(CompileError::Terminated),
        }
    }

    /// The wrapper's value must be the program's function; text that closes the
    /// wrapper can leave something else.
    fn expect_function(
        &mut self,
        value: v8::Global<v8::Value>,
        prepared: Prepared,
    ) -> Result<(v8::Global<v8::Value>, Prepared), CompileError> {
        deno_core::scope!(scope, &mut self.runtime);
        if v8::Local::new(scope, &value).is_function() {
            return Ok((value, prepared));
        }
        Err(CompileError::Threw(JsFailure {
            name: "SyntaxError".into(),
            message: "the program must be the body of an async function, or one expression; its text closes the function it is placed in".into(),
            stack: None,
            line: None,
            column: None,
            unhandled_rejection: false,
        }))
    }

    /// Compiles and runs a script under a TryCatch, keeping what it threw as a value.
    fn evaluate(&mut self, source: &str, name: &str) -> Evaluated {
        deno_core::scope!(scope, &mut self.runtime);
        let (Some(source), Some(name)) = (v8::String::new(scope, source), v8::String::new(scope, name)) else {
            return Evaluated::Terminated;
        };
        let origin = v8::ScriptOrigin::new(scope, name.into(), 0, 0, false, 0, None, false, false, false, None);
        v8::tc_scope!(let tc, scope);
        let Some(script) = v8::Script::compile(tc, source, Some(&origin)) else {
            return match tc.exception() {
                Some(e) if !tc.has_terminated() => Evaluated::Invalid(v8::Global::new(tc, e)),
                _ => Evaluated::Terminated,
            };
        };
        match script.run(tc) {
            Some(value) => Evaluated::Value(v8::Global::new(tc, value)),
            None => match tc.exception() {
                Some(e) if !tc.has_terminated() => Evaluated::Threw(v8::Global::new(tc, e)),
                _ => Evaluated::Terminated,
            },
        }
    }

    /// Reseeds every generator the program can draw from (`Math.random`) with `entropy`;
    /// false when the bootstrap's reseeder could not run (the program must not run then).
    pub fn reseed(&mut self, entropy: [u32; 4]) -> bool {
        let Some(reseed) = self.runtime.op_state().borrow().try_borrow::<Reseeder>().map(|r| r.0.clone()) else {
            return false;
        };
        deno_core::scope!(scope, &mut self.runtime);
        let function = v8::Local::new(scope, &reseed);
        let words: Vec<v8::Local<v8::Value>> =
            entropy.iter().map(|w| v8::Integer::new_from_unsigned(scope, *w).into()).collect();
        let undefined = v8::undefined(scope).into();
        function.call(scope, undefined, &words).is_some()
    }

    /// Describes a thrown value with the bootstrap's describer (`describeThrown`).
    pub fn describe(&mut self, exception: &v8::Global<v8::Value>, positions: &Positions) -> CompileError {
        let Some(describer) = self.runtime.op_state().borrow().try_borrow::<Describer>().map(|d| d.0.clone()) else {
            return CompileError::Terminated;
        };
        deno_core::scope!(scope, &mut self.runtime);
        let function = v8::Local::new(scope, &describer);
        let value = v8::Local::new(scope, exception);
        let insertions: Vec<v8::Local<v8::Value>> =
            positions.flat().into_iter().map(|n| v8::Integer::new_from_unsigned(scope, n).into()).collect();
        let insertions = v8::Array::new_with_elements(scope, &insertions);
        let undefined = v8::undefined(scope).into();
        v8::tc_scope!(let tc, scope);
        let Some(text) = function.call(tc, undefined, &[value, insertions.into()]) else {
            return CompileError::Terminated;
        };
        let text = text.to_rust_string_lossy(tc);
        match serde_json::from_str::<Described>(&text) {
            Ok(d) if d.internal || (d.name == "InternalError" && d.message == "out of memory") => {
                CompileError::OutOfMemory
            }
            Ok(d) => CompileError::Threw(JsFailure {
                name: d.name,
                message: d.message,
                stack: d.stack,
                line: d.line,
                column: d.column,
                unhandled_rejection: false,
            }),
            Err(e) => CompileError::Threw(JsFailure {
                name: "Error".into(),
                message: format!("the program threw something its description could not carry: {e}"),
                stack: None,
                line: None,
                column: None,
                unhandled_rejection: false,
            }),
        }
    }
}

/// What the bootstrap's describer returns.
#[derive(serde::Deserialize)]
struct Described {
    name: String,
    message: String,
    #[serde(default)]
    stack: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    column: Option<u32>,
    #[serde(default)]
    internal: bool,
}

/// Converts deno_core's error into the protocol's, mapping positions back to the
/// program's own text.
pub fn failure_from_js_error(error: &deno_core::error::JsError, positions: &Positions) -> JsFailure {
    let frame = error.frames.iter().find(|f| f.file_name.as_deref() == Some(PROGRAM_NAME));
    let line = frame.and_then(|f| f.line_number).and_then(|l| u32::try_from(l).ok());
    let column = frame
        .and_then(|f| f.column_number)
        .and_then(|c| u32::try_from(c).ok())
        .map(|c| line.map_or(c, |line| positions.column(line, c)));
    let message = match &error.message {
        Some(m) => m.clone(),
        None => {
            let m = error.exception_message.strip_prefix("Uncaught ").unwrap_or(&error.exception_message);
            m.strip_prefix("(in promise) ").unwrap_or(m).to_string()
        }
    };
    JsFailure {
        name: error.name.clone().unwrap_or_default(),
        message,
        stack: error.stack.as_deref().map(|s| positions.fix_stack(&without_internal_frames(s), PROGRAM_NAME)),
        line,
        column,
        unhandled_rejection: false,
    }
}

/// Drops stack frames of codemode's own bootstrap: the program's author cannot act on them.
fn without_internal_frames(stack: &str) -> String {
    stack
        .lines()
        .filter(|l| !(l.trim_start().starts_with("at ") && l.contains("codemode:")))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_frames_are_dropped() {
        let stack = "Error: x\n    at onFailure (codemode:bootstrap:134:46)\n    at async program.js:1:8\n    at async drive (codemode:bootstrap:220:17)";
        assert_eq!(without_internal_frames(stack), "Error: x\n    at async program.js:1:8");
    }
}

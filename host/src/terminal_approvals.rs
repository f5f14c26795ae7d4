//! Approvals for `codemode run`: a tool that needs a person's approval asks on the
//! terminal (`/dev/tty`, so that a program read from standard input still can), or is
//! allowed up front by `--approve PLUGIN.TOOL` / `--approve-all` for scripted use.
//! Without a terminal and without those flags, the call is refused with a message that
//! says which flag allows it. Plugins' own questions (`ctx.approve`) take the same path,
//! and so do the forms an MCP server asks to fill in during a call (elicitation): each
//! field is asked on the terminal (Enter keeps its default), or `--accept-defaults`
//! answers them with the server's defaults.
//!
//! Which calls ask is decided by the one approval policy of every front end
//! ([`crate::dispatch::approval`]); this module supplies what the flags allow up front
//! and how to ask. Asking is serialised, so that concurrent calls never interleave
//! their prompts.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::dispatch::{ApprovedOnce, CallHooks, RunRequest};
use crate::tool::form::Form;
use crate::tool::{ApprovalAnswer, ApprovalQuestion, Approver, CallProgress, CallStatus, ProgressSink};

/// The terminal the person answers on.
const TERMINAL: &str = "/dev/tty";

/// What the flags allow without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreApproved {
    /// `--approve-all`.
    pub all: bool,
    /// `--approve PLUGIN.TOOL` (also written `tools.PLUGIN.TOOL`), each.
    pub tools: BTreeSet<String>,
    /// `--accept-defaults`: a form a tool's server asks to fill in is answered with its
    /// defaults.
    pub accept_defaults: bool,
}

impl PreApproved {
    /// From the flags; a name without a `.` is refused with what to write.
    pub fn new(all: bool, tools: &[String], accept_defaults: bool) -> Result<Self, String> {
        let mut set = BTreeSet::new();
        for name in tools {
            let name = name.strip_prefix("tools.").unwrap_or(name);
            if !name.contains('.') {
                return Err(format!(
                    "--approve {name}: name the tool as PLUGIN.TOOL (for example --approve notes.delete)"
                ));
            }
            set.insert(name.to_string());
        }
        Ok(Self { all, tools: set, accept_defaults })
    }
}

/// `codemode run`'s hooks: approvals on the terminal.
pub struct TerminalApprovals {
    flags: PreApproved,
    /// The approvals given once in this run.
    approved_once: ApprovedOnce,
    /// One prompt at a time.
    asking: Arc<tokio::sync::Mutex<()>>,
}

impl TerminalApprovals {
    /// Hooks allowing what `flags` allow and asking on the terminal for the rest.
    pub fn new(flags: PreApproved) -> Arc<Self> {
        Arc::new(Self { flags, approved_once: ApprovedOnce::default(), asking: Arc::default() })
    }

    /// Asks `question` on the terminal; `Err` says why nobody could be asked.
    fn prompt(asking: Arc<tokio::sync::Mutex<()>>, question: String) -> BoxFuture<'static, Result<bool, String>> {
        Box::pin(async move {
            let _one = asking.lock().await;
            tokio::task::spawn_blocking(move || ask_on_terminal(&question))
                .await
                .map_err(|e| format!("asking on the terminal failed: {e}"))?
        })
    }
}

/// Writes `question` to the terminal and reads the answer: true for `y` or `yes`.
/// Control characters other than newlines (escape sequences a plugin could put in its
/// message or reason to rewrite the prompt) and invisible or reordering characters are
/// shown as escapes ([`crate::tool::shown::visible`]).
fn ask_on_terminal(question: &str) -> Result<bool, String> {
    let question = crate::tool::shown::visible(question);
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(TERMINAL)
        .map_err(|e| format!("there is no terminal to ask on ({TERMINAL}: {e})"))?;
    let mut writer = &terminal;
    write!(writer, "{question} [y/N] ")
        .and_then(|()| writer.flush())
        .map_err(|e| format!("writing to {TERMINAL} failed: {e}"))?;
    let mut line = String::new();
    std::io::BufReader::new(&terminal).read_line(&mut line).map_err(|e| format!("reading {TERMINAL} failed: {e}"))?;
    Ok(matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

impl CallHooks for TerminalApprovals {
    fn pre_approved(&self, plugin: &str, tool: &str) -> bool {
        self.flags.all || self.flags.tools.contains(&format!("{plugin}.{tool}"))
    }

    fn ask_to_run(&self, request: RunRequest) -> BoxFuture<'static, Result<(), String>> {
        let name = format!("{}.{}", request.plugin, request.tool);
        let level = if request.once { "once per run" } else { "for each call" };
        let why = request.reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
        let shown = match crate::tool::shown::input_for_person(&request.input) {
            Ok(shown) => shown,
            Err(refused) => {
                let refused = format!("tools.{name} needs a person's approval, and {refused}");
                return Box::pin(async move { Err(refused) });
            }
        };
        let question = format!("codemode: allow tools.{name}{why} to run with this input?\n{shown}\n");
        let asked = Self::prompt(Arc::clone(&self.asking), question);
        Box::pin(async move {
            match asked.await {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!("the person declined the call to tools.{name}")),
                Err(why) => Err(format!(
                    "tools.{name} needs a person's approval ({level}), and {why}: pass --approve {name} (or --approve-all) to allow it"
                )),
            }
        })
    }

    fn approved_once(&self) -> &ApprovedOnce {
        &self.approved_once
    }

    fn after(&self, _plugin: &str, _tool: &str, _ok: bool) {}
}

impl Approver for TerminalApprovals {
    fn ask(&self, question: ApprovalQuestion) -> BoxFuture<'static, ApprovalAnswer> {
        let name = format!("{}.{}", question.plugin, question.tool);
        let form = match question.form.as_ref().map(Form::from_schema) {
            Some(Err(why)) => {
                let answer =
                    ApprovalAnswer::refused(format!("tools.{name} asked for a form codemode cannot show ({why})"));
                return Box::pin(async move { answer });
            }
            Some(Ok(form)) if !form.is_question() => Some(form),
            _ => None,
        };
        let details = match question.details.as_ref().map(crate::tool::shown::input_for_person) {
            Some(Err(refused)) => {
                let answer = ApprovalAnswer::refused(format!("the question's details: {refused}"));
                return Box::pin(async move { answer });
            }
            Some(Ok(shown)) => Some(shown),
            None => None,
        };
        let mut text = format!("codemode: tools.{name} asks: {}\n", question.message);
        if let Some(details) = details {
            text.push_str(&format!("{details}\n"));
        }
        if let Some(link) = &question.link {
            text.push_str(&format!("Open this page to continue: {link}\n"));
        }
        let Some(form) = form else {
            if self.flags.all || self.flags.tools.contains(&name) {
                return Box::pin(async { ApprovalAnswer::allowed() });
            }
            let asked = Self::prompt(Arc::clone(&self.asking), text);
            return Box::pin(async move {
                match asked.await {
                    Ok(true) => ApprovalAnswer::allowed(),
                    Ok(false) => ApprovalAnswer::refused("the person declined"),
                    Err(why) => {
                        ApprovalAnswer::refused(format!("{why}: pass --approve {name} (or --approve-all) to allow it"))
                    }
                }
            });
        };
        if self.flags.accept_defaults {
            let answer = form.complete(serde_json::Map::new());
            let missing: Vec<String> = form.missing(&answer).into_iter().map(str::to_owned).collect();
            return Box::pin(async move {
                if missing.is_empty() {
                    ApprovalAnswer::filled(answer)
                } else {
                    ApprovalAnswer::refused(format!(
                        "tools.{name} asks for {} without a default, so --accept-defaults cannot answer: run it on a terminal to fill the form in",
                        missing.join(", ")
                    ))
                }
            });
        }
        let asking = Arc::clone(&self.asking);
        Box::pin(async move {
            let _one = asking.lock().await;
            let filled = tokio::task::spawn_blocking(move || fill_on_terminal(&text, &form))
                .await
                .map_err(|e| format!("asking on the terminal failed: {e}"))
                .and_then(|r| r);
            match filled {
                Ok(Some(answer)) => ApprovalAnswer::filled(answer),
                Ok(None) => ApprovalAnswer::refused("the person declined"),
                Err(why) => ApprovalAnswer::refused(format!(
                    "{why}: pass --accept-defaults to answer forms with their defaults"
                )),
            }
        })
    }
}

impl ProgressSink for TerminalApprovals {
    /// `codemode run` prints only the program's outcome: progress is logged (`--log info`).
    fn progress(&self, report: CallProgress) {
        let of = report.total.map(|t| format!("/{t}")).unwrap_or_default();
        tracing::info!(plugin = %report.plugin, "tools.{}.{}: {}{of} {}", report.plugin, report.tool, report.progress, report.message.unwrap_or_default());
    }

    /// What a call says it is doing (a subagent's rows, `ctx.metadata`) is logged too, so
    /// it is not shown (`shown` stays false).
    fn status(&self, status: CallStatus) {
        let details = status.details.map(|d| format!(" {d}")).unwrap_or_default();
        tracing::info!(plugin = %status.plugin, "tools.{}.{}: {}{details}", status.plugin, status.tool, status.message);
    }
}

/// Asks on the terminal whether to fill in `form`, then for each field (Enter keeps its
/// default, and a wrong answer is asked again); `None` when the person declines.
fn fill_on_terminal(header: &str, form: &Form) -> Result<Option<serde_json::Map<String, Value>>, String> {
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(TERMINAL)
        .map_err(|e| format!("there is no terminal to ask on ({TERMINAL}: {e})"))?;
    let mut reader = std::io::BufReader::new(&terminal);
    let mut ask = |text: &str| -> Result<String, String> {
        let mut writer = &terminal;
        write!(writer, "{}", crate::tool::shown::visible(text))
            .and_then(|()| writer.flush())
            .map_err(|e| format!("writing to {TERMINAL} failed: {e}"))?;
        let mut line = String::new();
        reader.read_line(&mut line).map_err(|e| format!("reading {TERMINAL} failed: {e}"))?;
        Ok(line)
    };
    let start = ask(&format!("{header}Fill in the form? [y/N] "))?;
    if !matches!(start.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        return Ok(None);
    }
    let mut answer = serde_json::Map::new();
    for field in &form.fields {
        let mut prompt = format!("  {}", field.label);
        if let Some(description) = &field.description {
            prompt.push_str(&format!(" ({description})"));
        }
        if let Some(default) = &field.default {
            prompt.push_str(&format!(" [{default}]"));
        } else if field.required {
            prompt.push_str(" (required)");
        }
        prompt.push_str(": ");
        for attempt in 0.. {
            match Form::parse(field, &ask(&prompt)?) {
                Ok(Some(value)) => {
                    answer.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) if !field.required || field.default.is_some() => break,
                Ok(None) => ask_again(&terminal, "  it is required")?,
                Err(why) => ask_again(&terminal, &format!("  {why}"))?,
            }
            if attempt >= 2 {
                return Err(format!("no usable answer for {}", field.label));
            }
        }
    }
    Ok(Some(form.complete(answer)))
}

/// Says on the terminal why an answer was not taken.
fn ask_again(mut terminal: &std::fs::File, why: &str) -> Result<(), String> {
    writeln!(terminal, "{}", crate::tool::shown::visible(why)).map_err(|e| format!("writing to {TERMINAL} failed: {e}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn escape_sequences_cannot_rewrite_the_prompt() {
        assert_eq!(
            crate::tool::shown::visible("ok\u{1b}[2K\rallow?\nnext\u{7}"),
            "ok\\u001B[2K\\u000Dallow?\nnext\\u0007"
        );
    }

    #[test]
    fn flags_allow_up_front() {
        let none = TerminalApprovals::new(PreApproved::default());
        let one = TerminalApprovals::new(PreApproved::new(false, &["tools.notes.delete".into()], false).unwrap());
        let all = TerminalApprovals::new(PreApproved::new(true, &[], false).unwrap());
        assert!(!none.pre_approved("notes", "delete"));
        assert!(one.pre_approved("notes", "delete"));
        assert!(!one.pre_approved("notes", "wipe"));
        assert!(all.pre_approved("notes", "wipe"));
        assert_eq!(
            PreApproved::new(false, &["delete".into()], false).unwrap_err(),
            "--approve delete: name the tool as PLUGIN.TOOL (for example --approve notes.delete)"
        );
    }
}

//! Approvals for `codemode run`: a tool that needs a person's approval asks on the
//! terminal (`/dev/tty`, so that a program read from standard input still can), or is
//! allowed up front by `--approve PLUGIN.TOOL` / `--approve-all` for scripted use.
//! Without a terminal and without those flags, the call is refused with a message that
//! says which flag allows it. Plugins' own questions (`ctx.approve`) take the same path.
//!
//! Which calls ask is decided by one pure function ([`decide`]); asking is serialised,
//! so that concurrent calls never interleave their prompts.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde_json::Value;

use crate::executor::CallHooks;
use crate::tool::{Approval, ApprovalAnswer, ApprovalQuestion, Approver, Tool};

/// The terminal the person answers on.
const TERMINAL: &str = "/dev/tty";

/// Longest input shown in a prompt.
const MAX_SHOWN_CHARS: usize = 2_000;

/// What the flags allow without asking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreApproved {
    /// `--approve-all`.
    pub all: bool,
    /// `--approve PLUGIN.TOOL` (also written `tools.PLUGIN.TOOL`), each.
    pub tools: BTreeSet<String>,
}

impl PreApproved {
    /// From the flags; a name without a `.` is refused with what to write.
    pub fn new(all: bool, tools: &[String]) -> Result<Self, String> {
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
        Ok(Self { all, tools: set })
    }
}

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the person first (remembering a yes when `once`).
    Ask {
        /// The approval holds for the rest of this run.
        once: bool,
    },
}

/// Whether `plugin.tool`, which asks as `approval`, runs, asks, given the flags and
/// what was already approved once in this run.
pub fn decide(approval: Approval, name: &str, flags: &PreApproved, approved_once: &BTreeSet<String>) -> Decision {
    match approval {
        Approval::Never => Decision::Allow,
        _ if flags.all || flags.tools.contains(name) => Decision::Allow,
        Approval::OncePerSession if approved_once.contains(name) => Decision::Allow,
        Approval::OncePerSession => Decision::Ask { once: true },
        Approval::Always => Decision::Ask { once: false },
    }
}

/// `codemode run`'s hooks: approvals on the terminal.
pub struct TerminalApprovals {
    flags: PreApproved,
    approved_once: Arc<Mutex<BTreeSet<String>>>,
    /// One prompt at a time.
    asking: Arc<tokio::sync::Mutex<()>>,
}

impl TerminalApprovals {
    /// Hooks allowing what `flags` allow and asking on the terminal for the rest.
    pub fn new(flags: PreApproved) -> Arc<Self> {
        Arc::new(Self { flags, approved_once: Arc::default(), asking: Arc::default() })
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
/// message or reason to rewrite the prompt) are shown as `?`.
fn ask_on_terminal(question: &str) -> Result<bool, String> {
    let question = printable(question);
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

/// `text` with every control character but newlines shown as `?`.
fn printable(text: &str) -> String {
    text.chars().map(|c| if c.is_control() && c != '\n' { '?' } else { c }).collect()
}

/// `text`, cut to `MAX_SHOWN_CHARS`.
fn shown(text: &str) -> String {
    if text.chars().count() <= MAX_SHOWN_CHARS {
        text.to_string()
    } else {
        format!("{}… (cut)", text.chars().take(MAX_SHOWN_CHARS).collect::<String>())
    }
}

impl CallHooks for TerminalApprovals {
    fn before(&self, plugin: &str, tool: &Tool, input: &Value) -> BoxFuture<'static, Result<(), String>> {
        let name = format!("{plugin}.{}", tool.definition.name);
        let level = match tool.definition.requires_approval {
            Approval::OncePerSession => "once per run",
            _ => "for each call",
        };
        let approved = self.approved_once.lock().unwrap_or_else(|p| p.into_inner());
        let decision = decide(tool.definition.requires_approval, &name, &self.flags, &approved);
        drop(approved);
        let once = match decision {
            Decision::Allow => return Box::pin(async { Ok(()) }),
            Decision::Ask { once } => once,
        };
        let why = tool.definition.approval_reason.as_ref().map(|r| format!(" ({r})")).unwrap_or_default();
        let question = format!(
            "codemode: allow tools.{name}{why} to run with this input?\n{}\n",
            shown(&serde_json::to_string_pretty(input).unwrap_or_default())
        );
        let asked = Self::prompt(Arc::clone(&self.asking), question);
        let approved_once = Arc::clone(&self.approved_once);
        Box::pin(async move {
            match asked.await {
                Ok(true) => {
                    if once {
                        if let Ok(mut approved) = approved_once.lock() {
                            approved.insert(name);
                        }
                    }
                    Ok(())
                }
                Ok(false) => Err(format!("the person declined the call to tools.{name}")),
                Err(why) => Err(format!(
                    "tools.{name} needs a person's approval ({level}), and {why}: pass --approve {name} (or --approve-all) to allow it"
                )),
            }
        })
    }

    fn after(&self, _plugin: &str, _tool: &str, _ok: bool) {}
}

impl Approver for TerminalApprovals {
    fn ask(&self, question: ApprovalQuestion) -> BoxFuture<'static, ApprovalAnswer> {
        let name = format!("{}.{}", question.plugin, question.tool);
        if self.flags.all || self.flags.tools.contains(&name) {
            return Box::pin(async { ApprovalAnswer { approved: true, reason: None } });
        }
        let details = question.details.as_ref().map(|d| serde_json::to_string_pretty(d).unwrap_or_default());
        let text = format!(
            "codemode: tools.{name} asks: {}\n{}",
            question.message,
            details.map(|d| format!("{}\n", shown(&d))).unwrap_or_default()
        );
        let asked = Self::prompt(Arc::clone(&self.asking), text);
        Box::pin(async move {
            match asked.await {
                Ok(true) => ApprovalAnswer { approved: true, reason: None },
                Ok(false) => ApprovalAnswer { approved: false, reason: Some("the person declined".into()) },
                Err(why) => ApprovalAnswer {
                    approved: false,
                    reason: Some(format!("{why}: pass --approve {name} (or --approve-all) to allow it")),
                },
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn escape_sequences_cannot_rewrite_the_prompt() {
        assert_eq!(printable("ok\u{1b}[2K\rallow?\nnext\u{7}"), "ok?[2K?allow?\nnext?");
    }

    #[test]
    fn flags_allow_up_front_and_once_is_remembered() {
        let none = PreApproved::default();
        let one = PreApproved::new(false, &["tools.notes.delete".into()]).unwrap();
        let all = PreApproved::new(true, &[]).unwrap();
        let empty = BTreeSet::new();
        assert_eq!(decide(Approval::Never, "notes.add", &none, &empty), Decision::Allow);
        assert_eq!(decide(Approval::Always, "notes.delete", &none, &empty), Decision::Ask { once: false });
        assert_eq!(decide(Approval::Always, "notes.delete", &one, &empty), Decision::Allow);
        assert_eq!(decide(Approval::Always, "notes.wipe", &one, &empty), Decision::Ask { once: false });
        assert_eq!(decide(Approval::Always, "notes.wipe", &all, &empty), Decision::Allow);
        assert_eq!(decide(Approval::OncePerSession, "notes.sync", &none, &empty), Decision::Ask { once: true });
        let approved: BTreeSet<String> = ["notes.sync".to_string()].into();
        assert_eq!(decide(Approval::OncePerSession, "notes.sync", &none, &approved), Decision::Allow);
        assert_eq!(
            PreApproved::new(false, &["delete".into()]).unwrap_err(),
            "--approve delete: name the tool as PLUGIN.TOOL (for example --approve notes.delete)"
        );
    }
}

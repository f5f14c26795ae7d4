//! The approval policy, written once for every front end: which calls run, which ask a
//! person first, and which approvals hold for the rest of a session. [`decide`] is the
//! pure policy; [`approve`] applies it with what the front end supplies (how to ask,
//! what it allows up front, and the session's memory of approvals given once).
//!
//! - a tool that never asks (`requiresApproval` absent or `never`) runs;
//! - a tool the front end allows up front (`codemode run --approve`) runs;
//! - a tool that asks once per session runs when it was approved before in the session;
//! - otherwise the person is asked, and a yes to a once-per-session tool is remembered;
//! - without a front end to ask (a library caller without hooks), a tool that asks is
//!   refused, with how to run it so that a person can be asked.

use std::collections::HashSet;
use std::sync::Mutex;

use serde_json::Value;

use super::CallHooks;
use crate::tool::{Approval, Tool};

/// The approvals given once, by `(plugin, tool)`, for a session (MCP) or a run
/// (`codemode run`).
#[derive(Debug, Default)]
pub struct ApprovedOnce(Mutex<HashSet<(String, String)>>);

impl ApprovedOnce {
    /// Whether `plugin.tool` was approved in this session.
    pub fn contains(&self, plugin: &str, tool: &str) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).contains(&(plugin.to_string(), tool.to_string()))
    }

    /// Remembers that `plugin.tool` was approved.
    pub fn insert(&self, plugin: &str, tool: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert((plugin.to_string(), tool.to_string()));
    }
}

/// What to do with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the person first (remembering a yes when `once`).
    Ask {
        /// The approval holds for the rest of the session.
        once: bool,
    },
}

/// Whether a call of a tool that asks as `approval` runs or asks, given whether the
/// front end allows it up front and whether it was approved once in this session.
pub fn decide(approval: Approval, pre_approved: bool, approved_once: bool) -> Decision {
    match approval {
        Approval::Never => Decision::Allow,
        _ if pre_approved => Decision::Allow,
        Approval::OncePerSession if approved_once => Decision::Allow,
        Approval::OncePerSession => Decision::Ask { once: true },
        Approval::Always => Decision::Ask { once: false },
    }
}

/// A call a person is asked to allow.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The plugin.
    pub plugin: String,
    /// The tool.
    pub tool: String,
    /// The call's input (checked against the tool's schema already).
    pub input: Value,
    /// Why the tool asks, as its definition says (`approvalReason`).
    pub reason: Option<String>,
    /// A yes holds for the rest of the session.
    pub once: bool,
}

/// Applies the policy to one call of `tool` with `input`; `Err` is the message the
/// caller reads.
pub(super) async fn approve(
    hooks: Option<&dyn CallHooks>,
    plugin: &str,
    tool: &Tool,
    input: &Value,
) -> Result<(), String> {
    let d = &tool.definition;
    let Some(hooks) = hooks else {
        return match d.requires_approval {
            Approval::Never => Ok(()),
            approval => Err(format!(
                "tools.{plugin}.{} needs a person's approval ({}), and nobody can be asked here: run the program through the MCP server (codemode mcp or codemode serve), whose client asks the person",
                d.name,
                match approval {
                    Approval::OncePerSession => "once per session",
                    _ => "for each call",
                }
            )),
        };
    };
    let decision = decide(
        d.requires_approval,
        hooks.pre_approved(plugin, &d.name),
        hooks.approved_once().contains(plugin, &d.name),
    );
    let Decision::Ask { once } = decision else { return Ok(()) };
    hooks
        .ask_to_run(RunRequest {
            plugin: plugin.to_string(),
            tool: d.name.clone(),
            input: input.clone(),
            reason: d.approval_reason.clone(),
            once,
        })
        .await?;
    if once {
        hooks.approved_once().insert(plugin, &d.name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_front_allows_and_once_is_remembered() {
        assert_eq!(decide(Approval::Never, false, false), Decision::Allow);
        assert_eq!(decide(Approval::Always, false, false), Decision::Ask { once: false });
        assert_eq!(decide(Approval::Always, true, false), Decision::Allow);
        assert_eq!(decide(Approval::Always, false, true), Decision::Ask { once: false });
        assert_eq!(decide(Approval::OncePerSession, false, false), Decision::Ask { once: true });
        assert_eq!(decide(Approval::OncePerSession, false, true), Decision::Allow);
        assert_eq!(decide(Approval::OncePerSession, true, false), Decision::Allow);
        let once = ApprovedOnce::default();
        assert!(!once.contains("notes", "sync"));
        once.insert("notes", "sync");
        assert!(once.contains("notes", "sync") && !once.contains("notes", "wipe"));
    }
}

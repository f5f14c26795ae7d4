//! Which seed system's layout a JavaScript plugin follows, read from its files alone,
//! before any of its code runs.
//!
//! Both sides use it: the host when it loads the configuration (the plugin's rules, the
//! network allowlist it declares, a clear error for a folder no format fits), and the
//! plugin runtime (`sandbox-worker plugin`) for the modules to load. One detection keeps
//! the two agreeing; the host passes the format it found on the runtime's command line.
//!
//! | format | seed | what marks it | modules loaded |
//! |---|---|---|---|
//! | `manifest` | 000 | `manifest.json` | its `main` (`activate(api)`, or `runPlugin` of `convergence/effect`) |
//! | `zhin` | 001 | `tools/<name>/index.ts` (or a skill's or agent's `tools/`) | every such `index`, the tool named after its folder; skills, agents, `AGENTS.md` ([`skills`]) |
//! | `plico` | 002 | `tools/*.tool.ts` | every such file |
//! | `globals` | 003 | one script assigning `globalThis.tools.<name>` | that script |
//! | `podcode` | 004 | one module whose default export has `server` | that module |
//!
//! `.js`, `.mjs`, `.ts` and `.mts` count alike wherever a layout names a module. The
//! rules are pure functions of the folder's listing ([`detect`]) plus, for the last two
//! formats, a look at each candidate file's top-level statements ([`sniff`]); nothing
//! is evaluated. That look is a parse of a file the plugin's author controls, done by
//! the host: it runs on a thread with a large stack, and text nested deeper than
//! [`nesting::MAX_NESTING`] levels is refused before the parser sees it.

pub mod detect;
pub mod nesting;
pub mod skills;
pub mod sniff;

pub use detect::{detect, Entry, FormatError, Layout};

use serde::{Deserialize, Serialize};

/// A plugin layout codemode loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Seed 000: `manifest.json` and a main module exporting `activate(api)` (or
    /// `runPlugin(...)` of `convergence/effect`).
    Manifest,
    /// Seed 001 (zhin.js): `tools/<name>/index.ts` default-exporting `defineAgentTool(...)`.
    Zhin,
    /// Seed 002 (plico): `tools/*.tool.ts` default-exporting `defineTool(...)`.
    Plico,
    /// Seed 003: a script assigning `globalThis.tools.<name> = { description, parameters, handler }`.
    Globals,
    /// Seed 004 (Podcode): a module default-exporting `{ id, server(input, { config }) }`.
    Podcode,
}

impl Format {
    /// Every format, in the order [`detect`] tries them.
    pub const ALL: [Format; 5] = [Format::Manifest, Format::Plico, Format::Zhin, Format::Podcode, Format::Globals];

    /// The name the configuration and the command line use.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Manifest => "manifest",
            Format::Zhin => "zhin",
            Format::Plico => "plico",
            Format::Globals => "globals",
            Format::Podcode => "podcode",
        }
    }

    /// The format named `name`, as [`Format::as_str`] spells it.
    pub fn parse(name: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.as_str() == name)
    }

    /// What the format's files look like, for messages.
    pub fn layout(self) -> &'static str {
        match self {
            Format::Manifest => "manifest.json with a main module exporting activate(api)",
            Format::Zhin => {
                "tools/<name>/index.ts default-exporting defineAgentTool(...), or one module default-exporting definePlugin(...) from zhin.js"
            }
            Format::Plico => "tools/<name>.tool.ts default-exporting defineTool(...)",
            Format::Globals => "one script assigning globalThis.tools.<name> = { description, parameters, handler }",
            Format::Podcode => "one module default-exporting { id, server(input, { config }) }",
        }
    }

    /// True when the layout has no manifest of its own, so its network allowlist comes
    /// from the plugin's configuration entry (`net_hosts`).
    pub fn allowlist_from_configuration(self) -> bool {
        matches!(self, Format::Zhin | Format::Plico | Format::Podcode)
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for format in Format::ALL {
            assert_eq!(Format::parse(format.as_str()), Some(format));
        }
        assert_eq!(Format::parse("node"), None);
    }
}

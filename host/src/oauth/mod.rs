//! OAuth for MCP servers at a `url`: the flow, the token files and the authorized
//! client live with the plugin runtimes (`codemode_plugin_runtimes::oauth`, re-exported
//! here); [`commands`] is what `codemode auth login|logout|status` does with them, for
//! the plugins of a configuration file.

pub use codemode_plugin_runtimes::oauth::*;

pub mod commands;

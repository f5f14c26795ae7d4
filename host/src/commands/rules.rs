//! `codemode rules`: the rules of every enabled plugin, as agents receive them.

use std::path::Path;

use codemode::config::Config;

use super::print_result;

/// Prints the rules of the configuration at `config`.
pub fn rules(config: &Path) -> anyhow::Result<i32> {
    let text = Config::load(config)?.rules_text()?;
    print_result(&text)?;
    Ok(0)
}

//! `codemode init`: the starter configuration (`codemode::config_discovery::STARTER`).

use anyhow::Context;

use super::UsageError;

/// `codemode init`: writes the starter configuration, never over a file unless forced.
pub fn init(path: &std::path::Path, force: bool) -> anyhow::Result<i32> {
    if path.exists() && !force {
        return Err(UsageError(format!(
            "{} already exists; pass --force to replace it, or give another path",
            path.display()
        ))
        .into());
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, codemode::config_discovery::STARTER).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "codemode: wrote {}; `codemode tools` lists what it offers, `codemode run PROGRAM.js` runs a program",
        path.display()
    );
    Ok(0)
}

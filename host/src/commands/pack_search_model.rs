//! `codemode pack-search-model`: the search model with int8 weight matrices
//! (`codemode::tool::encoder::pack`).

use std::path::Path;

use super::UsageError;

/// Writes the packed copy of the model in `from` to `to`; a model that cannot be packed
/// is a usage mistake.
pub fn pack_search_model(from: &Path, to: &Path) -> anyhow::Result<i32> {
    codemode::tool::encoder::pack(from, to).map(|()| 0).map_err(|e| anyhow::Error::from(UsageError(e.to_string())))
}

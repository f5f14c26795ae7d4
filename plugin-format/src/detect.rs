//! Finding a plugin's format and the modules to load from its files ([`detect`]).
//!
//! The rules, tried in this order unless the configuration forces a format
//! (`format = "..."`):
//! 1. `path` is a file: the Podcode module it is (it default-exports), or the seed-003
//!    script (it assigns `globalThis.tools.<name>`); the plugin's folder is the file's.
//! 2. the folder has `manifest.json`: `manifest`;
//! 3. the folder has `tools/*.tool.{ts,mts,js,mjs}`: `plico`;
//! 4. the folder has `tools/<name>/index.{ts,mts,js,mjs}`, or tools private to a
//!    skill or an agent (`skills/<s>/tools/<name>/index.ts`, `agents/<a>/tools/...`,
//!    `agents/<a>/skills/<s>/tools/...`): `zhin`, with its skills, agents and `AGENTS.md`
//!    ([`crate::skills::guidance`]); a private tool is named as seed 001 qualifies it
//!    (its owner's names and its own joined with `__`: `short-url__normalize`) and
//!    carries its owner's folder; or exactly one top-level module imports `zhin.js` and
//!    default-exports (zhin.js's Path Two, `definePlugin({ name, setup })`);
//! 5. exactly one other module at the folder's top level default-exports (`podcode`) or
//!    assigns `globalThis.tools` (`globals`).
//!
//! A folder that fits two layouts, or none, is an error that says what was found and
//! how to choose.

use std::path::{Path, PathBuf};

use protocol::manifest::{Manifest, ManifestError, MANIFEST_FILE};

use crate::skills::GuidanceError;
use crate::sniff::{sniff, SniffError};
use crate::Format;

/// The extensions a layout's module may have, in the order an `index` is looked for.
pub const MODULE_EXTENSIONS: [&str; 4] = ["ts", "mts", "js", "mjs"];
/// Largest file looked at to tell its format.
const MAX_SNIFFED_BYTES: u64 = 8 * 1024 * 1024;
/// Most top-level modules looked at to tell a folder's format, and their total size.
const MAX_SNIFFED_FILES: usize = 64;
const MAX_SNIFFED_TOTAL: u64 = 16 * 1024 * 1024;
/// The stack of the thread that reads plugin files (a parse recurses with nesting).
const SNIFF_STACK_BYTES: usize = 64 * 1024 * 1024;

/// One module to load.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// Its path inside the plugin's folder, `/`-separated (`tools/echo/index.ts`).
    pub module: String,
    /// The tool name the layout gives it (`zhin`: its folder's name, qualified with
    /// its owner's for a private tool).
    pub tool: Option<String>,
    /// The folder of the skill or agent the tool is private to (`skills/short-url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
}

/// A plugin's layout: its format, its folder and the modules to load. Serialized, it is
/// what `sandbox-worker detect` reports to the host.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    /// The format.
    pub format: Format,
    /// The folder everything the plugin imports must be inside.
    pub root: PathBuf,
    /// For a plugin that is one module file: only that file, `package.json` and
    /// `node_modules` of the folder belong to it (its neighbours are not its files).
    pub only_file: Option<String>,
    /// The modules to load, in order (none for a manifest with only rules).
    pub entries: Vec<Entry>,
    /// `manifest.json`, for the `manifest` format.
    pub manifest: Option<Manifest>,
    /// The network allowlist the plugin's own files declare (`manifest.json`'s
    /// `net.hosts`, a seed-003 script's `globalThis.manifest.egress`).
    pub declared_hosts: Vec<String>,
    /// What the layout holds that codemode does not load, each with why.
    pub skipped: Vec<String>,
    /// The permissions the plugin's code derives (a seed-003 script's use of
    /// `host.workspace`), shown when it loads and enforced by the host.
    #[serde(default)]
    pub permissions: Permissions,
    /// Seed 001's skills, agents and `AGENTS.md` (empty for the other formats; boxed,
    /// since most layouts have none).
    #[serde(default, skip_serializing_if = "no_guidance")]
    pub guidance: Box<protocol::skills::Guidance>,
}

/// The permissions a plugin's code derives; [`Permissions::names`] says them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Permissions {
    /// [`crate::sniff::WORKSPACE_READ`].
    pub workspace_read: bool,
    /// [`crate::sniff::WORKSPACE_WRITE`].
    pub workspace_write: bool,
}

impl Permissions {
    /// The permissions `names` (as [`crate::sniff::Sniffed::permissions`] lists them) hold.
    pub fn of(names: &[String]) -> Self {
        let has = |name: &str| names.iter().any(|n| n == name);
        Self { workspace_read: has(crate::sniff::WORKSPACE_READ), workspace_write: has(crate::sniff::WORKSPACE_WRITE) }
    }

    /// Their names, in order.
    pub fn names(&self) -> Vec<String> {
        [(self.workspace_read, crate::sniff::WORKSPACE_READ), (self.workspace_write, crate::sniff::WORKSPACE_WRITE)]
            .into_iter()
            .filter(|(held, _)| *held)
            .map(|(_, name)| name.to_string())
            .collect()
    }
}

/// True for a layout with no skills, agents or `AGENTS.md` (left out of the report).
fn no_guidance(guidance: &protocol::skills::Guidance) -> bool {
    guidance.is_empty()
}

/// Why a plugin's format could not be told.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The path does not exist or cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `manifest.json` is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// A module could not be read to tell its format.
    #[error("{path}: {source}")]
    Unreadable {
        /// The module.
        path: PathBuf,
        /// Where and what.
        source: SniffError,
    },
    /// Nothing matches.
    #[error("{path} is not a plugin codemode knows: {found}; a plugin is one of: {formats}")]
    Unknown {
        /// The path.
        path: PathBuf,
        /// What was there.
        found: String,
        /// The layouts, for the message.
        formats: String,
    },
    /// More than one layout fits.
    #[error("{path} fits more than one plugin format ({found}); set `format = \"...\"` in its configuration entry, or point `path` at the one file")]
    Ambiguous {
        /// The path.
        path: PathBuf,
        /// What fits.
        found: String,
    },
    /// A skill or an agent of the plugin cannot be read.
    #[error(transparent)]
    Guidance(#[from] GuidanceError),
    /// The forced format's files are not there.
    #[error("{path} is not a {format} plugin: that format is {layout}")]
    NotThatFormat {
        /// The path.
        path: PathBuf,
        /// The forced format.
        format: Format,
        /// What it looks like.
        layout: &'static str,
    },
}

/// The layout of the plugin at `path` (a folder, or one module file), in the format the
/// configuration forces or the one its files show (see the module docs). The files are
/// read on a thread of its own with a large stack.
pub fn detect(path: &Path, forced: Option<Format>) -> Result<Layout, FormatError> {
    let owned = path.to_path_buf();
    let reader = std::thread::Builder::new()
        .name("plugin-format".into())
        .stack_size(SNIFF_STACK_BYTES)
        .spawn(move || detect_here(&owned, forced))
        .map_err(|source| FormatError::Read { path: path.into(), source })?;
    reader.join().unwrap_or_else(|_| {
        Err(FormatError::Read { path: path.into(), source: std::io::Error::other("reading the plugin's files failed") })
    })
}

fn detect_here(path: &Path, forced: Option<Format>) -> Result<Layout, FormatError> {
    let metadata = std::fs::metadata(path).map_err(|source| FormatError::Read { path: path.into(), source })?;
    if metadata.is_file() {
        return single_file(path, forced);
    }
    let listing = Listing::read(path)?;
    let not_that = |format: Format| FormatError::NotThatFormat { path: path.into(), format, layout: format.layout() };
    let mut fits: Vec<Layout> = Vec::new();
    let candidates: Vec<Format> = forced.map_or_else(|| Format::ALL.to_vec(), |f| vec![f]);
    // The folder's top-level modules, each read once, and only when a format needs them.
    let mut top_level: Option<Vec<(String, crate::sniff::Sniffed)>> = None;
    for format in candidates {
        let layout = match format {
            Format::Manifest => manifest_layout(path, &listing)?,
            Format::Plico => plico_layout(path, &listing),
            Format::Zhin => match zhin_layout(path, &listing)? {
                Some(layout) => Some(layout),
                None => {
                    if top_level.is_none() {
                        top_level = Some(top_level_modules(path, &listing)?);
                    }
                    top_level_layout(path, top_level.as_deref().unwrap_or_default(), format)?
                }
            },
            Format::Podcode | Format::Globals => {
                if top_level.is_none() {
                    top_level = Some(top_level_modules(path, &listing)?);
                }
                top_level_layout(path, top_level.as_deref().unwrap_or_default(), format)?
            }
        };
        match layout {
            Some(layout) if format == Format::Manifest && forced.is_none() => return Ok(layout),
            Some(layout) => fits.push(layout),
            None if forced.is_some() => return Err(not_that(format)),
            None => {}
        }
    }
    match fits.len() {
        0 => Err(FormatError::Unknown {
            path: path.into(),
            found: listing.describe(),
            formats: Format::ALL
                .iter()
                .map(|f| format!("{} ({})", f.as_str(), f.layout()))
                .collect::<Vec<_>>()
                .join("; "),
        }),
        1 => Ok(fits.remove(0)),
        _ => Err(FormatError::Ambiguous {
            path: path.into(),
            found: fits
                .iter()
                .map(|l| {
                    format!(
                        "{}: {}",
                        l.format,
                        l.entries.iter().map(|e| e.module.as_str()).collect::<Vec<_>>().join(", ")
                    )
                })
                .collect::<Vec<_>>()
                .join("; "),
        }),
    }
}

/// A plugin that is one module file.
fn single_file(path: &Path, forced: Option<Format>) -> Result<Layout, FormatError> {
    let root = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new(".")).to_path_buf();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let sniffed = sniff_file(path)?;
    let format = match (forced, sniffed.as_ref()) {
        (Some(f @ (Format::Podcode | Format::Globals)), _) => f,
        (Some(Format::Zhin), Some(s)) if s.default_export && s.imports_zhin => Format::Zhin,
        (Some(f), _) => {
            return Err(FormatError::NotThatFormat {
                path: path.into(),
                format: f,
                layout: "a folder; point `path` at the plugin's folder",
            })
        }
        (None, Some(s)) if s.default_export && s.imports_zhin && !s.assigns_tools => Format::Zhin,
        (None, Some(s)) if s.default_export && !s.assigns_tools => Format::Podcode,
        (None, Some(s)) if s.assigns_tools && !s.default_export => Format::Globals,
        (None, Some(s)) if s.assigns_tools => {
            return Err(FormatError::Ambiguous {
                path: path.into(),
                found: "it both default-exports and assigns globalThis.tools".into(),
            })
        }
        (None, _) => {
            return Err(FormatError::Unknown {
                path: path.into(),
                found: "a file that neither default-exports a plugin nor assigns globalThis.tools".into(),
                formats: format!("{}; {}", Format::Podcode.layout(), Format::Globals.layout()),
            })
        }
    };
    let (declared_hosts, permissions) = match sniffed {
        Some(s) if format == Format::Globals => (s.egress.unwrap_or_default(), Permissions::of(&s.permissions)),
        _ => (Vec::new(), Permissions::default()),
    };
    Ok(Layout {
        format,
        root,
        only_file: Some(name.clone()),
        entries: vec![Entry { module: name, tool: None, owner: None }],
        manifest: None,
        declared_hosts,
        skipped: Vec::new(),
        permissions,
        guidance: Default::default(),
    })
}

/// Seed 000: `manifest.json`.
fn manifest_layout(path: &Path, listing: &Listing) -> Result<Option<Layout>, FormatError> {
    if !listing.files.iter().any(|f| f == MANIFEST_FILE) {
        return Ok(None);
    }
    let manifest = Manifest::load(path)?;
    let entries = manifest
        .main
        .iter()
        .map(|main| Entry { module: main.trim_start_matches("./").to_string(), tool: None, owner: None })
        .collect();
    let declared_hosts = manifest.net_hosts().to_vec();
    Ok(Some(Layout {
        format: Format::Manifest,
        root: path.into(),
        only_file: None,
        entries,
        manifest: Some(manifest),
        declared_hosts,
        skipped: Vec::new(),
        permissions: Permissions::default(),
        guidance: Default::default(),
    }))
}

/// Seed 002: `tools/*.tool.ts`.
fn plico_layout(path: &Path, listing: &Listing) -> Option<Layout> {
    let mut entries: Vec<Entry> = listing
        .tools_files
        .iter()
        .filter(|f| MODULE_EXTENSIONS.iter().any(|ext| f.ends_with(&format!(".tool.{ext}"))))
        .map(|f| Entry { module: format!("tools/{f}"), tool: None, owner: None })
        .collect();
    entries.sort_by(|a, b| a.module.cmp(&b.module));
    (!entries.is_empty()).then(|| Layout {
        format: Format::Plico,
        root: path.into(),
        only_file: None,
        entries,
        manifest: None,
        declared_hosts: Vec::new(),
        skipped: Vec::new(),
        permissions: Permissions::default(),
        guidance: Default::default(),
    })
}

/// Seed 001: `tools/<name>/index.ts`, the tools private to skills and agents (named
/// and owned as the module docs say), and the plugin's skills, agents and `AGENTS.md`.
fn zhin_layout(path: &Path, listing: &Listing) -> Result<Option<Layout>, FormatError> {
    let mut entries: Vec<Entry> = listing
        .tools_dirs
        .iter()
        .filter_map(|dir| index_module(&path.join("tools").join(dir)).map(|index| (dir, index)))
        .map(|(dir, index)| Entry { module: format!("tools/{dir}/{index}"), tool: Some(dir.clone()), owner: None })
        .collect();
    for pattern in ["skills/*/tools", "agents/*/tools", "agents/*/skills/*/tools"] {
        for tools in glob_dirs(path, pattern) {
            let owner = tools.trim_end_matches("/tools").to_string();
            // The owner's names without the kind folders: `reviewer__review` for
            // `agents/reviewer/skills/review`.
            let qualifier: Vec<&str> =
                owner.split('/').enumerate().filter(|(i, _)| i % 2 == 1).map(|(_, s)| s).collect();
            for tool in subdirs(&path.join(&tools)) {
                if let Some(index) = index_module(&path.join(&tools).join(&tool)) {
                    entries.push(Entry {
                        module: format!("{tools}/{tool}/{index}"),
                        tool: Some(format!("{}__{tool}", qualifier.join("__"))),
                        owner: Some(owner.clone()),
                    });
                }
            }
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let mut skipped = Vec::new();
    for pattern in ["hooks/*", "skills/*/hooks/*", "agents/*/hooks/*", "agents/*/skills/*/hooks/*"] {
        for hook in glob_dirs(path, pattern) {
            skipped.push(format!(
                "{hook}: a hook of the agent's turns; code mode has no turns to hook, so it is not loaded"
            ));
        }
    }
    Ok(Some(Layout {
        format: Format::Zhin,
        root: path.into(),
        only_file: None,
        entries,
        manifest: None,
        declared_hosts: Vec::new(),
        skipped,
        permissions: Permissions::default(),
        guidance: Box::new(crate::skills::guidance(path)?),
    }))
}

/// A folder's top-level modules with what their top levels show (within the caps).
fn top_level_modules(path: &Path, listing: &Listing) -> Result<Vec<(String, crate::sniff::Sniffed)>, FormatError> {
    let files: Vec<&String> = listing.files.iter().filter(|f| is_module_file(f)).collect();
    let total: u64 = files.iter().filter_map(|f| std::fs::metadata(path.join(f)).ok()).map(|m| m.len()).sum();
    if files.len() > MAX_SNIFFED_FILES || total > MAX_SNIFFED_TOTAL {
        return Err(FormatError::Unknown {
            path: path.into(),
            found: format!(
                "{} top-level modules ({} MiB), more than codemode reads to tell a format",
                files.len(),
                total >> 20
            ),
            formats: "set `format` in the plugin's configuration entry, or point `path` at the plugin's file".into(),
        });
    }
    let mut found = Vec::new();
    for file in files {
        if let Some(sniffed) = sniff_file(&path.join(file))? {
            found.push((file.clone(), sniffed));
        }
    }
    Ok(found)
}

/// Seeds 003 and 004 in a folder, and a zhin.js Path Two plugin: the one top-level
/// module that fits `format`.
fn top_level_layout(
    path: &Path,
    modules: &[(String, crate::sniff::Sniffed)],
    format: Format,
) -> Result<Option<Layout>, FormatError> {
    let mut fitting: Vec<(String, crate::sniff::Sniffed)> = modules
        .iter()
        .filter(|(_, sniffed)| match format {
            Format::Podcode => sniffed.default_export && !sniffed.assigns_tools && !sniffed.imports_zhin,
            Format::Zhin => sniffed.default_export && !sniffed.assigns_tools && sniffed.imports_zhin,
            _ => sniffed.assigns_tools && !sniffed.default_export,
        })
        .cloned()
        .collect();
    match fitting.len() {
        0 => Ok(None),
        1 => {
            let (file, sniffed) = fitting.remove(0);
            let (declared_hosts, permissions) = if format == Format::Globals {
                (sniffed.egress.unwrap_or_default(), Permissions::of(&sniffed.permissions))
            } else {
                (Vec::new(), Permissions::default())
            };
            Ok(Some(Layout {
                format,
                root: path.into(),
                only_file: None,
                entries: vec![Entry { module: file, tool: None, owner: None }],
                manifest: None,
                declared_hosts,
                skipped: Vec::new(),
                permissions,
                guidance: Default::default(),
            }))
        }
        _ => Err(FormatError::Ambiguous {
            path: path.into(),
            found: format!(
                "{} {format} modules: {}",
                fitting.len(),
                fitting.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>().join(", ")
            ),
        }),
    }
}

/// A file a layout may name as a module (declaration files are not).
fn is_module_file(name: &str) -> bool {
    let declaration = [".d.ts", ".d.mts", ".d.cts"].iter().any(|d| name.ends_with(d));
    !declaration && MODULE_EXTENSIONS.iter().chain(&["cjs", "cts"]).any(|ext| name.ends_with(&format!(".{ext}")))
}

/// What a module file's top level shows; `None` for a file too large to look at.
fn sniff_file(path: &Path) -> Result<Option<crate::sniff::Sniffed>, FormatError> {
    let read = |source| FormatError::Read { path: path.into(), source };
    if std::fs::metadata(path).map_err(read)?.len() > MAX_SNIFFED_BYTES {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(read)?;
    let name = path.to_string_lossy();
    let typescript = [".ts", ".mts", ".cts"].iter().any(|e| name.ends_with(e));
    sniff(&text, typescript).map(Some).map_err(|source| FormatError::Unreadable { path: path.into(), source })
}

/// The `index` module of a tool folder, when it has one.
fn index_module(dir: &Path) -> Option<String> {
    MODULE_EXTENSIONS.iter().map(|ext| format!("index.{ext}")).find(|name| dir.join(name).is_file())
}

/// The names of `dir`'s sub-folders, sorted (symbolic links are not followed).
pub(crate) fn subdirs(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The folders matching `pattern` (`*` is one path segment), relative to `root`.
fn glob_dirs(root: &Path, pattern: &str) -> Vec<String> {
    let mut found = vec![String::new()];
    for segment in pattern.split('/') {
        found = found
            .into_iter()
            .flat_map(|prefix| {
                let here = root.join(&prefix);
                let join = |name: &str| if prefix.is_empty() { name.to_string() } else { format!("{prefix}/{name}") };
                if segment == "*" {
                    subdirs(&here).iter().map(|n| join(n)).collect::<Vec<_>>()
                } else if here.join(segment).is_dir() {
                    vec![join(segment)]
                } else {
                    Vec::new()
                }
            })
            .collect();
    }
    found
}

/// The names a folder's layout is told from: its top-level files, and what `tools/` holds.
struct Listing {
    /// Top-level regular files.
    files: Vec<String>,
    /// Regular files directly in `tools/`.
    tools_files: Vec<String>,
    /// Folders directly in `tools/`.
    tools_dirs: Vec<String>,
}

impl Listing {
    fn read(dir: &Path) -> Result<Self, FormatError> {
        let entries = |dir: &Path| -> Result<Vec<(String, bool)>, FormatError> {
            let read = |source| FormatError::Read { path: dir.into(), source };
            let mut names = Vec::new();
            for entry in std::fs::read_dir(dir).map_err(read)? {
                let entry = entry.map_err(read)?;
                let kind = entry.file_type().map_err(read)?;
                if kind.is_file() || kind.is_dir() {
                    names.push((entry.file_name().to_string_lossy().into_owned(), kind.is_dir()));
                }
            }
            names.sort();
            Ok(names)
        };
        let top = entries(dir)?;
        let tools = if top.iter().any(|(n, is_dir)| n == "tools" && *is_dir) {
            entries(&dir.join("tools"))?
        } else {
            Vec::new()
        };
        let split = |all: &[(String, bool)], dirs: bool| -> Vec<String> {
            all.iter().filter(|(_, d)| *d == dirs).map(|(n, _)| n.clone()).collect()
        };
        Ok(Self { files: split(&top, false), tools_files: split(&tools, false), tools_dirs: split(&tools, true) })
    }

    /// What the folder holds, for a message.
    fn describe(&self) -> String {
        let mut shown: Vec<String> = self.files.iter().take(12).cloned().collect();
        if !self.tools_files.is_empty() || !self.tools_dirs.is_empty() {
            shown.push("tools/".into());
        }
        if shown.is_empty() {
            "it is empty".into()
        } else {
            format!("it holds {}", shown.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn folder(files: &[(&str, &str)]) -> PathBuf {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("codemode-format-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    fn modules(layout: &Layout) -> Vec<(&str, Option<&str>)> {
        layout.entries.iter().map(|e| (e.module.as_str(), e.tool.as_deref())).collect()
    }

    #[test]
    fn a_manifest_wins_and_names_its_main() {
        let dir = folder(&[
            (
                "manifest.json",
                r#"{ "name": "w", "version": "1", "main": "./src/main.ts", "permissions": { "net": { "hosts": ["wttr.in"] } } }"#,
            ),
            ("src/main.ts", "export function activate() {}"),
            ("tools/x.tool.ts", "export default {}"),
        ]);
        let layout = detect(&dir, None).unwrap();
        assert_eq!(layout.format, Format::Manifest);
        assert_eq!(modules(&layout), [("src/main.ts", None)]);
        assert_eq!(layout.declared_hosts, ["wttr.in"]);
    }

    #[test]
    fn zhin_tools_are_named_after_their_folders_and_private_ones_after_their_owners() {
        let dir = folder(&[
            ("tools/short-url/index.ts", "export default 1"),
            ("tools/short-url/client.ts", ""),
            ("tools/echo/index.mjs", "export default 1"),
            ("tools/notes.md", ""),
            ("tools/empty/README.md", ""),
            ("agents/reviewer/agent.json", r#"{ "description": "Reviews changes", "tools": ["short-url"] }"#),
            ("agents/reviewer/system.md", "You review."),
            ("agents/reviewer/boundaries.md", "Never merge."),
            ("agents/reviewer/conventions.md", ""),
            ("agents/reviewer/tools/check-result/index.ts", ""),
            (
                "skills/short-url/SKILL.md",
                "---\nname: short-url\ndescription: Shorten and normalize links\n---\nNormalize first.\n",
            ),
            ("skills/short-url/tools/normalize/index.ts", ""),
            ("agents/reviewer/skills/review/SKILL.md", "---\ndescription: Review a result\n---\nCheck it.\n"),
            ("agents/reviewer/skills/review/tools/check-result/index.ts", ""),
            ("agents/reviewer/hooks/audit/index.ts", ""),
            ("AGENTS.md", "# rules"),
        ]);
        let layout = detect(&dir, None).unwrap();
        assert_eq!(layout.format, Format::Zhin);
        let owned: Vec<(&str, Option<&str>, Option<&str>)> =
            layout.entries.iter().map(|e| (e.module.as_str(), e.tool.as_deref(), e.owner.as_deref())).collect();
        assert_eq!(
            owned,
            [
                ("tools/echo/index.mjs", Some("echo"), None),
                ("tools/short-url/index.ts", Some("short-url"), None),
                ("skills/short-url/tools/normalize/index.ts", Some("short-url__normalize"), Some("skills/short-url")),
                (
                    "agents/reviewer/tools/check-result/index.ts",
                    Some("reviewer__check-result"),
                    Some("agents/reviewer")
                ),
                (
                    "agents/reviewer/skills/review/tools/check-result/index.ts",
                    Some("reviewer__review__check-result"),
                    Some("agents/reviewer/skills/review")
                ),
            ]
        );
        assert_eq!(
            layout.skipped,
            ["agents/reviewer/hooks/audit: a hook of the agent's turns; code mode has no turns to hook, so it is not loaded"]
        );
        let guidance = &layout.guidance;
        assert_eq!(guidance.main_agent.as_deref(), Some("# rules"));
        let skills: Vec<(&str, &str, &str, Option<&str>)> = guidance
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str(), s.instructions.as_str(), s.agent.as_deref()))
            .collect();
        assert_eq!(
            skills,
            [
                ("short-url", "Shorten and normalize links", "Normalize first.", None),
                ("review", "Review a result", "Check it.", Some("reviewer")),
            ]
        );
        let agent = &guidance.agents[0];
        assert_eq!((agent.name.as_str(), agent.description.as_str()), ("reviewer", "Reviews changes"));
        assert_eq!(
            agent.instructions,
            "## reviewer: system.md\n\nYou review.\n\n## reviewer: boundaries.md\n\nNever merge."
        );
    }

    #[test]
    fn a_skill_without_its_file_or_an_agent_without_its_files_is_an_error() {
        let dir = folder(&[("tools/a/index.ts", ""), ("skills/x/tools/y/index.ts", "")]);
        let e = detect(&dir, None).unwrap_err().to_string();
        assert!(e.ends_with("skills/x: a skill folder without SKILL.md: write one with a front matter (---, name: ..., description: ..., ---) and the skill's instructions"), "{e}");
        let dir = folder(&[("tools/a/index.ts", ""), ("agents/r/agent.json", "{}"), ("agents/r/system.md", "s")]);
        let e = detect(&dir, None).unwrap_err().to_string();
        assert!(e.ends_with("agents/r: an agent folder without boundaries.md: every agent has agent.json, system.md, boundaries.md, conventions.md (seed 001)"), "{e}");
    }

    #[test]
    fn plico_tools_are_the_tool_files() {
        let dir = folder(&[
            ("package.json", r#"{ "type": "module" }"#),
            ("tools/sub.tool.ts", "export default 1"),
            ("tools/add.tool.mjs", "export default 1"),
            ("tools/helpers.ts", ""),
        ]);
        let layout = detect(&dir, None).unwrap();
        assert_eq!(layout.format, Format::Plico);
        assert_eq!(modules(&layout), [("tools/add.tool.mjs", None), ("tools/sub.tool.ts", None)]);
    }

    #[test]
    fn one_top_level_module_is_podcode_or_globals() {
        let dir = folder(&[
            ("package.json", r#"{ "main": "index.js" }"#),
            (
                "deploy-status.mjs",
                "import { z } from 'zod'\nexport default { id: 'deploy-status', server() { return {} } }",
            ),
            ("types.d.ts", "export default interface X {}"),
        ]);
        let layout = detect(&dir, None).unwrap();
        assert_eq!((layout.format, modules(&layout)), (Format::Podcode, vec![("deploy-status.mjs", None)]));

        let dir = folder(&[(
            "weather.ts",
            "globalThis.manifest = { egress: ['api.open-meteo.com'] };\nglobalThis.tools.get_forecast = { description: 'd', handler: (i: { a: number }) => i };",
        )]);
        let layout = detect(&dir, None).unwrap();
        assert_eq!(layout.format, Format::Globals);
        assert_eq!(layout.declared_hosts, ["api.open-meteo.com"]);
        // The same file named directly.
        let layout = detect(&dir.join("weather.ts"), None).unwrap();
        assert_eq!((layout.format, layout.root.as_path()), (Format::Globals, dir.as_path()));
    }

    #[test]
    fn a_zhin_path_two_plugin_is_its_one_module() {
        let plugin = "import { definePlugin } from 'zhin.js';\nexport default definePlugin({ name: 'lottery', async setup(context) {} });";
        let dir = folder(&[("plugin.ts", plugin), ("package.json", "{}")]);
        let layout = detect(&dir, None).unwrap();
        assert_eq!((layout.format, modules(&layout)), (Format::Zhin, vec![("plugin.ts", None)]));
        let layout = detect(&dir.join("plugin.ts"), None).unwrap();
        assert_eq!((layout.format, modules(&layout)), (Format::Zhin, vec![("plugin.ts", None)]));
        assert_eq!(detect(&dir.join("plugin.ts"), Some(Format::Zhin)).unwrap().format, Format::Zhin);
    }

    #[test]
    fn a_folder_that_fits_two_layouts_or_none_says_so() {
        let dir = folder(&[("a.mjs", "export default { server() {} }"), ("b.mjs", "export default { server() {} }")]);
        let e = detect(&dir, None).unwrap_err().to_string();
        assert!(e.contains("fits more than one plugin format (2 podcode modules: a.mjs, b.mjs)"), "{e}");
        assert!(e.contains("point `path` at the one file"), "{e}");
        let dir = folder(&[("tools/x.tool.ts", "export default 1"), ("tools/y/index.ts", "export default 1")]);
        let e = detect(&dir, None).unwrap_err().to_string();
        assert!(e.contains("plico: tools/x.tool.ts; zhin: tools/y/index.ts"), "{e}");
        // Forcing one settles it.
        assert_eq!(detect(&dir, Some(Format::Zhin)).unwrap().format, Format::Zhin);
        let dir = folder(&[("README.md", "hi"), ("lib.js", "export const a = 1")]);
        let e = detect(&dir, None).unwrap_err().to_string();
        assert!(
            e.contains("is not a plugin codemode knows: it holds README.md, lib.js; a plugin is one of: manifest ("),
            "{e}"
        );
        let e = detect(&dir, Some(Format::Plico)).unwrap_err().to_string();
        assert!(
            e.ends_with("is not a plico plugin: that format is tools/<name>.tool.ts default-exporting defineTool(...)"),
            "{e}"
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_named_with_its_position() {
        let dir = folder(&[("plugin.ts", "export default {\n  id: ,\n}")]);
        let e = detect(&dir, None).unwrap_err().to_string();
        assert!(e.contains("plugin.ts: line 2, column"), "{e}");
    }
}

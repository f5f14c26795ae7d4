//! How a plugin's imports are found and loaded, inside the sandbox, from the copy of its
//! folder in memory ([`super::folder`]).
//!
//! - **Resolution** follows Node's rules through `oxc_resolver`: relative paths, bare
//!   package names through `node_modules` (the plugin's own, then those of the folders
//!   above it up to the user's home, nearest first: [`super::folder::PackagesAbove`])
//!   with `package.json` `exports` (conditions
//!   `import`/`module`/`default` for `import`, `require`/`default` for `require`),
//!   `module` and `main`; TypeScript authors' `./lib.js` finds `lib.ts`.
//! - **Refused**, each with the specifier and what to do: Node's built-in modules (the
//!   sandbox has no files, network or processes to back them), packages that are not
//!   installed, anything a symbolic link leads to outside the folder, and TSX.
//! - **Provided by codemode**: the seed systems' SDK modules, which no registry has
//!   (`@zhin.js/tool`, `zhin.js`, `@plico-ai/sdk`, `convergence/effect`); they import the plugin's
//!   own packages (`effect`) from its folder.
//! - **Loaded** as the file is: an ES module as it is, TypeScript with its types blanked
//!   out ([`crate::source::strip_module`]), JSON as a JSON module, and CommonJS through a
//!   small ES module that `require`s it from `plugin.js`'s CommonJS runtime and exports
//!   the names [`super::cjs`] finds in it. A `.js` file is CommonJS unless its
//!   `package.json` says `"type": "module"` or its text has `import`/`export` (Node's
//!   syntax detection).

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use deno_core::error::ModuleLoaderError;
use deno_core::{
    ModuleLoadOptions, ModuleLoadReferrer, ModuleLoadResponse, ModuleLoader, ModuleResolveResponse, ModuleSource,
    ModuleSourceCode, ModuleSpecifier, ModuleType, RequestedModuleType, ResolutionKind,
};
use deno_error::JsErrorBox;
use oxc_resolver::{FileMetadata, FileSystem, PackageType, ResolveError, ResolveOptions, ResolverGeneric};
use serde::Serialize;

use super::cjs;
use super::folder::{MemoryFs, PackagesAbove, ABOVE, ROOT};
use crate::source;

/// The URL prefix of the plugin's own files.
pub const ROOT_URL: &str = "file:///plugin/";
/// The URL prefix of the packages above the plugin's folder.
const ABOVE_URL: &str = "file:///above/";
/// The URL prefix of the modules codemode provides.
const PROVIDED_URL: &str = "codemode:sdk/";
/// How deep CommonJS re-exports are followed to find their names.
const MAX_REEXPORT_DEPTH: usize = 8;

/// The seed systems' SDK modules: the specifier plugins import, the module's name under
/// [`PROVIDED_URL`], and its source.
const PROVIDED: [(&str, &str, &str); 4] = [
    ("@zhin.js/tool", "zhin-tool.js", include_str!("js/sdk/zhin-tool.js")),
    ("zhin.js", "zhin-plugin.js", include_str!("js/sdk/zhin-plugin.js")),
    ("@plico-ai/sdk", "plico-sdk.js", include_str!("js/sdk/plico-sdk.js")),
    ("convergence/effect", "convergence-effect.js", include_str!("js/sdk/convergence-effect.js")),
];

/// How `import` or `require` reached a module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// `import` / `import()`.
    Import,
    /// `require()`.
    Require,
}

/// What a resolved module is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An ES module (JavaScript, or TypeScript when its path says so).
    Module,
    /// A CommonJS module.
    CommonJs,
    /// JSON.
    Json,
    /// A module codemode provides.
    Provided,
}

/// Where a `require` leads, for `plugin.js`'s CommonJS runtime.
#[derive(Debug, Clone, Serialize)]
pub struct Required {
    /// The module's URL.
    pub url: String,
    /// What it is.
    pub kind: Kind,
}

/// The shared copy of the folder, as `oxc_resolver` reads it.
#[derive(Clone, Default)]
struct SharedFs(Arc<MemoryFs>);

impl FileSystem for SharedFs {
    fn new() -> Self {
        Self::default()
    }
    fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        self.0.read(path)
    }
    fn read_to_string(&self, path: &Path) -> std::io::Result<String> {
        self.0.read_to_string(path)
    }
    fn metadata(&self, path: &Path) -> std::io::Result<FileMetadata> {
        self.0.metadata(path)
    }
    fn symlink_metadata(&self, path: &Path) -> std::io::Result<FileMetadata> {
        self.0.symlink_metadata(path)
    }
    fn read_link(&self, path: &Path) -> Result<PathBuf, ResolveError> {
        self.0.read_link(path)
    }
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.0.canonicalize(path)
    }
}

/// Resolves and loads a plugin's modules.
pub struct PluginModules {
    fs: Arc<MemoryFs>,
    imports: ResolverGeneric<SharedFs>,
    requires: ResolverGeneric<SharedFs>,
    /// The folder's real path, for messages.
    folder: PathBuf,
    /// Export names found for CommonJS modules, by path.
    cjs_names: RefCell<HashMap<PathBuf, Vec<String>>>,
    /// What each module is, by path, once it was asked (the layout's own modules are ES
    /// modules from the start, whatever their text).
    kinds: RefCell<HashMap<PathBuf, Kind>>,
    /// The `node_modules` above the plugin's folder that bare imports may come from.
    above: PackagesAbove,
}

/// A path of the plugin's files or of the packages above its folder.
fn is_plugin_path(path: &Path) -> bool {
    path.starts_with(ROOT) || path.starts_with(ABOVE)
}

fn options(conditions: &[&str], main_fields: &[&str]) -> ResolveOptions {
    let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    ResolveOptions {
        cwd: Some(PathBuf::from(ROOT)),
        condition_names: strings(conditions),
        main_fields: strings(main_fields),
        extensions: strings(&[".ts", ".mts", ".js", ".mjs", ".cjs", ".cts", ".json"]),
        extension_alias: vec![
            (".js".into(), strings(&[".ts", ".js"])),
            (".mjs".into(), strings(&[".mts", ".mjs"])),
            (".cjs".into(), strings(&[".cts", ".cjs"])),
        ],
        builtin_modules: true,
        module_type: true,
        node_path: false,
        symlinks: true,
        ..ResolveOptions::default()
    }
}

impl PluginModules {
    /// The loader of the plugin whose files are `fs` (its real folder is `folder`).
    pub fn new(fs: Arc<MemoryFs>, folder: PathBuf) -> Self {
        let imports = ResolverGeneric::new_with_file_system(
            SharedFs(Arc::clone(&fs)),
            options(&["import", "module", "default"], &["module", "main"]),
        );
        let requires = imports.clone_with_options(options(&["require", "default"], &["main"]));
        Self {
            fs,
            imports,
            requires,
            folder,
            cjs_names: RefCell::default(),
            kinds: RefCell::default(),
            above: PackagesAbove::default(),
        }
    }

    /// The loader, with bare imports also found in the `node_modules` above the plugin's
    /// folder (`above.dirs`, nearest first), after the plugin's own (Node's walk up).
    pub fn with_packages_above(mut self, above: PackagesAbove) -> Self {
        let mut modules = vec!["node_modules".to_string()];
        modules.extend(above.dirs.iter().map(|d| d.display().to_string()));
        let with_modules = |options: ResolveOptions| ResolveOptions { modules: modules.clone(), ..options };
        self.imports = self
            .imports
            .clone_with_options(with_modules(options(&["import", "module", "default"], &["module", "main"])));
        self.requires = self.imports.clone_with_options(with_modules(options(&["require", "default"], &["main"])));
        self.above = above;
        self
    }

    /// The loader, with the layout's own modules (paths inside the folder) loaded as ES
    /// modules: the runtime evaluates them as modules, whatever a `.js` file's text or
    /// `package.json` would make of it.
    pub fn with_entries(self, entries: &[String]) -> Self {
        for entry in entries {
            let path = PathBuf::from(ROOT).join(entry.trim_start_matches("./"));
            self.kinds.borrow_mut().insert(path, Kind::Module);
        }
        self
    }

    /// The URL of one of the plugin's files, given by its path inside the folder.
    pub fn url_of(relative: &str) -> Result<ModuleSpecifier, String> {
        ModuleSpecifier::parse(ROOT_URL)
            .and_then(|root| root.join(relative.trim_start_matches("./")))
            .map_err(|e| format!("{relative} is not a module path: {e}"))
    }

    /// Where `specifier`, imported or required by the module at `referrer`, leads.
    pub fn resolve_specifier(
        &self,
        specifier: &str,
        referrer: &str,
        style: Style,
    ) -> Result<(ModuleSpecifier, Kind), String> {
        if let Some((_, name, _)) = PROVIDED.iter().find(|(s, _, _)| *s == specifier) {
            let url = ModuleSpecifier::parse(&format!("{PROVIDED_URL}{name}")).map_err(|e| e.to_string())?;
            return Ok((url, Kind::Provided));
        }
        let from = referrer_dir(referrer);
        let who = shown(referrer);
        let resolver = if style == Style::Import { &self.imports } else { &self.requires };
        let resolution = resolver.resolve(&from, specifier).map_err(|e| self.explain(&who, specifier, &from, e))?;
        let path = resolution.path().to_path_buf();
        if !is_plugin_path(&path) {
            return Err(format!("{who} imports {specifier:?}, which leads outside the plugin's folder"));
        }
        let kind = self.kind_of(&path);
        let url =
            ModuleSpecifier::from_file_path(&path).map_err(|()| format!("{} is not a module path", path.display()))?;
        Ok((url, kind))
    }

    /// What the file at `path` is (see the module docs for `.js`); asked once per file.
    fn kind_of(&self, path: &Path) -> Kind {
        if let Some(kind) = self.kinds.borrow().get(path) {
            return *kind;
        }
        let name = path.to_string_lossy();
        let ends = |suffixes: &[&str]| suffixes.iter().any(|s| name.ends_with(s));
        let kind = if ends(&[".json"]) {
            Kind::Json
        } else if ends(&[".cjs", ".cts"]) {
            Kind::CommonJs
        } else if ends(&[".mjs", ".mts", ".ts", ".tsx"]) {
            Kind::Module
        } else {
            match self.package_type(path) {
                Some(PackageType::Module) => Kind::Module,
                Some(PackageType::CommonJs) => Kind::CommonJs,
                None => match self.fs.file(path) {
                    Ok(bytes) if has_module_syntax(&String::from_utf8_lossy(&bytes)) => Kind::Module,
                    _ => Kind::CommonJs,
                },
            }
        };
        self.kinds.borrow_mut().insert(path.to_path_buf(), kind);
        kind
    }

    /// A resolver's refusal, in words that say what to do.
    fn explain(&self, who: &str, specifier: &str, from: &Path, error: ResolveError) -> String {
        let folder = self.folder.display();
        // A link out of the folder looks missing to the resolver: name it instead.
        let tried: Vec<PathBuf> = if is_bare(specifier) {
            from.ancestors()
                .filter(|d| d.starts_with(ROOT))
                .map(|d| d.join("node_modules").join(package_name(specifier)))
                .collect()
        } else {
            vec![from.join(specifier)]
        };
        if let Some((link, target)) = tried.iter().find_map(|p| self.fs.link_out_on(p)) {
            return format!(
                "{who} imports {specifier:?} through {}, a symbolic link out of the plugin's folder (to {}); a plugin imports only its own files: copy what it needs into the folder",
                link.display(),
                target.display()
            );
        }
        match error {
            ResolveError::Builtin { resolved, .. } => format!(
                "{who} imports {specifier:?}, Node.js's {resolved} module, which codemode's sandbox cannot offer: plugins run without files, network or processes (for HTTP, use fetch or api.net.fetch, which go through the plugin's network allowlist)"
            ),
            ResolveError::NotFound(_) if is_bare(specifier) && self.above.bound.is_some() => format!(
                "{who} imports the package {specifier:?}, which is not installed in the plugin's folder nor in a node_modules of a folder above it (codemode looked, as Node does, in {}){}; run `npm install {}` in {folder}",
                self.above.looked.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                if self.above.left_out.is_empty() { String::new() } else { format!(" ({})", self.above.left_out.join("; ")) },
                package_name(specifier)
            ),
            ResolveError::NotFound(_) if is_bare(specifier) => format!(
                "{who} imports the package {specifier:?}, which is not installed in the plugin's folder; run `npm install {}` in {folder}",
                package_name(specifier)
            ),
            ResolveError::NotFound(_) => {
                format!("{who} imports {specifier:?}, which is not a file of the plugin's folder ({folder})")
            }
            ResolveError::IOError(e) => format!("{who} imports {specifier:?}: {e}"),
            other => format!("{who} imports {specifier:?}, which cannot be resolved: {other}"),
        }
    }

    /// The text of the file at `url`, as the module or script it is (TypeScript
    /// stripped; CommonJS as written).
    pub fn source(&self, url: &ModuleSpecifier) -> Result<String, String> {
        let path = path_of(url)?;
        let bytes = self.fs.file(&path).map_err(|e| format!("module {url}: {e}"))?;
        let text = String::from_utf8(bytes.to_vec()).map_err(|_| format!("module {url} is not UTF-8 text"))?;
        let name = url.path();
        if name.ends_with(".tsx") {
            return Err(format!(
                "module {url} is TSX: codemode runs TypeScript without JSX; move the code into a .ts file"
            ));
        }
        if [".ts", ".mts", ".cts"].iter().any(|e| name.ends_with(e)) {
            return source::strip_module(&text)
                .map_err(|refused| format!("{url}:{}:{}: {}", refused.line, refused.column, refused.message));
        }
        Ok(text)
    }

    /// The export names of the CommonJS module at `path`, its re-exports' included.
    fn cjs_exports(&self, path: &Path, depth: usize, seen: &mut Vec<PathBuf>) -> Vec<String> {
        if let Some(names) = self.cjs_names.borrow().get(path) {
            return names.clone();
        }
        if depth > MAX_REEXPORT_DEPTH || seen.iter().any(|p| p == path) {
            return Vec::new();
        }
        seen.push(path.to_path_buf());
        let Ok(url) = ModuleSpecifier::from_file_path(path) else { return Vec::new() };
        let Ok(text) = self.source(&url) else { return Vec::new() };
        let found = cjs::exports_of(&text);
        let mut names = found.names;
        for specifier in &found.reexports {
            if let Ok((target, Kind::CommonJs)) = self.resolve_specifier(specifier, url.as_str(), Style::Require) {
                if let Ok(target) = path_of(&target) {
                    names.extend(self.cjs_exports(&target, depth + 1, seen));
                }
            }
        }
        names.sort();
        names.dedup();
        names.retain(|n| n != "default");
        // Only a whole answer is kept: inside a cycle, or past the depth, a module's
        // re-exports were cut short.
        if depth == 0 {
            self.cjs_names.borrow_mut().insert(path.to_path_buf(), names.clone());
        }
        names
    }

    /// The ES module that stands for the CommonJS module at `url`: it `require`s it
    /// through `plugin.js`'s runtime and exports its `module.exports` as `default` and
    /// each name found in its text.
    fn commonjs_facade(&self, url: &ModuleSpecifier) -> String {
        let names = path_of(url).map(|p| self.cjs_exports(&p, 0, &mut Vec::new())).unwrap_or_default();
        let url_text = serde_json::to_string(url.as_str()).unwrap_or_default();
        let mut text =
            format!("const m = globalThis[Symbol.for(\"codemode.require\")]({url_text});\nexport default m;\n");
        for (i, name) in names.iter().enumerate() {
            let quoted = serde_json::to_string(name).unwrap_or_default();
            text.push_str(&format!(
                "const e{i} = m == null ? undefined : m[{quoted}];\nexport {{ e{i} as {quoted} }};\n"
            ));
        }
        text
    }

    fn load_url(&self, url: &ModuleSpecifier, requested: &RequestedModuleType) -> Result<ModuleSource, String> {
        if let Some(name) = url.as_str().strip_prefix(PROVIDED_URL) {
            let (_, _, text) = PROVIDED
                .iter()
                .find(|(_, n, _)| *n == name)
                .ok_or_else(|| format!("codemode provides no module {url}"))?;
            return Ok(module(ModuleType::JavaScript, text.to_string(), url));
        }
        if !(url.as_str().starts_with(ROOT_URL) || url.as_str().starts_with(ABOVE_URL)) {
            return Err(format!("module {url} is not a file of the plugin"));
        }
        let path = path_of(url)?;
        match self.kind_of(&path) {
            Kind::Json => Ok(module(ModuleType::Json, self.source(url)?, url)),
            Kind::CommonJs => Ok(module(ModuleType::JavaScript, self.commonjs_facade(url), url)),
            Kind::Module if matches!(requested, RequestedModuleType::Json) => {
                Err(format!("module {url} was imported as JSON but is JavaScript"))
            }
            Kind::Module | Kind::Provided => Ok(module(ModuleType::JavaScript, self.source(url)?, url)),
        }
    }

    /// The `type` of the `package.json` nearest to `path`.
    fn package_type(&self, path: &Path) -> Option<PackageType> {
        let mut dir = path.parent();
        while let Some(d) = dir.filter(|d| is_plugin_path(d)) {
            let manifest = d.join("package.json");
            if let Ok(bytes) = self.fs.file(&manifest) {
                let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
                return match value.get("type").and_then(|t| t.as_str()) {
                    Some("module") => Some(PackageType::Module),
                    Some("commonjs") => Some(PackageType::CommonJs),
                    _ => None,
                };
            }
            dir = d.parent();
        }
        None
    }

    /// For `require(specifier)` in the CommonJS module at `referrer`.
    pub fn require(&self, specifier: &str, referrer: &str) -> Result<Required, String> {
        let (url, kind) = self.resolve_specifier(specifier, referrer, Style::Require)?;
        Ok(Required { url: url.to_string(), kind })
    }
}

/// The `/plugin/...` path a file URL names (percent-escapes decoded: `my%20tool.js` is
/// `my tool.js`).
fn path_of(url: &ModuleSpecifier) -> Result<PathBuf, String> {
    url.to_file_path().map_err(|()| format!("{url} does not name a file of the plugin"))
}

fn module(kind: ModuleType, code: String, url: &ModuleSpecifier) -> ModuleSource {
    ModuleSource::new(kind, ModuleSourceCode::String(code.into()), url, None)
}

/// The folder a referrer's relative imports start from.
fn referrer_dir(referrer: &str) -> PathBuf {
    match ModuleSpecifier::parse(referrer) {
        Ok(url) if url.scheme() == "file" => {
            path_of(&url).ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_else(|| PathBuf::from(ROOT))
        }
        _ => PathBuf::from(ROOT),
    }
}

/// A module's URL as a plugin author knows it: its path in the folder.
fn shown(referrer: &str) -> String {
    referrer.strip_prefix(ROOT_URL).map_or_else(|| referrer.to_string(), |rest| rest.to_string())
}

fn is_bare(specifier: &str) -> bool {
    !(specifier.starts_with('.') || specifier.starts_with('/') || specifier.contains(':'))
}

/// `@scope/name/sub` → `@scope/name`; `name/sub` → `name`.
fn package_name(specifier: &str) -> &str {
    let mut parts = specifier.splitn(3, '/');
    let first = parts.next().unwrap_or(specifier);
    match (first.starts_with('@'), parts.next()) {
        (true, Some(second)) => &specifier[..first.len() + 1 + second.len()],
        _ => first,
    }
}

/// Whether a `.js` file without a `"type"` is an ES module: it has `import`/`export`
/// statements (a quick look first, a parse only when the words appear).
fn has_module_syntax(text: &str) -> bool {
    if !(text.contains("import") || text.contains("export")) {
        return false;
    }
    source::has_module_declarations(text)
}

impl ModuleLoader for PluginModules {
    fn resolve(&self, specifier: &str, referrer: &str, _kind: ResolutionKind) -> ModuleResolveResponse {
        // The main and side modules are named by URL already.
        if specifier.starts_with(ROOT_URL) || specifier.starts_with(PROVIDED_URL) {
            return ModuleSpecifier::parse(specifier).map_err(JsErrorBox::from_err);
        }
        self.resolve_specifier(specifier, referrer, Style::Import).map(|(url, _)| url).map_err(JsErrorBox::generic)
    }

    fn load(
        &self,
        specifier: &ModuleSpecifier,
        referrer: Option<&ModuleLoadReferrer>,
        options: ModuleLoadOptions,
    ) -> ModuleLoadResponse {
        let loaded: Result<ModuleSource, ModuleLoaderError> =
            self.load_url(specifier, &options.requested_module_type).map_err(|message| {
                let from =
                    referrer.map(|r| format!(" (imported by {})", shown(r.specifier.as_str()))).unwrap_or_default();
                JsErrorBox::generic(format!("{message}{from}"))
            });
        ModuleLoadResponse::Sync(loaded)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn modules(files: &[(&str, &str)]) -> PluginModules {
        PluginModules::new(Arc::new(MemoryFs::from_files(files)), PathBuf::from("/home/me/plugin"))
    }

    fn resolved(m: &PluginModules, specifier: &str, from: &str, style: Style) -> Result<(String, Kind), String> {
        m.resolve_specifier(specifier, &format!("{ROOT_URL}{from}"), style).map(|(url, kind)| (url.to_string(), kind))
    }

    #[test]
    fn packages_resolve_through_exports_for_import_and_require() {
        let m = modules(&[
            ("main.ts", ""),
            ("lib.ts", ""),
            (
                "node_modules/dual/package.json",
                r#"{ "name": "dual", "exports": { ".": { "import": "./esm/index.js", "require": "./cjs/index.cjs" }, "./sub": { "import": "./esm/sub.js" } }, "type": "module" }"#,
            ),
            ("node_modules/dual/esm/index.js", "export const a = 1"),
            ("node_modules/dual/esm/sub.js", "export const b = 1"),
            ("node_modules/dual/cjs/index.cjs", "exports.a = 1"),
            ("node_modules/old/package.json", r#"{ "name": "old", "main": "lib/old.js" }"#),
            ("node_modules/old/lib/old.js", "module.exports = { x: 1 }"),
            ("node_modules/@scope/pkg/package.json", r#"{ "name": "@scope/pkg", "module": "m.js", "main": "c.js" }"#),
            ("node_modules/@scope/pkg/m.js", "export default 1"),
            ("node_modules/@scope/pkg/c.js", "module.exports = 1"),
        ]);
        assert_eq!(
            resolved(&m, "dual", "main.ts", Style::Import).unwrap(),
            (format!("{ROOT_URL}node_modules/dual/esm/index.js"), Kind::Module)
        );
        assert_eq!(
            resolved(&m, "dual/sub", "main.ts", Style::Import).unwrap().0,
            format!("{ROOT_URL}node_modules/dual/esm/sub.js")
        );
        assert_eq!(
            resolved(&m, "dual", "main.ts", Style::Require).unwrap(),
            (format!("{ROOT_URL}node_modules/dual/cjs/index.cjs"), Kind::CommonJs)
        );
        assert_eq!(
            resolved(&m, "old", "main.ts", Style::Import).unwrap(),
            (format!("{ROOT_URL}node_modules/old/lib/old.js"), Kind::CommonJs)
        );
        assert_eq!(
            resolved(&m, "@scope/pkg", "main.ts", Style::Import).unwrap(),
            (format!("{ROOT_URL}node_modules/@scope/pkg/m.js"), Kind::Module)
        );
        assert_eq!(
            resolved(&m, "@scope/pkg", "main.ts", Style::Require).unwrap().0,
            format!("{ROOT_URL}node_modules/@scope/pkg/c.js")
        );
        // TypeScript authors import `.js` for `.ts`.
        assert_eq!(resolved(&m, "./lib.js", "main.ts", Style::Import).unwrap().0, format!("{ROOT_URL}lib.ts"));
        assert_eq!(resolved(&m, "./lib", "main.ts", Style::Import).unwrap().0, format!("{ROOT_URL}lib.ts"));
        assert_eq!(
            resolved(&m, "convergence/effect", "main.ts", Style::Import).unwrap(),
            (format!("{PROVIDED_URL}convergence-effect.js"), Kind::Provided)
        );
    }

    #[test]
    fn refusals_name_the_specifier_and_what_to_do() {
        let mut fs =
            MemoryFs::from_files(&[("main.js", ""), ("node_modules/@a/b/package.json", r#"{ "name": "@a/b" }"#)]);
        fs.add_link("node_modules/evil", Path::new("/home/someone-else/secrets"));
        let m = PluginModules::new(Arc::new(fs), PathBuf::from("/home/me/plugin"));
        let e = resolved(&m, "node:fs", "main.js", Style::Import).unwrap_err();
        assert!(
            e.starts_with(
                "main.js imports \"node:fs\", Node.js's node:fs module, which codemode's sandbox cannot offer"
            ),
            "{e}"
        );
        let e = resolved(&m, "child_process", "main.js", Style::Require).unwrap_err();
        assert!(e.contains("Node.js's node:child_process module"), "{e}");
        let e = resolved(&m, "zod/v4", "main.js", Style::Import).unwrap_err();
        assert_eq!(e, "main.js imports the package \"zod/v4\", which is not installed in the plugin's folder; run `npm install zod` in /home/me/plugin");
        let e = resolved(&m, "@a/b/c", "main.js", Style::Import).unwrap_err();
        assert!(e.contains("run `npm install @a/b` in"), "{e}");
        let e = resolved(&m, "../../etc/passwd", "main.js", Style::Import).unwrap_err();
        assert!(e.contains("which is not a file of the plugin's folder"), "{e}");
        let e = resolved(&m, "evil", "main.js", Style::Import).unwrap_err();
        assert_eq!(e, "main.js imports \"evil\" through /plugin/node_modules/evil, a symbolic link out of the plugin's folder (to /home/someone-else/secrets); a plugin imports only its own files: copy what it needs into the folder");
    }

    #[test]
    fn commonjs_modules_get_a_facade_with_their_names() {
        let m = modules(&[
            ("node_modules/semverish/package.json", r#"{ "name": "semverish", "main": "index.js" }"#),
            (
                "node_modules/semverish/index.js",
                "const parse = require('./parse');\nmodule.exports = { parse, valid: require('./valid'), SEMVER: 1 };",
            ),
            ("node_modules/star/package.json", r#"{ "name": "star", "main": "index.js" }"#),
            (
                "node_modules/star/index.js",
                "\"use strict\";\n__exportStar(require('./inner'), exports);\nexports.own = 1;",
            ),
            ("node_modules/star/inner.js", "exports.deep = 2;"),
        ]);
        let url = ModuleSpecifier::parse(&format!("{ROOT_URL}node_modules/semverish/index.js")).unwrap();
        let facade = m.commonjs_facade(&url);
        assert!(facade.starts_with("const m = globalThis[Symbol.for(\"codemode.require\")](\"file:///plugin/node_modules/semverish/index.js\");\nexport default m;\n"), "{facade}");
        assert!(
            facade.contains("export { e0 as \"SEMVER\" }")
                && facade.contains("as \"parse\"")
                && facade.contains("as \"valid\""),
            "{facade}"
        );
        let url = ModuleSpecifier::parse(&format!("{ROOT_URL}node_modules/star/index.js")).unwrap();
        let facade = m.commonjs_facade(&url);
        assert!(facade.contains("as \"deep\"") && facade.contains("as \"own\""), "{facade}");
    }

    #[test]
    fn a_js_file_is_commonjs_unless_its_package_or_its_text_says_module() {
        let m = modules(&[
            ("a.js", "export const a = 1"),
            ("b.js", "module.exports = 'import and export as words'"),
            ("pkg/package.json", r#"{ "type": "module" }"#),
            ("pkg/c.js", "globalThis.x = 1"),
        ]);
        assert_eq!(m.kind_of(Path::new("/plugin/a.js")), Kind::Module);
        assert_eq!(m.kind_of(Path::new("/plugin/b.js")), Kind::CommonJs);
        assert_eq!(m.kind_of(Path::new("/plugin/pkg/c.js")), Kind::Module);
    }

    #[test]
    fn file_names_that_need_escaping_in_urls_load() {
        let m = modules(&[("my tool.js", "export const a = 1"), ("ünï.mjs", "export const b = 1")]);
        for name in ["my tool.js", "ünï.mjs"] {
            let url = PluginModules::url_of(name).unwrap();
            assert_eq!(m.source(&url).unwrap().len(), 18, "{name}: {url}");
        }
        let m = m.with_entries(&["my tool.js".to_string()]);
        assert_eq!(m.kind_of(Path::new("/plugin/my tool.js")), Kind::Module);
    }

    #[test]
    fn package_names_of_specifiers() {
        assert_eq!(package_name("zod"), "zod");
        assert_eq!(package_name("zod/v4/core"), "zod");
        assert_eq!(package_name("@plico-ai/sdk/x"), "@plico-ai/sdk");
        assert_eq!(package_name("effect/Effect"), "effect");
    }
}

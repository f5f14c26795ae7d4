//! A JavaScript plugin's files, read into memory before the sandbox hides the
//! filesystem, and the module loader that serves them from there.
//!
//! Modules live under `file:///plugin/`; relative imports resolve as usual, and
//! anything that resolves outside the plugin's folder, or to a package name, is refused
//! with an error that says how to fix the import.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use deno_core::error::ModuleLoaderError;
use deno_core::{
    resolve_import, ModuleLoadOptions, ModuleLoadReferrer, ModuleLoadResponse, ModuleLoader, ModuleResolveResponse,
    ModuleSource, ModuleSourceCode, ModuleSpecifier, ModuleType, ResolutionKind,
};
use deno_error::JsErrorBox;
use protocol::manifest::{Manifest, ManifestError};

/// Where the plugin's folder appears to its modules.
pub const ROOT_URL: &str = "file:///plugin/";
/// Largest total size of a plugin's modules.
const MAX_TOTAL_BYTES: u64 = 32 * 1024 * 1024;
/// Most module files a plugin may hold.
const MAX_FILES: usize = 4096;
/// Extensions loaded as JavaScript modules.
const MODULE_EXTENSIONS: [&str; 2] = ["js", "mjs"];

/// Why a plugin's files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    /// The manifest is missing or invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The manifest names no main module.
    #[error("{0}: the manifest has no `main`; name the module that exports activate(api), for example \"main\": \"main.js\"")]
    NoMain(PathBuf),
    /// The main module is not among the plugin's modules.
    #[error("{dir}: the main module {main:?} is not a .js or .mjs file in the plugin's folder")]
    MainMissing {
        /// The folder.
        dir: PathBuf,
        /// The manifest's `main`.
        main: String,
    },
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The plugin is larger than the runtime loads.
    #[error("{dir}: the plugin's modules exceed {what}; bundle it or remove what it does not use")]
    TooLarge {
        /// The folder.
        dir: PathBuf,
        /// Which limit.
        what: String,
    },
}

/// A plugin's manifest and module sources.
#[derive(Debug)]
pub struct PluginFiles {
    /// The manifest.
    pub manifest: Manifest,
    /// The main module's URL.
    pub main: ModuleSpecifier,
    /// Module sources by URL.
    modules: HashMap<ModuleSpecifier, String>,
}

impl PluginFiles {
    /// Reads the manifest and every `.js`/`.mjs` file under `dir`.
    pub fn load(dir: &Path) -> Result<Self, FilesError> {
        let manifest = Manifest::load(dir)?;
        let main_path = manifest.main.clone().ok_or_else(|| FilesError::NoMain(dir.to_path_buf()))?;
        let mut modules = HashMap::new();
        let mut total = 0u64;
        let mut pending = vec![dir.to_path_buf()];
        while let Some(folder) = pending.pop() {
            let entries =
                std::fs::read_dir(&folder).map_err(|source| FilesError::Read { path: folder.clone(), source })?;
            for entry in entries {
                let entry = entry.map_err(|source| FilesError::Read { path: folder.clone(), source })?;
                let path = entry.path();
                // Symbolic links are not followed: a plugin's modules are its own files.
                let kind = entry.file_type().map_err(|source| FilesError::Read { path: path.clone(), source })?;
                if kind.is_dir() {
                    pending.push(path);
                    continue;
                }
                let is_module =
                    path.extension().and_then(|e| e.to_str()).is_some_and(|e| MODULE_EXTENSIONS.contains(&e));
                if !kind.is_file() || !is_module {
                    continue;
                }
                // Sized before it is read: the limits of the sandbox do not hold yet.
                let size = entry.metadata().map_err(|source| FilesError::Read { path: path.clone(), source })?.len();
                total += size;
                if total > MAX_TOTAL_BYTES || modules.len() >= MAX_FILES {
                    return Err(FilesError::TooLarge {
                        dir: dir.to_path_buf(),
                        what: format!("{} MiB or {MAX_FILES} files", MAX_TOTAL_BYTES >> 20),
                    });
                }
                let text =
                    std::fs::read_to_string(&path).map_err(|source| FilesError::Read { path: path.clone(), source })?;
                let relative = path.strip_prefix(dir).unwrap_or(&path).to_string_lossy().replace('\\', "/");
                modules.insert(module_url(&relative)?, text);
            }
        }
        let main = module_url(main_path.trim_start_matches("./"))?;
        if !modules.contains_key(&main) {
            return Err(FilesError::MainMissing { dir: dir.to_path_buf(), main: main_path });
        }
        Ok(Self { manifest, main, modules })
    }

    /// The loader that serves these modules.
    pub fn loader(&self) -> PluginModules {
        PluginModules { modules: self.modules.clone() }
    }
}

fn module_url(relative: &str) -> Result<ModuleSpecifier, FilesError> {
    ModuleSpecifier::parse(ROOT_URL).and_then(|root| root.join(relative)).map_err(|e| FilesError::Read {
        path: relative.into(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidInput, e),
    })
}

/// Serves a plugin's modules from memory.
pub struct PluginModules {
    modules: HashMap<ModuleSpecifier, String>,
}

impl ModuleLoader for PluginModules {
    fn resolve(&self, specifier: &str, referrer: &str, _kind: ResolutionKind) -> ModuleResolveResponse {
        let is_relative = specifier.starts_with("./")
            || specifier.starts_with("../")
            || specifier.starts_with('/')
            || specifier.starts_with(ROOT_URL);
        if !is_relative {
            return Err(JsErrorBox::generic(format!(
                "{referrer} imports {specifier:?}: a plugin imports only its own files, by relative path (\"./lib.js\"); bundle packages into the plugin's folder"
            )));
        }
        let url = resolve_import(specifier, referrer).map_err(JsErrorBox::from_err)?;
        if !url.as_str().starts_with(ROOT_URL) {
            return Err(JsErrorBox::generic(format!(
                "{referrer} imports {specifier:?}, which is outside the plugin's folder"
            )));
        }
        Ok(url)
    }

    fn load(
        &self,
        specifier: &ModuleSpecifier,
        referrer: Option<&ModuleLoadReferrer>,
        _options: ModuleLoadOptions,
    ) -> ModuleLoadResponse {
        let found: Result<ModuleSource, ModuleLoaderError> = match self.modules.get(specifier) {
            Some(code) => Ok(ModuleSource::new(
                ModuleType::JavaScript,
                ModuleSourceCode::String(code.clone().into()),
                specifier,
                None,
            )),
            None => {
                let from = referrer.map(|r| format!(" (imported by {})", r.specifier)).unwrap_or_default();
                Err(JsErrorBox::generic(format!("module {specifier} is not a .js or .mjs file of this plugin{from}")))
            }
        };
        ModuleLoadResponse::Sync(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("codemode-plugin-files-{}-{}", std::process::id(), files.len()));
        let _ = std::fs::remove_dir_all(&dir);
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        dir
    }

    #[test]
    fn loads_modules_and_resolves_only_inside_the_folder() {
        let dir = plugin(&[
            ("manifest.json", r#"{ "name": "p", "version": "1", "main": "main.js" }"#),
            ("main.js", "export function activate() {}"),
            ("lib/util.mjs", "export const x = 1;"),
            ("README.md", "not a module"),
        ]);
        let files = PluginFiles::load(&dir).unwrap();
        assert_eq!(files.main.as_str(), "file:///plugin/main.js");
        let loader = files.loader();
        assert_eq!(loader.modules.len(), 2);
        let main = files.main.as_str();
        assert_eq!(
            loader.resolve("./lib/util.mjs", main, ResolutionKind::Import).unwrap().as_str(),
            "file:///plugin/lib/util.mjs"
        );
        let e = loader
            .resolve("../../etc/passwd", "file:///plugin/lib/util.mjs", ResolutionKind::Import)
            .unwrap_err()
            .to_string();
        assert!(e.contains("outside the plugin's folder"), "{e}");
        let e = loader.resolve("lodash", main, ResolutionKind::Import).unwrap_err().to_string();
        assert!(e.contains("a plugin imports only its own files"), "{e}");
    }

    #[test]
    fn a_missing_main_is_named() {
        let dir = plugin(&[("manifest.json", r#"{ "name": "p", "version": "1", "main": "gone.js" }"#)]);
        let e = PluginFiles::load(&dir).unwrap_err().to_string();
        assert!(e.ends_with("the main module \"gone.js\" is not a .js or .mjs file in the plugin's folder"), "{e}");
    }
}

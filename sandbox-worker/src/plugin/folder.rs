//! A plugin's folder, copied into memory before the sandbox hides the filesystem
//! ([`PluginFolder::read`]), and served from there as a file system the module resolver
//! walks ([`MemoryFs`], an `oxc_resolver` [`FileSystem`]).
//!
//! Inside the runtime the folder is `/plugin` (module URLs `file:///plugin/...`). What is
//! copied: every module a plugin could import (`.js`, `.mjs`, `.cjs`, `.json`, and the
//! author's own `.ts`, `.mts`, `.cts`, `.tsx`, the last only so that importing one is
//! refused by name), its own files and its `node_modules`; never declaration files,
//! source maps, TypeScript sources that packages ship beside their JavaScript, or
//! `.git`. Symbolic links are recorded, not followed: one that leads to another place in
//! the folder works as a link, one that leads out of it makes every import through it
//! fail with the link and its target named.
//!
//! Node finds a bare import in the nearest `node_modules` walking up from the importing
//! file. The plugin's folder is the start; above it, [`PluginFolder::read_packages_above`]
//! copies the `node_modules` of each folder up to a bound (the filesystem's root, as Node, which the
//! host passes) into [`ABOVE`]`/<n>/node_modules` (`n` = 1 for the parent), in the same
//! window before the sandbox closes and within the same size caps; the resolver
//! searches them nearest first after the plugin's own (`super::modules`). An ancestor
//! whose packages do not fit the caps is left out and named, not a failure: the plugin
//! may not need it.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use oxc_resolver::{FileMetadata, FileSystem, ResolveError};

/// Where the plugin's folder appears inside the runtime.
pub const ROOT: &str = "/plugin";
/// Where the `node_modules` of the folders above the plugin's appear inside the
/// runtime: `/above/1/node_modules` for its parent's, `/above/2/...` for the next.
pub const ABOVE: &str = "/above";
/// Largest total size of the files copied.
const MAX_TOTAL_BYTES: u64 = 128 * 1024 * 1024;
/// Most files copied.
const MAX_FILES: usize = 32 * 1024;
/// Extensions of the files copied.
const COPIED_EXTENSIONS: [&str; 8] = ["js", "mjs", "cjs", "json", "ts", "mts", "cts", "tsx"];
/// TypeScript extensions, which inside `node_modules` are a package's sources and not copied.
const TYPESCRIPT_EXTENSIONS: [&str; 4] = ["ts", "mts", "cts", "tsx"];

/// Why a plugin's folder could not be copied.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    /// A file or folder could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The folder holds more than the runtime copies.
    #[error("{dir} holds more than {what} of modules and packages; remove what the plugin does not use (`npm prune --omit=dev`), or bundle it")]
    TooLarge {
        /// The folder.
        dir: PathBuf,
        /// Which limit.
        what: String,
    },
}

/// A symbolic link in the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Link {
    /// To this path inside the folder (a `/plugin/...` path).
    Inside(PathBuf),
    /// To this place outside the folder (its real path, for messages).
    Outside(PathBuf),
}

/// The folder's files in memory, by `/plugin/...` path.
#[derive(Debug, Default)]
pub struct MemoryFs {
    files: HashMap<PathBuf, Arc<[u8]>>,
    dirs: BTreeSet<PathBuf>,
    links: HashMap<PathBuf, Link>,
}

/// A plugin's folder, read.
#[derive(Debug)]
pub struct PluginFolder {
    /// Its files.
    pub fs: Arc<MemoryFs>,
    /// The folder's real path.
    pub real_root: PathBuf,
}

/// The `node_modules` folders above a plugin's folder that were copied
/// ([`PluginFolder::read_packages_above`]).
#[derive(Debug, Clone, Default)]
pub struct PackagesAbove {
    /// Inside the runtime, nearest first (`/above/1/node_modules`, ...).
    pub dirs: Vec<PathBuf>,
    /// The folder the walk stopped at, when there was one.
    pub bound: Option<PathBuf>,
    /// Every `node_modules` above the plugin's folder that the walk looked for, nearest
    /// first, whether or not it was there (for messages).
    pub looked: Vec<PathBuf>,
    /// Ancestors whose packages were left out, each with why (for messages).
    pub left_out: Vec<String>,
}

impl PluginFolder {
    /// Copies what a plugin may import from `dir` (see the module docs). Runs before the
    /// sandbox; sizes are checked before files are read, and no file is read through a
    /// symbolic link. For a plugin that is one file (`only_file`), only that file,
    /// `package.json` and `node_modules` of the folder are copied: its neighbours are
    /// not its files.
    pub fn read(dir: &Path, only_file: Option<&str>) -> Result<Self, FolderError> {
        let read_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FolderError::Read { path, source }
        };
        let real_root = std::fs::canonicalize(dir).map_err(read_err(dir))?;
        let mut fs = MemoryFs::default();
        fs.dirs.insert(PathBuf::from(ROOT));
        let mut total = 0u64;
        fs.copy_tree(dir, &real_root, Path::new(ROOT), only_file, false, &mut total)?;
        Ok(Self { fs: Arc::new(fs), real_root })
    }

    /// [`PluginFolder::read`], then the `node_modules` of each folder above it up to
    /// `bound` (inclusive; nothing above when `bound` is `None` or does not contain the
    /// folder). Runs before the sandbox, like `read`.
    pub fn read_packages_above(
        dir: &Path,
        only_file: Option<&str>,
        bound: Option<&Path>,
    ) -> Result<(Self, PackagesAbove), FolderError> {
        let mut folder = Self::read(dir, only_file)?;
        let mut above = PackagesAbove::default();
        let Some(bound) = bound.and_then(|b| std::fs::canonicalize(b).ok()) else { return Ok((folder, above)) };
        if !folder.real_root.starts_with(&bound) {
            return Ok((folder, above));
        }
        above.bound = Some(bound.clone());
        let mut fs = std::mem::take(Arc::get_mut(&mut folder.fs).ok_or_else(|| FolderError::Read {
            path: dir.to_path_buf(),
            source: io::Error::other("the folder's copy is shared already"),
        })?);
        let mut total: u64 = fs.files.values().map(|b| b.len() as u64).sum();
        let ancestors = folder.real_root.ancestors().skip(1).take_while(|a| a.starts_with(&bound));
        for (level, ancestor) in ancestors.enumerate() {
            let real = ancestor.join("node_modules");
            above.looked.push(real.clone());
            if !std::fs::symlink_metadata(&real).is_ok_and(|m| m.is_dir()) {
                continue;
            }
            let virtual_dir = PathBuf::from(ABOVE).join((level + 1).to_string()).join("node_modules");
            let mut copy = MemoryFs::default();
            let mut used = total;
            match copy.copy_tree(&real, &real, &virtual_dir, None, true, &mut used) {
                Ok(()) => {
                    total = used;
                    let mut parent = virtual_dir.parent();
                    while let Some(d) = parent.filter(|d| *d != Path::new("/")) {
                        fs.dirs.insert(d.to_path_buf());
                        parent = d.parent();
                    }
                    fs.dirs.insert(virtual_dir.clone());
                    fs.files.extend(copy.files);
                    fs.dirs.extend(copy.dirs);
                    fs.links.extend(copy.links);
                    above.dirs.push(virtual_dir);
                }
                Err(e) => above.left_out.push(format!("{} was not read: {e}", real.display())),
            }
        }
        folder.fs = Arc::new(fs);
        Ok((folder, above))
    }
}

impl MemoryFs {
    /// Copies the tree at `real_dir` (`real_base` is where links may point inside,
    /// appearing at `virtual_base`) into `virtual_base`, within the caps (`total`: bytes
    /// copied so far, all trees together). `dir` names the folder in messages.
    fn copy_tree(
        &mut self,
        dir: &Path,
        real_base: &Path,
        virtual_base: &Path,
        only_file: Option<&str>,
        packages: bool,
        total: &mut u64,
    ) -> Result<(), FolderError> {
        let read_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FolderError::Read { path, source }
        };
        let fs = self;
        let real_root = real_base.to_path_buf();
        let top = virtual_base.to_path_buf();
        let mut pending = vec![(real_root.clone(), top.clone(), packages)];
        while let Some((real, virtual_dir, in_packages)) = pending.pop() {
            for entry in std::fs::read_dir(&real).map_err(read_err(&real))? {
                let entry = entry.map_err(read_err(&real))?;
                let name = entry.file_name();
                let at_top = virtual_dir == top;
                if let (true, Some(file)) = (at_top, only_file) {
                    if !(name == file || name == "package.json" || name == "node_modules") {
                        continue;
                    }
                }
                let (real_path, virtual_path) = (entry.path(), virtual_dir.join(&name));
                let kind = entry.file_type().map_err(read_err(&real_path))?;
                if kind.is_symlink() {
                    let link = match std::fs::canonicalize(&real_path) {
                        Ok(target) => match target.strip_prefix(&real_root) {
                            Ok(inside) => Link::Inside(top.join(inside)),
                            Err(_) => Link::Outside(target),
                        },
                        // A dangling link: nothing behind it to import.
                        Err(_) => continue,
                    };
                    fs.links.insert(virtual_path, link);
                } else if kind.is_dir() {
                    if name == ".git" {
                        continue;
                    }
                    fs.dirs.insert(virtual_path.clone());
                    pending.push((real_path, virtual_path, in_packages || name == "node_modules"));
                } else if kind.is_file() && copied(&name.to_string_lossy(), in_packages) {
                    let too_large = || FolderError::TooLarge {
                        dir: dir.to_path_buf(),
                        what: format!("{} MiB or {MAX_FILES} files", MAX_TOTAL_BYTES >> 20),
                    };
                    let size = entry.metadata().map_err(read_err(&real_path))?.len();
                    if *total + size > MAX_TOTAL_BYTES || fs.files.len() >= MAX_FILES {
                        return Err(too_large());
                    }
                    let bytes = read_bounded(&real_path, MAX_TOTAL_BYTES - *total).map_err(read_err(&real_path))?;
                    *total += bytes.len() as u64;
                    if *total > MAX_TOTAL_BYTES {
                        return Err(too_large());
                    }
                    fs.files.insert(virtual_path, bytes.into());
                }
            }
        }
        Ok(())
    }
}

/// The file at `path`, never through a symbolic link (one swapped in after the folder was
/// listed fails to open), and at most `limit + 1` bytes of it (a file that grew after it
/// was sized shows as too large instead of being read whole).
fn read_bounded(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW).open(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether a file named `name` is copied (`in_packages`: it is inside `node_modules`).
fn copied(name: &str, in_packages: bool) -> bool {
    let Some((stem, extension)) = name.rsplit_once('.') else { return false };
    if !COPIED_EXTENSIONS.contains(&extension) {
        return false;
    }
    let typescript = TYPESCRIPT_EXTENSIONS.contains(&extension);
    let declaration = typescript && (stem.ends_with(".d") || stem.contains(".d."));
    !(declaration || (typescript && in_packages))
}

/// `path` with `.` and `..` taken out (never above the root).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

impl MemoryFs {
    /// An empty file system (for tests).
    pub fn from_files(files: &[(&str, &str)]) -> Self {
        let mut fs = MemoryFs::default();
        fs.dirs.insert(PathBuf::from(ROOT));
        for (path, text) in files {
            let path = PathBuf::from(ROOT).join(path);
            let mut dir = path.parent();
            while let Some(d) = dir.filter(|d| d.starts_with(ROOT)) {
                fs.dirs.insert(d.to_path_buf());
                dir = d.parent();
            }
            fs.files.insert(path, text.as_bytes().into());
        }
        fs
    }

    /// Adds a symbolic link (for tests): `to` is a `/plugin/...` path, or outside.
    pub fn add_link(&mut self, at: &str, to: &Path) {
        let link = if to.starts_with(ROOT) { Link::Inside(to.into()) } else { Link::Outside(to.into()) };
        self.links.insert(PathBuf::from(ROOT).join(at), link);
    }

    /// The first symbolic link out of the folder on the way to `path`, with its
    /// target, when there is one (a resolver sees such a path as missing).
    pub fn link_out_on(&self, path: &Path) -> Option<(PathBuf, PathBuf)> {
        let mut walked = PathBuf::new();
        for component in normal(path).iter() {
            walked.push(component);
            match self.links.get(&walked) {
                Some(Link::Outside(target)) => return Some((walked, target.clone())),
                Some(Link::Inside(target)) => walked = target.clone(),
                None => {}
            }
        }
        None
    }

    /// The bytes of the file at `path` (links followed), when it is one.
    pub fn file(&self, path: &Path) -> io::Result<Arc<[u8]>> {
        let real = self.follow(path)?;
        self.files.get(&real).cloned().ok_or_else(|| not_found(path))
    }

    /// `path` with every link along it followed; an error naming the link when one
    /// leads out of the folder.
    fn follow(&self, path: &Path) -> io::Result<PathBuf> {
        let mut resolved = PathBuf::new();
        let mut hops = 0;
        // What is left to walk, last component first.
        let mut rest: Vec<std::ffi::OsString> = normal(path).iter().map(|c| c.to_os_string()).rev().collect();
        while let Some(component) = rest.pop() {
            resolved = normal(&resolved.join(component));
            match self.links.get(&resolved) {
                None => {}
                Some(Link::Outside(target)) => {
                    return Err(io::Error::new(
                        io::ErrorKind::PermissionDenied,
                        format!(
                        "{} is a symbolic link out of the plugin's folder (to {}); a plugin imports only its own files",
                        resolved.display(),
                        target.display()
                    ),
                    ))
                }
                Some(Link::Inside(target)) => {
                    hops += 1;
                    if hops > 40 {
                        return Err(io::Error::other(format!("{}: too many symbolic links", path.display())));
                    }
                    // The target's components go on top of what is left to walk.
                    rest.extend(target.iter().map(|c| c.to_os_string()).rev());
                    resolved = PathBuf::new();
                }
            }
        }
        Ok(resolved)
    }
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("{} does not exist", path.display()))
}

impl FileSystem for MemoryFs {
    fn new() -> Self {
        Self::default()
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.file(path).map(|bytes| bytes.to_vec())
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(self.read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }

    fn metadata(&self, path: &Path) -> io::Result<FileMetadata> {
        let real = self.follow(path)?;
        if self.files.contains_key(&real) {
            Ok(FileMetadata::new(true, false, false))
        } else if self.dirs.contains(&real) {
            Ok(FileMetadata::new(false, true, false))
        } else {
            Err(not_found(path))
        }
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<FileMetadata> {
        let path = normal(path);
        if self.links.contains_key(&path) {
            return Ok(FileMetadata::new(false, false, true));
        }
        let parent = path.parent().map(|p| self.follow(p)).transpose()?.unwrap_or_default();
        let at = parent.join(path.file_name().unwrap_or_default());
        if self.links.contains_key(&at) {
            Ok(FileMetadata::new(false, false, true))
        } else {
            self.metadata(&at)
        }
    }

    fn read_link(&self, path: &Path) -> Result<PathBuf, ResolveError> {
        match self.links.get(&normal(path)) {
            Some(Link::Inside(target)) => Ok(target.clone()),
            Some(Link::Outside(_)) => {
                Err(ResolveError::from(self.follow(path).err().unwrap_or_else(|| not_found(path))))
            }
            None => Err(ResolveError::from(io::Error::new(io::ErrorKind::InvalidInput, "not a symbolic link"))),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let real = self.follow(path)?;
        if self.files.contains_key(&real) || self.dirs.contains(&real) {
            Ok(real)
        } else {
            Err(not_found(path))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_what_a_plugin_can_import_is_copied() {
        for (name, in_packages, expected) in [
            ("main.ts", false, true),
            ("main.ts", true, false),
            ("index.d.ts", false, false),
            ("types.d.mts", false, false),
            ("index.js", true, true),
            ("index.cjs", true, true),
            ("package.json", true, true),
            ("index.js.map", true, false),
            ("README.md", false, false),
            ("view.tsx", false, true),
        ] {
            assert_eq!(copied(name, in_packages), expected, "{name} {in_packages}");
        }
    }

    #[test]
    fn a_real_folder_is_copied_with_its_links() {
        let base = std::env::temp_dir().join(format!("codemode-folder-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let dir = base.join("plugin");
        std::fs::create_dir_all(dir.join("node_modules/pkg/dist")).unwrap();
        std::fs::create_dir_all(dir.join("packages/local")).unwrap();
        std::fs::write(dir.join("main.ts"), "export {}").unwrap();
        std::fs::write(dir.join("node_modules/pkg/dist/index.js"), "export const a = 1").unwrap();
        std::fs::write(dir.join("node_modules/pkg/index.d.ts"), "").unwrap();
        std::fs::write(dir.join("node_modules/pkg/src.ts"), "").unwrap();
        std::fs::write(dir.join("packages/local/index.js"), "module.exports = 2").unwrap();
        std::fs::write(base.join("secret.js"), "stolen").unwrap();
        std::os::unix::fs::symlink("../packages/local", dir.join("node_modules/local")).unwrap();
        std::os::unix::fs::symlink(base.join("secret.js"), dir.join("leak.js")).unwrap();
        let folder = PluginFolder::read(&dir, None).unwrap();
        let fs = &folder.fs;
        assert_eq!(&*fs.file(Path::new("/plugin/main.ts")).unwrap(), b"export {}");
        assert!(fs.file(Path::new("/plugin/node_modules/pkg/index.d.ts")).is_err());
        assert!(fs.file(Path::new("/plugin/node_modules/pkg/src.ts")).is_err());
        // A link inside the folder works as one.
        assert_eq!(&*fs.file(Path::new("/plugin/node_modules/local/index.js")).unwrap(), b"module.exports = 2");
        assert_eq!(
            fs.canonicalize(Path::new("/plugin/node_modules/local/index.js")).unwrap(),
            Path::new("/plugin/packages/local/index.js")
        );
        // A link out of it is refused by name, and its target was never read.
        let e = fs.file(Path::new("/plugin/leak.js")).unwrap_err().to_string();
        assert!(e.starts_with("/plugin/leak.js is a symbolic link out of the plugin's folder (to "), "{e}");
        assert!(e.contains("secret.js"), "{e}");
        assert!(fs.files.values().all(|bytes| &**bytes != b"stolen"));
    }

    #[test]
    fn a_one_file_plugin_gets_its_file_and_packages_not_its_neighbours() {
        let dir = std::env::temp_dir().join(format!("codemode-folder-one-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("node_modules/zod")).unwrap();
        std::fs::create_dir_all(dir.join("private")).unwrap();
        std::fs::write(dir.join("deploy.mjs"), "export default {}").unwrap();
        std::fs::write(dir.join("other-plugin.mjs"), "export default {}").unwrap();
        std::fs::write(dir.join("package.json"), "{}").unwrap();
        std::fs::write(dir.join("node_modules/zod/index.js"), "export const z = 1").unwrap();
        std::fs::write(dir.join("private/creds.json"), "{\"token\": 1}").unwrap();
        let folder = PluginFolder::read(&dir, Some("deploy.mjs")).unwrap();
        let fs = &folder.fs;
        for kept in ["/plugin/deploy.mjs", "/plugin/package.json", "/plugin/node_modules/zod/index.js"] {
            assert!(fs.file(Path::new(kept)).is_ok(), "{kept}");
        }
        for left in ["/plugin/other-plugin.mjs", "/plugin/private/creds.json"] {
            assert!(fs.file(Path::new(left)).is_err(), "{left}");
        }
    }

    #[test]
    fn packages_above_the_folder_are_copied_up_to_the_bound_nearest_first() {
        let base = std::env::temp_dir().join(format!("codemode-folder-above-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let (home, plugin) = (base.join("home"), base.join("home/a/plugin"));
        for (path, text) in [
            (plugin.join("main.js"), "export {}"),
            (home.join("a/node_modules/near/index.js"), "near"),
            (home.join("node_modules/far/index.js"), "far"),
            (base.join("node_modules/outside/index.js"), "outside"),
        ] {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let (folder, above) = PluginFolder::read_packages_above(&plugin, None, Some(&home)).unwrap();
        assert_eq!(above.dirs, [PathBuf::from("/above/1/node_modules"), PathBuf::from("/above/2/node_modules")]);
        assert_eq!(&*folder.fs.file(Path::new("/above/1/node_modules/near/index.js")).unwrap(), b"near");
        assert_eq!(&*folder.fs.file(Path::new("/above/2/node_modules/far/index.js")).unwrap(), b"far");
        assert!(folder.fs.files.values().all(|bytes| &**bytes != b"outside"), "nothing above the bound is read");
        // Without a bound, or with one the folder is not inside, only the folder is read.
        for bound in [None, Some(base.join("elsewhere"))] {
            std::fs::create_dir_all(base.join("elsewhere")).unwrap();
            let (_, above) = PluginFolder::read_packages_above(&plugin, None, bound.as_deref()).unwrap();
            assert!(above.dirs.is_empty() && above.bound.is_none());
        }
    }

    #[test]
    fn paths_never_climb_above_the_folder() {
        let fs = MemoryFs::from_files(&[("a.js", "1")]);
        assert!(fs.metadata(Path::new("/plugin/../etc/passwd")).is_err());
        assert!(fs.metadata(Path::new("/plugin/x/../a.js")).unwrap().is_file());
    }
}

//! Seed 001's skills and agents, read from a plugin's folder ([`guidance`]) or from a
//! folder of Agent Skills ([`skills_folder`]), without running anything.
//!
//! Where it sits: [`crate::detect`] calls [`guidance`] for a `zhin` plugin and puts the
//! result in the layout `sandbox-worker detect` reports to the host, which keeps it in
//! its catalog beside the tools; the host reads a `[[skills]]` folder with
//! [`skills_folder`] (through the same `detect` process). The private tools of skills and
//! agents are found by `detect` itself (they are modules to load).
//!
//! `SKILL.md` starts with a front matter (`---` lines around `key: value` lines) whose
//! `name` and `description` are read (a value may be quoted, or folded over the indented
//! lines after `key: >`); the rest of the file is the skill's instructions.

use std::path::{Path, PathBuf};

use crate::detect::subdirs;
use protocol::skills::{Agent, Guidance, Skill, AGENT_FILES, AGENT_MANIFEST, MAIN_AGENT_FILE, SKILL_FILE};

/// The largest `SKILL.md`, agent file or `AGENTS.md` read.
pub const MAX_GUIDANCE_BYTES: u64 = 256 * 1024;

/// Why a skill or an agent cannot be read; names the file and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum GuidanceError {
    /// A file cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is there but its contents are wrong, or a required file is missing.
    #[error("{path}: {problem}")]
    Invalid {
        /// The file (or folder).
        path: PathBuf,
        /// What is wrong, and what to write.
        problem: String,
    },
}

/// The skills (`skills/<s>/SKILL.md`, `agents/<a>/skills/<s>/SKILL.md`), the agents
/// (`agents/<a>/` with its four files) and `AGENTS.md` of the plugin folder `root`.
pub fn guidance(root: &Path) -> Result<Guidance, GuidanceError> {
    let mut found = Guidance { main_agent: read_optional(&root.join(MAIN_AGENT_FILE))?, ..Guidance::default() };
    for skill in subdirs(&root.join("skills")) {
        found.skills.push(read_skill(root, &format!("skills/{skill}"), None)?);
    }
    for agent in subdirs(&root.join("agents")) {
        let folder = format!("agents/{agent}");
        found.agents.push(read_agent(root, &folder, &agent)?);
        for skill in subdirs(&root.join(&folder).join("skills")) {
            found.skills.push(read_skill(root, &format!("{folder}/skills/{skill}"), Some(&agent))?);
        }
    }
    Ok(found)
}

/// The Agent Skills of `dir` (each sub-folder with a `SKILL.md`; sub-folders without
/// one are not skills and are passed over), for `[[skills]] path = "..."`.
pub fn skills_folder(dir: &Path) -> Result<Vec<Skill>, GuidanceError> {
    if !dir.is_dir() {
        return Err(GuidanceError::Invalid {
            path: dir.into(),
            problem: "is not a folder: point `path` at a folder whose sub-folders each hold a SKILL.md".into(),
        });
    }
    let mut skills = Vec::new();
    for name in subdirs(dir) {
        if dir.join(&name).join(SKILL_FILE).is_file() {
            skills.push(read_skill(dir, &name, None)?);
        }
    }
    Ok(skills)
}

/// The skill in `root/folder`.
fn read_skill(root: &Path, folder: &str, agent: Option<&str>) -> Result<Skill, GuidanceError> {
    let path = root.join(folder).join(SKILL_FILE);
    let Some(text) = read_optional(&path)? else {
        return Err(GuidanceError::Invalid {
            path: root.join(folder),
            problem: format!(
                "a skill folder without {SKILL_FILE}: write one with a front matter (---, name: ..., description: ..., ---) and the skill's instructions"
            ),
        });
    };
    let (front, body) = front_matter(&text);
    let fallback = folder.rsplit('/').next().unwrap_or(folder).to_string();
    let name = front.iter().find(|(k, _)| k == "name").map(|(_, v)| v.clone()).unwrap_or(fallback);
    let Some(description) = front.iter().find(|(k, _)| k == "description").map(|(_, v)| v.clone()) else {
        return Err(GuidanceError::Invalid {
            path,
            problem: "its front matter has no `description`: say what the skill is for and when to load it (---, name: ..., description: ..., ---)".into(),
        });
    };
    Ok(Skill {
        name,
        description,
        instructions: body.trim().to_string(),
        folder: folder.to_string(),
        agent: agent.map(str::to_string),
    })
}

/// The sub-agent in `root/folder`.
fn read_agent(root: &Path, folder: &str, name: &str) -> Result<Agent, GuidanceError> {
    let dir = root.join(folder);
    let manifest_path = dir.join(AGENT_MANIFEST);
    let missing = |file: &str| GuidanceError::Invalid {
        path: dir.clone(),
        problem: format!(
            "an agent folder without {file}: every agent has {AGENT_MANIFEST}, {} (seed 001)",
            AGENT_FILES.join(", ")
        ),
    };
    let manifest_text = read_optional(&manifest_path)?.ok_or_else(|| missing(AGENT_MANIFEST))?;
    let manifest: serde_json::Value = serde_json::from_str(&manifest_text)
        .map_err(|e| GuidanceError::Invalid { path: manifest_path.clone(), problem: format!("is not JSON: {e}") })?;
    let mut texts = Vec::new();
    for file in AGENT_FILES {
        let text = read_optional(&dir.join(file))?.ok_or_else(|| missing(file))?;
        texts.push((file, text));
    }
    let first_line = texts
        .first()
        .and_then(|(_, t)| t.lines().map(|l| l.trim().trim_start_matches('#').trim()).find(|l| !l.is_empty()))
        .unwrap_or_default()
        .to_string();
    let description =
        manifest.get("description").and_then(serde_json::Value::as_str).map(str::to_string).unwrap_or(first_line);
    let tools = manifest
        .get("tools")
        .and_then(serde_json::Value::as_array)
        .map(|t| t.iter().filter_map(serde_json::Value::as_str).map(str::to_string).collect())
        .unwrap_or_default();
    let instructions = texts
        .iter()
        .filter(|(_, t)| !t.trim().is_empty())
        .map(|(file, t)| format!("## {name}: {file}\n\n{}", t.trim()))
        .collect::<Vec<_>>()
        .join("\n\n");
    Ok(Agent { name: name.to_string(), description, instructions, folder: folder.to_string(), tools })
}

/// A file's text, `None` when it is not there; larger than [`MAX_GUIDANCE_BYTES`] is an
/// error.
fn read_optional(path: &Path) -> Result<Option<String>, GuidanceError> {
    let metadata = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => m,
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(GuidanceError::Read { path: path.into(), source }),
    };
    if metadata.len() > MAX_GUIDANCE_BYTES {
        return Err(GuidanceError::Invalid {
            path: path.into(),
            problem: format!("is {} bytes, more than the {MAX_GUIDANCE_BYTES} codemode reads", metadata.len()),
        });
    }
    std::fs::read_to_string(path).map(Some).map_err(|source| GuidanceError::Read { path: path.into(), source })
}

/// The front matter's `key: value` pairs and the text after it (all of `text` when it
/// has none).
fn front_matter(text: &str) -> (Vec<(String, String)>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---").filter(|r| r.starts_with('\n') || r.starts_with("\r\n")) else {
        return (Vec::new(), text);
    };
    let rest = rest.trim_start_matches(['\r', '\n']);
    let (block, body) = match rest.find("\n---") {
        Some(end) => {
            let after = &rest[end + 4..];
            (&rest[..end], after.split_once('\n').map_or("", |(_, b)| b))
        }
        None => return (Vec::new(), text),
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut folding: Option<usize> = None;
    for line in block.lines() {
        let indented = line.starts_with(' ') || line.starts_with('\t');
        if let (true, Some(i)) = (indented, folding) {
            let joined = &mut pairs[i].1;
            if !joined.is_empty() {
                joined.push(' ');
            }
            joined.push_str(line.trim());
            continue;
        }
        folding = None;
        let Some((key, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if matches!(value, ">" | "|" | ">-" | "|-" | "") {
            folding = Some(pairs.len());
            pairs.push((key.trim().to_string(), String::new()));
            continue;
        }
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        pairs.push((key.trim().to_string(), unquoted.to_string()));
    }
    (pairs, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_front_matter_gives_name_and_description_and_the_rest_is_the_body() {
        let (front, body) =
            front_matter("---\nname: short-url\ndescription: \"Shorten links\"\n---\n# Use\nCall it.\n");
        assert_eq!(
            front,
            [("name".to_string(), "short-url".to_string()), ("description".to_string(), "Shorten links".to_string())]
        );
        assert_eq!(body, "# Use\nCall it.\n");
        let (front, _) = front_matter("---\ndescription: >\n  one\n  two\nname: x\n---\n");
        assert_eq!(front[0], ("description".to_string(), "one two".to_string()));
        assert_eq!(front_matter("# no front matter\n"), (Vec::new(), "# no front matter\n"));
    }
}

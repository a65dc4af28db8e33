//! Skill discovery and the catalog text for the system prompt.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One installed skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name, from the frontmatter (the directory's name when absent).
    pub name: String,
    /// One line on when to use it.
    pub description: String,
    /// Its directory, absolute.
    pub dir: PathBuf,
}

#[derive(Debug, Default, Deserialize)]
struct Frontmatter {
    name: Option<String>,
    description: Option<String>,
}

/// Splits `SKILL.md` into its frontmatter (YAML between `---` lines at the
/// top) and its body.
pub fn split_frontmatter(text: &str) -> (Option<&str>, &str) {
    let Some(rest) = text.strip_prefix("---\n").or_else(|| text.strip_prefix("---\r\n")) else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let body = &rest[offset + line.len()..];
            return (Some(&rest[..offset]), body.strip_prefix('\n').unwrap_or(body));
        }
        offset += line.len();
    }
    (None, text)
}

/// The skills under each base directory (`.../.iota/skills`), in order: a
/// name found earlier wins; within a base, sorted by name.
pub fn discover(bases: &[PathBuf]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    for base in bases {
        let Ok(entries) = std::fs::read_dir(base) else { continue };
        let mut found: Vec<Skill> = entries
            .flatten()
            .filter_map(|entry| {
                let dir = entry.path();
                let text = std::fs::read_to_string(dir.join("SKILL.md")).ok()?;
                let (front, _) = split_frontmatter(&text);
                let front: Frontmatter = front.and_then(|f| serde_yaml::from_str(f).ok()).unwrap_or_default();
                let name = front
                    .name
                    .filter(|n| !n.trim().is_empty())
                    .unwrap_or_else(|| entry.file_name().to_string_lossy().into_owned());
                Some(Skill {
                    name: name.trim().to_string(),
                    description: front.description.unwrap_or_default().trim().to_string(),
                    dir,
                })
            })
            .collect();
        found.sort_by(|a, b| a.name.cmp(&b.name));
        for skill in found {
            if !skills.iter().any(|s| s.name == skill.name) {
                skills.push(skill);
            }
        }
    }
    skills
}

/// The skill base directories for a project root and an optional home-level one.
pub fn bases(root: &Path, home_skills: Option<&Path>) -> Vec<PathBuf> {
    let mut bases = vec![root.join(".iota").join("skills")];
    bases.extend(home_skills.map(Path::to_path_buf));
    bases
}

/// The catalog the model reads in the system prompt; `None` without skills.
pub fn prompt(skills: &[Skill]) -> Option<String> {
    if skills.is_empty() {
        return None;
    }
    let mut text = String::from(
        "Skills are available: instructions and bundled files for particular tasks. When a task matches a skill's description, call load_skill with its name before starting, and follow what it says.\n\n<skills>\n",
    );
    for skill in skills {
        text.push_str(&format!("- {}: {}\n", skill.name, skill.description));
    }
    text.push_str("</skills>");
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_is_split_from_the_body() {
        let (front, body) = split_frontmatter("---\nname: x\ndescription: y\n---\n\n# Body\n");
        assert_eq!(front, Some("name: x\ndescription: y\n"));
        assert_eq!(body, "# Body\n");
        assert_eq!(split_frontmatter("# no front\n"), (None, "# no front\n"));
    }
}

//! Settings read from a directory of files, one setting a file (`SLAPROOF_SECRETS_DIR`): how Kubernetes mounts a Secret, so that secrets reach the process as files, never as environment variables a crash dump, `/proc/<pid>/environ` or a child process could show.

use std::path::Path;

use figment::Figment;
use figment::providers::Serialized;

use super::{ConfigError, SECTIONS};

/// The environment variable naming the directory.
pub(crate) const SECRETS_DIR_ENV: &str = "SLAPROOF_SECRETS_DIR";

/// `figment` with each file of `dir` merged as one setting: a file named
/// `<section>.<key>` (`database.url`, `webhooks.secret_key`) sets that key
/// to its content, its trailing line ends removed. Hidden entries (the
/// `..data` links of a Kubernetes volume) are skipped; any other name, or a
/// file that is not UTF-8, is refused, naming the file.
pub(crate) fn merge(mut figment: Figment, dir: &Path) -> Result<Figment, ConfigError> {
    let refuse = |reason: String| ConfigError::SecretsDir {
        dir: dir.to_owned(),
        reason,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| refuse(e.to_string()))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| refuse(e.to_string()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        // A Secret's files are links into `..data`: follow them.
        let metadata =
            std::fs::metadata(entry.path()).map_err(|e| refuse(format!("{name}: {e}")))?;
        if !metadata.is_file() {
            continue;
        }
        names.push(name);
    }
    // In a stable order, so that a refusal names the same file every time.
    names.sort();
    for name in names {
        let Some((section, key)) = name.split_once('.') else {
            return Err(refuse(format!(
                "{name}: a file is named after the setting it holds, `<section>.<key>` (e.g. database.url)"
            )));
        };
        if !SECTIONS.contains(&section) || key.is_empty() || key.contains('.') {
            return Err(refuse(format!(
                "{name}: not a setting (a file is named `<section>.<key>`, the section one of {})",
                SECTIONS.join(", ")
            )));
        }
        let bytes = std::fs::read(dir.join(&name)).map_err(|e| refuse(format!("{name}: {e}")))?;
        let text =
            String::from_utf8(bytes).map_err(|_| refuse(format!("{name}: not UTF-8 text")))?;
        let value = text.trim_end_matches(['\n', '\r']).to_owned();
        figment = figment.merge(Serialized::default(&name, value));
    }
    Ok(figment)
}

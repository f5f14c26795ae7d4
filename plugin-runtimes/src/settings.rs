//! Settings and secrets a plugin gets from its configuration entry: a JavaScript
//! plugin's `settings`, a process plugin's or MCP server's `env`.
//!
//! Each value is written in the file or read from the host's environment when the
//! plugin starts, so a secret never has to be in the configuration:
//!
//! ```toml
//! settings = { endpoint = "https://deploy.example.com", retries = 3, token = { env = "DEPLOY_TOKEN" } }
//! ```
//!
//! Values are never logged ([`SettingValue`]'s `Debug` hides them) and never reach
//! programs: the host hands them to the plugin (in `initialize`, or as the process's
//! environment) and to nothing else.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

/// One setting's value.
#[derive(Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    /// `{ env = "VAR" }`: the host's environment variable `VAR`, read at start.
    FromEnv {
        /// The variable's name.
        env: String,
    },
    /// A value written in the file (a string, number, boolean, list or table).
    Literal(Value),
}

impl std::fmt::Debug for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::FromEnv { env } => write!(f, "{{ env = {env:?} }}"),
            SettingValue::Literal(_) => f.write_str("<written in the configuration>"),
        }
    }
}

/// A setting that could not be given its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingError {
    /// The variable it names is not set.
    #[error("setting {name} reads the environment variable {variable}, which is not set; set it in the environment codemode starts in")]
    Unset {
        /// The setting.
        name: String,
        /// The variable.
        variable: String,
    },
    /// An environment variable must be text.
    #[error("env {name} must be text (a string, number or boolean), not a list or table")]
    NotText {
        /// The variable.
        name: String,
    },
}

impl SettingValue {
    /// The value, reading the environment through `lookup` when it names a variable.
    pub fn resolve(&self, name: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<Value, SettingError> {
        match self {
            SettingValue::Literal(value) => Ok(value.clone()),
            SettingValue::FromEnv { env } => lookup(env)
                .map(Value::String)
                .ok_or_else(|| SettingError::Unset { name: name.to_string(), variable: env.clone() }),
        }
    }
}

/// Every setting with its value, for a JavaScript plugin's `initialize`.
pub fn resolve_settings(
    settings: &BTreeMap<String, SettingValue>,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Map<String, Value>, SettingError> {
    settings.iter().map(|(name, value)| Ok((name.clone(), value.resolve(name, lookup)?))).collect()
}

/// Every variable with its text, for a process's environment.
pub fn resolve_env(
    env: &[(String, SettingValue)],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(String, String)>, SettingError> {
    env.iter()
        .map(|(name, value)| {
            let text = match value.resolve(name, lookup)? {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(SettingError::NotText { name: name.clone() }),
            };
            Ok((name.clone(), text))
        })
        .collect()
}

/// The host's own environment.
pub fn host_environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn parse(text: &str) -> BTreeMap<String, SettingValue> {
        #[derive(Deserialize)]
        struct Entry {
            settings: BTreeMap<String, SettingValue>,
        }
        toml::from_str::<Entry>(text).unwrap().settings
    }

    #[test]
    fn literals_and_environment_variables() {
        let settings = parse(
            "settings = { endpoint = \"https://x\", retries = 3, token = { env = \"TOKEN\" }, nested = { a = 1 } }",
        );
        let env = |name: &str| (name == "TOKEN").then(|| "s3cret".to_string());
        let resolved = resolve_settings(&settings, &env).unwrap();
        assert_eq!(
            Value::Object(resolved),
            serde_json::json!({ "endpoint": "https://x", "retries": 3, "token": "s3cret", "nested": { "a": 1 } })
        );
        let e = resolve_settings(&settings, &|_| None).unwrap_err();
        assert_eq!(e.to_string(), "setting token reads the environment variable TOKEN, which is not set; set it in the environment codemode starts in");
    }

    #[test]
    fn values_never_show_in_debug_output() {
        let settings = parse("settings = { token = \"s3cret\", key = { env = \"KEY\" } }");
        let shown = format!("{settings:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("{ env = \"KEY\" }"), "{shown}");
    }

    #[test]
    fn environment_values_are_text() {
        let env = vec![
            ("A".to_string(), SettingValue::Literal(serde_json::json!(3))),
            ("B".to_string(), SettingValue::Literal(serde_json::json!([1]))),
        ];
        let e = resolve_env(&env, &|_| None).unwrap_err();
        assert_eq!(e, SettingError::NotText { name: "B".into() });
        assert_eq!(resolve_env(&env[..1], &|_| None).unwrap(), [("A".to_string(), "3".to_string())]);
    }
}

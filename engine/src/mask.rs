//! Secrets out of a call's arguments, for what shows arguments to people: the audit log's
//! `arguments: redacted` lines and the live console of `toolgate serve`.
//!
//! Two things are masked. A field whose name is a secret's (`password`, `token`, ...; the
//! policy's `audit.secret_arguments`, at any depth, case-insensitive) has its whole value
//! replaced by `[REDACTED]`; every other string is run through the `redact:` patterns, the same
//! ones that mask results (`[REDACTED:<name>]`). Arguments that are not JSON are masked as text.

use std::sync::Arc;

use serde_json::{Map, Value};
use toolgate_policy::{AuditSettings, Policy};

use crate::guard::RedactLayer;

/// Masks the secrets in call arguments (see the module).
pub struct ArgumentMasker {
    secret_fields: Vec<String>,
    patterns: Option<Arc<RedactLayer>>,
}

impl ArgumentMasker {
    /// The masker of `policy`: the field names of its `audit.secret_arguments` (the default
    /// list without an `audit:` section) and the patterns of its `redact:` section (none
    /// without one).
    pub fn for_policy(policy: &Policy) -> Self {
        let secret_fields = match &policy.audit {
            Some(audit) => audit.secret_arguments.clone(),
            None => AuditSettings::default().secret_arguments,
        };
        let patterns = policy
            .redact
            .as_ref()
            .and_then(RedactLayer::new)
            .map(Arc::new);
        ArgumentMasker::new(secret_fields, patterns)
    }

    pub(crate) fn new(secret_fields: Vec<String>, patterns: Option<Arc<RedactLayer>>) -> Self {
        ArgumentMasker {
            secret_fields,
            patterns,
        }
    }

    /// The arguments `raw` (a JSON text) with secret fields and secrets masked; the raw text,
    /// masked, as a JSON string when it is not JSON.
    pub fn arguments(&self, raw: &str) -> Value {
        match serde_json::from_str::<Value>(raw) {
            Ok(mut value) => {
                self.mask_value(&mut value);
                value
            }
            Err(_) => {
                let mut text = raw.to_owned();
                self.text(&mut text);
                Value::String(text)
            }
        }
    }

    /// Masks what the `redact:` patterns find in `text`; answers how many masks.
    pub fn text(&self, text: &mut String) -> u64 {
        self.patterns.as_ref().map_or(0, |p| p.mask(text))
    }

    fn mask_value(&self, value: &mut Value) {
        match value {
            Value::Object(map) => self.mask_object(map),
            Value::Array(items) => items.iter_mut().for_each(|i| self.mask_value(i)),
            Value::String(s) => {
                self.text(s);
            }
            _ => {}
        }
    }

    fn mask_object(&self, map: &mut Map<String, Value>) {
        for (key, value) in map.iter_mut() {
            let secret = self
                .secret_fields
                .iter()
                .any(|s| s.eq_ignore_ascii_case(key));
            if secret {
                *value = Value::String("[REDACTED]".to_owned());
            } else {
                self.mask_value(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_fields_at_any_depth_and_secrets_in_strings_are_masked() {
        let policy =
            toolgate_policy::load_str("version: 1\nredact: {}\n", std::path::Path::new("p.yaml"))
                .unwrap();
        let masker = ArgumentMasker::for_policy(&policy);
        let key = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
        let raw = format!(
            r#"{{"user":"ann","Password":"hunter2","deep":{{"api_key":"k"}},"note":"use {key}"}}"#
        );
        let masked = masker.arguments(&raw);
        assert_eq!(masked["user"], "ann");
        assert_eq!(masked["Password"], "[REDACTED]");
        assert_eq!(masked["deep"]["api_key"], "[REDACTED]");
        let note = masked["note"].as_str().unwrap();
        assert!(note.starts_with("use [REDACTED:"), "{note}");
        assert!(!note.contains(key), "{note}");
    }

    #[test]
    fn arguments_that_are_not_json_are_masked_as_text() {
        let masker = ArgumentMasker::for_policy(&Policy::default());
        assert_eq!(
            masker.arguments("{not json"),
            Value::String("{not json".into())
        );
    }
}

//! The label that names a database in its log lines (`job=…, op=…, subtask=…, attempt=…`), from
//! the `log.*` keys of `ForStNative.open`'s options, and the `tracing` span that carries it: work
//! done for the database (its background threads, the natives called on it, its open) runs in
//! that span, and the forwarding layer puts the label in front of every event inside it.

use tracing::Span;

use crate::{Error, Result};

/// Prefix of the options that name the database in logs (not engine options: the Java backend
/// sets them from the task, users do not).
pub const KEY_PREFIX: &str = "log.";

/// Name of the span's field that holds the label (the layer looks for it).
pub const SPAN_FIELD: &str = "db";

/// The label's parts, in the order they are written, by option key.
const PARTS: [(&str, &str); 4] = [
    ("log.job", "job"),
    ("log.operator", "op"),
    ("log.subtask", "subtask"),
    ("log.attempt", "attempt"),
];

/// The parts of a database's label given so far.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DbLabel {
    values: [Option<String>; PARTS.len()],
}

impl DbLabel {
    /// Takes one `log.*` option; an unknown key is an error that names it.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let Some(i) = PARTS.iter().position(|(k, _)| *k == key) else {
            let known: Vec<&str> = PARTS.iter().map(|(k, _)| *k).collect();
            return Err(Error::invalid(format!(
                "unknown option '{key}' (known log options: {})",
                known.join(", ")
            )));
        };
        let value = value.trim();
        self.values[i] = (!value.is_empty()).then(|| value.to_string());
        Ok(())
    }

    /// `job=…, op=…, subtask=…, attempt=…` with the parts given, or None if none is.
    pub fn text(&self) -> Option<String> {
        let parts: Vec<String> = PARTS
            .iter()
            .zip(&self.values)
            .filter_map(|((_, name), value)| value.as_ref().map(|v| format!("{name}={v}")))
            .collect();
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    /// The span of the database's work: disabled (free to enter) without a label or while no
    /// subscriber logs anything. At ERROR level so that it is on whenever any event is.
    pub fn span(&self) -> Span {
        match self.text() {
            Some(text) => tracing::error_span!("forst_db", db = %text),
            None => Span::none(),
        }
    }
}

/// `message` as logged on behalf of the database labelled `label` (none: outside any database).
pub fn prefixed(label: Option<&str>, message: &str) -> String {
    match label {
        Some(label) => format!("[{label}] {message}"),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(pairs: &[(&str, &str)]) -> DbLabel {
        let mut label = DbLabel::default();
        for (key, value) in pairs {
            label.set(key, value).unwrap();
        }
        label
    }

    #[test]
    fn names_job_operator_subtask_and_attempt_in_that_order() {
        let label = label(&[
            ("log.attempt", "0"),
            ("log.subtask", "1"),
            ("log.operator", "count_per_key_(2/2)"),
            ("log.job", "8e0f3c2a9d1b4c5e6f708192a3b4c5d6"),
        ]);
        let text = label.text().unwrap();
        assert_eq!(
            text,
            "job=8e0f3c2a9d1b4c5e6f708192a3b4c5d6, op=count_per_key_(2/2), subtask=1, attempt=0"
        );
        assert_eq!(
            prefixed(Some(&text), "retrying read (1/4): timed out"),
            "[job=8e0f3c2a9d1b4c5e6f708192a3b4c5d6, op=count_per_key_(2/2), subtask=1, \
             attempt=0] retrying read (1/4): timed out"
        );
    }

    #[test]
    fn parts_not_given_are_left_out() {
        assert_eq!(
            label(&[("log.subtask", "3"), ("log.job", "j")]).text().unwrap(),
            "job=j, subtask=3"
        );
        assert_eq!(label(&[("log.job", "  ")]).text(), None, "blank is not given");
        assert_eq!(DbLabel::default().text(), None);
        assert!(DbLabel::default().span().is_none());
    }

    #[test]
    fn events_outside_a_database_have_no_prefix() {
        assert_eq!(prefixed(None, "disk cache: dropping x"), "disk cache: dropping x");
    }

    #[test]
    fn unknown_log_keys_fail_naming_the_key() {
        let error = DbLabel::default().set("log.jobs", "x").unwrap_err().to_string();
        assert!(error.contains("'log.jobs'") && error.contains("log.job"), "{error}");
    }
}

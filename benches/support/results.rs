//! A bench's parameters and measurements as JSON lines in the file `BENCH_MEASUREMENTS` names
//! (set by the scripts; without it nothing is written), which scripts/lib/bench_results.py turns
//! into a result file under bench-results/ with the date, commit and machine. The format is that
//! script's: a measurement's `value` is the median of its `rounds` when it has some, `better`
//! says which way is better, and the ratio to a baseline is worked out there.

// Each bench uses the part it needs.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::io::Write as _;

/// A JSON value, written by hand: the benches need numbers, strings and lists of numbers only.
pub enum Value {
    Num(f64),
    Text(String),
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Num(v)
    }
}

impl From<u64> for Value {
    fn from(v: u64) -> Self {
        Value::Num(v as f64)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Text(v.to_string())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Text(v)
    }
}

fn num(v: f64) -> String {
    // JSON has no NaN or infinity; Rust's Display never uses an exponent.
    if v.is_finite() { format!("{v}") } else { "null".into() }
}

fn text(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => write!(out, "\\u{:04x}", c as u32).unwrap(),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn value(v: &Value) -> String {
    match v {
        Value::Num(n) => num(*n),
        Value::Text(s) => text(s),
    }
}

fn list(values: &[f64]) -> String {
    format!("[{}]", values.iter().map(|v| num(*v)).collect::<Vec<_>>().join(", "))
}

fn object(fields: &[(String, String)]) -> String {
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("{}: {v}", text(k))).collect();
    format!("{{{}}}", body.join(", "))
}

fn append(line: String) {
    let Ok(path) = std::env::var("BENCH_MEASUREMENTS") else { return };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("BENCH_MEASUREMENTS {path}: {e}"));
    writeln!(file, "{line}").unwrap();
}

/// Records the run's parameters.
pub fn parameters(pairs: &[(&str, Value)]) {
    let fields = pairs.iter().map(|(k, v)| (k.to_string(), value(v))).collect::<Vec<_>>();
    append(object(&[("parameters".into(), object(&fields))]));
}

/// One measurement, recorded by [`Measurement::record`].
pub struct Measurement {
    fields: Vec<(String, String)>,
    labels: Vec<(String, String)>,
}

impl Measurement {
    /// `better_higher`: a rate (true) or a time or size (false).
    pub fn new(name: &str, unit: &str, better_higher: bool) -> Self {
        let better = if better_higher { "higher" } else { "lower" };
        Measurement {
            fields: vec![
                ("name".into(), text(name)),
                ("unit".into(), text(unit)),
                ("better".into(), text(better)),
            ],
            labels: Vec::new(),
        }
    }

    fn field(mut self, key: &str, json: String) -> Self {
        self.fields.push((key.into(), json));
        self
    }

    pub fn subject(self, subject: &str) -> Self {
        self.field("subject", text(subject))
    }

    /// The single figure, or the median when the rounds are given too.
    pub fn value(self, v: f64) -> Self {
        self.field("value", num(v))
    }

    pub fn rounds(self, rounds: &[f64]) -> Self {
        self.field("rounds", list(rounds))
    }

    /// The baseline the ratio is against: its name and its median, with its rounds if any.
    pub fn baseline(self, name: &str, median: f64, rounds: &[f64]) -> Self {
        let mut fields = vec![("name".into(), text(name)), ("value".into(), num(median))];
        if !rounds.is_empty() {
            fields.push(("rounds".into(), list(rounds)));
        }
        self.field("baseline", object(&fields))
    }

    /// Ratios measured in turns (ours vs the baseline in the same turn, > 1: ours is better) and
    /// their median, when the ratio is not just the ratio of the medians.
    pub fn ratio_rounds(self, median: f64, ratios: &[f64]) -> Self {
        self.field("ratio", num(median)).field("ratio_rounds", list(ratios))
    }

    /// A dimension charts and tables group by (state size, place, threads).
    pub fn label(mut self, key: &str, v: impl Into<Value>) -> Self {
        self.labels.push((key.into(), value(&v.into())));
        self
    }

    pub fn record(mut self) {
        if !self.labels.is_empty() {
            let labels = object(&self.labels);
            self.fields.push(("labels".into(), labels));
        }
        append(object(&self.fields));
    }
}

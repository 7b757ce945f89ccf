//! Golden results: every case in `tests/golden/*.json` (at the repository root) runs again from
//! its stored scenario and must give exactly the stored event count and summary.
//!
//! The files are written by `python tests/golden/cases.py`; a change that alters one is a bug or a
//! deliberate fix, regenerated in a commit of its own that says why. Cases driven from Python
//! through the agent bridge (`"bridge"` in the record) are checked by `tests/test_golden.py` only.

use ccgym_sim::Simulation;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

/// The first differences between two JSON values, as `path: expected != got` lines.
fn diff(path: &str, want: &Value, got: &Value, out: &mut Vec<String>) {
    if out.len() >= 20 {
        return;
    }
    match (want, got) {
        (Value::Object(a), Value::Object(b)) => {
            for (k, va) in a {
                match b.get(k) {
                    Some(vb) => diff(&format!("{path}.{k}"), va, vb, out),
                    None => out.push(format!("{path}.{k}: missing")),
                }
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{path}.{k}: unexpected"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (va, vb)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}[{i}]"), va, vb, out);
            }
        }
        _ if want != got => out.push(format!("{path}: {want} != {got}")),
        _ => {}
    }
}

#[test]
fn golden_summaries_are_unchanged() {
    let root = repo_root();
    let dir = root.join("tests/golden");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/golden")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(files.len() >= 12, "expected the golden cases in {}", dir.display());
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in &files {
        let record: Value = serde_json::from_str(&std::fs::read_to_string(file).expect("read")).expect("JSON");
        if record.get("bridge").is_some() {
            continue;
        }
        let name = record["case"].as_str().expect("case name");
        let mut sim = Simulation::from_json(&record["scenario"].to_string(), &root).expect("valid scenario");
        sim.run_until(u64::MAX);
        // Through text, as Python receives it: the stored floats are what serde_json printed.
        let summary: Value = serde_json::from_str(&sim.summary().to_string()).expect("summary JSON");
        let mut lines = Vec::new();
        if record["events"].as_u64() != Some(sim.event_count()) {
            lines.push(format!("events: {} != {}", record["events"], sim.event_count()));
        }
        diff("summary", &record["summary"], &summary, &mut lines);
        if !lines.is_empty() {
            failures.push(format!("{name}:\n  {}", lines.join("\n  ")));
        }
        checked += 1;
    }
    assert!(checked >= 12, "only {checked} golden cases ran");
    assert!(failures.is_empty(), "golden results changed (expected != got):\n{}", failures.join("\n"));
}

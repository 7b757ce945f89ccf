//! Times of the run: a metrics window and workload start and stop times written
//! relative to the run follow `duration`; absolute ones past the end are one
//! error that names every one of them.

use ccgym_sim::units::MS;
use ccgym_sim::Simulation;
use serde_json::{json, Value};
use std::path::Path;

fn build(scenario: &Value) -> Result<Simulation, String> {
    Simulation::from_json(&scenario.to_string(), Path::new(".")).map_err(|e| e.to_string())
}

fn error_of(scenario: &Value) -> String {
    match build(scenario) {
        Ok(_) => panic!("scenario should be rejected: {scenario}"),
        Err(e) => e,
    }
}

/// Two long flows into host 0 and one explicit flow, with the given times.
fn scenario(duration: &str, window: Value, start: Value, stop: Value, flow: Value) -> Value {
    json!({
        "duration": duration,
        "topology": {"kind": "star", "hosts": 4, "link_rate": "100Gbps", "link_delay": "1us"},
        "metrics": {"window": window},
        "workload": [
            {"kind": "long", "receiver": 0, "senders": [1, 2], "start": start, "stop": stop},
            {"kind": "flows", "flows": [flow]},
        ],
    })
}

fn relative(duration: &str) -> Value {
    scenario(
        duration,
        json!(["25%", "85%"]),
        json!(["1%", "2%"]),
        json!("85%"),
        json!({"src": 3, "dst": 0, "start": "10%", "stop": "end"}),
    )
}

#[test]
fn relative_times_follow_the_duration() {
    for (duration, d) in [("200ms", 200 * MS), ("20ms", 20 * MS), ("1ms", MS)] {
        let sim = build(&relative(duration)).expect("relative times always fit the run");
        assert_eq!(sim.window(), (d / 4, d * 85 / 100), "window at duration {duration}");
        let flows = sim.flows();
        assert_eq!(flows.len(), 3);
        for f in &flows[..2] {
            assert!(f.path.start >= d / 100 && f.path.start <= d / 50, "start {} in [1%, 2%]", f.path.start);
            assert_eq!(f.path.stop, Some(d * 85 / 100));
        }
        assert_eq!((flows[2].path.start, flows[2].path.stop), (d / 10, Some(d)));
    }
}

#[test]
fn relative_and_absolute_times_give_the_same_run() {
    let absolute = scenario(
        "2ms",
        json!(["500us", "1.7ms"]),
        json!(["20us", "40us"]),
        json!("1.7ms"),
        json!({"src": 3, "dst": 0, "start": "200us", "stop": "2ms"}),
    );
    let mut runs = vec![];
    for sc in [absolute, relative("2ms")] {
        let mut sim = build(&sc).unwrap();
        sim.run_until(u64::MAX);
        runs.push(sim.summary());
    }
    assert_eq!(runs[0], runs[1]);
    assert!(runs[0]["events"].as_u64().unwrap() > 1000);
}

#[test]
fn a_shortened_run_names_every_time_past_its_end_and_values_that_work() {
    // A 200 ms scenario written with absolute times, shortened to 20 ms.
    let sc = scenario(
        "20ms",
        json!(["50ms", "170ms"]),
        json!(["1ms", "30ms"]),
        json!("170ms"),
        json!({"src": 3, "dst": 0, "start": "25ms", "stop": "180ms"}),
    );
    let e = error_of(&sc);
    assert!(
        e.starts_with("metrics.window: value [50ms, 170ms]: ends after the end of the run (duration = 20ms)"),
        "{e}"
    );
    for every in [
        "metrics.window = [50ms, 170ms] (would work: [\"0s\", \"end\"])",
        "workload[0].start = [1ms, 30ms] (would work: [\"1ms\", \"end\"])",
        "workload[0].stop = 170ms (would work: \"end\")",
        "workload[1].flows[0].start = 25ms (would work: a time before 20ms)",
        "workload[1].flows[0].stop = 180ms (would work: \"end\")",
        "make duration at least 180ms",
        "\"85%\", \"end\"",
    ] {
        assert!(e.contains(every), "error `{e}` should contain `{every}`");
    }
    // The values it proposes work.
    let fixed = scenario(
        "20ms",
        json!(["0s", "end"]),
        json!(["1ms", "end"]),
        json!("end"),
        json!({"src": 3, "dst": 0, "start": "19ms", "stop": "end"}),
    );
    build(&fixed).expect("the proposed values fit the run");
}

#[test]
fn one_time_past_the_end_is_named_alone() {
    let sc = scenario("20ms", json!(["1ms", "end"]), json!("1ms"), json!("21ms"), json!({"src": 3, "dst": 0}));
    let e = error_of(&sc);
    assert!(e.starts_with("workload[0].stop: value 21ms: is after the end of the run (duration = 20ms)"), "{e}");
    assert!(!e.contains("metrics.window ="), "{e}");
}

#[test]
fn malformed_relative_times_are_errors_naming_the_field() {
    let cases = [
        (json!(["25%", "101%"]), "metrics.window[1]", "from 0% to 100%"),
        (json!(["end", "end"]), "metrics.window", "start must be before end"),
        (json!(["90%", "10%"]), "metrics.window", "(here 18ms and 2ms)"),
        (json!(["x%", "end"]), "metrics.window[0]", "percentage"),
        (json!(["1 parsec", "end"]), "metrics.window[0]", "\"end\""),
    ];
    for (window, field, text) in cases {
        let sc = scenario("20ms", window, json!("0s"), json!("end"), json!({"src": 3, "dst": 0}));
        let e = error_of(&sc);
        assert!(e.starts_with(field), "error `{e}` should start with `{field}`");
        assert!(e.contains(text), "error `{e}` should mention `{text}`");
    }
    let starts = [
        (json!("2 parsecs"), "workload[0].start: value \"2 parsecs\": unknown time unit"),
        (json!(["1ms", "x%"]), "workload[0].start[1]: value \"x%\": expected a percentage"),
        (json!(["1ms"]), "workload[0].start: invalid length 1, expected a range of two times"),
        (json!(true), "workload[0].start: invalid type: boolean `true`, expected a time"),
    ];
    for (start, text) in starts {
        let e = error_of(&scenario("20ms", json!(["0s", "end"]), start, json!("end"), json!({"src": 3, "dst": 0})));
        assert!(e.starts_with(text), "error `{e}` should start with `{text}`");
    }
    // A start relative to the run is a time in it; a stop before it is still caught.
    let sc = scenario("20ms", json!(["0s", "end"]), json!("50%"), json!("40%"), json!({"src": 3, "dst": 0}));
    let e = error_of(&sc);
    assert!(e.starts_with("workload[0].stop") && e.contains("must not be before the start"), "{e}");
}

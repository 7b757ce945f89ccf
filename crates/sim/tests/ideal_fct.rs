//! The ideal FCT behind every slowdown: a lower bound that a flow alone in
//! the network meets closely, with packet spraying over an oversubscribed
//! fabric too.

mod common;
use common::{build, HEADER, PAYLOAD};

use serde_json::json;

#[test]
fn a_sprayed_flow_over_a_slow_fabric_is_not_faster_than_its_ideal() {
    // 400 Gb/s hosts on a 40 Gb/s fabric with 4 spines: a sprayed flow
    // crosses the fabric over 4 links at once (160 Gb/s), so one path's
    // 40 Gb/s is not its bottleneck. The flow sends at 150 Gb/s and its
    // receiver keeps data that sprayed packets deliver out of order
    // (pFabric's transport). Alone in the network it takes a little more
    // than its ideal, never less (with one path's 40 Gb/s as the bottleneck,
    // the ideal would be four times too long and the slowdown 0.27).
    for spray in ["packet", "flow"] {
        let sc = json!({
            "duration": "1ms",
            "topology": {"kind": "leaf_spine", "leaves": 2, "spines": 4, "hosts_per_leaf": 1,
                         "link_rate": "400Gbps", "fabric_rate": "40Gbps", "link_delay": "1us"},
            "switch": {"load_balancing": spray},
            "packets": {"payload": PAYLOAD, "header": HEADER},
            "host": {"loss_recovery": "pfabric"},
            "cc": {"algorithm": "fixed_rate", "rate": "150Gbps"},
            "workload": [{"kind": "flows", "flows": [{"src": 0, "dst": 1, "size": "1MB"}]}],
        });
        let mut sim = build(&sc);
        sim.run_until(u64::MAX);
        let f = &sim.flows()[0];
        let Some(done) = f.snd.finished else {
            panic!("{spray}: not complete, {} of {} acked", f.ctl.snd_una, f.ctl.size)
        };
        let fct = (done - f.path.start) as f64;
        let ideal = f.stats.ideal_fct as f64;
        let slowdown = fct / ideal;
        assert!((1.0..1.2).contains(&slowdown), "{spray}: FCT {fct} ps, ideal {ideal} ps");
        // At one path's 40 Gb/s, 1 MB takes 200 us; sprayed at 150 Gb/s, about 66.
        let at_40g = 1e6 * 8.0 / 40e9 * 1e12;
        if spray == "packet" {
            assert!(fct < 0.4 * at_40g, "sprayed: {fct} ps");
        } else {
            assert!(fct > at_40g, "one path: {fct} ps");
        }
    }
}

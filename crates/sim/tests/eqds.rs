//! EQDS end to end: a speculative window until the first feedback, then
//! pulls paced by the receiver for the pulls the sender declares it wants;
//! NDP's trimming switches, NACKs and resends.

mod common;
use common::{conserved, port, run_to_end as run, trimming_star as star, PAYLOAD, WIRE};

use ccgym_sim::Simulation;
use serde_json::{json, Value};

#[test]
fn incast_completes_at_line_rate_with_cuts_and_no_drops() {
    let flows: Vec<Value> = (1..=32).map(|i| json!({"src": i, "dst": 0, "size": "200KB"})).collect();
    let sim = run(&star(33, json!(flows), "eqds"));
    let down = &sim.ports()[port(&sim, "sw0->h0")];
    assert!(down.stats.trims > 100, "32 speculative windows into 8 packets: {} cut", down.stats.trims);
    assert_eq!(down.stats.drops, 0);
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.timeouts, 0, "cut packets are resent on NACKs and pulls, not timeouts");
    }
    let last = sim.flows().iter().map(|f| f.snd.finished.unwrap()).max().unwrap();
    let line = (32 * 200_000u64.div_ceil(PAYLOAD) * WIRE) as f64 * 8.0 / 10e9 * 1e12;
    assert!((last as f64) < 1.03 * line, "last completion {last} ps vs {line} ps at line rate");
    assert!(conserved(&sim));
}

#[test]
fn the_receiver_pulls_exactly_what_the_sender_still_wants() {
    // One 2 MB flow: it sends its window speculatively, and the receiver
    // then issues one pull per packet left: no pull is wasted (NDP pulls once
    // per arrival, so its last window's pulls find nothing to send). Slow
    // pulls, off here, come on top (next test).
    let pulls = |cc: &str| {
        let mut sc = star(2, json!([{"src": 1, "dst": 0, "size": "2MB"}]), cc);
        sc["host"] = json!({"eqds_slow_pulls": false});
        let sim = run(&sc);
        let f = &sim.flows()[0];
        assert!(f.snd.finished.is_some());
        let n = f.nd.as_ref().unwrap();
        (n.pull_no, n.window as u64)
    };
    let pkts = 2_000_000u64.div_ceil(PAYLOAD);
    let (eqds, window) = pulls("eqds");
    assert_eq!(eqds, pkts - window, "one pull per packet not sent speculatively");
    let (ndp, iw) = pulls("ndp");
    assert!(ndp > pkts - iw, "NDP pulls once per arrival: {ndp} for {} pulled packets", pkts - iw);
}

#[test]
fn slow_pulls_go_only_to_idle_flows_and_at_most_a_window_beyond_their_demand() {
    let with = |slow: bool, flows: Value, hosts: u32| {
        let mut sc = star(hosts, flows, "eqds");
        sc["host"] = json!({"eqds_slow_pulls": slow});
        run(&sc)
    };
    // One flow: whenever its demand is met and nothing else waits, the
    // pacer hands it pulls it did not ask for, a window at most beyond its
    // target, and the flow finishes no later for them.
    let one = json!([{"src": 1, "dst": 0, "size": "2MB"}]);
    let (on, off) = (with(true, one.clone(), 2), with(false, one, 2));
    let (f_on, f_off) = (&on.flows()[0], &off.flows()[0]);
    let (n_on, n_off) = (f_on.nd.as_ref().unwrap(), f_off.nd.as_ref().unwrap());
    assert!(n_on.pull_no > n_off.pull_no, "slow pulls: {} against {}", n_on.pull_no, n_off.pull_no);
    assert!(n_on.pull_no <= n_on.pull_target + n_on.window as u64);
    assert!(f_on.snd.finished.unwrap() <= f_off.snd.finished.unwrap());
    assert!(conserved(&on));
    // An incast: some flow wants a pull until the last packet is pulled, so
    // slow pulls come only while the last packets are on their way, and
    // every flow completes at the same picosecond.
    let incast: Vec<Value> = (1..=8).map(|i| json!({"src": i, "dst": 0, "size": "200KB"})).collect();
    let (on, off) = (with(true, json!(incast.clone()), 9), with(false, json!(incast), 9));
    let mut slow = 0;
    for (a, b) in on.flows().iter().zip(off.flows()) {
        assert_eq!(a.snd.finished, b.snd.finished);
        let (na, nb) = (a.nd.as_ref().unwrap(), b.nd.as_ref().unwrap());
        assert!(na.pull_no >= nb.pull_no && na.pull_no <= nb.pull_no + na.window as u64);
        slow += na.pull_no - nb.pull_no;
    }
    assert!(slow < 8 * 8, "{slow} slow pulls at the end of the incast");
}

#[test]
fn speculation_stops_at_the_first_feedback() {
    // Two senders into one receiver, each with a window of 100 packets, ten
    // times the path's BDP. NDP senders put their whole initial windows on
    // the wire, and the receiver's 8-packet port cuts most of them; EQDS
    // senders stop speculating when their first ACK arrives, about one round
    // trip (9 packet times) after they started.
    let run_with = |cc: &str| {
        let flows = json!([{"src": 1, "dst": 0, "size": "1MB"}, {"src": 2, "dst": 0, "size": "1MB"}]);
        let mut sc = star(3, flows, cc);
        sc["host"] = json!({"eqds_window": 100, "ndp_iw": 100});
        let sim = run(&sc);
        let mut unpulled = 0;
        for f in sim.flows() {
            assert!(f.snd.finished.is_some());
            unpulled += f.stats.sent_bytes.div_ceil(WIRE) - f.nd.as_ref().unwrap().pulls_spent;
        }
        (unpulled, sim.ports()[port(&sim, "sw0->h0")].stats.trims)
    };
    let (eqds_unpulled, eqds_cut) = run_with("eqds");
    assert!((16..=24).contains(&eqds_unpulled), "EQDS sent {eqds_unpulled} packets before its first feedback");
    let (ndp_unpulled, ndp_cut) = run_with("ndp");
    assert_eq!(ndp_unpulled, 200, "NDP sends its whole windows");
    assert!(ndp_cut > 150 && eqds_cut < 10, "cut: NDP {ndp_cut}, EQDS {eqds_cut}");
}

#[test]
fn a_speculation_cut_short_declares_what_is_left() {
    // One host starts a 2 MB flow and a 10-packet flow to two receivers at
    // once; its NIC alternates between them packet by packet, so the short
    // flow's first ACK comes back (about 9 packet times later) before its
    // window of 10 went out. That ACK ends its speculation with packets
    // unsent and no credit: it declares them in an RTS, is pulled, and
    // completes within a few round trips.
    let flows = json!([{"src": 1, "dst": 0, "size": "2MB"}, {"src": 1, "dst": 2, "size": 14600}]);
    let mut sc = star(3, flows, "eqds");
    sc["host"] = json!({"burst": WIRE, "eqds_window": 10});
    let sim = run(&sc);
    let short = &sim.flows()[1];
    let n = short.nd.as_ref().unwrap();
    assert!(n.pulls_spent > 0, "part of the short flow went on pulls");
    let fct = short.snd.finished.expect("the short flow completes") - short.path.start;
    assert!(fct < 5 * short.ctl.base_rtt, "{fct} ps, base RTT {} ps", short.ctl.base_rtt);
    assert!(sim.flows()[0].snd.finished.is_some());
}

#[test]
fn bad_eqds_window_is_refused() {
    for v in [0, 2000] {
        let mut sc = star(3, json!([{"src": 1, "dst": 0, "size": "10KB"}]), "eqds");
        sc["host"] = json!({"eqds_window": v});
        let err = Simulation::from_json(&sc.to_string(), std::path::Path::new(".")).err().expect("refused");
        assert!(err.to_string().contains("host.eqds_window"), "{err}");
    }
}

#[test]
fn waiting_for_pulls_is_not_a_timeout() {
    // 50 senders of one speculative packet each into a receiver that pulls
    // at 5 % of its link, round robin: each flow gets one pull per 1.2 ms,
    // longer than its 500 us timeout, with nothing in flight (its ports hold
    // the speculative packets, so nothing is cut). That is waiting, not a
    // loss: the flow declares its demand again (an RTS) but counts no
    // timeout, and nothing is resent.
    let flows: Vec<Value> = (1..=50).map(|i| json!({"src": i, "dst": 0, "size": 10 * PAYLOAD})).collect();
    let mut sc = star(51, json!(flows), "eqds");
    sc["switch"]["port_buffer"] = json!(100 * WIRE);
    sc["host"] = json!({"rto": "500us", "eqds_window": 1, "ndp_pull_rate": 0.05});
    let sim = run(&sc);
    let mut resent = 0;
    for f in sim.flows() {
        assert!(f.snd.finished.is_some(), "every flow completes");
        assert_eq!(f.stats.timeouts, 0, "a flow waiting for pulls lost nothing");
        resent += f.stats.retx_bytes;
    }
    assert_eq!(resent, 0, "nothing was resent");
    assert_eq!(sim.ports()[port(&sim, "sw0->h0")].stats.trims, 0);
    assert!(conserved(&sim));
}

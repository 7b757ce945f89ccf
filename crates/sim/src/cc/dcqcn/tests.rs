//! Unit tests of DCQCN: both reaction points step by step against hand computation, the lazy
//! increase against a timer-driven one, and parameter parsing.

use super::*;
use crate::cc::FlowCtl;
use crate::units::US;

const LINE: f64 = 100e9;

fn flow() -> FlowCtl {
    FlowCtl::at_line_rate(LINE, LINE * 64.0 / 1_048_576.0, 4 * US, 1024)
}

/// A started flow whose next packet waits in the pacer for ever, so that
/// every increase event runs on its timer (see "Lazy rate increase").
fn started(cfg: DcqcnConfig, fl: &mut FlowCtl) -> Dcqcn {
    let mut d = Dcqcn::new(Arc::new(cfg));
    d.on_start(&mut CcCtx { now: 0, flow: fl });
    d.next_send = 1e30;
    d
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

/// Fires the core timer the way the simulator does.
fn fire(d: &mut Dcqcn, fl: &mut FlowCtl) -> Time {
    let at = fl.timer.take().expect("a timer is armed");
    d.on_timer(&mut CcCtx { now: at, flow: fl });
    at
}

#[test]
fn paper_cut_then_fast_recovery_follow_the_formulas() {
    let mut fl = flow();
    let mut d = started(DcqcnConfig::paper(), &mut fl);
    let g = 1.0 / 256.0;
    // First CNP at 10 us: Rt = Rc = line, Rc = line (1 - 1/2), alpha = (1-g) + g = 1.
    d.on_cnp(&mut CcCtx { now: 10 * US, flow: &mut fl });
    assert!(close(d.rt, LINE));
    assert!(close(d.rc, 50e9));
    assert!(close(fl.rate, 50e9));
    assert!(close(d.alpha, 1.0));
    assert_eq!(fl.timer, Some(10 * US + 55 * US));
    // Second CNP 120 us later: two alpha periods (55 us) passed without CNP.
    let now = 130 * US;
    let a_old = (1.0 - g) * (1.0 - g);
    assert!(close(d.alpha_at(now), a_old));
    // The increase timer (due at 65 us) fires first: fast recovery, T_cnt = 1.
    assert_eq!(fire(&mut d, &mut fl), 65 * US);
    assert!(close(d.rc, 75e9) && close(d.rt, LINE));
    assert_eq!(fire(&mut d, &mut fl), 120 * US);
    assert!(close(d.rc, 87.5e9));
    d.on_cnp(&mut CcCtx { now, flow: &mut fl });
    // Paper order: Rt = Rc, cut with the old alpha, then update alpha.
    assert!(close(d.rt, 87.5e9));
    assert!(close(d.rc, 87.5e9 * (1.0 - a_old / 2.0)));
    assert!(close(d.alpha, (1.0 - g) * a_old + g));
    // The armed timer (175 us) is the earliest deadline: no re-arm needed
    // since the new one (130 + 55 = 185 us) is later; it fires early, re-arms.
    assert_eq!(fire(&mut d, &mut fl), 175 * US);
    assert!(close(d.rc, 87.5e9 * (1.0 - a_old / 2.0)), "nothing due at 175 us");
    assert_eq!(fl.timer, Some(185 * US));
    let rc = d.rc;
    fire(&mut d, &mut fl);
    assert!(close(d.rc, (rc + 87.5e9) / 2.0), "fast recovery towards Rt");
}

#[test]
fn paper_stages_additive_and_hyper_increase() {
    let mut fl = flow();
    let cfg = DcqcnConfig { byte_counter: 10_000, ..DcqcnConfig::paper() };
    let mut d = started(cfg, &mut fl);
    d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
    assert!(close(d.rc, 50e9));
    // Four timer events: fast recovery (T_cnt 1..4 < F = 5).
    for _ in 0..4 {
        fire(&mut d, &mut fl);
    }
    let rc = 50e9 + 50e9 * (1.0 - 1.0 / 16.0);
    assert!(close(d.rc, rc) && close(d.rt, LINE));
    // Pull Rt down to see the increments (a cut with clamp keeps Rt = Rc).
    d.rt = 60e9;
    d.rc = 40e9;
    fire(&mut d, &mut fl); // T_cnt = 5 >= F, B_cnt = 0: additive
    assert!(close(d.rt, 60e9 + 40e6));
    assert!(close(d.rc, (60.04e9 + 40e9) / 2.0));
    // Byte counter: 10 KB of sends per event (before the next timer event at 330 us).
    for _ in 0..4 {
        for _ in 0..10 {
            d.on_send(&mut CcCtx { now: 300 * US, flow: &mut fl }, 1000);
        }
    }
    assert_eq!(d.b_cnt, 4);
    let (rt, rc) = (d.rt, d.rc);
    for _ in 0..10 {
        d.on_send(&mut CcCtx { now: 300 * US, flow: &mut fl }, 1000);
    }
    // B_cnt = 5, T_cnt = 5: hyper, i = min - F + 1 = 1.
    assert!(close(d.rt, rt + 200e6));
    assert!(close(d.rc, (rt + 200e6 + rc) / 2.0));
    let rt = d.rt;
    fire(&mut d, &mut fl); // T_cnt = 6: i = min(6, 5) - 5 + 1 = 1
    assert!(close(d.rt, rt + 200e6));
    let rt = d.rt;
    for _ in 0..10 {
        d.on_send(&mut CcCtx { now: 350 * US, flow: &mut fl }, 1000);
    }
    assert!(close(d.rt, rt + 2.0 * 200e6), "B_cnt = 6: i = 2");
}

#[test]
fn paper_options_alpha_first_target_reset_halving_no_clamp() {
    let mut fl = flow();
    let cfg = DcqcnConfig {
        alpha_first: true,
        target_reset: true,
        clamp_target: false,
        hyper_halving: true,
        fast_recovery: 1,
        byte_counter: 1000,
        alpha_init: 0.5,
        ..DcqcnConfig::paper()
    };
    let mut d = started(cfg, &mut fl);
    let g = 1.0 / 256.0;
    d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
    let a = 0.5 * (1.0 - g) + g;
    assert!(close(d.rc, LINE * (1.0 - a / 2.0)), "cut with the updated alpha");
    // No clamp and no byte event since the cut: Rt stays at line rate.
    let rc = d.rc;
    d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
    assert!(close(d.rt, LINE));
    let a2 = a * (1.0 - g) + g;
    assert!(close(d.rc, rc * (1.0 - a2 / 2.0)));
    // Force Rt > 10 Rc: the first event divides Rt by 8.
    d.rc = 5e9;
    d.on_send(&mut CcCtx { now: 0, flow: &mut fl }, 1000);
    assert!(close(d.rt, LINE / 8.0));
    assert!(close(d.rc, (LINE / 8.0 + 5e9) / 2.0));
    // Timer event 1 (T_cnt = 1, B_cnt = 1): still "first", Rt not > 10 Rc: hyper
    // (both >= F = 1), i = 1; next period T/2.
    let (rt, rc) = (d.rt, d.rc);
    let at = fire(&mut d, &mut fl);
    assert!(close(d.rt, rt + 200e6) && close(d.rc, (rt + 200e6 + rc) / 2.0));
    assert_eq!(fl.timer, Some(at + 55 * US / 2));
    assert_eq!(d.bc_left, 1000, "byte counter reloaded before the stage changed");
    d.on_send(&mut CcCtx { now: at, flow: &mut fl }, 1000);
    assert_eq!(d.bc_left, 500, "B/2 in the hyper stage");
    // With a byte event since the cut, no clamp still sets Rt = Rc.
    let rc = d.rc;
    d.on_cnp(&mut CcCtx { now: at + 1, flow: &mut fl });
    assert!(close(d.rt, rc));
}

#[test]
fn paper_returns_to_line_rate_and_stops_its_timer() {
    let mut fl = flow();
    let mut d = started(DcqcnConfig::paper(), &mut fl);
    d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
    let mut n = 0;
    while fl.timer.is_some() {
        fire(&mut d, &mut fl);
        n += 1;
        assert!(n < 100);
    }
    assert_eq!(d.rc, LINE);
    assert_eq!(fl.rate, LINE);
    assert!(!d.bc_on);
    assert!(n >= 13, "the gap halves each event: {n}");
    // Alpha keeps decaying lazily: 1 ms later it is (1-g)^18.
    let t = 1_000 * US;
    assert!(close(d.alpha_at(t), (1.0f64 - 1.0 / 256.0).powi(18)));
}

#[test]
fn mellanox_first_cnp_alpha_grid_and_decrease_check() {
    let mut fl = flow();
    let mut d = started(DcqcnConfig::mellanox(), &mut fl);
    let g = 1.0 / 256.0;
    let t0 = 10 * US;
    // First CNP: alpha = 1, rate unchanged (RateOnFirstCnp = 1), check at +4 us + 1 ns.
    d.on_cnp(&mut CcCtx { now: t0, flow: &mut fl });
    assert_eq!(fl.rate, LINE);
    assert_eq!(fl.timer, Some(t0 + 4 * US + NS));
    // A second CNP at +2.5 us sets the alpha flag for period (2, 3].
    d.on_cnp(&mut CcCtx { now: t0 + 2_500_000, flow: &mut fl });
    assert_eq!(fire(&mut d, &mut fl), t0 + 4 * US + NS);
    // Alpha ticks at +1, +2 decay; +3 applies the flag; +4 decays.
    let a = (1.0 - g) * ((1.0 - g) * (1.0 - g) * (1.0 - g) + g);
    assert!(close(d.alpha, a), "{} vs {a}", d.alpha);
    // Stage counter 0 and no clamp: Rt stays; Rc = line (1 - alpha/2).
    assert!(close(d.rt, LINE));
    assert!(close(d.rc, LINE * (1.0 - a / 2.0)));
    assert!(close(fl.rate, d.rc));
    // Increase timer 300 us after the cut: fast recovery (s = 0 < F = 1).
    let cut = t0 + 4 * US + NS;
    assert_eq!(fl.timer, Some(cut + 300 * US));
    let rc = d.rc;
    fire(&mut d, &mut fl);
    assert!(close(d.rc, (rc + LINE) / 2.0) && d.t_cnt == 1);
    // Next CNP, at a non-tick time: check at the next tick of the 4 us grid.
    let now = cut + 300 * US + 123;
    d.on_cnp(&mut CcCtx { now, flow: &mut fl });
    let next = t0 + NS + 4 * US * ((now - t0 - NS) / (4 * US) + 1);
    assert_eq!(fl.timer, Some(next));
    let (rc, alpha) = (d.rc, d.alpha_at(next));
    fire(&mut d, &mut fl);
    // s = 1 != 0: Rt = Rc before the cut.
    assert!(close(d.rt, rc));
    assert!(close(d.rc, rc * (1.0 - alpha / 2.0)));
}

#[test]
fn mellanox_increase_stages() {
    let mut fl = flow();
    let mut d = started(DcqcnConfig::mellanox(), &mut fl);
    d.on_cnp(&mut CcCtx { now: 0, flow: &mut fl });
    fire(&mut d, &mut fl);
    d.rt = 50e9;
    d.rc = 40e9;
    fire(&mut d, &mut fl); // s = 0: fast recovery
    assert!(close(d.rt, 50e9) && close(d.rc, 45e9));
    fire(&mut d, &mut fl); // s = 1 = F: additive
    assert!(close(d.rt, 50.02e9) && close(d.rc, (45e9 + 50.02e9) / 2.0));
    let (rt, rc) = (d.rt, d.rc);
    fire(&mut d, &mut fl); // s = 2 > F: constant hyper step
    assert!(close(d.rt, rt + 200e6) && close(d.rc, (rc + rt + 200e6) / 2.0));
    let rt = d.rt;
    fire(&mut d, &mut fl);
    assert!(close(d.rt, rt + 200e6));
}

#[test]
fn lazy_increases_match_timer_driven_ones() {
    for cfg in [DcqcnConfig::paper(), DcqcnConfig::mellanox()] {
        let (mut fa, mut fb) = (flow(), flow());
        let mut eager = started(cfg.clone(), &mut fa);
        let mut lazy = Dcqcn::new(Arc::new(cfg));
        lazy.on_start(&mut CcCtx { now: 0, flow: &mut fb });
        // One packet at line rate: the pacer releases the next one 85.76 ns later.
        lazy.on_send(&mut CcCtx { now: 0, flow: &mut fb }, 1072);
        assert!((lazy.next_send - 85_760.0).abs() < 1e-6);
        eager.on_cnp(&mut CcCtx { now: US, flow: &mut fa });
        lazy.on_cnp(&mut CcCtx { now: US, flow: &mut fb });
        // Mellanox: the decrease check is armed in both; the cut runs on time.
        if lazy.cfg.variant == Variant::Mellanox {
            fire(&mut eager, &mut fa);
            assert_eq!(fire(&mut lazy, &mut fb), US + NS + 4 * US);
        }
        assert_eq!(fb.timer, None, "the next packet is already released: no increase timer");
        let mut t = 0;
        while fa.timer.is_some_and(|at| at <= 2_000 * US) {
            t = fire(&mut eager, &mut fa);
        }
        assert!(t > 300 * US);
        // The lazy flow sends its next packet at t: every increase due runs first.
        lazy.on_send(&mut CcCtx { now: t, flow: &mut fb }, 1072);
        assert_eq!((lazy.t_cnt, lazy.b_cnt), (eager.t_cnt, eager.b_cnt));
        assert!(close(lazy.rc, eager.rc) && close(lazy.rt, eager.rt), "{} {}", lazy.rc, eager.rc);
        assert_eq!(lazy.inc_at, eager.inc_at);
        assert!(close(fb.rate, fa.rate));
    }
}

fn params(v: serde_json::Value) -> Result<Dcqcn, ConfigError> {
    let cfg: crate::config::CcConfig = serde_json::from_value(v).unwrap();
    Dcqcn::from_params(&Params::new(&cfg, "cc", Dcqcn::info().params)?)
}

#[test]
fn presets_and_overrides_parse_and_nonsense_is_rejected() {
    let d = params(serde_json::json!({"algorithm": "dcqcn"})).unwrap();
    assert_eq!(*d.config(), DcqcnConfig::paper());
    let d = params(serde_json::json!({"algorithm": "dcqcn", "preset": "mellanox", "rp_timer": "55us",
        "alpha_interval": "50us", "rate_decrease_interval": "50us"}))
    .unwrap();
    let c = d.config();
    assert_eq!(c.variant, Variant::Mellanox);
    assert_eq!((c.rp_timer, c.alpha_interval, c.rate_decrease_interval), (55 * US, 50 * US, 50 * US));
    assert_eq!(c.rate_ai, 20e6);
    let d = params(serde_json::json!({"algorithm": "dcqcn", "byte_counter": "300KB", "clamp_target": 0,
        "hyper_halving": true, "rate_ai": "5Mbps"}))
    .unwrap();
    assert_eq!(d.config().byte_counter, 300_000);
    assert!(!d.config().clamp_target && d.config().hyper_halving);
    for (k, v) in [
        ("g", serde_json::json!(0)),
        ("g", serde_json::json!(1.5)),
        ("alpha_init", serde_json::json!(2)),
        ("preset", serde_json::json!("dcqcn")),
        ("variant", serde_json::json!(3)),
        ("fast_recovery", serde_json::json!(2.5)),
        ("rp_timer", serde_json::json!("0us")),
        ("alpha_interval", serde_json::json!(0)),
        ("hyper_step", serde_json::json!("quadratic")),
        ("clamp_target", serde_json::json!("yes")),
        ("rate_decrease_interval", serde_json::json!("4us")),
        ("ack_ecn", serde_json::json!(true)),
    ] {
        let e = params(serde_json::json!({"algorithm": "dcqcn", k: v})).err();
        assert!(e.as_ref().is_some_and(|e| e.field == format!("cc.{k}")), "{k} = {v}: {e:?}");
    }
    let e = params(serde_json::json!({"algorithm": "dcqcn", "preset": "mellanox", "byte_counter": "1MB"}));
    assert!(e.err().unwrap().message.contains("paper"));
}

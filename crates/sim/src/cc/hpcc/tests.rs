//! Unit tests of HPCC: INT-driven window and rate updates against hand computation, bounds
//! and parameter checks.

use super::*;
use crate::cc::FlowCtl;
use crate::config::CcConfig;
use crate::units::US;
use serde_json::{json, Value};

fn build(params: Value) -> Result<Hpcc, ConfigError> {
    let mut cfg: CcConfig = serde_json::from_value(params).unwrap();
    cfg.algorithm = "hpcc".into();
    Hpcc::from_params(&Params::new(&cfg, "cc", PARAMS)?)
}

fn flow() -> FlowCtl {
    FlowCtl::at_line_rate(100e9, 1e5, 8 * US, 1000)
}

fn hop(ts: Time, tx_bytes: u64, qlen: u64) -> IntHop {
    IntHop { rate_bps: 100_000_000_000, ts, tx_bytes, qlen }
}

fn ack(h: &mut Hpcc, f: &mut FlowCtl, seq: u64, int: &[IntHop]) {
    let ev = AckEvent {
        ack_seq: seq,
        newly_acked: 1000,
        dup_acks: 0,
        in_recovery: false,
        recovery_ended: false,
        ecn_echo: false,
        rtt: 10 * US,
        hops: int.len() as u32,
        int,
        pint: 0,
        delivered: 0,
        sack_high: 0,
    };
    let mut ctx = CcCtx { now: 0, flow: f };
    h.on_ack(&mut ctx, &ev);
}

fn start(h: &mut Hpcc, f: &mut FlowCtl) {
    let mut ctx = CcCtx { now: 0, flow: f };
    h.on_start(&mut ctx);
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

// T = 10 us, B = 100 Gb/s: B x T = 125 000 bytes = W_init.
const T: Time = 10 * US;

#[test]
fn per_flow_state_stays_small() {
    // Every flow's `Cc` is as large as its largest variant.
    assert!(std::mem::size_of::<Hpcc>() <= 200, "{}", std::mem::size_of::<Hpcc>());
}

#[test]
fn start_sets_line_rate_full_window_and_asks_for_int() {
    let mut h = build(json!({"base_rtt": "10us"})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    assert!(f.want_int);
    assert_eq!(f.window, 125_000);
    assert!(close(f.rate, 100e9));
    assert!(close(h.reference(), 125_000.0));
    assert_eq!(h.utilisation(), 1.0);
    // Default T is the flow's base RTT: W_init = 100 Gb/s x 8 us = 100 000 B.
    let mut h = build(json!({})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    assert_eq!(f.window, 100_000);
    // W_AI = R_AI x T = 40 Mb/s x 8 us = 40 bytes.
    assert!(close(h.ai, 40.0));
}

#[test]
fn first_ack_only_stores_the_records() {
    let mut h = build(json!({"base_rtt": "10us"})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(5 * US, 1_000_000, 90_000)]);
    assert_eq!(h.utilisation(), 1.0);
    assert_eq!(f.window, 125_000);
    assert_eq!(h.last_update_seq, 50_000);
    assert_eq!(h.n_hops, 1);
}

#[test]
fn measure_inflight_and_fast_reaction_match_hand_computation() {
    // Window variant, eta 0.95, W_AI = 100 B.
    let mut h = build(json!({"base_rtt": "10us", "w_ai": 100})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 10_000)]);
    // 1 us later the port sent 12 500 B (100 Gb/s): txRate/B = 1.
    // Queue term uses min(20 000, 10 000) / (B x T) = 10 000 / 125 000 = 0.08.
    // u = 1.08, tau = 1 us: U = 0.9 x 1 + 0.1 x 1.08 = 1.008.
    ack(&mut h, &mut f, 2000, &[hop(US, 12_500, 20_000)]);
    assert!(close(h.utilisation(), 1.008), "U = {}", h.utilisation());
    // Intra-epoch ACK (2000 <= 50 000): W = Wc / (U / eta) + W_AI, Wc unchanged.
    let w = 125_000.0 / (1.008 / 0.95) + 100.0; // 117 907.54 B
    assert!(close(h.current(), w));
    assert_eq!(f.window, 117_907);
    assert!(close(f.rate, w * 8.0 / 10e-6), "rate {}", f.rate);
    assert!(close(h.reference(), 125_000.0));
    assert_eq!(h.last_update_seq, 50_000);
}

#[test]
fn full_update_moves_the_reference_once_per_rtt() {
    let mut h = build(json!({"base_rtt": "10us", "w_ai": 100})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 0)]);
    f.snd_nxt = 130_000;
    // Past lastUpdateSeq: full update. 2 us at 120% of B, no queue: u = 1.2,
    // U = 0.8 x 1 + 0.2 x 1.2 = 1.04; W = 125 000 x 0.95 / 1.04 + 100.
    ack(&mut h, &mut f, 60_000, &[hop(2 * US, 30_000, 0)]);
    let w1 = 125_000.0 * 0.95 / 1.04 + 100.0;
    assert!(close(h.utilisation(), 1.04));
    assert!(close(h.reference(), w1));
    assert_eq!(h.last_update_seq, 130_000);
    // The next (intra-epoch) ACK starts from the new Wc, not from the last W.
    // 1 us at exactly B: u = 1; U = 0.9 x 1.04 + 0.1 = 1.036.
    ack(&mut h, &mut f, 61_000, &[hop(3 * US, 42_500, 0)]);
    assert!(close(h.utilisation(), 1.036));
    assert!(close(h.current(), w1 * 0.95 / 1.036 + 100.0));
    assert!(close(h.reference(), w1));
}

#[test]
fn queue_term_takes_the_smaller_of_two_consecutive_samples() {
    let mut h = build(json!({"base_rtt": "10us", "w_ai": 100})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 1_000_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 100_000)]);
    // A transient queue that has drained by the next sample counts for nothing:
    // u = 0.5 (half rate) + min(100 000, 0) / 125 000 = 0.5; U = 0.9 + 0.05.
    ack(&mut h, &mut f, 2000, &[hop(US, 6_250, 0)]);
    assert!(close(h.utilisation(), 0.95));
    // A queue of 50 000 B appears: the previous sample was 0, so still u = 0.5.
    ack(&mut h, &mut f, 3000, &[hop(2 * US, 12_500, 50_000)]);
    assert!(close(h.utilisation(), 0.9 * 0.95 + 0.1 * 0.5));
    // Seen twice, it counts: u = 0.5 + 50 000 / 125 000 = 0.9.
    ack(&mut h, &mut f, 4000, &[hop(3 * US, 18_750, 50_000)]);
    let u3 = 0.9 * (0.9 * 0.95 + 0.1 * 0.5) + 0.1 * 0.9;
    assert!(close(h.utilisation(), u3));
}

#[test]
fn tau_is_capped_at_t_and_the_most_loaded_hop_wins() {
    let mut h = build(json!({"base_rtt": "10us", "w_ai": 100})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 1_000_000;
    // Two hops; hop 1 at 100 Gb/s, hop 2 at 400 Gb/s.
    let fast = |ts: Time, tx: u64, q: u64| IntHop { rate_bps: 400_000_000_000, ts, tx_bytes: tx, qlen: q };
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 0), fast(0, 0, 0)]);
    // 20 us later (> T): hop 1 ran at 60% (u = 0.6); hop 2 ran at 30% and its
    // new 250 000 B queue does not count yet (previous sample 0): u = 0.3.
    // Hop 1 wins with u = 0.6 and tau = min(20 us, T) = T: U = u.
    ack(&mut h, &mut f, 2000, &[hop(20 * US, 150_000, 10_000), fast(20 * US, 300_000, 250_000)]);
    assert!(close(h.utilisation(), 0.6), "U = {}", h.utilisation());
    // Next: hop 2 keeps its 250 000 B queue (min = 250 000 / (50 000 B/us x 10 us) = 0.5)
    // and sends at 40%: u2 = 0.9; hop 1 sends at 80% with min queue 10 000: u1 = 0.88.
    // tau = 5 us: U = 0.5 x 0.6 + 0.5 x 0.9 = 0.75.
    ack(&mut h, &mut f, 3000, &[hop(25 * US, 200_000, 10_000), fast(25 * US, 400_000, 250_000)]);
    assert!(close(h.utilisation(), 0.75), "U = {}", h.utilisation());
    // maxStage 0: always the multiplicative branch, W = Wc x eta / U + W_AI,
    // here 158 433 B, capped at W_init.
    assert_eq!(h.current(), 125_000.0);
}

#[test]
fn additive_stages_before_multiplicative_increase() {
    let mut h = build(json!({"base_rtt": "10us", "w_ai": 1000, "max_stage": 2})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    // Bring Wc down first: one full update at u = 2 with tau = T gives U = 2,
    // Wc = 125 000 x 0.95 / 2 + 1000 = 60 375.
    f.snd_nxt = 10_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 0)]);
    f.snd_nxt = 20_000;
    ack(&mut h, &mut f, 11_000, &[hop(T, 250_000, 0)]);
    assert!(close(h.reference(), 60_375.0));
    // Then the link runs at 50% for a whole T per update: U = 0.5 < eta.
    let mut wc = 60_375.0;
    let mut ts = T;
    let mut tx = 250_000;
    for (i, seq) in [21_000u64, 31_000, 41_000].into_iter().enumerate() {
        f.snd_nxt = seq + 9_000;
        ts += T;
        tx += 62_500;
        ack(&mut h, &mut f, seq, &[hop(ts, tx, 0)]);
        assert!(close(h.utilisation(), 0.5));
        if i < 2 {
            wc += 1000.0; // stages 0 -> 1 -> 2: additive
            assert_eq!(h.inc_stage(), i as u32 + 1);
        } else {
            wc = wc * 0.95 / 0.5 + 1000.0; // stage 2 reached maxStage: multiplicative
            assert_eq!(h.inc_stage(), 0);
        }
        assert!(close(h.reference(), wc), "update {i}: Wc {} want {wc}", h.reference());
    }
}

#[test]
fn a_change_of_hop_count_resets_the_records() {
    let mut h = build(json!({"base_rtt": "10us"})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 1_000_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 0)]);
    ack(&mut h, &mut f, 2000, &[hop(US, 0, 0), hop(US, 0, 0)]);
    assert_eq!(h.utilisation(), 1.0, "no update across a path change");
    assert_eq!(h.n_hops, 2);
    ack(&mut h, &mut f, 3000, &[hop(2 * US, 12_500, 0), hop(2 * US, 12_500, 0)]);
    assert!(close(h.utilisation(), 1.0));
    assert!(h.current() < 125_000.0);
}

#[test]
fn rate_variant_matches_hand_computation() {
    let mut h = build(json!({"variant": "rate", "base_rtt": "10us", "r_ai": "50Mbps"})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    assert!(close(f.rate, 100e9));
    assert_eq!(f.window, 125_000);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 10_000)]);
    // Same sample as the window test: U = 1.008; R = Rc / (U / eta) + R_AI.
    ack(&mut h, &mut f, 2000, &[hop(US, 12_500, 20_000)]);
    let r = 100e9 * 0.95 / 1.008 + 50e6;
    assert!(close(f.rate, r), "rate {} want {r}", f.rate);
    assert_eq!(f.window, (125_000.0 * r / 100e9) as u64);
    assert!(close(h.reference(), 100e9));
    // Full update: Rc = R.
    ack(&mut h, &mut f, 60_000, &[hop(2 * US, 25_000, 20_000)]);
    // u = 1 + 20 000 / 125 000 = 1.16; U = 0.9 x 1.008 + 0.116.
    let u = 0.9 * 1.008 + 0.116;
    assert!(close(h.utilisation(), u));
    assert!(close(h.reference(), 100e9 * 0.95 / u + 50e6));
}

#[test]
fn bounds_r_min_and_w_init() {
    let mut h = build(json!({"variant": "rate", "base_rtt": "10us", "r_min": "2Gbps"})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 0)]);
    // A huge queue: u = 1 + 10 MB / 125 KB = 81, tau = T -> R = Rc x 0.95 / 81 < R_min.
    ack(&mut h, &mut f, 60_000, &[hop(T, 125_000, 10_000_000)]);
    assert!(close(h.utilisation(), 1.0), "queue min with the previous 0");
    ack(&mut h, &mut f, 70_000, &[hop(2 * T, 250_000, 10_000_000)]);
    assert!(close(f.rate, 2e9), "rate {}", f.rate);
    assert_eq!(f.window, 2_500);
    let mut h = build(json!({"base_rtt": "10us", "r_min": "2Gbps"})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 10_000_000)]);
    ack(&mut h, &mut f, 60_000, &[hop(T, 125_000, 10_000_000)]);
    assert_eq!(f.window, 2_500, "window variant: W >= R_min x T");
    assert!(close(f.rate, 2e9));
}

#[test]
fn without_fast_reaction_only_epoch_ends_count() {
    let mut h = build(json!({"base_rtt": "10us", "fast_react": false})).unwrap();
    let mut f = flow();
    start(&mut h, &mut f);
    f.snd_nxt = 50_000;
    ack(&mut h, &mut f, 1000, &[hop(0, 0, 0)]);
    ack(&mut h, &mut f, 2000, &[hop(US, 50_000, 0)]);
    assert_eq!(h.utilisation(), 1.0);
    assert_eq!(f.window, 125_000);
    // The full update differences against the first ACK's records: 4 us at 60% of B.
    ack(&mut h, &mut f, 60_000, &[hop(4 * US, 30_000, 0)]);
    assert!(close(h.utilisation(), 0.6 * 1.0 + 0.4 * 0.6));
}

#[test]
fn bad_parameters_are_rejected() {
    for (p, field) in [
        (json!({"eta": 1.5}), "cc.eta"),
        (json!({"eta": 0}), "cc.eta"),
        (json!({"max_stage": -1}), "cc.max_stage"),
        (json!({"max_stage": 2.5}), "cc.max_stage"),
        (json!({"variant": "both"}), "cc.variant"),
        (json!({"r_ai": "40Mbps", "w_ai": 60}), "cc.w_ai"),
        (json!({"w_ai": 0}), "cc.w_ai"),
        (json!({"base_rtt": 0}), "cc.base_rtt"),
        (json!({"w_init": 0}), "cc.w_init"),
        (json!({"r_min": 0}), "cc.r_min"),
        (json!({"fast_react": "yes"}), "cc.fast_react"),
        (json!({"gamma": 1}), "cc.gamma"),
    ] {
        let e = build(p.clone()).expect_err(&p.to_string());
        assert_eq!(e.field, field, "{p}: {e}");
    }
    assert!(build(json!({"variant": "rate", "eta": 1, "max_stage": 5, "r_ai": "10Mbps"})).is_ok());
}

/// HPCC-PINT uses the share `pint_prob` of its ACKs, whichever they are; the others change
/// nothing (HPCC-ns3's PINT_PROB).
#[test]
fn pint_uses_the_sampled_share_of_acks() {
    for (prob, lo, hi) in [(1.0, 2000, 2000), (0.25, 440, 560)] {
        let mut h = build(json!({"variant": "pint", "base_rtt": "10us", "pint_prob": prob})).unwrap();
        let mut f = flow();
        start(&mut h, &mut f);
        f.snd_nxt = 10_000; // the first ACK's epoch ends there: the others are fast reactions
        let codec = PintCodec::new(1.05).unwrap();
        let mut changes = 0;
        for k in 0..=2000u64 {
            // Fast reactions only (after the first ACK, which starts the epoch): each used ACK
            // sets the rate from its own code, and consecutive codes differ.
            let ev = AckEvent { ack_seq: 1, hops: 1, pint: 130 + (k % 31) as u16, ..Default::default() };
            let before = h.current();
            let mut ctx = CcCtx { now: k * 1_000, flow: &mut f };
            h.on_ack(&mut ctx, &ev);
            if k > 0 && h.current() != before {
                changes += 1;
                let u = codec.decode(ev.pint);
                assert!(close(h.current(), (100e9 / (u / 0.95) + 40e6).min(100e9)), "{}", h.current());
            }
        }
        assert!((lo..=hi).contains(&changes), "prob {prob}: {changes} of 2000 ACKs used");
    }
    assert!(build(json!({"variant": "pint", "pint_prob": 0})).is_err());
    assert!(build(json!({"variant": "rate", "pint_prob": 0.5})).is_err());
}

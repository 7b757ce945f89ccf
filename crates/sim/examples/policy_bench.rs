//! Native policy evaluation cost of the bundled `adpg-default` policy (a bias-free MLP
//! 4 -> 12 -> 12 -> 1, ReLU, tanh output), float32 and int8:
//! `cargo run --release --example policy_bench [-- ITERATIONS [ROUNDS [float32|int8]]]`.
//!
//! The two precisions are measured alternately in the same process, `ROUNDS` times each
//! (default 5, of 2 000 000 decisions); the minimum and the median per decision are
//! printed, and their int8 / float32 ratio, which holds on a noisy machine where the
//! absolute figures do not. With `ROUNDS` = 1 and few iterations it is also the workload
//! for `valgrind --tool=callgrind` (give a precision to count only its instructions).
use ccgym_sim::policy::{Mlp, Precision};
use std::hint::black_box;
use std::time::Instant;

const POLICY: &str = include_str!("../../../python/ccgym/policies/adpg-default.json");

/// Nanoseconds per decision over `n` decisions on varying ADPG-like inputs `[m, d, m, d]`.
fn run(m: &Mlp, n: u64) -> (f64, f32) {
    let mut s = vec![0.0; m.scratch_len()];
    let mut out = [0.0f32];
    let mut x = [1.0f32, 0.0, 1.0, 0.0];
    let mut acc = 0.0;
    let t0 = Instant::now();
    for i in 0..n {
        // Vary the input so that no work can be hoisted out of the loop.
        let k = (i & 3) as usize;
        x[k] = if k & 1 == 0 { 0.85 + (i % 31) as f32 * 0.01 } else { (i % 97) as f32 * 0.05 - 1.0 };
        m.forward(black_box(&x), &mut out, &mut s);
        acc += out[0];
    }
    (t0.elapsed().as_nanos() as f64 / n.max(1) as f64, black_box(acc))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let int =
        |i: usize, default: u64| args.get(i).map_or(default, |a| a.parse().expect("ITERATIONS and ROUNDS: integers"));
    let (n, rounds) = (int(0, 2_000_000), int(1, 5).max(1) as usize);
    let only = args.get(2).map(String::as_str);
    let mut nets = [Precision::Float32, Precision::Int8].map(|p| (p, Mlp::from_json(POLICY, p).unwrap()));
    match only {
        None => {}
        Some("float32") => nets[1] = nets[0].clone(),
        Some("int8") => nets[0] = nets[1].clone(),
        Some(other) => panic!("precision must be float32 or int8, not {other:?}"),
    }
    let mut ns = [Vec::new(), Vec::new()];
    let mut sums = [0.0f32; 2];
    for _ in 0..rounds {
        for (k, (_, m)) in nets.iter().enumerate() {
            let (t, acc) = run(m, n);
            ns[k].push(t);
            sums[k] = acc;
        }
    }
    let mut summary = [(0.0, 0.0); 2];
    for (k, (p, _)) in nets.iter().enumerate() {
        ns[k].sort_by(f64::total_cmp);
        let (min, median) = (ns[k][0], ns[k][ns[k].len() / 2]);
        summary[k] = (min, median);
        println!("adpg-default {p:?}: min {min:.1} ns, median {median:.1} ns per decision (checksum {})", sums[k]);
    }
    println!(
        "int8 / float32: {:.2} (min), {:.2} (median); {rounds} rounds of {n} decisions",
        summary[1].0 / summary[0].0,
        summary[1].1 / summary[0].1
    );
}

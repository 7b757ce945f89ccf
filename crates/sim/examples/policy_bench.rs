//! Native policy evaluation cost: `cargo run --release --example policy_bench`.
use ccgym_sim::policy::{Mlp, Precision};
use std::time::Instant;

fn main() {
    let w1: Vec<Vec<f32>> =
        (0..12).map(|r| (0..4).map(|c| ((r * 7 + c * 3) % 11) as f32 * 0.1 - 0.5).collect()).collect();
    let w2: Vec<Vec<f32>> =
        (0..12).map(|r| (0..12).map(|c| ((r * 5 + c) % 13) as f32 * 0.08 - 0.5).collect()).collect();
    let w3: Vec<Vec<f32>> = vec![(0..12).map(|c| (c % 5) as f32 * 0.1 - 0.2).collect()];
    let json = serde_json::json!({"format": "ccgym-mlp", "version": 1,
        "layers": [{"weight": w1, "activation": "relu"}, {"weight": w2, "activation": "relu"}, {"weight": w3}],
        "output": "tanh", "int8": {"input_amax": [2.0, 4.0, 4.0]}})
    .to_string();
    for p in [Precision::Float32, Precision::Int8] {
        let m = Mlp::from_json(&json, p).unwrap();
        let mut s = vec![0.0; m.scratch_len()];
        let mut out = [0.0f32];
        let mut x = [0.1f32, 0.2, 0.3, 0.4];
        let n = 10_000_000u64;
        let mut acc = 0.0;
        let t0 = Instant::now();
        for i in 0..n {
            x[(i & 3) as usize] = (i % 97) as f32 * 0.01 - 0.4;
            m.forward(&x, &mut out, &mut s);
            acc += out[0];
        }
        println!("{p:?}: {:.1} ns ({acc})", t0.elapsed().as_nanos() as f64 / n as f64);
    }
}

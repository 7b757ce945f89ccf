//! Unit tests of the native policy: float32 and int8 forward passes against reference
//! arithmetic, file checks, and the SSE2 path against the portable one.

use super::*;

const NET: &str = r#"{"format": "ccgym-mlp", "version": 1,
    "layers": [{"weight": [[1.0, -2.0], [0.5, 0.25]], "bias": [0.1, 0.0], "activation": "relu"},
               {"weight": [[1.0, 1.0]], "activation": "none"}],
    "output": "tanh", "int8": {"input_amax": [2.0, 3.0]}}"#;

#[test]
fn float_forward_matches_hand_computation() {
    let m = Mlp::from_json(NET, Precision::Float32).unwrap();
    let mut out = [0.0f32];
    let mut s = vec![0.0; m.scratch_len()];
    m.forward(&[1.0, 0.25], &mut out, &mut s);
    // h = relu([1 - 0.5 + 0.1, 0.5 + 0.0625]) = [0.6, 0.5625]; u = 1.1625
    assert!((out[0] - 1.1625f32.tanh()).abs() < 1e-6);
}

#[test]
fn int8_forward_is_close_to_float() {
    let f = Mlp::from_json(NET, Precision::Float32).unwrap();
    let q = Mlp::from_json(NET, Precision::Int8).unwrap();
    let mut s = vec![0.0; f.scratch_len()];
    for x in [[1.0, 0.25], [-0.5, 1.5], [1.9, -1.9]] {
        let (mut a, mut b) = ([0.0f32], [0.0f32]);
        f.forward(&x, &mut a, &mut s);
        q.forward(&x, &mut b, &mut s);
        assert!((a[0] - b[0]).abs() < 0.02, "{x:?}: {} vs {}", a[0], b[0]);
    }
}

#[test]
fn bad_files_are_rejected() {
    assert!(Mlp::from_json("{}", Precision::Float32).is_err());
    let ragged = NET.replace("[0.5, 0.25]", "[0.5]");
    assert!(Mlp::from_json(&ragged, Precision::Float32).unwrap_err().contains("rectangular"));
    let mismatch = NET.replace("[[1.0, 1.0]]", "[[1.0, 1.0, 1.0]]");
    assert!(Mlp::from_json(&mismatch, Precision::Float32).unwrap_err().contains("previous layer"));
}

/// A random network `sizes[0] -> sizes[1] -> ...` as a policy file, and its layers
/// (weight [out][in], bias, activation).
type Spec = Vec<(Vec<Vec<f32>>, Vec<f32>, &'static str)>;

fn random_net(seed: u64, sizes: &[usize], bias: bool, hidden: &'static str) -> (String, Spec, Vec<f32>) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut spec: Spec = Vec::new();
    for (i, w) in sizes.windows(2).enumerate() {
        let (n_in, n_out) = (w[0], w[1]);
        let scale = 1.0 / (n_in as f32).sqrt();
        let mut weight: Vec<Vec<f32>> =
            (0..n_out).map(|_| (0..n_in).map(|_| rng.random_range(-2.0..2.0f32) * scale).collect()).collect();
        weight[0][0] = 0.0; // zeros and a -0 among the weights
        if n_in > 1 {
            weight[0][1] = -0.0;
        }
        let mut b: Vec<f32> = (0..n_out).map(|_| if bias { rng.random_range(-0.2..0.2f32) } else { 0.0 }).collect();
        b[0] = -0.0;
        let act = if i + 2 < sizes.len() { hidden } else { "none" };
        spec.push((weight, b, act));
    }
    let amax: Vec<f32> = (0..spec.len()).map(|i| [2.0, 1.5, 3.0, 0.0][i % 4]).collect(); // 0: scale 1
    let layers: Vec<serde_json::Value> =
        spec.iter().map(|(w, b, a)| serde_json::json!({"weight": w, "bias": b, "activation": a})).collect();
    let json = serde_json::json!({"format": "ccgym-mlp", "version": 1, "layers": layers,
        "output": "none", "int8": {"input_amax": amax}});
    (json.to_string(), spec, amax)
}

fn act(name: &str, v: f32) -> f32 {
    match name {
        "relu" => v.max(0.0),
        "tanh" => v.tanh(),
        _ => v,
    }
}

/// The documented int8 value, with libm's floor and an i32 result.
fn q_ref(v: f32) -> i32 {
    if v.is_nan() {
        0
    } else {
        ((v.abs().min(127.0) + 0.5).floor() as i32) * if v.is_sign_negative() { -1 } else { 1 }
    }
}

/// Observations: random values, and the awkward ones (ties, huge, NaN, +-0).
fn inputs(seed: u64, n: usize) -> Vec<Vec<f32>> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    let special = [0.0, -0.0, 0.5 / 63.5, -2.5 / 63.5, 1e30, -f32::INFINITY, f32::NAN, 0.49999997 / 63.5];
    let mut xs: Vec<Vec<f32>> = (0..200).map(|_| (0..n).map(|_| rng.random_range(-3.0..3.0f32)).collect()).collect();
    for (i, v) in special.iter().enumerate() {
        xs.push((0..n).map(|j| if j % special.len() == i { *v } else { 0.3 }).collect());
    }
    xs.push(vec![0.0; n]);
    xs
}

fn run(m: &Mlp, x: &[f32]) -> Vec<f32> {
    let mut out = vec![0.0; m.outputs()];
    let mut s = vec![f32::NAN; m.scratch_len()]; // stale scratch must not matter
    m.forward(x, &mut out, &mut s);
    out
}

const SHAPES: &[&[usize]] = &[&[4, 12, 12, 1], &[5, 17, 3], &[3, 40, 7, 2], &[256, 9, 1], &[2, 1]];

#[test]
fn float32_is_the_ordered_sum() {
    for (k, sizes) in SHAPES.iter().enumerate() {
        for hidden in ["relu", "tanh", "none"] {
            let (json, spec, _) = random_net(k as u64, sizes, true, hidden);
            let m = Mlp::from_json(&json, Precision::Float32).unwrap();
            for x in inputs(k as u64 + 100, sizes[0]).iter().filter(|x| x.iter().all(|v| v.is_finite())) {
                let mut h = x.clone();
                for (w, b, a) in &spec {
                    h = w
                        .iter()
                        .zip(b)
                        .map(|(row, b)| act(a, row.iter().zip(&h).fold(*b, |acc, (w, x)| acc + w * x)))
                        .collect();
                }
                let got = run(&m, x);
                assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    h.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{sizes:?} {hidden} {x:?}"
                );
            }
        }
    }
}

#[test]
fn int8_is_the_documented_arithmetic() {
    for (k, sizes) in SHAPES.iter().enumerate() {
        for (hidden, bias) in [("relu", false), ("relu", true), ("tanh", true), ("none", true)] {
            let (json, spec, amax) = random_net(k as u64 + 10, sizes, bias, hidden);
            let m = Mlp::from_json(&json, Precision::Int8).unwrap();
            for x in inputs(k as u64 + 200, sizes[0]) {
                let mut h = x.clone();
                for ((w, b, a), amax) in spec.iter().zip(&amax) {
                    let s_in = if *amax > 0.0 && amax.is_finite() { 127.0 / amax } else { 1.0 };
                    let xq: Vec<i32> = h.iter().map(|v| q_ref(v * s_in)).collect();
                    h = w
                        .iter()
                        .zip(b)
                        .map(|(row, b)| {
                            let row_amax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                            let s = if row_amax > 0.0 { 127.0 / row_amax } else { 1.0 };
                            let acc: i32 = row.iter().zip(&xq).map(|(w, x)| q_ref(w * s) * x).sum();
                            act(a, acc as f32 * (1.0 / (s_in * s)) + (b + 0.0))
                        })
                        .collect();
                }
                let got = run(&m, &x);
                assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    h.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{sizes:?} {hidden} {x:?}"
                );
            }
        }
    }
}

#[test]
fn quantise_rounds_half_away_from_zero() {
    for (v, q) in [
        (0.5, 1.0),
        (1.5, 2.0),
        (2.5, 3.0),
        (-2.5, -3.0),
        (0.49999997, 1.0), // |v| + 0.5 rounds to 1 in f32: the documented definition
        (0.4999999, 0.0),
        (-0.4, -0.0),
        (126.5, 127.0),
        (127.4, 127.0),
        (1e30, 127.0),
        (f32::NEG_INFINITY, -127.0),
        (f32::NAN, 0.0),
    ] {
        assert_eq!(quantise(v).to_bits(), f32::to_bits(q), "q({v})");
    }
}

#[test]
fn int8_exactness_limits_are_enforced() {
    let (json, _, _) = random_net(1, &[257, 1], false, "none");
    assert!(Mlp::from_json(&json, Precision::Int8).unwrap_err().contains("at most 256"));
    assert!(Mlp::from_json(&json, Precision::Float32).is_ok());
}

/// The SSE2 lanes and the portable ones agree bit for bit.
#[cfg(target_arch = "x86_64")]
#[test]
fn sse2_matches_portable() {
    use rand::{Rng, SeedableRng};
    use simd::portable::F4 as P4;
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
    let mut values = vec![
        0.0f32,
        -0.0,
        0.5,
        -0.5,
        0.49999997,
        1.5,
        2.5,
        -2.5,
        126.5,
        127.0,
        127.5,
        128.0,
        -1e30,
        1e-40,
        -1e-40,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MAX,
        f32::MIN_POSITIVE,
    ];
    values.extend((0..4000).map(|_| f32::from_bits(rng.random())));
    values.extend((0..4000).map(|_| rng.random_range(-300.0..300.0f32)));
    values.extend((0..1000).map(|i| (i as f32 - 500.0) * 0.25)); // halves and quarters
    let bits = |a: [f32; 4]| a.map(f32::to_bits);
    for w in values.chunks_exact(8) {
        let (a, b): ([f32; 4], [f32; 4]) = (w[..4].try_into().unwrap(), w[4..].try_into().unwrap());
        let (x, y, px, py) = (F4::load(&a), F4::load(&b), P4::load(&a), P4::load(&b));
        let pairs = [
            (x.add(y), px.add(py)),
            (x.mul(y), px.mul(py)),
            (x.relu(), px.relu()),
            (x.quantise(), px.quantise()),
            (x.relu_quantise(), px.relu_quantise()),
            (F4::splat(w[0]), P4::splat(w[0])),
            (F4::zero(), P4::zero()),
        ];
        for (k, (s, p)) in pairs.into_iter().enumerate() {
            let (mut sa, mut pa) = ([0f32; 4], [0f32; 4]);
            s.store(&mut sa);
            p.store(&mut pa);
            assert_eq!(bits(sa), bits(pa), "operation {k} on {a:?}, {b:?}");
        }
    }
}

// ---- version 2: concat and lstm steps

/// Deterministic weights in [-1, 1) for the recurrent tests.
fn weights(seed: &mut u64, rows: usize, cols: usize) -> Vec<Vec<f32>> {
    (0..rows)
        .map(|_| {
            (0..cols)
                .map(|_| {
                    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
                })
                .collect()
        })
        .collect()
}

/// 3 -> dense 5 relu -> concat reward clipped to [-1, 1] -> LSTM(6, 4) -> dense 3 (2 action
/// scores and a value), as JSON, and its parts for the reference.
fn recurrent_net() -> (String, Vec<Vec<Vec<f32>>>) {
    let mut seed = 7;
    let parts = vec![
        weights(&mut seed, 5, 3),  // w1
        weights(&mut seed, 1, 5),  // b1 (one row)
        weights(&mut seed, 16, 6), // w_ih
        weights(&mut seed, 16, 4), // w_hh
        weights(&mut seed, 1, 16), // b_ih
        weights(&mut seed, 1, 16), // b_hh
        weights(&mut seed, 3, 4),  // w2
        weights(&mut seed, 1, 3),  // b2
    ];
    let json = serde_json::json!({
        "format": "ccgym-mlp", "version": 2, "output": "none", "action_outputs": 2,
        "layers": [
            {"weight": parts[0], "bias": parts[1][0], "activation": "relu"},
            {"kind": "concat", "source": "reward", "size": 1, "clip": [-1.0, 1.0]},
            {"kind": "lstm", "weight_ih": parts[2], "weight_hh": parts[3], "bias_ih": parts[4][0], "bias_hh": parts[5][0]},
            {"kind": "dense", "weight": parts[6], "bias": parts[7][0], "activation": "none"},
        ],
    });
    (json.to_string(), parts)
}

/// The same network, written out the plain way (f64, PyTorch's gate order i, f, g, o).
fn recurrent_reference(p: &[Vec<Vec<f32>>], x: &[f32], reward: f32, h: &mut [f64], c: &mut [f64]) -> Vec<f64> {
    let dense = |w: &Vec<Vec<f32>>, b: &[f32], x: &[f64]| -> Vec<f64> {
        w.iter().zip(b).map(|(r, &b)| r.iter().zip(x).map(|(&w, &x)| w as f64 * x).sum::<f64>() + b as f64).collect()
    };
    let x: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let mut y: Vec<f64> = dense(&p[0], &p[1][0], &x).into_iter().map(|v| v.max(0.0)).collect();
    y.push((reward as f64).clamp(-1.0, 1.0));
    let gi = dense(&p[2], &p[4][0], &y);
    let gh = dense(&p[3], &p[5][0], h);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    for k in 0..4 {
        let g = |j: usize| gi[j * 4 + k] + gh[j * 4 + k];
        c[k] = sig(g(1)) * c[k] + sig(g(0)) * g(2).tanh();
        h[k] = sig(g(3)) * c[k].tanh();
    }
    dense(&p[6], &p[7][0], h)
}

#[test]
fn lstm_steps_match_the_reference_and_carry_their_state() {
    let (json, parts) = recurrent_net();
    let m = Mlp::from_json(&json, Precision::Float32).unwrap();
    assert_eq!((m.inputs(), m.outputs(), m.all_outputs()), (3, 2, 3));
    assert_eq!((m.extra_inputs(), m.state_len()), (1, 8));
    assert!(!m.int8_supported());
    let mut scratch = vec![0.0; m.scratch_len()];
    let mut state = vec![0.0f32; m.state_len()];
    let (mut h, mut c) = (vec![0.0f64; 4], vec![0.0f64; 4]);
    let mut seed = 99;
    let mut first = None;
    for step in 0..12 {
        let x = &weights(&mut seed, 1, 3)[0];
        let reward = (step as f32 - 5.0) * 0.4; // crosses the clip on both sides
        let mut out = [0.0f32; 3];
        m.forward_step(x, &[reward], &mut state, &mut out, &mut scratch);
        let want = recurrent_reference(&parts, x, reward, &mut h, &mut c);
        for (o, w) in out.iter().zip(&want) {
            assert!((*o as f64 - w).abs() < 1e-5, "step {step}: {out:?} vs {want:?}");
        }
        for (s, r) in state.iter().zip(h.iter().chain(&c)) {
            assert!((*s as f64 - r).abs() < 1e-5, "step {step}: state {state:?}");
        }
        first.get_or_insert(out);
    }
    // `forward` is one step from a zero state with a zero reward.
    let (mut h, mut c) = (vec![0.0f64; 4], vec![0.0f64; 4]);
    let x = [0.3, -0.2, 0.9];
    let mut out = [0.0f32; 2];
    m.forward(&x, &mut out, &mut scratch);
    let want = recurrent_reference(&parts, &x, 0.0, &mut h, &mut c);
    assert!((out[0] as f64 - want[0]).abs() < 1e-5 && (out[1] as f64 - want[1]).abs() < 1e-5);
}

#[test]
fn version_2_files_are_checked() {
    let (json, _) = recurrent_net();
    assert!(Mlp::from_json(&json, Precision::Int8).unwrap_err().contains("int8"));
    let v1 = json.replace("\"version\":2", "\"version\":1");
    assert!(Mlp::from_json(&v1, Precision::Float32).unwrap_err().contains("version\": 2"), "{v1}");
    let unknown = json.replace("\"kind\":\"lstm\"", "\"kind\":\"gru\"");
    assert!(Mlp::from_json(&unknown, Precision::Float32).unwrap_err().contains("unknown kind"));
    let source = json.replace("\"source\":\"reward\"", "\"source\":\"rtt\"");
    assert!(Mlp::from_json(&source, Precision::Float32).unwrap_err().contains("concat source"));
    let action = json.replace("\"action_outputs\":2", "\"action_outputs\":4");
    assert!(Mlp::from_json(&action, Precision::Float32).unwrap_err().contains("action_outputs"));
    // A dense-only version-2 file is a version-1 network (int8 allowed with calibration).
    let dense = NET.replace("\"version\": 1", "\"version\": 2");
    let (a, b) = (Mlp::from_json(NET, Precision::Int8).unwrap(), Mlp::from_json(&dense, Precision::Int8).unwrap());
    let (mut oa, mut ob) = ([0.0f32], [0.0f32]);
    let mut s = vec![0.0; a.scratch_len()];
    a.forward(&[1.0, 0.25], &mut oa, &mut s);
    b.forward(&[1.0, 0.25], &mut ob, &mut s);
    assert_eq!(oa[0].to_bits(), ob[0].to_bits());
}

/// The packed form of a list of floats (little-endian float32, base64).
fn pack(values: &[f32], shape: &[usize]) -> String {
    use base64::Engine;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    format!(r#"{{"shape": {shape:?}, "f32": "{text}"}}"#)
}

#[test]
fn packed_arrays_load_the_same_network_as_lists() {
    let (list_json, p) = recurrent_net();
    // Pack every array of the recurrent test network: its steps are dense, concat, lstm, dense.
    let mut v: serde_json::Value = serde_json::from_str(&list_json).unwrap();
    for layer in v["layers"].as_array_mut().unwrap() {
        for key in ["weight", "weight_ih", "weight_hh"] {
            if let Some(m) = layer.get(key).and_then(|m| m.as_array()).cloned() {
                let rows: Vec<Vec<f32>> = serde_json::from_value(serde_json::Value::Array(m)).unwrap();
                let flat: Vec<f32> = rows.concat();
                layer[key] = serde_json::from_str(&pack(&flat, &[rows.len(), rows[0].len()])).unwrap();
            }
        }
        for key in ["bias", "bias_ih", "bias_hh"] {
            if let Some(b) = layer.get(key).and_then(|b| b.as_array()).cloned() {
                let flat: Vec<f32> = serde_json::from_value(serde_json::Value::Array(b)).unwrap();
                layer[key] = serde_json::from_str(&pack(&flat, &[flat.len()])).unwrap();
            }
        }
    }
    let packed_json = v.to_string();
    assert!(packed_json.contains("\"f32\"") && !packed_json.contains("weight_ih\":[["));
    let a = Mlp::from_json(&list_json, Precision::Float32).unwrap();
    let b = Mlp::from_json(&packed_json, Precision::Float32).unwrap();
    assert_eq!(p.len(), 8);
    let (mut sa, mut sb) = (vec![0.0; a.state_len()], vec![0.0; b.state_len()]);
    let mut scratch = vec![0.0; a.scratch_len()];
    for (t, x) in inputs(7, a.inputs()).iter().enumerate() {
        let (mut oa, mut ob) = (vec![0.0f32; a.outputs()], vec![0.0f32; b.outputs()]);
        a.forward_step(x, &[t as f32 * 0.1], &mut sa, &mut oa, &mut scratch);
        b.forward_step(x, &[t as f32 * 0.1], &mut sb, &mut ob, &mut scratch);
        assert_eq!(
            oa.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            ob.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn bad_packed_arrays_are_rejected_with_their_reason() {
    let net = |weight: &str| format!(r#"{{"format": "ccgym-mlp", "version": 1, "layers": [{{"weight": {weight}}}]}}"#);
    let err = |weight: &str| Mlp::from_json(&net(weight), Precision::Float32).err().unwrap();
    assert!(Mlp::from_json(&net(&pack(&[1.0, 2.0], &[1, 2])), Precision::Float32).is_ok());
    assert!(err(&pack(&[1.0, 2.0], &[2, 2])).contains("needs 4 float32 values"), "{}", err(&pack(&[1.0], &[2, 2])));
    assert!(err(&pack(&[1.0, 2.0], &[2])).contains("1 dimensions, expected 2"));
    assert!(err(r#"{"shape": [1, 1], "f32": "**"}"#).contains("not base64"));
    assert!(err(r#"{"shape": [1, 1], "f32": "AACAPw==", "dtype": "f16"}"#).contains("unknown field \"dtype\""));
    assert!(err(r#"{"shape": [1, 1]}"#).contains("base64 string"));
}

#[test]
fn sampled_actions_follow_the_softmax_of_the_scores() {
    // Scores 0 and ln 3: index 1 has probability 3/4, so u below 1/4 draws index 0.
    let scores = [0.0, 3f32.ln()];
    assert_eq!(sample_softmax(&scores, 0.0), 0);
    assert_eq!(sample_softmax(&scores, 0.24), 0);
    assert_eq!(sample_softmax(&scores, 0.26), 1);
    assert_eq!(sample_softmax(&scores, 0.999_999), 1);
    // A NaN score is never drawn; all NaN falls back to argmax's answer.
    for u in [0.0, 0.5, 0.99] {
        assert_eq!(sample_softmax(&[f32::NAN, 1.0, f32::NAN], u), 1);
    }
    assert_eq!(sample_softmax(&[f32::NAN, f32::NAN], 0.7), 0);
    // Frequencies over a fine grid of u match the probabilities.
    let s = [1.0f32, 2.0, 0.5, -1.0];
    let z: f64 = s.iter().map(|&v| f64::from(v).exp()).sum();
    let mut counts = [0usize; 4];
    let n = 100_000;
    for k in 0..n {
        counts[sample_softmax(&s, (k as f64 + 0.5) / n as f64)] += 1;
    }
    for (i, &c) in counts.iter().enumerate() {
        let p = f64::from(s[i]).exp() / z;
        assert!((c as f64 / n as f64 - p).abs() < 1e-3, "index {i}: {c} of {n}, p = {p}");
    }
}

//! Native policies: small MLPs evaluated inside the simulator, in float32 or
//! int8, so that evaluating a learned CC at thousands of flows needs no Python.
//!
//! File format (JSON, written by `ccgym export`):
//!
//! ```json
//! {"format": "ccgym-mlp", "version": 1,
//!  "layers": [{"weight": [[...], ...], "bias": [...] or null, "activation": "relu"}, ...],
//!  "output": "tanh",
//!  "int8": {"input_amax": [a0, a1, ...]}}
//! ```
//!
//! `weight` is `[out][in]` (PyTorch `Linear` layout). Activations: `relu`, `tanh` or `none`;
//! `output` is applied to the last layer's result. int8 inference quantises each layer's
//! input with one symmetric scale (127 / `input_amax[l]`, calibrated on recorded
//! observations), each weight row with its own scale (127 / max |row|), accumulates in
//! int32, and rescales to float before the bias and the activation.

use serde::Deserialize;

/// Activation after a layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// max(0, x).
    Relu,
    /// tanh(x).
    Tanh,
    /// Identity.
    None,
}

impl Activation {
    fn parse(s: &str) -> Result<Self, String> {
        match s {
            "relu" => Ok(Activation::Relu),
            "tanh" => Ok(Activation::Tanh),
            "none" | "linear" | "identity" => Ok(Activation::None),
            other => Err(format!("unknown activation \"{other}\" (use relu, tanh or none)")),
        }
    }

    #[inline]
    fn apply(self, x: f32) -> f32 {
        match self {
            Activation::Relu => x.max(0.0),
            Activation::Tanh => x.tanh(),
            Activation::None => x,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    weight: Vec<Vec<f32>>,
    #[serde(default)]
    bias: Option<Vec<f32>>,
    #[serde(default = "default_act")]
    activation: String,
}

fn default_act() -> String {
    "none".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Int8File {
    input_amax: Vec<f32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MlpFile {
    format: String,
    version: u32,
    layers: Vec<LayerFile>,
    #[serde(default = "default_act")]
    output: String,
    #[serde(default)]
    int8: Option<Int8File>,
    #[serde(default)]
    #[allow(dead_code)]
    meta: Option<serde_json::Value>,
}

/// Outputs are computed in lanes of this many (weights padded with zeros), a
/// fixed trip count the compiler turns into SIMD.
const LANES: usize = 8;

/// One dense layer. Weights are kept transposed ([in][out], outputs padded to
/// a multiple of [`LANES`]) so that the inner loop runs over independent
/// outputs and vectorises, instead of one long dependent chain per output.
#[derive(Clone, Debug)]
struct Layer {
    inputs: usize,
    outputs: usize,
    /// `outputs` rounded up to a multiple of [`LANES`].
    padded: usize,
    weight_t: Vec<f32>,
    bias: Vec<f32>,
    act: Activation,
    // int8 form, also [in][out]
    w_q_t: Vec<i32>,
    /// 1 / (input scale x row scale), per output.
    dequant: Vec<f32>,
    in_scale: f32,
}

/// Numeric precision of native inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// float32 throughout.
    Float32,
    /// int8 weights and inputs, int32 accumulation.
    Int8,
}

/// A multilayer perceptron loaded from a policy file.
#[derive(Clone, Debug)]
pub struct Mlp {
    layers: Vec<Layer>,
    output: Activation,
    precision: Precision,
    width: usize,
}

impl Mlp {
    /// Parses a policy file's text.
    pub fn from_json(text: &str, precision: Precision) -> Result<Mlp, String> {
        let f: MlpFile = serde_json::from_str(text).map_err(|e| format!("not a ccgym policy file: {e}"))?;
        if f.format != "ccgym-mlp" || f.version != 1 {
            return Err(format!("unsupported policy format {} version {}", f.format, f.version));
        }
        if f.layers.is_empty() {
            return Err("the policy has no layers".into());
        }
        if precision == Precision::Int8 {
            match &f.int8 {
                Some(q) if q.input_amax.len() == f.layers.len() => {}
                Some(_) => return Err("int8.input_amax needs one value per layer".into()),
                None => return Err("the policy file has no int8 calibration (export it with calibration data)".into()),
            }
        }
        let mut layers = Vec::new();
        let mut prev: Option<usize> = None;
        for (i, l) in f.layers.iter().enumerate() {
            let outputs = l.weight.len();
            let inputs = l.weight.first().map_or(0, |r| r.len());
            if outputs == 0 || inputs == 0 || l.weight.iter().any(|r| r.len() != inputs) {
                return Err(format!("layer {i}: weight must be a non-empty rectangular [out][in] matrix"));
            }
            if let Some(p) = prev {
                if p != inputs {
                    return Err(format!("layer {i}: takes {inputs} inputs but the previous layer gives {p}"));
                }
            }
            let bias = l.bias.clone().unwrap_or_else(|| vec![0.0; outputs]);
            if bias.len() != outputs {
                return Err(format!("layer {i}: bias has {} values for {outputs} outputs", bias.len()));
            }
            let weight: Vec<f32> = l.weight.iter().flatten().copied().collect();
            if weight.iter().chain(&bias).any(|v| !v.is_finite()) {
                return Err(format!("layer {i}: weights must be finite"));
            }
            let padded = outputs.div_ceil(LANES) * LANES;
            let mut weight_t = vec![0f32; inputs * padded];
            let mut w_q_t = vec![0i32; inputs * padded];
            let mut w_scale = vec![1.0f32; outputs];
            for (r, row) in weight.chunks_exact(inputs).enumerate() {
                let amax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let s = if amax > 0.0 { 127.0 / amax } else { 1.0 };
                w_scale[r] = s;
                for (j, v) in row.iter().enumerate() {
                    weight_t[j * padded + r] = *v;
                    // int8 values, widened once here so the hot loop does no conversions.
                    w_q_t[j * padded + r] = (v * s).round().clamp(-127.0, 127.0) as i32;
                }
            }
            let in_scale = match &f.int8 {
                Some(q) => {
                    let a = q.input_amax.get(i).copied().unwrap_or(1.0);
                    if a > 0.0 && a.is_finite() {
                        127.0 / a
                    } else {
                        1.0
                    }
                }
                None => 1.0,
            };
            let mut dequant: Vec<f32> = w_scale.iter().map(|ws| 1.0 / (in_scale * ws)).collect();
            dequant.resize(padded, 0.0);
            let mut bias = bias;
            bias.resize(padded, 0.0);
            layers.push(Layer {
                inputs,
                outputs,
                padded,
                weight_t,
                bias,
                act: Activation::parse(&l.activation).map_err(|e| format!("layer {i}: {e}"))?,
                w_q_t,
                dequant,
                in_scale,
            });
            prev = Some(outputs);
        }
        let width = layers.iter().map(|l| l.inputs.max(l.padded)).max().unwrap_or(1);
        let mlp = Mlp { layers, output: Activation::parse(&f.output)?, precision, width };
        if precision == Precision::Int8 && !mlp.int8_supported() {
            return Err("int8 inference supports at most 256 inputs and outputs per layer".into());
        }
        Ok(mlp)
    }

    /// Number of inputs.
    pub fn inputs(&self) -> usize {
        self.layers[0].inputs
    }

    /// Number of outputs.
    pub fn outputs(&self) -> usize {
        self.layers[self.layers.len() - 1].outputs
    }

    /// Evaluates the network on `x`, writing the outputs into `out`; `scratch`
    /// must hold at least `2 x width` floats (see [`Mlp::scratch_len`]).
    pub fn forward(&self, x: &[f32], out: &mut [f32], scratch: &mut [f32]) {
        let (a, b) = scratch.split_at_mut(self.width);
        a[..x.len()].copy_from_slice(x);
        let (mut cur, mut next) = (a, b);
        for l in &self.layers {
            let y = &mut next[..l.padded];
            match self.precision {
                Precision::Float32 => {
                    for (lane, (ys, bs)) in y.chunks_exact_mut(LANES).zip(l.bias.chunks_exact(LANES)).enumerate() {
                        let mut acc = [0f32; LANES];
                        acc.copy_from_slice(bs);
                        for (j, xj) in cur[..l.inputs].iter().enumerate() {
                            let w = &l.weight_t[j * l.padded + lane * LANES..][..LANES];
                            for k in 0..LANES {
                                acc[k] += w[k] * xj;
                            }
                        }
                        ys.copy_from_slice(&acc);
                    }
                }
                Precision::Int8 => {
                    // Quantise the input once; small layers use a stack buffer.
                    let mut small = [0i32; 32];
                    let mut big = Vec::new();
                    let xq: &mut [i32] = if l.inputs <= 32 {
                        &mut small[..l.inputs]
                    } else {
                        big.resize(l.inputs, 0);
                        &mut big
                    };
                    for (q, xj) in xq.iter_mut().zip(&cur[..l.inputs]) {
                        // Round half away from zero without a libm call.
                        let v = (xj * l.in_scale).clamp(-127.0, 127.0);
                        *q = (v + 0.5f32.copysign(v)) as i32;
                    }
                    for (lane, ys) in y.chunks_exact_mut(LANES).enumerate() {
                        let mut acc = [0i32; LANES];
                        for (j, &q) in xq.iter().enumerate() {
                            let w = &l.w_q_t[j * l.padded + lane * LANES..][..LANES];
                            for k in 0..LANES {
                                acc[k] += w[k] * q;
                            }
                        }
                        let base = lane * LANES;
                        for k in 0..LANES {
                            ys[k] = acc[k] as f32 * l.dequant[base + k] + l.bias[base + k];
                        }
                    }
                }
            }
            for yr in y[..l.outputs].iter_mut() {
                *yr = l.act.apply(*yr);
            }
            std::mem::swap(&mut cur, &mut next);
        }
        let n = self.outputs();
        for (o, v) in out.iter_mut().zip(&cur[..n]) {
            *o = self.output.apply(*v);
        }
    }

    /// Scratch floats [`Mlp::forward`] needs.
    pub fn scratch_len(&self) -> usize {
        2 * self.width
    }

    /// Whether the int8 path can run this network (at most 256 inputs and outputs per layer).
    pub fn int8_supported(&self) -> bool {
        self.layers.iter().all(|l| l.inputs <= 256 && l.outputs <= 256)
    }
}

#[cfg(test)]
mod tests {
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
}

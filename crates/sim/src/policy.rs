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
//! `output` is applied to the last layer's result.
//!
//! float32 inference computes each output as `b + w_0 x_0 + w_1 x_1 + ...`, in that order.
//!
//! int8 inference quantises each layer's input with one symmetric scale (calibrated on
//! recorded observations) and each weight row with its own, accumulates in int32, and
//! rescales to float before the bias and the activation. Exactly, for layer `l` (f32
//! arithmetic throughout):
//!
//! * `q(v) = sign(v) floor(min(|v|, 127) + 0.5)`: an int8 value, rounded half away from
//!   zero (NaN gives 0);
//! * input scale `s = 127 / input_amax[l]` (1 if that is not positive and finite), row scale
//!   `s_r = 127 / max_j |w_rj|` (1 for a zero row);
//! * `acc_r = sum_j q(w_rj s_r) q(x_j s)`, exact (int32);
//! * `y_r = acc_r (1 / (s s_r)) + b_r`, the reciprocal computed once (a bias of -0 counts
//!   as +0), then the activation.
//!
//! `ccgym.policies.forward(policy, obs, "int8")` is the Python reference of the same
//! arithmetic; the two agree bit for bit (up to the libm `tanh` of a `tanh` activation).
//!
//! Version 2 adds steps with memory, for recurrent policies such as MVFST-RL's (FC, FC,
//! the clipped last reward appended, an LSTM, policy and value heads). Its `layers` are
//! steps in order, each a dense layer as above (`"kind": "dense"` may be given) or:
//!
//! ```json
//! {"kind": "concat", "source": "reward", "size": 1, "clip": [-1.0, 1.0]}
//! {"kind": "lstm", "weight_ih": [[...]], "weight_hh": [[...]], "bias_ih": [...], "bias_hh": [...]}
//! ```
//!
//! and the file may say `"action_outputs": A`: the first `A` outputs of the last layer are
//! the action's (the scores an argmax picks from, or the continuous action), the rest (a
//! value head stacked under the policy head) are computed and not used.
//!
//! * `concat` appends the agent's last reward (the one delivered with this observation: the
//!   outcome of its previous action), clipped to `clip` when given, to the current vector.
//! * `lstm` is one step of one PyTorch `nn.LSTM` layer, exactly: `weight_ih` is `[4H][in]`,
//!   `weight_hh` `[4H][H]`, the biases `[4H]` (or null), the 4H rows in PyTorch's gate order
//!   i, f, g, o; `gates = (W_ih x + b_ih) + (W_hh h + b_hh)`, `i, f, o = sigmoid`, `g = tanh`,
//!   `c' = f c + i g`, `h' = o tanh(c')`, and the step's output is `h'`.
//! * The state (h then c of each `lstm` step, [`Mlp::state_len`] floats) is kept per agent
//!   by the caller ([`Mlp::forward_step`]); the simulator keeps one per agent flow and per
//!   queue agent, zero at the start of a run (an episode) until its first decision.
//!
//! Packed arrays: any weight or bias may instead be an object
//! `{"shape": [rows, cols], "f32": "<base64>"}` (`"shape": [n]` for a bias): the standard
//! base64 (RFC 4648, with padding) of the values as little-endian IEEE float32, row-major.
//! The values are exactly those of the list form; a large network's file is about a
//! quarter of the size of its decimal text and parses far faster (`ccgym export` packs
//! arrays of more than 65,536 values).
//!
//! Version 2 runs in float32 only (a file with `concat` or `lstm` steps refuses int8); a
//! version-2 file of dense layers only is the same network as version 1. float32 results
//! agree with `ccgym.policies.forward_steps` and with `torch.nn.LSTM` to rounding (about
//! 1e-6 relative; sums are taken in another order).

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

/// Weights and biases given either as JSON lists or packed (see the module docs).
mod packed {
    use base64::Engine;
    use serde::de::Error;
    use serde::{Deserialize, Deserializer};

    /// The values of a packed array, after checking `shape` against the data.
    fn floats(v: &serde_json::Value, dims: usize) -> Result<(Vec<usize>, Vec<f32>), String> {
        let obj = v.as_object().ok_or("expected a list of numbers or a packed array")?;
        if let Some(k) = obj.keys().find(|k| *k != "shape" && *k != "f32") {
            return Err(format!("packed array: unknown field \"{k}\" (expected \"shape\" and \"f32\")"));
        }
        let shape: Vec<usize> = obj
            .get("shape")
            .and_then(|s| serde_json::from_value(s.clone()).ok())
            .ok_or("packed array: \"shape\" must be a list of sizes")?;
        if shape.len() != dims {
            return Err(format!("packed array: shape {shape:?} has {} dimensions, expected {dims}", shape.len()));
        }
        let text = obj.get("f32").and_then(|t| t.as_str()).ok_or("packed array: \"f32\" must be a base64 string")?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| format!("packed array: \"f32\" is not base64: {e}"))?;
        let n: usize = shape.iter().product();
        if bytes.len() != 4 * n {
            return Err(format!(
                "packed array: shape {shape:?} needs {n} float32 values, the data holds {} bytes",
                bytes.len()
            ));
        }
        let values = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        Ok((shape, values))
    }

    /// A `[rows][cols]` matrix: nested lists or a packed array of two dimensions.
    pub fn matrix<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f32>>, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        if v.is_array() {
            return serde_json::from_value(v).map_err(D::Error::custom);
        }
        let (shape, values) = floats(&v, 2).map_err(D::Error::custom)?;
        if shape[1] == 0 {
            return Ok(vec![Vec::new(); shape[0]]);
        }
        Ok(values.chunks_exact(shape[1]).map(<[f32]>::to_vec).collect())
    }

    /// An optional vector: null, a list, or a packed array of one dimension.
    pub fn vector<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<f32>>, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        if v.is_null() || v.is_array() {
            return serde_json::from_value(v).map_err(D::Error::custom);
        }
        floats(&v, 1).map(|(_, values)| Some(values)).map_err(D::Error::custom)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayerFile {
    /// `"dense"` (the default); other kinds have their own shape below.
    #[serde(default)]
    #[allow(dead_code)]
    kind: Option<String>,
    #[serde(deserialize_with = "packed::matrix")]
    weight: Vec<Vec<f32>>,
    #[serde(default, deserialize_with = "packed::vector")]
    bias: Option<Vec<f32>>,
    #[serde(default = "default_act")]
    activation: String,
}

fn default_act() -> String {
    "none".into()
}

/// A `concat` step (version 2): extra inputs appended to the current vector.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ConcatFile {
    #[allow(dead_code)]
    kind: String,
    source: String,
    #[serde(default = "one")]
    size: usize,
    #[serde(default)]
    clip: Option<[f32; 2]>,
}

fn one() -> usize {
    1
}

/// An `lstm` step (version 2): one PyTorch `nn.LSTM` layer, one time step.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LstmFile {
    #[allow(dead_code)]
    kind: String,
    #[serde(deserialize_with = "packed::matrix")]
    weight_ih: Vec<Vec<f32>>,
    #[serde(deserialize_with = "packed::matrix")]
    weight_hh: Vec<Vec<f32>>,
    #[serde(default, deserialize_with = "packed::vector")]
    bias_ih: Option<Vec<f32>>,
    #[serde(default, deserialize_with = "packed::vector")]
    bias_hh: Option<Vec<f32>>,
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
    layers: Vec<serde_json::Value>,
    #[serde(default = "default_act")]
    output: String,
    /// Version 2: the first this many outputs are the action's (the rest, e.g. a value
    /// head, are computed and not used); default: all.
    #[serde(default)]
    action_outputs: Option<usize>,
    #[serde(default)]
    int8: Option<Int8File>,
    #[serde(default)]
    #[allow(dead_code)]
    meta: Option<serde_json::Value>,
}

/// Four f32 lanes, the unit of SIMD work: SSE2 intrinsics on x86-64 (where SSE2 is
/// part of the baseline, so any x86-64 build can use it), a lane-by-lane array elsewhere.
/// Both give the same results bit for bit (each operation is one IEEE float operation
/// per lane, or a comparison or a bit operation); a test checks it.
mod simd {
    #[cfg(target_arch = "x86_64")]
    pub use sse2::F4;

    #[cfg(not(target_arch = "x86_64"))]
    pub use portable::F4;

    /// 2^23: `(t + 2^23) - 2^23` rounds `0 <= t < 2^23` to an integer (ties to even).
    #[cfg(any(test, not(target_arch = "x86_64")))]
    const MAGIC: f32 = 8_388_608.0;

    #[cfg(target_arch = "x86_64")]
    mod sse2 {
        use std::arch::x86_64::*;

        /// Four f32 lanes in an SSE register.
        ///
        /// SAFETY (every `unsafe` block of this module): the intrinsics need SSE2, which
        /// every x86-64 CPU has (it is part of the target's baseline), and `load` / `store`
        /// access exactly the four floats of the array reference they are given.
        #[derive(Clone, Copy, Debug)]
        pub struct F4(__m128);

        impl F4 {
            #[inline(always)]
            pub fn zero() -> F4 {
                F4(unsafe { _mm_setzero_ps() })
            }

            #[inline(always)]
            pub fn splat(v: f32) -> F4 {
                F4(unsafe { _mm_set1_ps(v) })
            }

            #[inline(always)]
            pub fn load(a: &[f32; 4]) -> F4 {
                F4(unsafe { _mm_loadu_ps(a.as_ptr()) })
            }

            #[inline(always)]
            pub fn store(self, a: &mut [f32; 4]) {
                unsafe { _mm_storeu_ps(a.as_mut_ptr(), self.0) }
            }

            #[inline(always)]
            pub fn add(self, o: F4) -> F4 {
                F4(unsafe { _mm_add_ps(self.0, o.0) })
            }

            #[inline(always)]
            pub fn mul(self, o: F4) -> F4 {
                F4(unsafe { _mm_mul_ps(self.0, o.0) })
            }

            /// `if v > 0 { v } else { 0 }` per lane.
            #[inline(always)]
            pub fn relu(self) -> F4 {
                F4(unsafe { _mm_and_ps(_mm_cmpgt_ps(self.0, _mm_setzero_ps()), self.0) })
            }

            /// [`super::portable::F4::quantise`], in SSE2. After the clamp `t` is in
            /// [0.5, 127.5], where truncation to int32 and back is exactly `floor(t)`.
            #[inline(always)]
            pub fn quantise(self) -> F4 {
                unsafe {
                    let v = self.0;
                    let sign = _mm_set1_ps(-0.0);
                    // minps gives its second operand when the first is NaN: 127.
                    let a = _mm_min_ps(_mm_andnot_ps(sign, v), _mm_set1_ps(127.0));
                    let t = _mm_add_ps(a, _mm_set1_ps(0.5));
                    let f = _mm_cvtepi32_ps(_mm_cvttps_epi32(t));
                    let q = _mm_or_ps(f, _mm_and_ps(v, sign));
                    F4(_mm_and_ps(q, _mm_cmpord_ps(v, v)))
                }
            }

            /// [`super::portable::F4::relu_quantise`], in SSE2.
            #[inline(always)]
            pub fn relu_quantise(self) -> F4 {
                unsafe {
                    // maxps gives its second operand when the first is NaN, or both are zeros: +0.
                    let a = _mm_max_ps(self.0, _mm_setzero_ps());
                    let a = _mm_min_ps(a, _mm_set1_ps(127.0));
                    let t = _mm_add_ps(a, _mm_set1_ps(0.5));
                    F4(_mm_cvtepi32_ps(_mm_cvttps_epi32(t)))
                }
            }
        }
    }

    #[cfg(any(test, not(target_arch = "x86_64")))]
    pub mod portable {
        use super::MAGIC;

        /// `floor(a + 0.5)` (the addition in f32) for `0 <= a <= 127`.
        #[inline(always)]
        fn floor_half_up(a: f32) -> f32 {
            let t = a + 0.5;
            let r = (t + MAGIC) - MAGIC; // t rounded to an integer (ties to even)
            r - if r > t { 1.0 } else { 0.0 }
        }

        /// Four f32 lanes in an array (the compiler vectorises what it can).
        #[derive(Clone, Copy, Debug)]
        pub struct F4([f32; 4]);

        impl F4 {
            #[inline(always)]
            fn map(self, f: impl Fn(f32) -> f32) -> F4 {
                F4([f(self.0[0]), f(self.0[1]), f(self.0[2]), f(self.0[3])])
            }

            #[inline(always)]
            pub fn zero() -> F4 {
                F4([0.0; 4])
            }

            #[inline(always)]
            pub fn splat(v: f32) -> F4 {
                F4([v; 4])
            }

            #[inline(always)]
            pub fn load(a: &[f32; 4]) -> F4 {
                F4(*a)
            }

            #[inline(always)]
            pub fn store(self, a: &mut [f32; 4]) {
                *a = self.0;
            }

            #[inline(always)]
            pub fn add(self, o: F4) -> F4 {
                F4([self.0[0] + o.0[0], self.0[1] + o.0[1], self.0[2] + o.0[2], self.0[3] + o.0[3]])
            }

            #[inline(always)]
            pub fn mul(self, o: F4) -> F4 {
                F4([self.0[0] * o.0[0], self.0[1] * o.0[1], self.0[2] * o.0[2], self.0[3] * o.0[3]])
            }

            /// `if v > 0 { v } else { 0 }` per lane: `max(v, 0)`, NaN giving 0.
            #[inline(always)]
            pub fn relu(self) -> F4 {
                self.map(|v| if v > 0.0 { v } else { 0.0 })
            }

            /// The int8 value of each lane: clamped to [-127, 127] and rounded to the
            /// nearest integer, halves away from zero, as `sign(v) * floor(min(|v|, 127) + 0.5)`
            /// with the addition in f32 (as the Python reference `ccgym.policies.forward`);
            /// NaN gives 0. No float-to-int conversion (Rust's saturating one does not
            /// vectorise): `floor(t)` is `t` rounded to an integer, less one if that went up.
            #[inline(always)]
            pub fn quantise(self) -> F4 {
                self.map(|v| {
                    let a = v.abs();
                    let a = if a < 127.0 { a } else { 127.0 }; // NaN gives 127, cleared below
                    if v.is_nan() {
                        0.0
                    } else {
                        floor_half_up(a).copysign(v)
                    }
                })
            }

            /// `relu(v)` quantised: `floor(min(max(v, 0), 127) + 0.5)`, NaN giving 0. The
            /// same as [`F4::quantise`] of [`F4::relu`], and for a scale `s > 0` the same
            /// as `relu(y) * s` quantised when `self` is `y * s` (`max(y s, 0) = max(y, 0) s`).
            #[inline(always)]
            pub fn relu_quantise(self) -> F4 {
                self.map(|v| {
                    let a = if v > 0.0 { v } else { 0.0 };
                    floor_half_up(if a < 127.0 { a } else { 127.0 })
                })
            }
        }
    }
}

use simd::F4;

/// Lanes of an [`F4`].
const LANES: usize = 4;

/// Output blocks of [`LANES`] computed together, their accumulators held in registers.
const TILE: usize = 4;

/// The int8 value of `v` (see `F4::quantise`).
fn quantise(v: f32) -> f32 {
    let mut q = [0f32; LANES];
    F4::splat(v).quantise().store(&mut q);
    q[0]
}

/// Up to [`TILE`] blocks of [`LANES`] outputs of a layer, computed together.
#[derive(Clone, Debug)]
struct Tile {
    /// Blocks used, 1 to [`TILE`].
    blocks: usize,
    /// For each input, the tile's `blocks` blocks of weights (float32: the weights;
    /// int8: the int8 weights, as integer-valued floats).
    weight: Vec<F4>,
    bias: [F4; TILE],
    /// int8: 1 / (input scale x row scale) per output.
    dequant: [F4; TILE],
}

impl Tile {
    /// The tile's outputs `act(W x + b)` into `y` (one block per used block); for int8
    /// `x` is the quantised input, and with `quant` the outputs are stored quantised
    /// with that scale (the next layer's input).
    #[inline(always)]
    fn eval(&self, x: &[f32], y: &mut [[f32; LANES]], precision: Precision, relu: bool, quant: Option<f32>) {
        match (precision, self.blocks) {
            (Precision::Float32, 1) => self.eval_n::<1, 1>(x, y, precision, relu, quant),
            (Precision::Float32, 2) => self.eval_n::<2, 1>(x, y, precision, relu, quant),
            (Precision::Float32, 3) => self.eval_n::<3, 1>(x, y, precision, relu, quant),
            (Precision::Float32, _) => self.eval_n::<TILE, 1>(x, y, precision, relu, quant),
            (Precision::Int8, 1) => self.eval_n::<1, 4>(x, y, precision, relu, quant),
            (Precision::Int8, 2) => self.eval_n::<2, 4>(x, y, precision, relu, quant),
            (Precision::Int8, 3) => self.eval_n::<3, 4>(x, y, precision, relu, quant),
            (Precision::Int8, _) => self.eval_n::<TILE, 2>(x, y, precision, relu, quant),
        }
    }

    /// [`Tile::eval`] for `B` blocks, summing in `S` (1 to 4) independent partial sums:
    /// input `j` goes to sum `j mod S`, then the sums are added pairwise.
    ///
    /// float32 uses one: each output is `b + w_0 x_0 + w_1 x_1 + ...` in that order.
    /// int8 computes the integer products and sums in f32, which is exact: each product
    /// is an integer of magnitude <= 127 x 127 and each partial sum one of magnitude
    /// <= 256 x 127 x 127 < 2^24 (at most 256 inputs), so every addition is exact and
    /// the result is the int32 accumulation bit for bit, in any order; several partial
    /// sums shorten the chain of dependent additions. Then `acc x dequant + b`.
    #[inline(always)]
    fn eval_n<const B: usize, const S: usize>(
        &self,
        x: &[f32],
        y: &mut [[f32; LANES]],
        precision: Precision,
        relu: bool,
        quant: Option<f32>,
    ) {
        let mut acc = [[F4::zero(); B]; S];
        let (rows, _) = self.weight.as_chunks::<B>();
        let (xs, x_rest) = x.as_chunks::<S>();
        let (ws, w_rest) = rows.as_chunks::<S>();
        let mut chunks = xs.iter().zip(ws);
        match precision {
            Precision::Float32 => acc[0].copy_from_slice(&self.bias[..B]),
            Precision::Int8 => {
                // Start from the first products rather than 0 + product: a sum can then be
                // -0 where the int32 one is 0, which `+ bias` (zeros stored as +0) makes +0.
                if let Some((xs, ws)) = chunks.next() {
                    for s in 0..S {
                        let xv = F4::splat(xs[s]);
                        for b in 0..B {
                            acc[s][b] = ws[s][b].mul(xv);
                        }
                    }
                }
            }
        }
        for (xs, ws) in chunks {
            for s in 0..S {
                let xv = F4::splat(xs[s]);
                for b in 0..B {
                    acc[s][b] = acc[s][b].add(ws[s][b].mul(xv));
                }
            }
        }
        for (s, (&xj, wj)) in x_rest.iter().zip(w_rest).enumerate() {
            let xv = F4::splat(xj);
            for b in 0..B {
                acc[s][b] = acc[s][b].add(wj[b].mul(xv));
            }
        }
        let mut v = acc[0];
        for b in 0..B {
            v[b] = match S {
                1 => acc[0][b],
                2 => acc[0][b].add(acc[1][b]),
                3 => acc[0][b].add(acc[1][b]).add(acc[2][b]),
                _ => acc[0][b].add(acc[1][b]).add(acc[2][b].add(acc[3][b])),
            };
        }
        // The epilogue in stages, each a fixed number of block operations.
        if precision == Precision::Int8 {
            for ((vb, dq), bias) in v.iter_mut().zip(&self.dequant).zip(&self.bias) {
                *vb = vb.mul(*dq).add(*bias);
            }
        }
        match (relu, quant) {
            (true, Some(q)) => {
                let q = F4::splat(q);
                for vb in v.iter_mut() {
                    *vb = vb.mul(q).relu_quantise();
                }
            }
            (true, None) => {
                for vb in v.iter_mut() {
                    *vb = vb.relu();
                }
            }
            (false, Some(q)) => {
                let q = F4::splat(q);
                for vb in v.iter_mut() {
                    *vb = vb.mul(q).quantise();
                }
            }
            (false, None) => {}
        }
        let y: &mut [[f32; LANES]; B] = y.first_chunk_mut().expect("a tile's outputs fit the scratch space");
        for b in 0..B {
            v[b].store(&mut y[b]);
        }
    }
}

/// One dense layer: its outputs in tiles of up to [`TILE`] blocks of [`LANES`] (padded
/// with zeros). Weights are kept transposed so that the inner loop runs over independent
/// outputs in SIMD registers, not along one dependent chain per output.
#[derive(Clone, Debug)]
struct Layer {
    inputs: usize,
    outputs: usize,
    /// `outputs` in blocks of [`LANES`], rounded up.
    blocks: usize,
    tiles: Vec<Tile>,
    act: Activation,
    /// int8: the input scale, 127 / `input_amax`.
    in_scale: f32,
}

impl Layer {
    /// `y = act(W x + b)` into the first `blocks` blocks of `y`; for int8 `x` is the
    /// quantised input, and with `quant` the outputs are stored quantised with that scale.
    #[inline(always)]
    fn eval(&self, x: &[f32], y: &mut [[f32; LANES]], precision: Precision, quant: Option<f32>) {
        let x = &x[..self.inputs];
        let relu = self.act == Activation::Relu;
        let tanh = self.act == Activation::Tanh;
        let fused = if tanh { None } else { quant };
        for (t, y) in self.tiles.iter().zip(y.chunks_mut(TILE)) {
            t.eval(x, y, precision, relu, fused);
        }
        if tanh {
            for v in y.as_flattened_mut()[..self.outputs].iter_mut() {
                *v = v.tanh();
            }
            if let Some(s) = quant {
                for q in y[..self.blocks].iter_mut() {
                    F4::load(q).mul(F4::splat(s)).quantise().store(q);
                }
            }
        }
    }
}

/// Numeric precision of native inference.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precision {
    /// float32 throughout.
    Float32,
    /// int8 weights and inputs, int32 accumulation.
    Int8,
}

/// A multilayer perceptron loaded from a policy file (version 2: with `concat`
/// and `lstm` steps between its dense layers).
#[derive(Clone, Debug)]
pub struct Mlp {
    /// The dense layers of a network made of dense layers only (empty otherwise).
    layers: Vec<Layer>,
    output: Activation,
    precision: Precision,
    /// Floats in each half of the scratch space: whole blocks of [`LANES`].
    width: usize,
    /// The steps of a network with `concat` or `lstm` steps (empty otherwise).
    steps: Vec<Step>,
    /// Inputs (the observation).
    n_inputs: usize,
    /// Outputs of the last step.
    n_outputs: usize,
    /// Outputs that are the action's (the first ones).
    n_action: usize,
    /// Extra inputs the `concat` steps take, in order.
    n_extra: usize,
    /// Floats of recurrent state per agent (h and c of every `lstm` step).
    n_state: usize,
    /// Floats of one LSTM gate buffer (4 H, whole blocks), 0 without `lstm`.
    gates: usize,
}

/// One step of a version-2 network.
#[derive(Clone, Debug)]
enum Step {
    /// A dense layer.
    Dense(Layer),
    /// Append `size` extra inputs, clipped to `clip`.
    Concat { size: usize, clip: Option<(f32, f32)> },
    /// An LSTM layer.
    Lstm(Lstm),
}

/// One PyTorch `nn.LSTM` layer (gate order i, f, g, o), one time step.
#[derive(Clone, Debug)]
struct Lstm {
    hidden: usize,
    /// `W_ih x + b_ih`: inputs to the 4 H gate pre-activations.
    ih: Layer,
    /// `W_hh h + b_hh`.
    hh: Layer,
    /// Where this layer's h (then c) starts in an agent's state.
    state: usize,
}

/// The index of the largest score, the lowest of equal ones (as `numpy.argmax` and
/// `torch.argmax`); a NaN score never wins over a number. 0 for no scores.
pub fn argmax(scores: &[f32]) -> usize {
    let mut best = 0;
    for (i, &q) in scores.iter().enumerate().skip(1) {
        if q > scores[best] || scores[best].is_nan() && !q.is_nan() {
            best = i;
        }
    }
    best
}

/// An index drawn from the softmax of `scores` with `u` uniform in [0, 1): index i with
/// probability `exp(s_i) / sum_j exp(s_j)`. A NaN score is never drawn; if every score is
/// NaN (or none is given), 0, as [`argmax`].
pub fn sample_softmax(scores: &[f32], u: f64) -> usize {
    let top = scores.iter().copied().filter(|s| !s.is_nan()).fold(f32::NEG_INFINITY, f32::max);
    if !top.is_finite() {
        return argmax(scores);
    }
    let weight = |s: f32| if s.is_nan() { 0.0 } else { f64::from(s - top).exp() };
    let total: f64 = scores.iter().map(|&s| weight(s)).sum();
    let mut left = u * total;
    let mut last = 0;
    for (i, &s) in scores.iter().enumerate() {
        let w = weight(s);
        if w > 0.0 {
            if left < w {
                return i;
            }
            left -= w;
            last = i;
        }
    }
    // Rounding left a sliver past the last weight: the last drawable index.
    last
}

/// Most `concat` steps (extra inputs) a network may have.
pub const MAX_EXTRA: usize = 8;

/// `1 / (1 + exp(-x))`.
#[inline]
fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// A dense layer `[out][in]` as evaluated ([`Layer`]), checked: rectangular, finite, `inputs`
/// matching `prev` when given. `what` names it in messages.
fn dense_layer(
    what: &str,
    weight: &[Vec<f32>],
    bias: Option<&[f32]>,
    act: Activation,
    prev: Option<usize>,
    precision: Precision,
    input_amax: Option<f32>,
) -> Result<Layer, String> {
    let outputs = weight.len();
    let inputs = weight.first().map_or(0, |r| r.len());
    if outputs == 0 || inputs == 0 || weight.iter().any(|r| r.len() != inputs) {
        return Err(format!("{what}: weight must be a non-empty rectangular [out][in] matrix"));
    }
    if let Some(p) = prev {
        if p != inputs {
            return Err(format!("{what}: takes {inputs} inputs but the previous layer gives {p}"));
        }
    }
    let mut bias = bias.map_or_else(|| vec![0.0; outputs], <[f32]>::to_vec);
    if bias.len() != outputs {
        return Err(format!("{what}: bias has {} values for {outputs} outputs", bias.len()));
    }
    if weight.iter().flatten().chain(&bias).any(|v| !v.is_finite()) {
        return Err(format!("{what}: weights must be finite"));
    }
    if precision == Precision::Int8 && (inputs > 256 || outputs > 256) {
        return Err("int8 inference supports at most 256 inputs and outputs per layer".into());
    }
    let in_scale = match input_amax {
        Some(a) if a > 0.0 && a.is_finite() => 127.0 / a,
        _ => 1.0,
    };
    if precision == Precision::Int8 {
        // -0 as +0: the same sums (the int32 sum is never -0), and `acc + b` is then
        // +0 for an `acc` of either zero (see `Tile::eval_n`).
        for b in bias.iter_mut().filter(|b| **b == 0.0) {
            *b = 0.0;
        }
    }
    let blocks = outputs.div_ceil(LANES);
    let padded = blocks * LANES;
    // The weights as used, transposed ([in][out], outputs padded with zeros; int8:
    // quantised with the row's scale), and the int8 dequantisation per output.
    let mut wt = vec![0f32; inputs * padded];
    let mut dequant = vec![0f32; padded];
    for (r, row) in weight.iter().enumerate() {
        let s = match precision {
            Precision::Float32 => None,
            Precision::Int8 => {
                let amax = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                let s = if amax > 0.0 { 127.0 / amax } else { 1.0 };
                dequant[r] = 1.0 / (in_scale * s);
                Some(s)
            }
        };
        for (col, v) in wt.chunks_exact_mut(padded).zip(row) {
            col[r] = s.map_or(*v, |s| quantise(v * s));
        }
    }
    let per_output = |v: &[f32], first: usize| -> [F4; TILE] {
        std::array::from_fn(|b| {
            F4::load(&std::array::from_fn(|k| v.get(first + b * LANES + k).copied().unwrap_or(0.0)))
        })
    };
    let tiles = (0..blocks)
        .step_by(TILE)
        .map(|t| {
            let n = (blocks - t).min(TILE);
            let cols = t * LANES..(t + n) * LANES;
            let weight =
                wt.chunks_exact(padded).flat_map(|col| col[cols.clone()].as_chunks().0).map(F4::load).collect();
            Tile { blocks: n, weight, bias: per_output(&bias, t * LANES), dequant: per_output(&dequant, t * LANES) }
        })
        .collect();
    Ok(Layer { inputs, outputs, blocks, tiles, act, in_scale })
}

impl Mlp {
    /// Parses a policy file's text.
    pub fn from_json(text: &str, precision: Precision) -> Result<Mlp, String> {
        let f: MlpFile = serde_json::from_str(text).map_err(|e| format!("not a ccgym policy file: {e}"))?;
        if f.format != "ccgym-mlp" || !(f.version == 1 || f.version == 2) {
            return Err(format!("unsupported policy format {} version {}", f.format, f.version));
        }
        if f.layers.is_empty() {
            return Err("the policy has no layers".into());
        }
        let kind = |v: &serde_json::Value| v.get("kind").and_then(|k| k.as_str()).unwrap_or("dense").to_string();
        let kinds: Vec<String> = f.layers.iter().map(kind).collect();
        if let Some((i, k)) = kinds.iter().enumerate().find(|(_, k)| !["dense", "concat", "lstm"].contains(&k.as_str()))
        {
            return Err(format!("layer {i}: unknown kind \"{k}\" (use dense, concat or lstm)"));
        }
        let stepped = kinds.iter().any(|k| k != "dense");
        if f.version == 1 && (stepped || f.action_outputs.is_some()) {
            return Err("concat and lstm layers and action_outputs need \"version\": 2".into());
        }
        if stepped {
            if precision == Precision::Int8 {
                return Err("int8 inference does not support concat or lstm layers (use float32)".into());
            }
            return Mlp::stepped(&f, precision);
        }
        if precision == Precision::Int8 {
            match &f.int8 {
                Some(q) if q.input_amax.len() == f.layers.len() => {}
                Some(_) => return Err("int8.input_amax needs one value per layer".into()),
                None => return Err("the policy file has no int8 calibration (export it with calibration data)".into()),
            }
        }
        let mut layers: Vec<Layer> = Vec::new();
        for (i, v) in f.layers.iter().enumerate() {
            let l: LayerFile = serde_json::from_value(v.clone()).map_err(|e| format!("layer {i}: {e}"))?;
            let act = Activation::parse(&l.activation).map_err(|e| format!("layer {i}: {e}"))?;
            let amax = f.int8.as_ref().map(|q| q.input_amax.get(i).copied().unwrap_or(1.0));
            let prev = layers.last().map(|l| l.outputs);
            layers.push(dense_layer(&format!("layer {i}"), &l.weight, l.bias.as_deref(), act, prev, precision, amax)?);
        }
        let width = layers.iter().map(|l| l.inputs.div_ceil(LANES).max(l.blocks)).max().unwrap_or(1) * LANES;
        let (n_inputs, n_outputs) = (layers[0].inputs, layers[layers.len() - 1].outputs);
        let n_action = Mlp::action_outputs(&f, n_outputs)?;
        Ok(Mlp {
            layers,
            output: Activation::parse(&f.output)?,
            precision,
            width,
            steps: vec![],
            n_inputs,
            n_outputs,
            n_action,
            n_extra: 0,
            n_state: 0,
            gates: 0,
        })
    }

    /// `action_outputs` of a file, checked against the last layer's outputs.
    fn action_outputs(f: &MlpFile, n_outputs: usize) -> Result<usize, String> {
        match f.action_outputs {
            None => Ok(n_outputs),
            Some(a) if a >= 1 && a <= n_outputs => Ok(a),
            Some(a) => Err(format!("action_outputs is {a} but the last layer has {n_outputs} outputs")),
        }
    }

    /// A version-2 network with `concat` or `lstm` steps (float32).
    fn stepped(f: &MlpFile, precision: Precision) -> Result<Mlp, String> {
        let mut steps = vec![];
        let mut cur: Option<usize> = None;
        let (mut n_extra, mut n_state, mut width, mut gates) = (0, 0, 0, 0);
        let mut n_inputs = 0;
        for (i, v) in f.layers.iter().enumerate() {
            let what = format!("layer {i}");
            let kind = v.get("kind").and_then(|k| k.as_str()).unwrap_or("dense");
            let step = match kind {
                "concat" => {
                    let c: ConcatFile = serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}"))?;
                    if c.source != "reward" {
                        return Err(format!("{what}: unknown concat source \"{}\" (use \"reward\")", c.source));
                    }
                    let Some(prev) = cur else {
                        return Err(format!("{what}: a concat step needs a layer before it"));
                    };
                    if c.size != 1 {
                        return Err(format!("{what}: source \"reward\" has size 1, not {}", c.size));
                    }
                    if n_extra == MAX_EXTRA {
                        return Err(format!("{what}: at most {MAX_EXTRA} concat steps"));
                    }
                    let clip = match c.clip {
                        Some([lo, hi]) if lo <= hi && lo.is_finite() && hi.is_finite() => Some((lo, hi)),
                        Some(_) => return Err(format!("{what}: clip must be [low, high] with low <= high")),
                        None => None,
                    };
                    n_extra += c.size;
                    cur = Some(prev + c.size);
                    Step::Concat { size: c.size, clip }
                }
                "lstm" => {
                    let l: LstmFile = serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}"))?;
                    let rows = l.weight_ih.len();
                    if rows == 0 || !rows.is_multiple_of(4) {
                        return Err(format!("{what}: weight_ih must have 4 H rows (gates i, f, g, o), not {rows}"));
                    }
                    let hidden = rows / 4;
                    if l.weight_hh.len() != rows || l.weight_hh.iter().any(|r| r.len() != hidden) {
                        return Err(format!("{what}: weight_hh must be [4 H][H] = [{rows}][{hidden}]"));
                    }
                    let ih = dense_layer(
                        &format!("{what} (weight_ih)"),
                        &l.weight_ih,
                        l.bias_ih.as_deref(),
                        Activation::None,
                        cur,
                        precision,
                        None,
                    )?;
                    let hh = dense_layer(
                        &format!("{what} (weight_hh)"),
                        &l.weight_hh,
                        l.bias_hh.as_deref(),
                        Activation::None,
                        Some(hidden),
                        precision,
                        None,
                    )?;
                    if cur.is_none() {
                        n_inputs = ih.inputs;
                    }
                    width = width.max(ih.inputs).max(hidden);
                    gates = gates.max(ih.blocks * LANES);
                    let state = n_state;
                    n_state += 2 * hidden;
                    cur = Some(hidden);
                    Step::Lstm(Lstm { hidden, ih, hh, state })
                }
                _ => {
                    let l: LayerFile = serde_json::from_value(v.clone()).map_err(|e| format!("{what}: {e}"))?;
                    let act = Activation::parse(&l.activation).map_err(|e| format!("{what}: {e}"))?;
                    let layer = dense_layer(&what, &l.weight, l.bias.as_deref(), act, cur, precision, None)?;
                    if cur.is_none() {
                        n_inputs = layer.inputs;
                    }
                    width = width.max(layer.inputs).max(layer.blocks * LANES);
                    cur = Some(layer.outputs);
                    Step::Dense(layer)
                }
            };
            width = width.max(cur.unwrap_or(0));
            steps.push(step);
        }
        let n_outputs = cur.unwrap_or(0);
        let n_action = Mlp::action_outputs(f, n_outputs)?;
        Ok(Mlp {
            layers: vec![],
            output: Activation::parse(&f.output)?,
            precision,
            width: width.div_ceil(LANES) * LANES,
            steps,
            n_inputs,
            n_outputs,
            n_action,
            n_extra,
            n_state,
            gates,
        })
    }

    /// Number of inputs.
    pub fn inputs(&self) -> usize {
        self.n_inputs
    }

    /// Number of outputs the action is chosen from (all outputs, unless the file's
    /// `action_outputs` says the first ones; the others, e.g. a value head, are not used).
    pub fn outputs(&self) -> usize {
        self.n_action
    }

    /// Number of outputs of the last layer (action outputs first).
    pub fn all_outputs(&self) -> usize {
        self.n_outputs
    }

    /// Extra inputs the `concat` steps take (the agent's last reward), in order.
    pub fn extra_inputs(&self) -> usize {
        self.n_extra
    }

    /// Floats of recurrent state one agent keeps (h and c of each `lstm` step);
    /// 0 for a network without memory.
    pub fn state_len(&self) -> usize {
        self.n_state
    }

    /// Evaluates the network on `x` (at least [`Mlp::inputs`] values), writing the
    /// outputs into `out` (up to [`Mlp::all_outputs`] of them: as many as `out` holds);
    /// `scratch` must hold at least [`Mlp::scratch_len`] floats. A network with
    /// `concat` or `lstm` steps is evaluated from a zero state with zero extra inputs
    /// (one step of a fresh agent); see [`Mlp::forward_step`].
    pub fn forward(&self, x: &[f32], out: &mut [f32], scratch: &mut [f32]) {
        if !self.steps.is_empty() {
            let (scratch, state) = scratch.split_at_mut(self.scratch_len() - self.n_state);
            state.fill(0.0);
            return self.run_steps(x, &[0.0; MAX_EXTRA], state, out, scratch);
        }
        self.forward_dense(x, out, scratch);
    }

    /// One decision of an agent: [`Mlp::forward`] with the `concat` steps' extra
    /// inputs (`extra`, [`Mlp::extra_inputs`] values) and the agent's recurrent
    /// `state` ([`Mlp::state_len`] floats, zero at the agent's start), which it
    /// updates. For a network of dense layers only, `extra` and `state` are unused.
    pub fn forward_step(&self, x: &[f32], extra: &[f32], state: &mut [f32], out: &mut [f32], scratch: &mut [f32]) {
        if self.steps.is_empty() {
            self.forward_dense(x, out, scratch);
        } else {
            self.run_steps(x, extra, &mut state[..self.n_state], out, scratch);
        }
    }

    /// The steps of a version-2 network, float32. Scratch: two halves of `width`
    /// floats (the current vector and the next), then two LSTM gate buffers.
    fn run_steps(&self, x: &[f32], extra: &[f32], state: &mut [f32], out: &mut [f32], scratch: &mut [f32]) {
        let (halves, gates) = scratch[..2 * self.width + 2 * self.gates].split_at_mut(2 * self.width);
        let (a, b) = halves.as_chunks_mut::<LANES>().0.split_at_mut(self.width / LANES);
        let (g_in, g_rec) = gates.as_chunks_mut::<LANES>().0.split_at_mut(self.gates / LANES);
        let (mut cur, mut next) = (a, b);
        let mut len = self.n_inputs;
        cur.as_flattened_mut()[..len].copy_from_slice(&x[..len]);
        let mut extra = extra.iter();
        for step in &self.steps {
            match step {
                Step::Dense(l) => {
                    l.eval(cur.as_flattened(), next, Precision::Float32, None);
                    std::mem::swap(&mut cur, &mut next);
                    len = l.outputs;
                }
                Step::Concat { size, clip } => {
                    let v = cur.as_flattened_mut();
                    for slot in &mut v[len..len + size] {
                        let e = extra.next().copied().unwrap_or(0.0);
                        *slot = match clip {
                            Some((lo, hi)) => e.max(*lo).min(*hi),
                            None => e,
                        };
                    }
                    len += size;
                }
                Step::Lstm(l) => {
                    let h = l.hidden;
                    let (hs, cs) = state[l.state..l.state + 2 * h].split_at_mut(h);
                    l.ih.eval(cur.as_flattened(), g_in, Precision::Float32, None);
                    l.hh.eval(hs, g_rec, Precision::Float32, None);
                    let (gi, gr) = (g_in.as_flattened(), g_rec.as_flattened());
                    let y = next.as_flattened_mut();
                    for k in 0..h {
                        let gate = |j: usize| gi[j * h + k] + gr[j * h + k];
                        let (i, f, g, o) = (sigmoid(gate(0)), sigmoid(gate(1)), gate(2).tanh(), sigmoid(gate(3)));
                        let c = f * cs[k] + i * g;
                        cs[k] = c;
                        hs[k] = o * c.tanh();
                        y[k] = hs[k];
                    }
                    std::mem::swap(&mut cur, &mut next);
                    len = h;
                }
            }
        }
        for (o, v) in out.iter_mut().zip(&cur.as_flattened()[..len]) {
            *o = self.output.apply(*v);
        }
    }

    /// A network of dense layers only.
    fn forward_dense(&self, x: &[f32], out: &mut [f32], scratch: &mut [f32]) {
        // Two halves of whole blocks; each layer reads one and writes the other.
        let (a, b) = scratch[..2 * self.width].as_chunks_mut::<LANES>().0.split_at_mut(self.width / LANES);
        let (mut cur, mut next) = (a, b);
        let x = &x[..self.inputs()];
        match self.precision {
            Precision::Float32 => {
                for (i, l) in self.layers.iter().enumerate() {
                    let input = if i == 0 { x } else { cur.as_flattened() };
                    l.eval(input, next, Precision::Float32, None);
                    std::mem::swap(&mut cur, &mut next);
                }
            }
            Precision::Int8 => {
                // The network input, quantised into `cur`; each layer then stores its
                // outputs quantised for the next one.
                let s = self.layers[0].in_scale;
                let (full, rest) = x.as_chunks::<LANES>();
                for (q, v) in cur.iter_mut().zip(full) {
                    F4::load(v).mul(F4::splat(s)).quantise().store(q);
                }
                if !rest.is_empty() {
                    for (q, v) in cur[full.len()].iter_mut().zip(rest) {
                        *q = quantise(v * s);
                    }
                }
                for (i, l) in self.layers.iter().enumerate() {
                    let quant = self.layers.get(i + 1).map(|n| n.in_scale);
                    l.eval(cur.as_flattened(), next, Precision::Int8, quant);
                    std::mem::swap(&mut cur, &mut next);
                }
            }
        }
        let n = self.n_outputs;
        for (o, v) in out.iter_mut().zip(&cur.as_flattened()[..n]) {
            *o = self.output.apply(*v);
        }
    }

    /// Scratch floats [`Mlp::forward`] and [`Mlp::forward_step`] need.
    pub fn scratch_len(&self) -> usize {
        if self.steps.is_empty() {
            2 * self.width
        } else {
            // Two halves, two gate buffers, and a zero state for `forward`.
            2 * self.width + 2 * self.gates + self.n_state
        }
    }

    /// Whether the int8 path can run this network (dense layers only, at most 256
    /// inputs and outputs per layer).
    pub fn int8_supported(&self) -> bool {
        self.steps.is_empty() && self.layers.iter().all(|l| l.inputs <= 256 && l.outputs <= 256)
    }
}

#[cfg(test)]
mod tests;

//! DCQCN's configuration: the two reaction-point variants, the presets
//! (`paper`, `mellanox`) and the scenario parameters that override them.

use super::super::{ParamInfo, Params};
use crate::config::ConfigError;
use crate::units::{Time, US};

/// Which reaction-point algorithm runs (see the documentation of [`super`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The paper's (and Zhu's simulator's) reaction point, spec 1.4.
    Paper,
    /// HPCC-ns3's "Mellanox-style" reaction point, spec 1.5.
    Mellanox,
}

/// Size of a hyper-increase step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HyperStep {
    /// `i x R_HAI` with `i` the hyper-stage event count (paper, Zhu).
    Linear,
    /// `R_HAI` per event (HPCC-ns3).
    Constant,
}

/// DCQCN parameters, shared by all flows of one configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct DcqcnConfig {
    /// Reaction-point algorithm.
    pub variant: Variant,
    /// Alpha gain g, in (0, 1].
    pub g: f64,
    /// Initial alpha (`mellanox`: alpha set on the first CNP).
    pub alpha_init: f64,
    /// Alpha timer period K, ps.
    pub alpha_interval: Time,
    /// Rate-increase timer period T, ps.
    pub rp_timer: Time,
    /// Byte counter B in wire bytes (0 = none; `paper` only).
    pub byte_counter: u64,
    /// Fast-recovery steps F.
    pub fast_recovery: u32,
    /// Additive-increase step R_AI, bit/s.
    pub rate_ai: f64,
    /// Hyper-increase step R_HAI, bit/s.
    pub rate_hai: f64,
    /// Lowest rate a cut goes to, bit/s.
    pub min_rate: f64,
    /// Always set `Rt = Rc` before a cut.
    pub clamp_target: bool,
    /// Timer T/2 and byte counter B/2 in the hyper stage (`paper`).
    pub hyper_halving: bool,
    /// `Rt > 10 Rc` on a first event after a cut gives `Rt = Rt/8` (`paper`).
    pub target_reset: bool,
    /// Update alpha before cutting, with the new alpha (`paper`).
    pub alpha_first: bool,
    /// Hyper-increase step size.
    pub hyper_step: HyperStep,
    /// Period of the decrease check, ps (`mellanox`).
    pub rate_decrease_interval: Time,
    /// Factor applied to the rate on the first CNP (`mellanox`).
    pub rate_on_first_cnp: f64,
    /// ECN echoes on ACKs count as CNPs (`mellanox`, HPCC-ns3's CNP flag).
    pub ack_ecn: bool,
}

impl DcqcnConfig {
    /// Preset `paper`: DCQCN paper / Zhu's simulator values (spec 1.6).
    pub fn paper() -> Self {
        DcqcnConfig {
            variant: Variant::Paper,
            g: 1.0 / 256.0,
            alpha_init: 1.0,
            alpha_interval: 55 * US,
            rp_timer: 55 * US,
            byte_counter: 10_000_000,
            fast_recovery: 5,
            rate_ai: 40e6,
            rate_hai: 200e6,
            min_rate: 100e6,
            clamp_target: true,
            hyper_halving: false,
            target_reset: false,
            alpha_first: false,
            hyper_step: HyperStep::Linear,
            rate_decrease_interval: 4 * US,
            rate_on_first_cnp: 1.0,
            ack_ecn: false,
        }
    }

    /// Preset `mellanox`: HPCC-ns3 `dcqcn` values at 100 Gb/s (spec 1.5, 1.6).
    pub fn mellanox() -> Self {
        DcqcnConfig {
            variant: Variant::Mellanox,
            g: 1.0 / 256.0,
            alpha_init: 1.0,
            alpha_interval: US,
            rp_timer: 300 * US,
            byte_counter: 0,
            fast_recovery: 1,
            rate_ai: 20e6,
            rate_hai: 200e6,
            min_rate: 1000e6,
            clamp_target: false,
            hyper_halving: false,
            target_reset: false,
            alpha_first: false,
            hyper_step: HyperStep::Constant,
            rate_decrease_interval: 4 * US,
            rate_on_first_cnp: 1.0,
            ack_ecn: false,
        }
    }
}

pub(super) const PARAMS: &[ParamInfo] = &[
    ParamInfo { name: "preset", default: "paper", help: "\"paper\" (DCQCN paper / Zhu's ns-3) or \"mellanox\" (HPCC-ns3 dcqcn at 100G); picks every default below" },
    ParamInfo { name: "variant", default: "paper (mellanox: mellanox)", help: "reaction point: \"paper\" (cut per CNP, timer + byte counter) or \"mellanox\" (CNP flags, periodic alpha and decrease check, timer only)" },
    ParamInfo { name: "g", default: "0.00390625", help: "alpha gain g in (0, 1]" },
    ParamInfo { name: "alpha_init", default: "1", help: "initial alpha in [0, 1] (mellanox: alpha set on the first CNP)" },
    ParamInfo { name: "alpha_interval", default: "55us (mellanox: 1us)", help: "alpha timer K: decay period without CNP (mellanox: alpha update period)" },
    ParamInfo { name: "rp_timer", default: "55us (mellanox: 300us)", help: "rate-increase timer T" },
    ParamInfo { name: "byte_counter", default: "10MB (mellanox: none)", help: "byte counter B: a rate-increase event per B wire bytes sent; 0 = none (paper variant only)" },
    ParamInfo { name: "fast_recovery", default: "5 (mellanox: 1)", help: "fast-recovery steps F (integer)" },
    ParamInfo { name: "rate_ai", default: "40Mbps (mellanox: 20Mbps)", help: "additive-increase step R_AI" },
    ParamInfo { name: "rate_hai", default: "200Mbps", help: "hyper-increase step R_HAI" },
    ParamInfo { name: "min_rate", default: "100Mbps (mellanox: 1000Mbps)", help: "R_min: lowest rate a cut goes to" },
    ParamInfo { name: "clamp_target", default: "true (mellanox: false)", help: "always Rt = Rc before a cut; false: only after an increase event (paper: byte-counter event) since the last cut" },
    ParamInfo { name: "hyper_step", default: "linear (mellanox: constant)", help: "hyper-increase step: \"linear\" (i x R_HAI) or \"constant\" (R_HAI)" },
    ParamInfo { name: "hyper_halving", default: "false", help: "paper variant: timer T/2 and byte counter B/2 in the hyper stage (QCN, Zhu)" },
    ParamInfo { name: "target_reset", default: "false", help: "paper variant: on a first event after a cut, Rt > 10 Rc gives Rt = Rt/8 (QCN, Zhu)" },
    ParamInfo { name: "alpha_first", default: "false", help: "paper variant: update alpha before the cut and cut with the new alpha (Zhu); false: paper order" },
    ParamInfo { name: "rate_decrease_interval", default: "4us", help: "mellanox variant: period of the decrease check (cuts at most once per period)" },
    ParamInfo { name: "rate_on_first_cnp", default: "1", help: "mellanox variant: Rt = Rc = Rc x this on the first CNP, in (0, 1]" },
    ParamInfo { name: "ack_ecn", default: "false", help: "mellanox variant: ECN echoes on ACKs set the CNP flags too (HPCC-ns3's per-ACK CNP flag)" },
];

/// Reads a string parameter.
fn string<'a>(p: &'a Params, name: &str, default: &'a str) -> Result<&'a str, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(v) => v.as_str().ok_or_else(|| p.bad(name, "expected a string")),
    }
}

/// Reads a boolean parameter (true/false or 1/0).
fn flag(p: &Params, name: &str, default: bool) -> Result<bool, ConfigError> {
    match p.raw(name) {
        None => Ok(default),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(v) if v.as_f64() == Some(1.0) => Ok(true),
        Some(v) if v.as_f64() == Some(0.0) => Ok(false),
        Some(_) => Err(p.bad(name, "expected true or false")),
    }
}

pub(super) fn parse(p: &Params) -> Result<DcqcnConfig, ConfigError> {
    let mut c = match string(p, "preset", "paper")? {
        "paper" => DcqcnConfig::paper(),
        "mellanox" => DcqcnConfig::mellanox(),
        _ => return Err(p.bad("preset", "unknown preset; use \"paper\" or \"mellanox\"")),
    };
    c.variant = match string(p, "variant", if c.variant == Variant::Paper { "paper" } else { "mellanox" })? {
        "paper" => Variant::Paper,
        "mellanox" => Variant::Mellanox,
        _ => return Err(p.bad("variant", "unknown variant; use \"paper\" or \"mellanox\"")),
    };
    let name = |v: Variant| if v == Variant::Paper { "paper" } else { "mellanox" };
    let only = |names: &[&str], v: Variant| -> Result<(), ConfigError> {
        for &n in names {
            if c.variant != v && p.raw(n).is_some() {
                let msg = format!("applies to variant \"{}\" only (this flow uses \"{}\")", name(v), name(c.variant));
                return Err(p.bad(n, &msg));
            }
        }
        Ok(())
    };
    only(&["byte_counter", "hyper_halving", "target_reset", "alpha_first"], Variant::Paper)?;
    only(&["rate_decrease_interval", "rate_on_first_cnp", "ack_ecn"], Variant::Mellanox)?;
    if c.variant == Variant::Mellanox {
        c.byte_counter = 0;
    }
    c.g = p.f64("g", c.g)?;
    if !(c.g > 0.0 && c.g <= 1.0) {
        return Err(p.bad("g", "the alpha gain must be in (0, 1]"));
    }
    c.alpha_init = p.f64("alpha_init", c.alpha_init)?;
    if !(0.0..=1.0).contains(&c.alpha_init) {
        return Err(p.bad("alpha_init", "alpha must be in [0, 1]"));
    }
    c.alpha_interval = p.time("alpha_interval", c.alpha_interval)?;
    if c.alpha_interval == 0 {
        return Err(p.bad("alpha_interval", "must be positive"));
    }
    c.rp_timer = p.time("rp_timer", c.rp_timer)?;
    if c.rp_timer < 2 {
        return Err(p.bad("rp_timer", "must be positive"));
    }
    c.byte_counter = p.bytes("byte_counter", c.byte_counter)?;
    if c.byte_counter > i64::MAX as u64 / 2 {
        return Err(p.bad("byte_counter", "is too large"));
    }
    let f = p.f64("fast_recovery", c.fast_recovery as f64)?;
    if !(0.0..=1e6).contains(&f) || f.fract() != 0.0 {
        return Err(p.bad("fast_recovery", "must be a whole number of steps from 0 to 1000000"));
    }
    c.fast_recovery = f as u32;
    c.rate_ai = p.rate("rate_ai", c.rate_ai)?;
    c.rate_hai = p.rate("rate_hai", c.rate_hai)?;
    c.min_rate = p.rate("min_rate", c.min_rate)?;
    c.clamp_target = flag(p, "clamp_target", c.clamp_target)?;
    c.hyper_step = match string(p, "hyper_step", if c.hyper_step == HyperStep::Linear { "linear" } else { "constant" })?
    {
        "linear" => HyperStep::Linear,
        "constant" => HyperStep::Constant,
        _ => return Err(p.bad("hyper_step", "use \"linear\" or \"constant\"")),
    };
    c.hyper_halving = flag(p, "hyper_halving", c.hyper_halving)?;
    c.target_reset = flag(p, "target_reset", c.target_reset)?;
    c.alpha_first = flag(p, "alpha_first", c.alpha_first)?;
    c.rate_decrease_interval = p.time("rate_decrease_interval", c.rate_decrease_interval)?;
    if c.rate_decrease_interval == 0 {
        return Err(p.bad("rate_decrease_interval", "must be positive"));
    }
    c.rate_on_first_cnp = p.f64("rate_on_first_cnp", c.rate_on_first_cnp)?;
    if !(c.rate_on_first_cnp > 0.0 && c.rate_on_first_cnp <= 1.0) {
        return Err(p.bad("rate_on_first_cnp", "must be in (0, 1]"));
    }
    c.ack_ecn = flag(p, "ack_ecn", c.ack_ecn)?;
    Ok(c)
}

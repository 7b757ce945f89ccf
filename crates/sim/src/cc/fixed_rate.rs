//! Fixed rate: every flow is paced at one configured rate, with an optional
//! fixed window. Useful to offer a known load and to test the pacer.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of the fixed-rate controller.
#[derive(Clone, Debug)]
pub struct FixedRate {
    /// Pacing rate in bit/s.
    pub rate: f64,
    /// Window in bytes (0 = none).
    pub window: u64,
}

impl FixedRate {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[
            ParamInfo { name: "rate", default: "10Gbps", help: "pacing rate (capped at line rate)" },
            ParamInfo { name: "window", default: "0", help: "fixed window in bytes; 0 = no window" },
        ];
        CcInfo { name: "fixed_rate", summary: "constant pacing rate, optional fixed window", params: P }
    }

    /// Reads `rate` and `window`.
    pub fn from_params(p: &Params) -> Result<Self, ConfigError> {
        let rate = p.rate("rate", 10e9)?;
        let window = p.bytes("window", 0)?;
        Ok(FixedRate { rate, window })
    }
}

impl CongestionControl for FixedRate {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        ctx.set_rate(self.rate);
        if self.window > 0 {
            ctx.set_window(self.window);
        }
    }
}

//! Line rate: every flow sends at the NIC's line rate with no window.
//!
//! Not a congestion control at all; it exercises the NIC, PFC and loss
//! recovery, and is the load of the standard incast benchmark.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of the line-rate controller (none).
#[derive(Clone, Debug, Default)]
pub struct LineRate;

impl LineRate {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo { name: "line_rate", summary: "send at NIC line rate, no window (no congestion control)", params: P }
    }

    /// Builds it (there is nothing to configure).
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(LineRate)
    }
}

impl CongestionControl for LineRate {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }
}

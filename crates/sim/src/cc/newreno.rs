//! PLACEHOLDER — to be replaced by the real implementation.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of NewReno.
#[derive(Clone, Debug, Default)]
pub struct NewReno;

impl NewReno {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo { name: "newreno", summary: "TCP NewReno (RFC 5681/6582): loss-based AIMD window", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(NewReno)
    }
}

impl CongestionControl for NewReno {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }
}

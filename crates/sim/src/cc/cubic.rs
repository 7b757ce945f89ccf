//! PLACEHOLDER — to be replaced by the real implementation.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of Cubic.
#[derive(Clone, Debug, Default)]
pub struct Cubic;

impl Cubic {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo { name: "cubic", summary: "TCP CUBIC (RFC 9438): cubic window growth after loss", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(Cubic)
    }
}

impl CongestionControl for Cubic {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }
}

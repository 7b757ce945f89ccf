//! PLACEHOLDER — to be replaced by the real implementation.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of Dctcp.
#[derive(Clone, Debug, Default)]
pub struct Dctcp;

impl Dctcp {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo { name: "dctcp", summary: "DCTCP (Alizadeh et al., SIGCOMM 2010): ECN-fraction window cut", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(Dctcp)
    }
}

impl CongestionControl for Dctcp {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }
}

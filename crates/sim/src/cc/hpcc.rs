//! PLACEHOLDER — to be replaced by the real implementation.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of Hpcc.
#[derive(Clone, Debug, Default)]
pub struct Hpcc;

impl Hpcc {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo { name: "hpcc", summary: "HPCC (Li et al., SIGCOMM 2019): INT-driven window and rate", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(Hpcc)
    }
}

impl CongestionControl for Hpcc {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }
}

//! PLACEHOLDER — to be replaced by the real implementation.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params};
use crate::config::ConfigError;

/// State of Dcqcn.
#[derive(Clone, Debug, Default)]
pub struct Dcqcn;

impl Dcqcn {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo { name: "dcqcn", summary: "DCQCN (Zhu et al., SIGCOMM 2015): rate-based, ECN/CNP driven", params: P }
    }

    /// Builds it from scenario parameters.
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(Dcqcn)
    }
}

impl CongestionControl for Dcqcn {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }
}

//! pHost's end hosts (Gao et al., CoNEXT 2015; spec `rule_based_cc.md`
//! section 7.2): no congestion control at all. A pHost sender sends at line
//! rate with no window, one packet per token; what it sends and when is the
//! receiver's decision (`Transport::PHost`: request-to-send, free tokens,
//! tokens paced at the receiver's downlink rate and chosen smallest
//! remaining first, expiry, the outstanding-token window, the resend
//! timeout; in the core, `sim/grants.rs`, configured by `host.phost_*`).
//! Use it with strict-priority switch ports (`switch.discipline =
//! "priority"`): control packets go first, then short flows' data, then
//! long flows' data; and with `host.scheduler = "srpt"` (and a burst of one
//! packet) for the sender's smallest-remaining-first choice among flows
//! holding tokens.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;

/// State of a pHost sender (none: tokens decide).
#[derive(Clone, Debug, Default)]
pub struct PHost;

impl PHost {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo {
            name: "phost",
            summary: "pHost end hosts: receiver tokens, line rate, no window (host.phost_*; use with switch.discipline = \"priority\")",
            params: P,
        }
    }

    /// Builds it (its parameters are the transport's, `host.phost_*`).
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(PHost)
    }
}

impl CongestionControl for PHost {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }

    fn transport(&self) -> Transport {
        Transport::PHost
    }
}

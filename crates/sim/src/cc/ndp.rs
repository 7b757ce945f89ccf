//! NDP's end hosts (Handley et al., SIGCOMM 2017; spec `rule_based_cc.md`
//! section 7.4, facts from htsim's `ndp.cpp`): no congestion control at
//! all. An NDP sender puts its initial window on the wire at line rate and
//! then one packet per pull; the receiver pulls once for every packet or cut
//! header that reaches it, and paces its pulls at its downlink rate, so the
//! senders' total rate follows what the receiver's link carries
//! (`Transport::Ndp`, in the core `sim/ndp.rs`, configured by `host.ndp_*`).
//! Use it with trimming switches (`switch.trim = true`) with small data
//! queues (`switch.buffer_model = "static"`, about eight packets per port)
//! and packet spraying (`switch.load_balancing = "packet"`).

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;

/// State of an NDP sender (none: the initial window and pulls decide).
#[derive(Clone, Debug, Default)]
pub struct Ndp;

impl Ndp {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo {
            name: "ndp",
            summary: "NDP end hosts: initial window, then one packet per receiver pull; NACKed headers resent (host.ndp_*; use with switch.trim = true)",
            params: P,
        }
    }

    /// Builds it (its parameters are the transport's, `host.ndp_*`).
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(Ndp)
    }
}

impl CongestionControl for Ndp {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }

    fn transport(&self) -> Transport {
        Transport::Ndp
    }
}

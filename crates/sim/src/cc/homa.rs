//! Homa's end hosts (Montazeri et al., SIGCOMM 2018; spec `rule_based_cc.md`
//! section 7.3): no congestion control at all. A Homa sender sends at line
//! rate with no window: its first `RTTbytes` at once (unscheduled), the rest
//! as its receiver's grants allow; which message goes next is the NIC's
//! smallest-remaining-first order, and what is granted, at which priority,
//! the receiver's decision (`Transport::Homa`, in the core's `sim/homa.rs`,
//! configured by `host.homa_*`; the run's parameters in [`crate::homa`]).
//! Use it with strict-priority switch ports (`switch.discipline =
//! "priority"`, 8 levels) and with `host.scheduler = "srpt"` and a burst of
//! one packet (`host.burst`) for the sender's per-packet SRPT.

use super::{CcCtx, CcInfo, CongestionControl, ParamInfo, Params, Transport};
use crate::config::ConfigError;

/// State of a Homa sender (none: grants decide).
#[derive(Clone, Debug, Default)]
pub struct Homa;

impl Homa {
    /// Name, summary and parameters.
    pub fn info() -> CcInfo {
        const P: &[ParamInfo] = &[];
        CcInfo {
            name: "homa",
            summary: "Homa end hosts: unscheduled first RTT, receiver grants, line rate, no window (host.homa_*; use with switch.discipline = \"priority\")",
            params: P,
        }
    }

    /// Builds it (its parameters are the transport's, `host.homa_*`).
    pub fn from_params(_p: &Params) -> Result<Self, ConfigError> {
        Ok(Homa)
    }
}

impl CongestionControl for Homa {
    fn on_start(&mut self, ctx: &mut CcCtx) {
        let line = ctx.flow.line_rate;
        ctx.set_rate(line);
    }

    fn transport(&self) -> Transport {
        Transport::Homa
    }
}

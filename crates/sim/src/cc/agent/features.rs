//! What an agent measures over its monitor interval: the feature row of its
//! observation and the reward of its previous action.

use super::spec::{Feature, Reward};
use super::AgentCc;
use crate::cc::CcCtx;
use crate::units::SEC;

impl AgentCc {
    /// Measures the monitor interval ending now: a feature row and the reward.
    fn measure(&mut self, ctx: &CcCtx, row: &mut [f32]) -> f32 {
        let sp = &*self.spec;
        let f = &ctx.flow;
        let mi = (ctx.now.saturating_sub(self.mi_start)).max(1) as f64;
        let mi_s = mi / SEC as f64;
        let base = f.base_rtt.max(1) as f64;
        let norm = if sp.rtt_norm > 0.0 { sp.rtt_norm } else { base };
        let mean_rtt = (self.rtt_n > 0).then(|| self.rtt_sum / self.rtt_n as f64);
        let est = if sp.rtt_last { (self.rtt_n > 0).then_some(self.last_sample as f64) } else { mean_rtt };
        let rtt = match (self.probe_rtt, est) {
            (Some(p), _) => p as f64,
            (None, Some(m)) => m,
            (None, None) => self.last_rtt.unwrap_or(base),
        };
        self.last_rtt = Some(rtt);
        if let Some(m) = mean_rtt {
            self.min_mean_rtt = self.min_mean_rtt.min(m);
        }
        let line = f.line_rate.max(1.0);
        let rate = f.rate / line;
        let inflation = rtt / norm;
        let (beta, target, scale) = sp.adpg;
        let x = (inflation - beta).max(0.0) * rate.sqrt();
        let d = scale * (x - target);
        let pkts = self.sent_pkts.max(1) as f64;
        let throughput = self.acked_bytes as f64 * 8.0 / mi_s / line;
        let lost = (self.nacks + self.losses) as f64;
        let loss = if lost + self.acked_pkts as f64 > 0.0 { lost / (lost + self.acked_pkts as f64) } else { 0.0 };
        let delay = (rtt - base).max(0.0) / norm;
        // QTCP normalises by the smallest RTT heard (the base RTT before any sample).
        let min_rtt = if self.min_rtt == crate::units::Time::MAX { base } else { self.min_rtt as f64 };
        let mut at = 0;
        let mut reward_at = None;
        for feat in &sp.features {
            let width = feat.width(sp.action_history);
            if self.mv_write(*feat, &mut row[at..at + width]) {
                at += width;
                continue;
            }
            let v = &mut row[at];
            at += 1;
            *v = match feat {
                Feature::RttInflation => inflation,
                Feature::Rate => rate,
                Feature::NackRatio => self.nacks as f64 / pkts,
                Feature::CnpRatio => self.cnps as f64 / pkts,
                Feature::Bandwidth => self.sent_bytes as f64 * 8.0 / mi_s / line,
                Feature::Action => self.last_multiplier,
                Feature::Adpg => d,
                Feature::LatencyGradient => {
                    let n = self.rtt_n as f64;
                    let var = self.tt_sum - self.t_sum * self.t_sum / n.max(1.0);
                    if self.rtt_n >= 2 && var > 0.0 {
                        let cov = self.tr_sum - self.t_sum * (self.rtt_sum / SEC as f64) / n;
                        cov / var
                    } else {
                        0.0
                    }
                }
                Feature::LatencyRatio => match mean_rtt {
                    Some(m) if self.min_mean_rtt.is_finite() => m / self.min_mean_rtt,
                    _ => 0.0,
                },
                Feature::SendRatio => {
                    let r = self.sent_bytes as f64 / self.acked_bytes as f64;
                    if self.acked_bytes == 0 || r > 1000.0 {
                        1.0
                    } else {
                        r
                    }
                }
                Feature::Throughput => throughput,
                Feature::Delay => delay,
                Feature::Loss => loss,
                Feature::Rtt(agg) => self.rtt_stat.get(*agg) / norm,
                Feature::Acked(agg) => self.acked_stat.get(*agg) / f.mtu.max(1) as f64,
                Feature::SendGapEwma => self.send_gap / norm,
                Feature::AckGapEwma => self.ack_gap / norm,
                Feature::RttOverMin => {
                    if self.min_rtt == crate::units::Time::MAX {
                        1.0
                    } else {
                        rtt / self.min_rtt as f64
                    }
                }
                Feature::Window => {
                    if f.window == u64::MAX {
                        0.0
                    } else {
                        f.window as f64 / f.bdp.max(1) as f64
                    }
                }
                Feature::SendGapOverMin => self.send_gap / min_rtt,
                Feature::AckGapOverMin => self.ack_gap / min_rtt,
                Feature::WindowPackets => {
                    if f.window == u64::MAX {
                        0.0
                    } else {
                        f.window as f64 / f.mtu.max(1) as f64
                    }
                }
                Feature::RttEwmaOverMin => {
                    if self.rtt_ewma > 0.0 {
                        self.rtt_ewma / min_rtt
                    } else {
                        1.0
                    }
                }
                Feature::LastReward => {
                    // Written below, once the reward is known.
                    reward_at = Some(at - 1);
                    0.0
                }
                // Block features are written by `mv_write` above.
                Feature::MvfstState | Feature::MvfstHistory => 0.0,
            } as f32;
        }
        let r = match sp.reward {
            Reward::Adpg => -(x - target) * (x - target),
            Reward::AdpgSignal => d,
            Reward::Aurora => {
                let pps = self.acked_bytes as f64 / 1500.0 / mi_s;
                10.0 * pps - 1000.0 * rtt / SEC as f64 - 2000.0 * loss
            }
            Reward::ThroughputDelay => throughput - sp.reward_beta * delay,
            Reward::LogUtility => throughput.max(1e-6).ln() - sp.reward_beta * (rtt / base).max(1.0).ln(),
            Reward::Mvfst => self.mv_reward(),
        };
        // Skipped at 0 so a -0.0 reward stays -0.0 (results stay bit-identical).
        let r = if sp.reward_offset != 0.0 { r + sp.reward_offset } else { r };
        let r = (r * sp.reward_scale) as f32;
        if let Some(i) = reward_at {
            row[i] = r.clamp(-1.0, 1.0);
        }
        r
    }

    /// Closes the monitor interval: pushes a feature row into the history and
    /// returns the reward of the previous action.
    pub(super) fn close_interval(&mut self, ctx: &CcCtx) -> f32 {
        let nf = self.spec.row_width;
        // The row is measured straight into the history's newest slot (no
        // scratch row: an MVFST-RL row is hundreds of values wide).
        let mut history = std::mem::take(&mut self.history);
        if self.filled {
            history.copy_within(nf.., 0);
        }
        let n = history.len();
        let reward = self.measure(ctx, &mut history[n - nf..]);
        if !self.filled {
            // First row: repeat it over the whole history.
            let (older, newest) = history.split_at_mut(n - nf);
            for chunk in older.chunks_mut(nf) {
                chunk.copy_from_slice(newest);
            }
            self.filled = true;
        }
        self.history = history;
        self.reset_mi(ctx.now);
        if let Some(m) = self.mv.as_mut() {
            m.reset_window();
        }
        self.last_reward = reward;
        reward
    }
}

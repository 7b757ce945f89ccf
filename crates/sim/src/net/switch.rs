//! Switch memory management: the shared buffer, dynamic thresholds and PFC.
//!
//! Lossy classes: an arriving packet is admitted if its egress queue stays
//! under the per-queue cap, under `dt_alpha` x free buffer (Choudhury-Hahne
//! dynamic threshold, when enabled) and the buffer is not full.
//!
//! Lossless classes (PFC): bytes are charged per (ingress port, class) first
//! to a small reserve, then to the shared pool, then to the ingress port's
//! headroom. The ingress pauses its upstream (XOFF) when it spills into
//! headroom or its shared bytes reach `alpha` x free shared pool, and resumes
//! (XON) when headroom is empty and shared bytes fall below the threshold by
//! the resume offset. A departing packet's bytes come off its account's
//! headroom first, then its shared bytes, then its reserve, whichever part
//! admission charged them to: an MMU keeps byte counters, not a part per
//! packet. This follows the HPCC-ns3 MMU; a pause lasts until XON.
//!
//! Bound: the shared pool is the buffer minus all reserves and headroom, and
//! each part admits only what it has room for, so the data bytes a switch
//! holds never exceed its buffer, provided reserves plus headroom fit in it.
//! `validate_buffers` (`sim/build.rs`) refuses a configuration where they do
//! not (before, the pool was clamped to 0 and reserves and headroom alone
//! could hold many times the buffer). Control packets bypass admission and
//! are counted on top (`used`).

/// Buffer state of one switch.
#[derive(Clone, Debug)]
pub struct Mmu {
    /// Total buffer in bytes.
    pub buffer: u64,
    /// Bytes held by all queues.
    pub used: u64,
    /// Per-queue hard cap (lossy).
    pub queue_cap: u64,
    /// Dynamic threshold factor (lossy), 0 = off.
    pub dt_alpha: f64,
    /// PFC enabled.
    pub pfc: bool,
    /// XOFF threshold factor.
    pub pfc_alpha: f64,
    /// Reserve per (ingress port, class).
    pub reserve: u64,
    /// Resume hysteresis.
    pub resume_offset: u64,
    /// Shared pool size (buffer minus all headroom and reserve).
    pub shared_size: u64,
    /// Shared pool bytes in use.
    pub shared_used: u64,
    /// Classes per port.
    pub classes: usize,
    /// Headroom size per local port.
    pub headroom: Vec<u64>,
    /// Headroom bytes used per local port.
    pub headroom_used: Vec<u64>,
    /// Per (local port, class): the bytes charged and the XOFF state, read
    /// together by every admission and release.
    pub ingress: Vec<IngressAcct>,
}

/// The account of one (ingress port, class) of a PFC switch: what admission
/// and release read and write for every data packet, in one aligned half
/// line (the bytes and the XOFF flag used to live in two arrays, two cache
/// misses per packet on a large fabric).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(32))]
pub struct IngressAcct {
    /// Reserve, shared and headroom bytes charged to the account.
    pub bytes: [u64; 3],
    /// XOFF sent and not yet resumed.
    pub xoff: bool,
}

/// What admission decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admit {
    /// Drop the packet.
    Drop,
    /// Accept; `pause` asks to send XOFF upstream for this (port, class).
    Accept {
        /// Send an XOFF now.
        pause: bool,
    },
}

impl Mmu {
    /// Creates the MMU of a switch with `ports` ports of the given headroom.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        buffer: u64,
        queue_cap: u64,
        dt_alpha: f64,
        pfc: bool,
        pfc_alpha: f64,
        reserve: u64,
        resume_offset: u64,
        classes: usize,
        headroom: Vec<u64>,
    ) -> Mmu {
        let n = headroom.len();
        let total_headroom: u64 = if pfc { headroom.iter().sum() } else { 0 };
        let total_reserve = if pfc { reserve * (n * classes.saturating_sub(1)) as u64 } else { 0 };
        Mmu {
            buffer,
            used: 0,
            queue_cap,
            dt_alpha,
            pfc,
            pfc_alpha,
            reserve,
            resume_offset,
            shared_size: buffer.saturating_sub(total_headroom + total_reserve),
            shared_used: 0,
            classes,
            headroom_used: vec![0; n],
            headroom,
            ingress: vec![IngressAcct::default(); n * classes],
        }
    }

    fn xoff_threshold(&self) -> f64 {
        self.pfc_alpha * self.shared_size.saturating_sub(self.shared_used) as f64
    }

    /// Admission of `size` bytes arriving on local port `inp`, class `class`,
    /// for an egress queue currently holding `queue_bytes`.
    pub fn admit(&mut self, inp: usize, class: usize, size: u64, queue_bytes: u64) -> Admit {
        if !self.pfc {
            let fits_cap = queue_bytes + size <= self.queue_cap;
            let fits_buf = self.used + size <= self.buffer;
            let fits_dt = self.dt_alpha <= 0.0
                || (queue_bytes + size) as f64 <= self.dt_alpha * self.buffer.saturating_sub(self.used) as f64;
            if fits_cap && fits_buf && fits_dt {
                self.used += size;
                return Admit::Accept { pause: false };
            }
            return Admit::Drop;
        }
        let k = inp * self.classes + class;
        let IngressAcct { bytes: acct, xoff } = self.ingress[k];
        // All of a packet's bytes go to one part of the account.
        const RESERVE: usize = 0;
        const SHARED: usize = 1;
        const HEADROOM: usize = 2;
        let part = if acct[RESERVE] + size <= self.reserve {
            RESERVE
        } else if !xoff
            && (acct[SHARED] + size) as f64 <= self.xoff_threshold()
            && self.shared_used + size <= self.shared_size
        {
            SHARED
        } else if self.headroom_used[inp] + size <= self.headroom[inp] {
            HEADROOM
        } else if self.shared_used + size <= self.shared_size {
            // Headroom exhausted (mis-sized); keep lossless while the pool has room.
            SHARED
        } else {
            return Admit::Drop;
        };
        if part == SHARED {
            self.shared_used += size;
        } else if part == HEADROOM {
            // The port's headroom line is touched only by packets charged to it.
            self.headroom_used[inp] += size;
        }
        self.used += size;
        let threshold = self.xoff_threshold();
        let e = &mut self.ingress[k];
        let a = &mut e.bytes;
        a[part] += size;
        let pause = !e.xoff && (a[HEADROOM] > 0 || a[SHARED] as f64 >= threshold);
        if pause {
            e.xoff = true;
        }
        Admit::Accept { pause }
    }

    /// Releases the bytes of a packet that arrived on local port `inp` in
    /// class `class` at dequeue, from its account's headroom first, then its
    /// shared bytes, then its reserve (HPCC-ns3's `RemoveFromIngressAdmission`);
    /// returns true if an XON should be sent.
    #[inline(always)]
    pub fn release(&mut self, inp: usize, class: usize, size: u64) -> bool {
        self.used -= size;
        if !self.pfc {
            return false;
        }
        let k = inp * self.classes + class;
        let a = &mut self.ingress[k].bytes;
        let headroom = a[2].min(size);
        let shared = (size - headroom).min(a[1]);
        a[0] -= size - headroom - shared;
        a[1] -= shared;
        a[2] -= headroom;
        self.shared_used -= shared;
        if headroom > 0 {
            self.headroom_used[inp] -= headroom;
        }
        let (alpha, free, resume_offset) =
            (self.pfc_alpha, self.shared_size.saturating_sub(self.shared_used), self.resume_offset);
        let e = &mut self.ingress[k];
        let (shared, headroom) = (e.bytes[1], e.bytes[2]);
        if e.xoff && headroom == 0 && (shared == 0 || (shared + resume_offset) as f64 <= alpha * free as f64) {
            e.xoff = false;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pfc_pauses_then_resumes() {
        let mut m = Mmu::new(1_000_000, 1 << 30, 0.0, true, 0.125, 4096, 3072, 2, vec![50_000; 4]);
        let mut paused_at = None;
        for i in 0..200 {
            if m.admit(0, 1, 1000, 0) == (Admit::Accept { pause: true }) {
                paused_at = Some(i);
                break;
            }
        }
        let n = paused_at.expect("ingress should pause") + 1;
        // Threshold: 1/8 of free shared pool, i.e. about 1/9 of the pool.
        assert!(n > 50 && n < 150, "paused after {n} packets");
        let mut resumed = false;
        for _ in 0..n {
            resumed |= m.release(0, 1, 1000);
        }
        assert!(resumed);
        assert_eq!(m.used, 0);
        assert_eq!(m.shared_used, 0);
    }

    #[test]
    fn departures_free_headroom_first_so_the_pause_ends_with_the_bytes_not_the_packets() {
        // An ingress pauses, and the 20 packets still in flight land in its
        // headroom, behind the packets charged to its reserve and the shared
        // pool. The first departures free the headroom (HPCC-ns3's order), so
        // the XON comes once the account's bytes are back below the threshold
        // by the resume offset, not only after the last headroom packet left.
        let mut m = Mmu::new(1_000_000, 1 << 30, 0.0, true, 0.125, 4096, 3072, 2, vec![50_000; 4]);
        let mut queued = 0;
        while m.admit(0, 1, 1000, 0) != (Admit::Accept { pause: true }) {
            queued += 1;
        }
        queued += 1;
        let at_xoff = m.ingress[1].bytes[2];
        for _ in 0..20 {
            assert_eq!(m.admit(0, 1, 1000, 0), Admit::Accept { pause: false });
        }
        assert_eq!(m.ingress[1].bytes[2], at_xoff + 20_000, "in flight after the XOFF: headroom");
        let (total, in_headroom) = (queued + 20, (at_xoff / 1000 + 20) as usize);
        let xon = (1..=total).find(|_| m.release(0, 1, 1000)).expect("the ingress resumes");
        // The headroom's packets, then the resume offset (3 KB) below the threshold.
        assert!(xon > in_headroom && xon <= in_headroom + 5, "XON after {xon} of {total} departures");
        assert!(total > 4 * xon);
        assert_eq!(m.headroom_used[0], 0);
    }

    #[test]
    fn data_never_exceeds_the_buffer_when_reserves_and_headroom_fit() {
        // 8 ports, 3 classes (2 data): reserves 8 x 2 x 4096 and headroom
        // 8 x 50,000 take 465,536 of the 600,000 bytes. Every ingress keeps
        // sending (the upstream ignores XOFF, the worst case), nothing leaves.
        let (ports, buffer) = (8, 600_000u64);
        let mut m = Mmu::new(buffer, 1 << 30, 0.0, true, 0.125, 4096, 3072, 3, vec![50_000; ports]);
        let mut admitted = 0u64;
        for i in 0..20_000u64 {
            let (inp, class, size) = ((i * 7 % ports as u64) as usize, 1 + (i % 2) as usize, 64 + (i * 131) % 1009);
            if let Admit::Accept { .. } = m.admit(inp, class, size, 0) {
                admitted += size;
            }
            assert!(m.used <= buffer, "packet {i}: {} bytes held in a {buffer}-byte buffer", m.used);
        }
        assert!(admitted > buffer * 9 / 10, "the buffer filled up ({admitted} bytes)");
    }

    #[test]
    fn the_dynamic_threshold_survives_control_bytes_beyond_the_buffer() {
        // Control packets bypass admission and may push `used` past the buffer;
        // a data packet is then refused, not an arithmetic overflow.
        let mut m = Mmu::new(10_000, 10_000, 1.0, false, 0.125, 0, 0, 2, vec![0; 2]);
        m.used = 10_064;
        assert_eq!(m.admit(0, 1, 1000, 0), Admit::Drop);
    }
}

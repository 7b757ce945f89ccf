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
//! the resume offset. This follows the HPCC-ns3 MMU; a pause lasts until XON.
//!
//! Bound: the shared pool is the buffer minus all reserves and headroom, and
//! each part admits only what it has room for, so the data bytes a switch
//! holds never exceed its buffer, provided reserves plus headroom fit in it.
//! `validate_buffers` (`sim/build.rs`) refuses a configuration where they do
//! not (before, the pool was clamped to 0 and reserves and headroom alone
//! could hold many times the buffer). Control packets bypass admission and
//! are counted on top (`used`).

/// The part of an ingress account a packet was charged to, so that release
/// undoes exactly what admission did. Admission charges all of a packet's
/// bytes to one part, so the part is enough: one byte in the packet, where
/// three byte counts took twelve and kept the packet from fitting one cache
/// line.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge(u8);

impl Charge {
    /// Nothing charged (dropped, or not accounted per ingress).
    const NONE: Charge = Charge(0);
    const RESERVE: Charge = Charge(1);
    const SHARED: Charge = Charge(2);
    const HEADROOM: Charge = Charge(3);

    /// Bytes of a `size`-byte packet charged to the reserve, the shared pool
    /// and the headroom.
    #[inline]
    fn parts(self, size: u64) -> [u64; 3] {
        [
            if self == Charge::RESERVE { size } else { 0 },
            if self == Charge::SHARED { size } else { 0 },
            if self == Charge::HEADROOM { size } else { 0 },
        ]
    }
}

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
    pub fn admit(&mut self, inp: usize, class: usize, size: u64, queue_bytes: u64) -> (Admit, Charge) {
        if !self.pfc {
            let fits_cap = queue_bytes + size <= self.queue_cap;
            let fits_buf = self.used + size <= self.buffer;
            let fits_dt = self.dt_alpha <= 0.0
                || (queue_bytes + size) as f64 <= self.dt_alpha * self.buffer.saturating_sub(self.used) as f64;
            if fits_cap && fits_buf && fits_dt {
                self.used += size;
                return (Admit::Accept { pause: false }, Charge::SHARED);
            }
            return (Admit::Drop, Charge::default());
        }
        let k = inp * self.classes + class;
        let IngressAcct { bytes: acct, xoff } = self.ingress[k];
        let ch = if acct[0] + size <= self.reserve {
            Charge::RESERVE
        } else if !xoff
            && (acct[1] + size) as f64 <= self.xoff_threshold()
            && self.shared_used + size <= self.shared_size
        {
            Charge::SHARED
        } else if self.headroom_used[inp] + size <= self.headroom[inp] {
            Charge::HEADROOM
        } else if self.shared_used + size <= self.shared_size {
            // Headroom exhausted (mis-sized); keep lossless while the pool has room.
            Charge::SHARED
        } else {
            return (Admit::Drop, Charge::NONE);
        };
        let [reserve, shared, headroom] = ch.parts(size);
        self.shared_used += shared;
        // The port's headroom line is touched only by packets charged to it.
        if headroom > 0 {
            self.headroom_used[inp] += headroom;
        }
        self.used += size;
        let threshold = self.xoff_threshold();
        let e = &mut self.ingress[k];
        let a = &mut e.bytes;
        a[0] += reserve;
        a[1] += shared;
        a[2] += headroom;
        let pause = !e.xoff && (a[2] > 0 || a[1] as f64 >= threshold);
        if pause {
            e.xoff = true;
        }
        (Admit::Accept { pause }, ch)
    }

    /// Releases a packet's bytes at dequeue; returns true if an XON should be sent.
    #[inline(always)]
    pub fn release(&mut self, inp: usize, class: usize, size: u64, ch: Charge) -> bool {
        self.used -= size;
        if !self.pfc {
            return false;
        }
        let k = inp * self.classes + class;
        let [reserve, shared, headroom] = ch.parts(size);
        self.shared_used -= shared;
        if headroom > 0 {
            self.headroom_used[inp] -= headroom;
        }
        let (alpha, free, resume_offset) =
            (self.pfc_alpha, self.shared_size.saturating_sub(self.shared_used), self.resume_offset);
        let e = &mut self.ingress[k];
        let a = &mut e.bytes;
        a[0] -= reserve;
        a[1] -= shared;
        a[2] -= headroom;
        let (shared, headroom) = (a[1], a[2]);
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
        let mut charges = vec![];
        let mut paused_at = None;
        for i in 0..200 {
            let (a, ch) = m.admit(0, 1, 1000, 0);
            charges.push(ch);
            if a == (Admit::Accept { pause: true }) {
                paused_at = Some(i);
                break;
            }
        }
        let n = paused_at.expect("ingress should pause") + 1;
        // Threshold: 1/8 of free shared pool, i.e. about 1/9 of the pool.
        assert!(n > 50 && n < 150, "paused after {n} packets");
        let mut resumed = false;
        for ch in charges {
            resumed |= m.release(0, 1, 1000, ch);
        }
        assert!(resumed);
        assert_eq!(m.used, 0);
        assert_eq!(m.shared_used, 0);
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
            if let (Admit::Accept { .. }, _) = m.admit(inp, class, size, 0) {
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
        assert_eq!(m.admit(0, 1, 1000, 0).0, Admit::Drop);
    }
}

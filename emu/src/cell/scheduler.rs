//! The downlink MAC scheduler: which device gets how many resource blocks (RBs) in a TTI.
//!
//! Every TTI the cell hands the scheduler one [`Demand`] per device: the RBs that would
//! empty its queue at its current CQI (0 = nothing to send, or CQI 0) and the bits one RB
//! carries for it. No device ever gets more RBs than its demand; RBs it does not need go
//! to the next candidate, and RBs nobody needs stay unused.
//!
//! - [`SchedulerSpec::RoundRobin`]: the TTI's RBs are split as evenly as possible among
//!   the devices with a demand (water-filling: a device needing less than an equal share
//!   gets what it needs and the rest is shared again). When the RBs do not divide evenly,
//!   the extra RBs go one each to the devices next in a rotation, which continues from the
//!   device after the last one favoured, so over time nobody is favoured.
//! - [`SchedulerSpec::ProportionalFair`]: RBs are handed out by resource block group (RBG),
//!   each RBG to the device with a demand left that maximizes `r / T`: `r` the bits per RB
//!   it would get now, `T` its average throughput, an exponentially weighted moving average
//!   (EWMA) of the bits allocated to it per TTI (its transport block sizes, padding
//!   included) with time constant `tc` TTIs,
//!   `T ← (1 - 1/tc)·T + (1/tc)·bits`, updated every TTI for every device (also for those
//!   that got nothing, and over idle TTIs, in one step). Fading is flat, so the metric is the
//!   same on every RBG and the best device takes RBGs until its demand is met; what is left
//!   of its last RBG goes to the next best. Ties go to the lower device index.

/// Which scheduler, with its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SchedulerSpec {
    RoundRobin,
    ProportionalFair {
        /// EWMA time constant in TTIs (>= 1).
        tc_ttis: f64,
        /// RBs per RBG; `None` = TS 36.213 Table 7.1.6.1-1 for the bandwidth.
        rbg: Option<u32>,
    },
}

impl SchedulerSpec {
    /// Proportional fair with `tc` = 100 TTIs and the standard RBG size.
    pub fn proportional_fair() -> Self {
        SchedulerSpec::ProportionalFair {
            tc_ttis: 100.0,
            rbg: None,
        }
    }

    pub fn validate(&self) -> anyhow::Result<()> {
        if let SchedulerSpec::ProportionalFair { tc_ttis, rbg } = *self {
            if !(tc_ttis >= 1.0 && tc_ttis.is_finite()) {
                anyhow::bail!("proportional fair: tc = {tc_ttis} TTIs, must be >= 1");
            }
            if rbg == Some(0) {
                anyhow::bail!("proportional fair: an RBG of 0 RBs");
            }
        }
        Ok(())
    }
}

/// What one device asks for in a TTI.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Demand {
    /// RBs that would empty its queue (0 = not a candidate).
    pub need_rb: u32,
    /// Bits one RB carries for it now (its instantaneous achievable rate per RB).
    pub bits_per_rb: f64,
}

/// Below this average (bits per TTI) the PF metric treats a device as starved.
const MIN_AVERAGE: f64 = 1e-9;

#[derive(Debug, Clone)]
pub struct Scheduler {
    spec: SchedulerSpec,
    n_rb: u32,
    rbg: u32,
    /// RR: the device the next extra RB goes to.
    rr_next: usize,
    /// PF: EWMA of bits per TTI, per device.
    avg: Vec<f64>,
    /// PF: 1/tc.
    alpha: f64,
    /// Scratch: remaining demand per device; candidates in rotation order.
    left: Vec<u32>,
    order: Vec<usize>,
}

impl Scheduler {
    pub fn new(spec: SchedulerSpec, n_rb: u32, n_devices: usize) -> Self {
        let (alpha, rbg) = match spec {
            SchedulerSpec::RoundRobin => (0.0, 1),
            SchedulerSpec::ProportionalFair { tc_ttis, rbg } => (
                1.0 / tc_ttis,
                rbg.unwrap_or_else(|| super::amc::rbg_size(n_rb)).max(1),
            ),
        };
        Scheduler {
            spec,
            n_rb,
            rbg,
            rr_next: 0,
            avg: vec![0.0; n_devices],
            alpha,
            left: vec![0; n_devices],
            order: Vec::with_capacity(n_devices),
        }
    }

    /// Splits the TTI's RBs: `rbs[d]` gets device `d`'s share (`rbs.len() == demand.len()`).
    pub fn allocate(&mut self, demand: &[Demand], rbs: &mut [u32]) {
        self.allocate_within(self.n_rb, demand, rbs);
    }

    /// As [`Scheduler::allocate`], with only the first `available` RBs free (the rest
    /// carry HARQ retransmissions).
    pub fn allocate_within(&mut self, available: u32, demand: &[Demand], rbs: &mut [u32]) {
        debug_assert_eq!(demand.len(), rbs.len());
        let available = available.min(self.n_rb);
        rbs.fill(0);
        for (l, d) in self.left.iter_mut().zip(demand) {
            *l = if d.bits_per_rb > 0.0 { d.need_rb } else { 0 };
        }
        match self.spec {
            SchedulerSpec::RoundRobin => self.round_robin(available, rbs),
            SchedulerSpec::ProportionalFair { .. } => {
                self.proportional_fair(available, demand, rbs)
            }
        }
    }

    fn round_robin(&mut self, available: u32, rbs: &mut [u32]) {
        let n = rbs.len();
        if n == 0 {
            return;
        }
        self.order.clear();
        self.order.extend(
            (0..n)
                .map(|i| (self.rr_next + i) % n)
                .filter(|&d| self.left[d] > 0),
        );
        let mut free = available;
        while !self.order.is_empty() && free > 0 {
            let m = self.order.len() as u32;
            let share = free / m;
            // Devices needing no more than an equal share get what they need ...
            let mut satisfied = false;
            for &d in &self.order {
                if self.left[d] <= share {
                    rbs[d] += self.left[d];
                    free -= self.left[d];
                    self.left[d] = 0;
                    satisfied = true;
                }
            }
            if satisfied {
                let left = &self.left;
                self.order.retain(|&d| left[d] > 0);
                continue; // ... and the rest is shared again.
            }
            // Everyone needs more than the share: the share each, one more for the first
            // `extra` in rotation order.
            let extra = (free % m) as usize;
            for (i, &d) in self.order.iter().enumerate() {
                rbs[d] += share + (i < extra) as u32;
            }
            if extra > 0 {
                self.rr_next = (self.order[extra - 1] + 1) % n;
            }
            free = 0;
        }
    }

    fn proportional_fair(&mut self, available: u32, demand: &[Demand], rbs: &mut [u32]) {
        let mut start = 0;
        while start < available {
            let mut free = self.rbg.min(available - start);
            start += free;
            while free > 0 {
                let mut best: Option<(usize, f64)> = None;
                for (d, dem) in demand.iter().enumerate() {
                    if self.left[d] == 0 {
                        continue;
                    }
                    let metric = dem.bits_per_rb / self.avg[d].max(MIN_AVERAGE);
                    if best.is_none_or(|(_, m)| metric > m) {
                        best = Some((d, metric));
                    }
                }
                let Some((d, _)) = best else {
                    return; // nobody needs more
                };
                let give = free.min(self.left[d]);
                rbs[d] += give;
                self.left[d] -= give;
                free -= give;
            }
        }
    }

    /// Ends a TTI in which device `d` got `bits[d]`: updates the PF averages (all devices).
    pub fn update(&mut self, bits: &[u64]) {
        if let SchedulerSpec::ProportionalFair { .. } = self.spec {
            for (a, &b) in self.avg.iter_mut().zip(bits) {
                *a = (1.0 - self.alpha) * *a + self.alpha * b as f64;
            }
        }
    }

    /// Accounts for `k` TTIs in which nobody got anything, in one step.
    pub fn skip(&mut self, k: u64) {
        if k == 0 {
            return;
        }
        if let SchedulerSpec::ProportionalFair { .. } = self.spec {
            let f = (k as f64 * (1.0 - self.alpha).ln()).exp();
            for a in &mut self.avg {
                *a *= f;
            }
        }
    }

    /// PF: device `d`'s average throughput in bits per TTI (0 under round robin).
    pub fn average_bits(&self, d: usize) -> f64 {
        self.avg[d]
    }

    /// RBs per RBG (1 under round robin).
    pub fn rbg(&self) -> u32 {
        self.rbg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dem(need: &[u32]) -> Vec<Demand> {
        need.iter()
            .map(|&n| Demand {
                need_rb: n,
                bits_per_rb: 100.0,
            })
            .collect()
    }

    fn run(s: &mut Scheduler, d: &[Demand]) -> Vec<u32> {
        let mut rbs = vec![0; d.len()];
        s.allocate(d, &mut rbs);
        rbs
    }

    #[test]
    fn round_robin_splits_evenly_and_rotates_the_remainder() {
        let mut s = Scheduler::new(SchedulerSpec::RoundRobin, 25, 3);
        let big = dem(&[1000, 1000, 1000]);
        // 25 = 8 + 8 + 8 + 1: the extra RB moves on every TTI.
        assert_eq!(run(&mut s, &big), [9, 8, 8]);
        assert_eq!(run(&mut s, &big), [8, 9, 8]);
        assert_eq!(run(&mut s, &big), [8, 8, 9]);
        assert_eq!(run(&mut s, &big), [9, 8, 8]);
        // Two devices: 13/12 alternating.
        let mut s = Scheduler::new(SchedulerSpec::RoundRobin, 25, 2);
        let two = dem(&[1000, 1000]);
        let mut tot = [0, 0];
        for _ in 0..10 {
            let r = run(&mut s, &two);
            assert!(r[0].abs_diff(r[1]) == 1 && r[0] + r[1] == 25);
            tot[0] += r[0];
            tot[1] += r[1];
        }
        assert_eq!(tot, [125, 125]);
    }

    #[test]
    fn round_robin_caps_at_the_demand_and_shares_the_rest() {
        let mut s = Scheduler::new(SchedulerSpec::RoundRobin, 25, 4);
        // Device 1 needs 2, device 2 has nothing: devices 0 and 3 share 23 (12 + 11).
        let r = run(&mut s, &dem(&[1000, 2, 0, 1000]));
        assert_eq!((r[1], r[2], r[0] + r[3]), (2, 0, 23));
        assert!(r[0].abs_diff(r[3]) == 1);
        // Water-filling over rounds: the share is 8, device 0 needs 3; then 11, device 1
        // needs 10; device 2 gets the remaining 12.
        let mut s = Scheduler::new(SchedulerSpec::RoundRobin, 25, 3);
        assert_eq!(run(&mut s, &dem(&[3, 10, 1000])), [3, 10, 12]);
        // Everyone satisfied: RBs stay unused.
        assert_eq!(run(&mut s, &dem(&[3, 4, 5])), [3, 4, 5]);
        // CQI 0 (no bits per RB) is never a candidate.
        let mut d = dem(&[1000, 1000]);
        d[0].bits_per_rb = 0.0;
        assert_eq!(run(&mut s, &d[..]), [0, 25]);
        // Fewer RBs than devices: one each, rotating.
        let mut s = Scheduler::new(SchedulerSpec::RoundRobin, 2, 3);
        let d = dem(&[5, 5, 5]);
        assert_eq!(run(&mut s, &d), [1, 1, 0]);
        assert_eq!(run(&mut s, &d), [1, 0, 1]); // from device 2 on
        assert_eq!(run(&mut s, &d), [0, 1, 1]); // from device 1 on
    }

    #[test]
    fn proportional_fair_alternates_equal_devices_and_respects_demand() {
        let spec = SchedulerSpec::ProportionalFair {
            tc_ttis: 100.0,
            rbg: None,
        };
        let mut s = Scheduler::new(spec, 100, 2);
        assert_eq!(s.rbg(), 4);
        let d = dem(&[1000, 1000]);
        let mut tot = [0u32; 2];
        for _ in 0..1000 {
            let r = run(&mut s, &d);
            assert_eq!(r[0] + r[1], 100, "flat fading: one device takes all");
            assert!(r[0] == 0 || r[1] == 0);
            s.update(&[r[0] as u64 * 100, r[1] as u64 * 100]);
            tot[0] += r[0];
            tot[1] += r[1];
        }
        assert!(tot[0].abs_diff(tot[1]) <= 100, "{tot:?}");
        // The winner needs 5 RBs: it gets them (half of its second RBG, too); the rest
        // goes to the other device.
        let w = if s.average_bits(0) <= s.average_bits(1) {
            0
        } else {
            1
        };
        let mut need = [1000, 1000];
        need[w] = 5;
        let r = run(&mut s, &dem(&need));
        assert_eq!((r[w], r[1 - w]), (5, 95));
    }

    #[test]
    fn proportional_fair_averages_update_every_tti_and_skip_exactly() {
        let spec = SchedulerSpec::ProportionalFair {
            tc_ttis: 10.0,
            rbg: Some(2),
        };
        let mut a = Scheduler::new(spec, 6, 2);
        let mut b = a.clone();
        a.update(&[1000, 0]);
        b.update(&[1000, 0]);
        assert!((a.average_bits(0) - 100.0).abs() < 1e-12);
        for _ in 0..37 {
            a.update(&[0, 0]);
        }
        b.skip(37);
        assert!((a.average_bits(0) - b.average_bits(0)).abs() < 1e-9);
        assert!((b.average_bits(0) - 100.0 * 0.9f64.powi(37)).abs() < 1e-9);
        // The starved device wins whatever its rate.
        let d = [
            Demand {
                need_rb: 10,
                bits_per_rb: 500.0,
            },
            Demand {
                need_rb: 10,
                bits_per_rb: 1.0,
            },
        ];
        assert_eq!(run(&mut a, &d), [0, 6]);
    }
}

//! The receiving host between the network and a modelled endpoint: a socket receive
//! buffer of `capacity` bytes (Linux's `rmem`), charged `truesize` bytes per packet (the
//! packet plus the kernel's skb bookkeeping), drained by an application that spends a
//! service time on each packet (a CPU-bound receiver such as aioquic). A packet that would
//! take the buffer over `capacity` is dropped, as Linux drops it into a full UDP socket:
//! the cause of the losses the study saw with the default UDP buffer when PDCP releases a
//! burst. The charge and the admission rule are the kernel's as measured through the
//! testbed (tests/test_sim.py, `test_the_host_model_charges_what_the_kernel_charges`):
//! 92 datagrams of 1252 bytes fit in 212992 bytes, each charged 2304.

use std::collections::VecDeque;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::base::time::Nanos;

/// The application's time per packet.
#[derive(Clone, Debug)]
pub enum Service {
    /// The same for every packet (0: the application keeps up with anything).
    Fixed(Nanos),
    /// Drawn for each packet from a measured distribution, given as points (probability,
    /// time) of its quantile function: linear between points, the last time beyond the last
    /// probability. A real receiver is not a constant: it is sometimes descheduled, or a
    /// packet costs more (an ACK to send, a timer), and a burst that nearly fills the buffer
    /// overflows it only when such a slow packet comes along.
    Quantiles {
        points: Vec<(f64, Nanos)>,
        rng: SmallRng,
    },
}

impl Service {
    /// A distribution from its quantile points (probabilities rising from 0, times not
    /// falling; the workload file checks both) and the seed of its draws.
    pub fn quantiles(points: Vec<(f64, Nanos)>, seed: u64) -> Self {
        Service::Quantiles {
            points,
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    fn next(&mut self) -> Nanos {
        match self {
            Service::Fixed(t) => *t,
            Service::Quantiles { points, rng } => quantile(points, rng.gen::<f64>()),
        }
    }
}

/// The time at probability `u` of a quantile function given by its points.
fn quantile(points: &[(f64, Nanos)], u: f64) -> Nanos {
    let i = points.partition_point(|&(p, _)| p <= u);
    match (i.checked_sub(1).map(|j| points[j]), points.get(i)) {
        (Some((p0, t0)), Some(&(p1, t1))) => {
            let f = (u - p0) / (p1 - p0);
            t0 + ((t1 - t0) as f64 * f).round() as Nanos
        }
        (Some((_, t)), None) => t,
        (None, Some(&(_, t))) => t,
        (None, None) => 0,
    }
}

#[derive(Clone, Debug)]
pub struct ReceiveBuffer<T> {
    capacity: u64,
    /// Bytes charged per packet.
    truesize: u64,
    service: Service,
    used: u64,
    queue: VecDeque<T>,
    /// When the application finishes the packet at the head (None: idle).
    busy_until: Option<Nanos>,
    pub drops: u64,
    pub packets: u64,
    pub max_used: u64,
}

impl<T> ReceiveBuffer<T> {
    /// `capacity` 0 means unlimited (a TCP receiver, whose window bounds it instead).
    pub fn new(capacity: u64, truesize: u64, service: Service) -> Self {
        ReceiveBuffer {
            capacity,
            truesize,
            service,
            used: 0,
            queue: VecDeque::new(),
            busy_until: None,
            drops: 0,
            packets: 0,
            max_used: 0,
        }
    }

    /// A packet arrives; false if it was dropped.
    pub fn offer(&mut self, now: Nanos, item: T) -> bool {
        if self.capacity > 0 && self.used + self.truesize > self.capacity {
            self.drops += 1;
            return false;
        }
        self.used += self.truesize;
        self.max_used = self.max_used.max(self.used);
        self.packets += 1;
        self.queue.push_back(item);
        if self.busy_until.is_none() {
            self.busy_until = Some(now + self.service.next());
        }
        true
    }

    /// When the application next takes a packet.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.busy_until
    }

    /// The packet the application has finished by `now`, if any (call until None).
    pub fn take(&mut self, now: Nanos) -> Option<T> {
        let t = self.busy_until.filter(|&t| t <= now)?;
        let item = self.queue.pop_front()?;
        self.used -= self.truesize;
        self.busy_until = if self.queue.is_empty() {
            None
        } else {
            Some(t + self.service.next())
        };
        Some(item)
    }

    pub fn used(&self) -> u64 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_overflows_a_small_buffer_read_by_a_slow_application() {
        // 10 kB buffer, packets charged 1280: seven fit (8 x 1280 = 10240 > 10000), so the
        // 8th and every later one of the burst is dropped.
        let mut b = ReceiveBuffer::new(10_000, 1280, Service::Fixed(100_000));
        let kept: Vec<bool> = (0..12).map(|i| b.offer(0, i)).collect();
        assert_eq!(kept.iter().filter(|&&k| k).count(), 7);
        assert_eq!(b.drops, 5);
        assert!(!kept[7] && kept[6]);
        // The application takes one every 100 µs.
        assert_eq!(b.take(50_000), None);
        assert_eq!(b.take(100_000), Some(0));
        assert_eq!(b.take(100_000), None);
        assert_eq!(b.next_deadline(), Some(200_000));
        assert_eq!(b.take(200_000), Some(1));
        // Room again: 5 left + 1 = 6 x 1280 = 7680 <= 10000.
        assert!(b.offer(200_000, 99));
    }

    #[test]
    fn the_kernels_measured_fill_of_the_default_buffer() {
        // 212992 bytes (rmem_default) hold 92 datagrams charged 2304 each and 256 charged
        // 832 (exactly full), as measured through the testbed.
        for (truesize, fits) in [(2304, 92), (832, 256)] {
            let mut b = ReceiveBuffer::new(212_992, truesize, Service::Fixed(1));
            let n = (0..400).filter(|&i| b.offer(0, i)).count();
            assert_eq!(n, fits);
        }
    }

    #[test]
    fn an_immediate_application_and_an_unlimited_buffer_never_drop() {
        let mut b = ReceiveBuffer::new(0, 1500, Service::Fixed(0));
        for i in 0..10_000 {
            assert!(b.offer(5, i));
        }
        let n = std::iter::from_fn(|| b.take(5)).count();
        assert_eq!((n, b.drops, b.used()), (10_000, 0, 0));
    }

    #[test]
    fn quantile_points_are_interpolated() {
        let pts = [(0.0, 100), (0.5, 200), (0.9, 600)];
        assert_eq!(quantile(&pts, 0.0), 100);
        assert_eq!(quantile(&pts, 0.25), 150);
        assert_eq!(quantile(&pts, 0.5), 200);
        assert_eq!(quantile(&pts, 0.7), 400);
        assert_eq!(quantile(&pts, 0.95), 600);
    }

    #[test]
    fn drawn_service_times_follow_the_distribution_and_the_seed() {
        // Uniform between 100 and 300 µs: mean 200 µs; 10 000 packets take about 2 s.
        let pts = vec![(0.0, 100_000), (1.0, 300_000)];
        let drain = |seed| {
            let mut b = ReceiveBuffer::new(0, 1, Service::quantiles(pts.clone(), seed));
            for i in 0..10_000 {
                b.offer(0, i);
            }
            let mut last = 0;
            while let Some(t) = b.next_deadline() {
                b.take(t);
                last = t;
            }
            last
        };
        let a = drain(1);
        assert!((1_960_000_000..2_040_000_000).contains(&a), "{a}");
        assert_eq!(a, drain(1));
        assert_ne!(a, drain(2));
    }
}

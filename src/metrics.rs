//! Counters a user can scrape (`own.metrics()`), folded from the protocol's own events (`Event`): requests
//! by what they were for and how they went, claims, takeovers, fences, authority lost by cause, lease
//! write latencies, settled ambiguity, retried reads, credential refreshes. Pure: it only counts what it
//! is shown, and reads no clock.


use crate::env::{Event, Lost};

/// Count, sum and largest of a duration in ms.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub sum_ms: f64,
    pub max_ms: f64,
    pub last_ms: f64,
}

impl Latency {
    fn add(&mut self, ms: f64) {
        self.count += 1;
        self.sum_ms += ms;
        self.max_ms = self.max_ms.max(ms);
        self.last_ms = ms;
    }
}

/// What a request was for: (op, record), as `Event::Request` names them.
pub type Kind = (&'static str, &'static str);

#[derive(Debug, Default, Clone, PartialEq)]
pub struct Metrics {
    /// ((op, record), outcome, count), e.g. (("write", "owner"), "applied", 3), in first-seen order.
    pub requests: Vec<(Kind, &'static str, u64)>,
    /// Latency of every request answered, by (op, record).
    pub request_ms: Vec<(Kind, Latency)>,
    pub claims_applied: u64,
    /// Claims that took a cell over from a node whose lease was dead.
    pub takeovers: u64,
    pub claims_rejected: u64,
    pub fences: u64,
    /// Claims of this instance that ended, by why (`Lost` order: lease lost, taken over, reclaimed,
    /// released, closed).
    pub authority_lost: [u64; 5],
    pub leases_acquired: u64,
    pub acquire_ms: Latency,
    pub renew_ms: Latency,
    /// Ambiguous writes settled by reading back: applied, rejected, superseded.
    pub ambiguous: [u64; 3],
    pub read_retries: u64,
    pub credentials_refreshed: u64,
    pub credentials_failed: u64,
    /// `close()` calls, and leases retired by them.
    pub closes: u64,
    pub leases_retired: u64,
}

fn lost_index(lost: Lost) -> usize {
    match lost {
        Lost::LeaseLost => 0,
        Lost::TakenOver => 1,
        Lost::Reclaimed => 2,
        Lost::Released => 3,
        Lost::Closed => 4,
    }
}

/// The `Lost` names in `authority_lost` order.
pub const LOST_NAMES: [&str; 5] = ["lease-lost", "taken-over", "reclaimed", "released", "closed"];
/// The outcome names in `ambiguous` order.
pub const SETTLED_NAMES: [&str; 3] = ["applied", "rejected", "superseded"];

impl Metrics {
    pub fn record(&mut self, event: &Event<'_>) {
        match *event {
            Event::Request { op, record, outcome, status, ms, .. } => {
                let kind = (op, record);
                match self.requests.iter_mut().find(|(k, o, _)| *k == kind && *o == outcome) {
                    Some((_, _, n)) => *n += 1,
                    None => self.requests.push((kind, outcome, 1)),
                }
                if status != 0 {
                    match self.request_ms.iter_mut().find(|(k, _)| *k == kind) {
                        Some((_, l)) => l.add(ms),
                        None => {
                            let mut l = Latency::default();
                            l.add(ms);
                            self.request_ms.push((kind, l));
                        }
                    }
                }
            }
            Event::ClaimApplied { .. } => self.claims_applied += 1,
            Event::ClaimTookOver { .. } => {
                self.claims_applied += 1;
                self.takeovers += 1;
            }
            Event::ClaimRejected { .. } => self.claims_rejected += 1,
            Event::Fenced { .. } => self.fences += 1,
            Event::AuthorityLost { lost, .. } => self.authority_lost[lost_index(lost)] += 1,
            Event::LeaseAcquired { ms, .. } => {
                self.leases_acquired += 1;
                self.acquire_ms.add(ms);
            }
            Event::LeaseRenewed { ms, .. } => self.renew_ms.add(ms),
            Event::AmbiguousSettled { outcome, .. } => {
                if let Some(i) = SETTLED_NAMES.iter().position(|n| *n == outcome) {
                    self.ambiguous[i] += 1;
                }
            }
            Event::ReadRetried { .. } => self.read_retries += 1,
            Event::CredentialsRefreshed { .. } => self.credentials_refreshed += 1,
            Event::CredentialsFailed { .. } => self.credentials_failed += 1,
            Event::Closed { .. } => self.closes += 1,
            Event::LeaseRetired { .. } => self.leases_retired += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_events_into_counters() {
        let mut m = Metrics::default();
        let req = |op, record, outcome, status, ms| Event::Request { key: "k", op, record, outcome, status, ms };
        for e in [
            req("write", "owner", "applied", 200, 4.0),
            req("write", "owner", "applied", 200, 6.0),
            req("write", "owner", "rejected", 412, 1.0),
            req("read", "lease", "retryable", 0, 0.0),
            Event::ClaimTookOver { cell: "c", epoch: 2, ms: 1.0 },
            Event::ClaimApplied { cell: "d", epoch: 1, ms: 1.0 },
            Event::ClaimRejected { cell: "e", owner: "b", epoch: 1, ms: 1.0 },
            Event::Fenced { node: "a", reason: "r" },
            Event::AuthorityLost { cell: "c", epoch: 2, lost: Lost::Released, detail: "" },
            Event::LeaseRenewed { node: "a", expires_ms: 1, ms: 30.0 },
            Event::LeaseRenewed { node: "a", expires_ms: 2, ms: 10.0 },
            Event::AmbiguousSettled { key: "k", outcome: "superseded", readbacks: 1 },
        ] {
            m.record(&e);
        }
        assert_eq!(
            m.requests,
            [(("write", "owner"), "applied", 2), (("write", "owner"), "rejected", 1), (("read", "lease"), "retryable", 1)]
        );
        assert_eq!(m.request_ms.len(), 1, "a request with no answer has no latency");
        assert_eq!((m.request_ms[0].1.count, m.request_ms[0].1.sum_ms, m.request_ms[0].1.max_ms), (3, 11.0, 6.0));
        assert_eq!((m.claims_applied, m.takeovers, m.claims_rejected, m.fences), (2, 1, 1, 1));
        assert_eq!(m.authority_lost, [0, 0, 0, 1, 0]);
        assert_eq!(m.renew_ms, Latency { count: 2, sum_ms: 40.0, max_ms: 30.0, last_ms: 10.0 });
        assert_eq!(m.ambiguous, [0, 0, 1]);
    }
}

//! The measurements: the closed loop of SMP Gets (through the runtime,
//! or an engine polled on this thread) and the SA GetTables.

use std::time::{Duration, Instant};

use mad_agents::{AgentEvent, AgentSpec, SendRequest, SendStatus, Stack};
use mad_core::transport::{Address, Qp, Transport, PERMISSIVE_LID};
use mad_core::wire::sa::SaMad;
use mad_core::wire::smp::DrPath;
use mad_core::wire::{AttributeId, Method};

use super::opts::{Budget, RmppResult, SmpResult};
use crate::session::Session;

pub(super) fn percentiles(mut ns: Vec<u64>) -> [f64; 4] {
    if ns.is_empty() {
        return [f64::NAN; 4];
    }
    ns.sort_unstable();
    let n = ns.len();
    let at = |q: f64| {
        // Nearest rank; the epsilon keeps 99.9% of 1000 at rank 999.
        let rank = ((q * n as f64 / 100.0 - 1e-9).ceil() as usize).clamp(1, n);
        ns[rank - 1] as f64 / 1000.0
    };
    [at(50.0), at(99.0), at(99.9), at(100.0)]
}

/// The closed loop shared by both drivers: slot bookkeeping, warm-up,
/// stop condition, latencies.
pub(super) struct Loop {
    w: usize,
    warmup: u64,
    budget: Budget,
    sent_at: Vec<Instant>,
    issued: u64,
    done: u64,
    answered: u64,
    errors: u64,
    lat_ns: Vec<u64>,
    t0: Instant,
    t_end: Instant,
    deadline: Option<Instant>,
    stopped: bool,
}

impl Loop {
    fn new(w: usize, budget: Budget) -> Self {
        let now = Instant::now();
        // A short untimed warm-up: enough to fill the window a few times.
        let warmup = (4 * w as u64).clamp(64, 2_000);
        Self {
            w,
            warmup,
            budget,
            sent_at: vec![now; w],
            issued: 0,
            done: 0,
            answered: 0,
            errors: 0,
            lat_ns: Vec::new(),
            t0: now,
            t_end: now,
            deadline: None,
            stopped: false,
        }
    }

    /// True while more requests should go out.
    fn want_more(&self) -> bool {
        if self.stopped {
            return false;
        }
        match self.budget {
            Budget::Queries(n) => self.issued < self.warmup + n,
            Budget::Seconds(_) => true,
        }
    }

    /// The next of `reqs` in turn, carrying `cookie`, counted as sent
    /// from `slot` at `now`.
    fn next(
        &mut self,
        reqs: &[SendRequest],
        slot: usize,
        cookie: u64,
        now: Instant,
    ) -> SendRequest {
        let req = reqs[self.issued as usize % reqs.len()]
            .clone()
            .cookie(cookie);
        self.sent_at[slot.min(self.w - 1)] = now;
        self.issued += 1;
        req
    }

    /// Records a completion of `slot`; true when the slot should send again.
    fn completed(&mut self, slot: usize, ok: bool, now: Instant) -> bool {
        let slot = slot.min(self.w - 1);
        if self.done >= self.warmup {
            self.lat_ns
                .push(u64::try_from((now - self.sent_at[slot]).as_nanos()).unwrap_or(u64::MAX));
            if ok {
                self.answered += 1;
            } else {
                self.errors += 1;
            }
            self.t_end = now;
        }
        self.done += 1;
        if self.done == self.warmup {
            self.t0 = now;
            self.t_end = now;
            if let Budget::Seconds(s) = self.budget {
                self.deadline = Some(now + Duration::from_secs_f64(s));
            }
        }
        if self.deadline.is_some_and(|d| now >= d) {
            self.stopped = true;
        }
        self.want_more()
    }

    fn outstanding(&self) -> u64 {
        self.issued - self.done
    }

    fn result(self, imp: &str) -> Result<SmpResult, String> {
        if self.answered == 0 {
            return Err(format!(
                "{imp} W={}: no query answered ({} errors)",
                self.w, self.errors
            ));
        }
        let seconds = (self.t_end - self.t0).as_secs_f64().max(1e-9);
        Ok(SmpResult {
            imp: imp.to_owned(),
            w: self.w,
            answered: self.answered,
            errors: self.errors,
            seconds,
            qps: self.answered as f64 / seconds,
            lat_us: percentiles(self.lat_ns),
        })
    }
}

pub(super) fn requests(targets: &[String]) -> Result<Vec<SendRequest>, String> {
    targets
        .iter()
        .map(|t| {
            let r: DrPath = t.parse().map_err(|e| format!("bad route {t:?}: {e}"))?;
            let mad = r.build_request(Method::GET, AttributeId::NODE_INFO, 0, 0, 0);
            Ok(SendRequest::new(mad, Address::smi(PERMISSIVE_LID))
                .expect_response(Duration::from_secs(1), 0))
        })
        .collect()
}

pub(super) fn ok(c: &mad_agents::Completion) -> bool {
    c.status == SendStatus::Success
        && c.response
            .as_ref()
            .is_some_and(|r| r.mad().status().0 & 0x7FFF == 0)
}

/// SMP Get NodeInfo through the session's runtime with `w` outstanding.
pub(super) fn smp_runtime(
    s: &Session,
    reqs: &[SendRequest],
    w: usize,
    b: Budget,
) -> Result<SmpResult, String> {
    let (agent, rx) = s
        .runtime()
        .register_channel(AgentSpec::send_only("mad-bench", Qp::Qp0))
        .map_err(|e| format!("register the bench agent: {e}"))?;
    let mut l = Loop::new(w, b);
    for slot in 0..w {
        if !l.want_more() {
            break;
        }
        let req = l.next(reqs, slot, slot as u64, Instant::now());
        agent.send(req).map_err(|e| format!("send: {e}"))?;
    }
    while l.outstanding() > 0 {
        let Some(ev) = rx.recv_timeout(Duration::from_secs(5)) else {
            return Err(format!(
                "runtime W={w}: no completion in 5 s ({} outstanding)",
                l.outstanding()
            ));
        };
        let AgentEvent::SendDone(c) = ev else {
            continue;
        };
        let now = Instant::now();
        let slot = usize::try_from(c.cookie).unwrap_or(0);
        if l.completed(slot, ok(&c), now) {
            // Sent "now", as the engine's loop counts it.
            let req = l.next(reqs, slot, c.cookie, now);
            agent.send(req).map_err(|e| format!("send: {e}"))?;
        }
    }
    drop(agent);
    l.result("runtime")
}

/// The same queries from an engine (a `Stack`) polled on this thread.
pub(super) fn smp_engine<T: Transport>(
    e: &mut Stack<T>,
    reqs: &[SendRequest],
    w: usize,
    b: Budget,
) -> Result<SmpResult, String> {
    let agent = e
        .register(AgentSpec::send_only("mad-bench-engine", Qp::Qp0))
        .map_err(|e| format!("register: {e}"))?;
    let mut l = Loop::new(w, b);
    let now = Instant::now();
    for slot in 0..w {
        if !l.want_more() {
            break;
        }
        let req = l.next(reqs, slot, slot as u64, now);
        e.send(agent, req, now).map_err(|e| format!("send: {e}"))?;
    }
    let mut idle_since = Instant::now();
    while l.outstanding() > 0 {
        let now = Instant::now();
        let progressed = e.poll(now);
        let mut any = false;
        while let Some((_, ev)) = e.poll_event() {
            let AgentEvent::SendDone(c) = ev else {
                continue;
            };
            any = true;
            let slot = usize::try_from(c.cookie).unwrap_or(0);
            if l.completed(slot, ok(&c), now) {
                let req = l.next(reqs, slot, c.cookie, now);
                e.send(agent, req, now).map_err(|e| format!("send: {e}"))?;
            }
        }
        if progressed || any {
            idle_since = now;
        } else if now - idle_since > Duration::from_secs(5) {
            return Err(format!("engine W={w}: no progress in 5 s"));
        }
    }
    let _ = e.deregister(agent);
    l.result("engine")
}

pub(super) const TABLES: &[(&str, AttributeId)] = &[
    ("NodeRecord", AttributeId::SA_NODE_RECORD),
    ("PortInfoRecord", AttributeId::SA_PORTINFO_RECORD),
    ("PathRecord", AttributeId::SA_PATH_RECORD),
];

/// SA data starts after the common (24), RMPP (12) and SA (20) headers.
pub(super) const SA_DATA: usize = 56;

pub(super) fn rmpp(s: &mut Session, b: Budget) -> Result<Vec<RmppResult>, String> {
    let sa = s.sa()?;
    let mut out = Vec::new();
    for &(table, attr) in TABLES {
        let get = || {
            sa.request(Method::GET_TABLE, attr, 0, 0, &[])
                .map_err(|e| format!("GetTable {table}: {e}"))
        };
        let first = get()?;
        let bytes = first.bytes().len();
        let stride = usize::from(SaMad::new_unchecked(first.bytes()).attr_offset()) * 8;
        let records = bytes
            .saturating_sub(SA_DATA)
            .checked_div(stride)
            .unwrap_or(0);
        let (max_reps, limit) = match b {
            Budget::Queries(n) => (u32::try_from(n.clamp(3, 1_000)).unwrap_or(1_000), 60.0),
            Budget::Seconds(sec) => (100_000, sec),
        };
        let t0 = Instant::now();
        let mut reps = 0u32;
        while reps < max_reps && (reps < 3 || t0.elapsed().as_secs_f64() < limit) {
            get()?;
            reps += 1;
        }
        out.push(RmppResult {
            table,
            records,
            bytes,
            repeats: reps,
            seconds_per_table: t0.elapsed().as_secs_f64() / f64::from(reps.max(1)),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let p = percentiles((1..=1000).map(|i| i * 1000).collect());
        assert_eq!(p, [500.0, 990.0, 999.0, 1000.0]);
    }
}

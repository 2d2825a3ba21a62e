//! [`TransportExchange`]: an [`Exchange`] over a bare [`Transport`] (it
//! matches answers by the low 32 TID bits, which the kernel leaves
//! alone, and resends after a timeout).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use mad_core::hash::FastMap;
use mad_core::transport::{Address, Qp, Transport, TransportError, WcStatus, WrId};
use mad_core::wire::{Mad, MAD_HEADER_LEN, MAD_LEN};

use super::pipeline::{Exchange, Outcome, Outgoing, StartError};

struct Sent {
    id: u64,
    qp: Qp,
    mad: [u8; MAD_LEN],
    dest: Address,
    tries: u32,
    deadline: Instant,
    timeout: Duration,
    retries: u32,
}

/// Upper 32 TID bits the tools write ("mad\0"); the kernel may replace
/// them, so answers are matched on the low 32 bits only.
const TID_HIGH: u64 = 0x6d61_6400;
/// Where the TID is in the common MAD header.
const TID_OFFSET: usize = 8;

/// An [`Exchange`] over a bare [`Transport`]: it writes TIDs, matches
/// answers (response bit, low 32 TID bits, class), resends after a
/// timeout, and respects the transport's send-queue depth. `wait(t, max)`
/// blocks until the transport may have something.
pub struct TransportExchange<'a, T: Transport + ?Sized, W> {
    t: &'a mut T,
    wait: W,
    out: FastMap<u32, Sent>,
    deadlines: VecDeque<(Instant, u32)>,
    uncompleted: FastMap<WrId, u32>,
    next_tid: u32,
    sent: u64,
    resent: u64,
    completions: Vec<mad_core::transport::SendCompletion>,
}

impl<'a, T, W> TransportExchange<'a, T, W>
where
    T: Transport + ?Sized,
    W: FnMut(&mut T, Duration) -> Result<(), String>,
{
    /// An exchange over `t`.
    pub fn new(t: &'a mut T, wait: W) -> Self {
        // Start the TID counter somewhere different on every run so a
        // late answer to an earlier run is not taken for ours.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| {
                d.subsec_nanos() ^ (d.as_secs() as u32).rotate_left(16)
            });
        Self {
            t,
            wait,
            out: FastMap::default(),
            deadlines: VecDeque::new(),
            uncompleted: FastMap::default(),
            next_tid: seed,
            sent: 0,
            resent: 0,
            completions: Vec::new(),
        }
    }

    fn take_tid(&mut self) -> u32 {
        loop {
            self.next_tid = self.next_tid.wrapping_add(1);
            if !self.out.contains_key(&self.next_tid) {
                return self.next_tid;
            }
        }
    }

    fn post(&mut self, mut s: Sent, now: Instant) -> Result<(), TransportError> {
        let tid = self.take_tid();
        let full = (TID_HIGH << 32) | u64::from(tid);
        s.mad[TID_OFFSET..TID_OFFSET + 8].copy_from_slice(&full.to_be_bytes());
        match self.t.post_send(s.qp, &s.mad, &s.dest) {
            Ok(wr) => {
                self.sent += 1;
                if s.tries > 0 {
                    self.resent += 1;
                }
                s.tries += 1;
                s.deadline = now + s.timeout;
                self.uncompleted.insert(wr, tid);
                self.deadlines.push_back((s.deadline, tid));
                self.out.insert(tid, s);
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn expire(&mut self, now: Instant, out: &mut Vec<(u64, Outcome)>) {
        while let Some(&(deadline, tid)) = self.deadlines.front() {
            if deadline > now {
                break;
            }
            self.deadlines.pop_front();
            let current = self.out.get(&tid).is_some_and(|s| s.deadline == deadline);
            if !current {
                continue;
            }
            let Some(s) = self.out.remove(&tid) else {
                continue;
            };
            if s.tries > s.retries {
                out.push((s.id, Outcome::Timeout));
                continue;
            }
            let id = s.id;
            if let Err(e) = self.post(s, now) {
                out.push((id, Outcome::Failed(format!("resend: {e}"))));
            }
        }
    }
}

impl<T, W> Exchange for TransportExchange<'_, T, W>
where
    T: Transport + ?Sized,
    W: FnMut(&mut T, Duration) -> Result<(), String>,
{
    fn start(&mut self, id: u64, req: Outgoing<'_>) -> Result<(), StartError> {
        if self.uncompleted.len() >= self.t.send_queue_depth().max(1) {
            return Err(StartError::Busy);
        }
        let s = Sent {
            id,
            qp: req.qp,
            mad: *req.mad,
            dest: *req.dest,
            tries: 0,
            deadline: Instant::now(),
            timeout: req.limits.timeout,
            retries: req.limits.retries,
        };
        match self.post(s, Instant::now()) {
            Ok(()) => Ok(()),
            Err(TransportError::QueueFull { .. }) => Err(StartError::Busy),
            Err(e) => Err(StartError::Refused(e.to_string())),
        }
    }

    fn poll(&mut self, max: Duration, out: &mut Vec<(u64, Outcome)>) -> Result<(), String> {
        let before = out.len();
        let mut idle_waited = false;
        loop {
            self.completions.clear();
            self.t
                .poll_send_completions(&mut self.completions)
                .map_err(|e| format!("poll completions: {e}"))?;
            for c in &self.completions {
                let Some(tid) = self.uncompleted.remove(&c.wr_id) else {
                    continue;
                };
                if c.status != WcStatus::Success {
                    if let Some(s) = self.out.remove(&tid) {
                        out.push((
                            s.id,
                            Outcome::Failed(format!("send completed with {}", c.status)),
                        ));
                    }
                }
            }
            while let Some(rx) = self.t.poll_recv().map_err(|e| format!("receive: {e}"))? {
                let Some(tid) = answer_tid(&rx.mad) else {
                    continue;
                };
                let class_ok = self.out.get(&tid).is_some_and(|s| {
                    Mad::new_unchecked(&s.mad[..]).mgmt_class()
                        == Mad::new_unchecked(&rx.mad[..]).mgmt_class()
                });
                if !class_ok {
                    continue;
                }
                if let Some(s) = self.out.remove(&tid) {
                    let mut mad = rx.mad;
                    // Restore the TID we sent, whatever the kernel did.
                    if mad.len() >= MAD_HEADER_LEN {
                        mad[TID_OFFSET..TID_OFFSET + 8]
                            .copy_from_slice(&s.mad[TID_OFFSET..TID_OFFSET + 8]);
                    }
                    out.push((s.id, Outcome::Answer(mad.into())));
                }
                if out.len() - before >= 256 {
                    break;
                }
            }
            self.expire(Instant::now(), out);
            if out.len() > before || idle_waited || max.is_zero() {
                return Ok(());
            }
            let now = Instant::now();
            let until = self
                .deadlines
                .front()
                .map_or(max, |d| d.0.saturating_duration_since(now))
                .min(max);
            (self.wait)(self.t, until)?;
            idle_waited = true;
        }
    }

    fn sent(&self) -> u64 {
        self.sent
    }

    fn resent(&self) -> u64 {
        self.resent
    }
}

/// The low 32 TID bits of a response MAD, or `None` for a request or
/// something too short to be a MAD.
fn answer_tid(mad: &[u8]) -> Option<u32> {
    if mad.len() < MAD_HEADER_LEN {
        return None;
    }
    let m = Mad::new_unchecked(mad);
    if !m.response_bit() {
        return None;
    }
    Some((m.tid() & 0xFFFF_FFFF) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::pipeline::{Handler, Limits, Pipeline, PipelineError, Request};
    use mad_core::transport::loopback::Loopback;
    use mad_core::transport::Received;
    use mad_core::wire::{AttributeId, Method, MgmtClass};
    use std::collections::HashMap;
    use std::sync::{Arc, Mutex};

    /// Requests the loopback's responder holds back, answered at the next
    /// wait: (destination LID, MAD).
    type Held = Arc<Mutex<Vec<(u16, Vec<u8>)>>>;

    fn held_loopback(held: &Held, drop_lid: Option<u16>) -> Loopback {
        let h = held.clone();
        Loopback::new(Loopback::attrs("t", 1, 1), 4096).with_responder(Box::new(
            move |_qp, mad: &[u8], dest: &Address| {
                if Some(dest.lid) != drop_lid {
                    if let Ok(mut v) = h.lock() {
                        v.push((dest.lid, mad.to_vec()));
                    }
                }
                Vec::new()
            },
        ))
    }

    fn request(lid: u16, ctx: u32) -> Request<u32> {
        let mad = mad_testkit::MadBuilder::new(MgmtClass::PERF_MGT, 1, Method::GET, AttributeId(0))
            .build();
        Request {
            qp: Qp::Qp1,
            mad,
            dest: Address::gsi(lid),
            dest_key: Some(u64::from(lid)),
            ctx,
        }
    }

    /// Answers everything held; records the most in flight per LID and
    /// in total seen at one time.
    fn answer_all(t: &mut Loopback, held: &Held, max_seen: &mut (usize, usize)) {
        let batch: Vec<(u16, Vec<u8>)> = held
            .lock()
            .map(|mut v| v.drain(..).collect())
            .unwrap_or_default();
        let mut per: HashMap<u16, usize> = HashMap::new();
        for (lid, _) in &batch {
            *per.entry(*lid).or_insert(0) += 1;
        }
        max_seen.0 = max_seen.0.max(per.values().copied().max().unwrap_or(0));
        max_seen.1 = max_seen.1.max(batch.len());
        for (lid, mut mad) in batch {
            mad_testkit::header::edit(&mut mad, |h| h.response = true);
            t.push_recv(Received {
                qp: Qp::Qp1,
                src: Address::gsi(lid),
                mad: mad.into(),
            });
        }
    }

    #[test]
    fn bounds_in_flight_per_destination_and_per_port() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, None);
        let mut max_seen = (0usize, 0usize);
        let h2 = held.clone();
        let mut ex = TransportExchange::new(&mut t, |t: &mut Loopback, _max: Duration| {
            answer_all(t, &h2, &mut max_seen);
            Ok(())
        });
        let mut p: Pipeline<u32> = Pipeline::new(Limits {
            window: 10,
            per_dest: 3,
            ..Limits::default()
        });
        // 40 requests to LID 7, 40 spread over LIDs 100..140.
        for i in 0..40 {
            p.submit(request(7, i));
            p.submit(request(100 + i as u16, 100 + i));
        }
        let mut got = Vec::new();
        p.run(&mut ex, &mut |_p: &mut Pipeline<u32>,
                             ctx: u32,
                             o: Outcome| {
            assert!(matches!(o, Outcome::Answer(_)), "{ctx}: {o:?}");
            got.push(ctx);
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        drop(ex);
        got.sort_unstable();
        let want: Vec<u32> = (0..40).chain(100..140).collect();
        assert_eq!(got, want);
        assert_eq!(max_seen.0, 3, "per-destination bound");
        assert_eq!(max_seen.1, 10, "window");
        assert_eq!(p.stats().max_in_flight, 10);
        assert_eq!(p.stats().answered, 80);
    }

    #[test]
    fn unanswered_requests_are_resent_then_time_out() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, Some(9));
        let h2 = held.clone();
        let mut seen = (0, 0);
        let mut ex = TransportExchange::new(&mut t, |t: &mut Loopback, max: Duration| {
            answer_all(t, &h2, &mut seen);
            std::thread::sleep(max.min(Duration::from_millis(2)));
            Ok(())
        });
        let mut p: Pipeline<u32> = Pipeline::new(Limits {
            timeout: Duration::from_millis(20),
            retries: 2,
            ..Limits::default()
        });
        p.submit(request(9, 1));
        p.submit(request(10, 2));
        let mut outcomes = Vec::new();
        p.run(&mut ex, &mut |_p: &mut Pipeline<u32>,
                             ctx: u32,
                             o: Outcome| {
            outcomes.push((ctx, matches!(o, Outcome::Answer(_)), o == Outcome::Timeout));
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
        let sent = ex.sent();
        drop(ex);
        outcomes.sort_unstable();
        assert_eq!(outcomes, vec![(1, false, true), (2, true, false)]);
        // Three tries of the dropped one, one of the answered one.
        assert_eq!(sent, 4);
        assert_eq!(p.stats().retries, 2);
        assert_eq!(p.stats().failed, 1);
    }

    /// An exchange over `t` whose every wait answers what `held` holds.
    fn answering<'t>(
        t: &'t mut Loopback,
        held: &Held,
    ) -> TransportExchange<'t, Loopback, impl FnMut(&mut Loopback, Duration) -> Result<(), String>>
    {
        let h = held.clone();
        let mut seen = (0, 0);
        TransportExchange::new(t, move |t: &mut Loopback, _m: Duration| {
            answer_all(t, &h, &mut seen);
            Ok(())
        })
    }

    #[test]
    fn handler_can_submit_more_and_stop_the_run() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, None);
        let mut ex = answering(&mut t, &held);
        let mut p: Pipeline<u32> = Pipeline::new(Limits::default());
        p.submit(request(1, 0));
        let mut n = 0;
        let r =
            p.run(&mut ex, &mut |p: &mut Pipeline<u32>,
                                 ctx: u32,
                                 _o: Outcome| {
                n += 1;
                if ctx == 5 {
                    return Err("enough".into());
                }
                p.submit(request(1, ctx + 1));
                Ok(())
            });
        assert_eq!(r, Err(PipelineError::Handler("enough".into())));
        assert_eq!(n, 6);
    }

    /// A handler that no longer wants the requests of one LID.
    struct Unwanted {
        lid: u16,
        got: Vec<u32>,
    }

    impl Handler<u32> for Unwanted {
        fn done(&mut self, _p: &mut Pipeline<u32>, ctx: u32, _o: Outcome) -> Result<(), String> {
            self.got.push(ctx);
            Ok(())
        }

        fn still_wanted(&mut self, ctx: &u32) -> bool {
            *ctx != u32::from(self.lid)
        }
    }

    #[test]
    fn a_request_no_longer_wanted_when_its_turn_comes_is_not_sent() {
        let held: Held = Arc::default();
        let mut t = held_loopback(&held, None);
        let mut ex = answering(&mut t, &held);
        // One at a time: each waits its turn behind the one before.
        let one = Limits {
            window: 1,
            ..Limits::default()
        };
        let mut p: Pipeline<u32> = Pipeline::new(one);
        for lid in 1..=4u16 {
            p.submit(request(lid, u32::from(lid)));
        }
        let mut h = Unwanted {
            lid: 3,
            got: Vec::new(),
        };
        p.run(&mut ex, &mut h).unwrap_or_else(|e| panic!("{e}"));
        let sent = ex.sent();
        drop(ex);
        h.got.sort_unstable();
        assert_eq!(h.got, vec![1, 2, 4]);
        assert_eq!(sent, 3);
        assert_eq!(p.stats().answered, 3);
    }

    #[test]
    fn answer_tid_ignores_requests_and_short_buffers() {
        assert_eq!(answer_tid(&[0u8; 10]), None);
        let mut mad = [0u8; MAD_LEN];
        mad_testkit::header::edit(&mut mad, |h| {
            h.method = Method::GET;
            h.tid = 7;
        });
        assert_eq!(answer_tid(&mad), None);
        mad_testkit::header::edit(&mut mad, |h| h.response = true); // GetResp
        assert_eq!(answer_tid(&mad), Some(7));
    }
}

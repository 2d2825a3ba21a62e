//! Two engines back to back on a virtual clock, after quinn's test
//! `Pair`: [`Pair::step`] polls both at the current virtual time,
//! [`Pair::drive`] steps until nothing moves and then jumps the clock to
//! the earlier of the two engines' next timeouts, until neither has one.
//! Each side's receive path can lose or duplicate MADs ([`Pair::set_loss`],
//! [`Pair::set_duplication`], [`Pair::lose_next`]), drawn from the kit's
//! seeded [`Rng`]. Each side may have its own configuration
//! ([`Pair::with_configs`]); a test that must react to events while the
//! pair runs (a responder that answers what it receives, a stop condition)
//! drives it with [`Pair::drive_until`]; a test about how long an exchange
//! takes gives each step a cost in virtual time ([`Pair::set_step_time`]).

use std::time::{Duration, Instant};

use mad_agents::{EngineConfig, Stack};
use mad_core::transport::loopback::Loopback;
use mad_core::transport::Received;

use crate::wrap::{Hooks, Wrapped};
use crate::Rng;

/// The send queue depth of each side's loopback.
pub const DEPTH: usize = 64;

/// LID of side A (B is `A_LID + 1`).
pub const A_LID: u16 = 1;

/// How many steps [`Pair::drive`] takes at most (a livelock guard).
pub const MAX_STEPS: usize = 100_000;

/// One side of a [`Pair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The first engine.
    A,
    /// The second engine.
    B,
}

/// What a side's receive path does to MADs: seeded loss and duplication.
#[derive(Debug)]
pub struct Faults {
    rng: Rng,
    /// Probability of losing a received MAD.
    pub loss: f64,
    /// Probability of receiving a MAD twice.
    pub duplication: f64,
    /// Lose this many MADs next, whatever the probabilities.
    pub lose_next: usize,
    /// MADs lost so far.
    pub lost: u64,
    /// MADs duplicated so far.
    pub duplicated: u64,
    again: Option<Received>,
    /// The MAD being received is the copy `again` held (not copied again).
    replaying: bool,
}

impl Faults {
    fn new(seed: u64) -> Self {
        Self {
            rng: Rng::new(seed),
            loss: 0.0,
            duplication: 0.0,
            lose_next: 0,
            lost: 0,
            duplicated: 0,
            again: None,
            replaying: false,
        }
    }
}

impl Hooks for Faults {
    fn inject(&mut self) -> Option<Received> {
        let r = self.again.take();
        self.replaying = r.is_some();
        r
    }
    fn received(&mut self, r: Received) -> Option<Received> {
        if std::mem::take(&mut self.replaying) {
            return Some(r);
        }
        if self.lose_next > 0 {
            self.lose_next -= 1;
            self.lost += 1;
            return None;
        }
        if self.rng.chance(self.loss) {
            self.lost += 1;
            return None;
        }
        if self.rng.chance(self.duplication) {
            self.duplicated += 1;
            self.again = Some(r.clone());
        }
        Some(r)
    }
}

/// The transport each engine of a [`Pair`] runs on.
pub type PairTransport = Wrapped<Loopback, Faults>;

/// Two engines over a connected loopback pair, on a virtual clock.
pub struct Pair {
    /// Side A.
    pub a: Stack<PairTransport>,
    /// Side B.
    pub b: Stack<PairTransport>,
    now: Instant,
    step_time: Duration,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl Default for Pair {
    fn default() -> Self {
        Self::new(&EngineConfig::default())
    }
}

impl Pair {
    /// Two engines with `cfg`, A at LID 1 and B at LID 2, the clock at
    /// an arbitrary fixed start.
    #[must_use]
    pub fn new(cfg: &EngineConfig) -> Self {
        Self::with_configs(cfg, cfg)
    }

    /// Like [`Pair::new`], with A configured by `a_cfg` and B by `b_cfg`
    /// (a receiver with a smaller RMPP limit, a shorter linger, a byte
    /// budget on one side only).
    #[must_use]
    pub fn with_configs(a_cfg: &EngineConfig, b_cfg: &EngineConfig) -> Self {
        let (la, lb) = Loopback::pair(
            Loopback::attrs("kitA", 1, A_LID),
            Loopback::attrs("kitB", 1, A_LID + 1),
            DEPTH,
        );
        let a = Stack::new(Wrapped::new(la, Faults::new(1)), a_cfg.clone());
        let b = Stack::new(Wrapped::new(lb, Faults::new(2)), b_cfg.clone());
        Self {
            a,
            b,
            now: Instant::now(),
            step_time: Duration::ZERO,
        }
    }

    /// Each step in which something moved also moves the clock on by `d`
    /// (zero by default: MADs cross in no time, and only timeouts move
    /// the clock). With, say, 1 ms a step, a transfer of many windows
    /// spans virtual time, as it does on a real port, so a test can prove
    /// what happens to timers while it is under way.
    pub fn set_step_time(&mut self, d: Duration) {
        self.step_time = d;
    }

    /// The virtual time.
    #[must_use]
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Moves the clock on by `d` (without polling).
    pub fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    /// The engine of `side`, with the driver of its transport.
    pub fn engine(&mut self, side: Side) -> &mut Stack<PairTransport> {
        match side {
            Side::A => &mut self.a,
            Side::B => &mut self.b,
        }
    }

    /// The receive-path faults of `side`.
    pub fn faults(&mut self, side: Side) -> &mut Faults {
        &mut self.engine(side).transport_mut().hooks
    }

    /// `side` loses each MAD it receives with probability `p`.
    pub fn set_loss(&mut self, side: Side, p: f64) {
        self.faults(side).loss = p;
    }

    /// `side` receives each MAD twice with probability `p`.
    pub fn set_duplication(&mut self, side: Side, p: f64) {
        self.faults(side).duplication = p;
    }

    /// `side` loses the next `n` MADs it receives.
    pub fn lose_next(&mut self, side: Side, n: usize) {
        self.faults(side).lose_next = n;
    }

    /// Polls both engines once at the current time; true if either did
    /// something.
    pub fn step(&mut self) -> bool {
        let a = self.a.poll(self.now);
        let b = self.b.poll(self.now);
        a | b
    }

    /// The earlier of the two engines' next timeouts.
    #[must_use]
    pub fn next_timeout(&self) -> Option<Instant> {
        match (self.a.poll_timeout(), self.b.poll_timeout()) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }

    /// Steps until nothing moves, then moves the clock to the next
    /// timeout and goes on, until no timeout is left; returns the steps
    /// taken. Events stay queued in the engines for the test to read.
    ///
    /// # Panics
    /// After [`MAX_STEPS`] steps (the two sides never settle).
    pub fn drive(&mut self) -> usize {
        let (steps, _) = self.run(None, |_| false);
        assert!(
            steps < MAX_STEPS,
            "pair did not settle in {MAX_STEPS} steps"
        );
        steps
    }

    /// Like [`Pair::drive`], but calls `f` with the pair before every
    /// step and stops as soon as it returns true. `f` is the test's hook
    /// into the running pair: it may take either engine's events, answer
    /// them (send from either side at [`Pair::now`]) and say whether what
    /// the test waits for has happened. Returns whether it has (false:
    /// the pair settled first).
    ///
    /// # Panics
    /// After [`MAX_STEPS`] steps without `f` returning true.
    pub fn drive_until(&mut self, f: impl FnMut(&mut Self) -> bool) -> bool {
        let (steps, done) = self.run(None, f);
        assert!(
            done || steps < MAX_STEPS,
            "pair neither settled nor met the condition in {MAX_STEPS} steps"
        );
        done
    }

    /// Like [`Pair::drive`], but stops once virtual time has moved on by
    /// `limit` (for tests with periodic timers that never run out), or
    /// after [`MAX_STEPS`] steps.
    pub fn drive_for(&mut self, limit: Duration) -> usize {
        let end = self.now + limit;
        let (steps, _) = self.run(Some(end), |_| false);
        self.now = self.now.max(end);
        steps
    }

    /// Steps, jumping to timeouts up to `end`, until `until` returns true
    /// (checked before each step), nothing is left, or [`MAX_STEPS`] steps
    /// were taken; returns the steps taken and whether `until` held.
    fn run(
        &mut self,
        end: Option<Instant>,
        mut until: impl FnMut(&mut Self) -> bool,
    ) -> (usize, bool) {
        let mut steps = 0;
        while steps < MAX_STEPS {
            if until(self) {
                return (steps, true);
            }
            if self.step() {
                steps += 1;
                self.now += self.step_time;
                if end.is_some_and(|e| self.now >= e) {
                    break;
                }
                continue;
            }
            match self.next_timeout() {
                Some(t) if end.is_none_or(|e| t <= e) => {
                    self.now = self.now.max(t);
                    steps += 1;
                    self.step();
                }
                _ => break,
            }
        }
        (steps, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_agents::{AgentEvent, AgentSpec, SendRequest, SendStatus};
    use mad_core::transport::{Address, Qp};
    use mad_core::wire::{AttributeId, Method, MgmtClass};

    use crate::MadBuilder;

    const MS: Duration = Duration::from_millis(1);

    fn send_perf_get(p: &mut Pair, retries: u32) -> Result<(), String> {
        let agent =
            p.a.register(AgentSpec::send_only("perf", Qp::Qp1))
                .map_err(|e| e.to_string())?;
        let mad = MadBuilder::perf_get(1, AttributeId::PM_PORT_COUNTERS).build();
        let req = SendRequest::new(mad.to_vec(), Address::gsi(A_LID + 1))
            .expect_response(100 * MS, retries);
        let now = p.now();
        p.a.send(agent, req, now).map_err(|e| e.to_string())?;
        Ok(())
    }

    fn send_done(p: &mut Pair) -> Vec<SendStatus> {
        std::iter::from_fn(|| p.a.poll_event())
            .filter_map(|(_, ev)| match ev {
                AgentEvent::SendDone(c) => Some(c.status),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn an_unanswered_request_times_out_on_the_virtual_clock() -> Result<(), String> {
        let mut p = Pair::default();
        // B's engine answers (a class no agent serves gets an error
        // response); A loses every answer.
        p.set_loss(Side::A, 1.0);
        let start = p.now();
        send_perf_get(&mut p, 2)?;
        p.drive();
        assert_eq!(send_done(&mut p), [SendStatus::Timeout]);
        let waited = p.now() - start;
        assert!(
            waited >= 300 * MS,
            "three attempts of 100 ms, waited {waited:?}"
        );
        assert!(waited < 10 * 300 * MS, "waited {waited:?}");
        Ok(())
    }

    #[test]
    fn loss_and_duplication_apply_to_the_receiving_side() -> Result<(), String> {
        let mut p = Pair::default();
        p.lose_next(Side::B, 1);
        p.set_duplication(Side::B, 1.0);
        send_perf_get(&mut p, 1)?;
        p.drive();
        assert_eq!(
            send_done(&mut p),
            [SendStatus::Success],
            "the retry is answered"
        );
        let f = p.faults(Side::B);
        assert_eq!(
            (f.lost, f.duplicated),
            (1, 1),
            "first copy lost, the retry doubled"
        );
        Ok(())
    }

    #[test]
    fn drive_until_lets_a_side_answer_what_it_receives() -> Result<(), String> {
        let mut p = Pair::default();
        let pma =
            p.b.register(AgentSpec::requests(
                "pma",
                MgmtClass::PERF_MGT,
                1,
                &[Method::GET],
            ))
            .map_err(|e| e.to_string())?;
        send_perf_get(&mut p, 0)?;
        let mut answered = 0;
        let mut done = Vec::new();
        let met = p.drive_until(|p| {
            let now = p.now();
            while let Some((who, ev)) = p.b.poll_event() {
                if let AgentEvent::Received(req) = ev {
                    answered += 1;
                    let resp = crate::far::get_resp(req.bytes());
                    let dest = Address::gsi(req.src().lid);
                    let sent = p.b.send(who, SendRequest::new(resp, dest), now);
                    assert!(sent.is_ok(), "{sent:?}");
                }
            }
            done.extend(send_done(p));
            !done.is_empty()
        });
        assert!(met, "A's send never completed");
        assert_eq!(done, [SendStatus::Success]);
        assert_eq!(answered, 1, "B's agent answered the one request");
        assert_eq!(p.b.agent_stats(pma).map(|s| s.received), Some(1));
        Ok(())
    }

    #[test]
    fn a_step_time_moves_the_clock_with_every_step_that_moved_something() -> Result<(), String> {
        let mut p = Pair::default();
        let start = p.now();
        send_perf_get(&mut p, 0)?;
        p.drive();
        assert_eq!(p.now(), start, "without a step time MADs cross in no time");
        p.set_step_time(MS);
        let start = p.now();
        send_perf_get(&mut p, 0)?;
        let steps = p.drive();
        assert!(steps > 0);
        assert_eq!(
            p.now() - start,
            MS * u32::try_from(steps).map_err(|e| e.to_string())?,
            "1 ms for each step, and no timeout was waited for"
        );
        Ok(())
    }
}

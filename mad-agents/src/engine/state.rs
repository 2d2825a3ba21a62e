//! The lifecycle of one send as one value, [`SendState`]: where the send
//! is (backlogged, open, answered, failed), the references it holds, and
//! the legal moves between those phases (see the [engine
//! documentation](super#the-life-of-a-send-seed-003-agentsmd-3)).
//!
//! A send holds one reference per posted work request not yet completed,
//! one while its response is awaited (a backlogged request awaits one
//! too) and, for an RMPP transfer, one until the transfer no longer holds
//! it. The count is derived from the phase ([`SendState::refs`]); the send
//! is released — it completes, exactly once — when it reaches zero
//! ([`SendState::is_released`]). An answered or failed send holds only
//! its work requests: its outcome is final, except that a work-request
//! error arriving after the response is recorded once
//! ([`SendState::late_error`]).
//!
//! Every transition refuses a move its phase does not allow with
//! [`Refused`] and leaves the state unchanged; nothing here panics. The
//! engine never drops a refusal: a move its own bookkeeping promises is
//! legal goes through [`must`], so a refusal there (a bug) trips a debug
//! assertion in debug builds and is counted in
//! [`EngineStats::refused_moves`] in every build; a move that may be
//! refused in normal operation (the first outcome wins, a flush is
//! reposted once per attempt) is matched where it is made.

use crate::types::{EngineStats, SendStatus};

/// Where a send is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Phase<R> {
    /// Waiting in its agent's flow-control backlog, not yet posted
    /// (holds the response reference).
    Queued {
        /// Its place in the backlog.
        seq: u64,
        /// A modify came while queued: the total timeout follows the new
        /// timeout at the first post.
        extend: bool,
    },
    /// Posted (or being posted), no outcome yet.
    Open {
        /// Holds the response reference (a request awaiting a response).
        awaiting: bool,
        /// Holds the RMPP transfer reference.
        rmpp: bool,
        /// Holds a flow-control slot.
        slot: bool,
        /// A flushed work request of this attempt was reposted.
        flush_reposted: bool,
        /// A modify came while the work request was in flight: the
        /// absolute deadline grows when the response wait starts.
        extend: bool,
    },
    /// The response arrived; work requests may still be in flight.
    Answered {
        /// The response.
        response: R,
        /// A work-request error reported after the response.
        late_error: Option<SendStatus>,
        /// A flush of the attempt was reposted before the answer came.
        flush_reposted: bool,
    },
    /// Failed with its final status; work requests may still be in flight.
    Failed(SendStatus),
}

/// A move the send's phase does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Refused;

/// The moves the engine makes only where its bookkeeping says they are
/// legal: a refusal of one is a bug (see [`must`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Move {
    /// [`SendState::wr_posted`] after the port accepted a post.
    WrPosted,
    /// [`SendState::wr_completed`] for a completion of the send's.
    WrCompleted,
    /// [`SendState::dequeue`] of a request taken out of the backlog.
    Dequeue,
    /// [`SendState::take_slot`] by a request posted awaiting its answer.
    TakeSlot,
    /// [`SendState::new_attempt`] of a retried send.
    NewAttempt,
    /// [`SendState::restart_transfer`] of a retried RMPP send.
    RestartTransfer,
}

/// Applies a move the engine's bookkeeping promises is legal. A refusal
/// is counted in [`EngineStats::refused_moves`] and trips a debug
/// assertion naming the move; a release build goes on with the state as
/// it was. `None` when refused.
pub(super) fn must<T>(stats: &mut EngineStats, mv: Move, r: Result<T, Refused>) -> Option<T> {
    match r {
        Ok(v) => Some(v),
        Err(Refused) => {
            stats.refused_moves += 1;
            debug_assert!(false, "refused state move {mv:?}");
            None
        }
    }
}

/// What a send gave up when it reached its outcome (failed or answered).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Released {
    /// It was backlogged at this place.
    pub(super) queued: Option<u64>,
    /// It held a flow-control slot.
    pub(super) slot: bool,
    /// It held the response reference: it was in the engine's table of
    /// sends waiting for an answer, and leaves it now.
    pub(super) awaited: bool,
}

/// The lifecycle of one send: its [`Phase`] and its work requests in
/// flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SendState<R> {
    /// Work requests posted and not yet completed.
    wr: u32,
    phase: Phase<R>,
}

impl<R> SendState<R> {
    /// A request waiting in the backlog at `seq`.
    pub(super) fn queued(seq: u64) -> Self {
        Self {
            wr: 0,
            phase: Phase::Queued { seq, extend: false },
        }
    }

    /// A send about to be posted: awaiting a response or not, an RMPP
    /// transfer or not.
    pub(super) fn open(awaiting: bool, rmpp: bool) -> Self {
        Self {
            wr: 0,
            phase: Phase::Open {
                awaiting,
                rmpp,
                slot: false,
                flush_reposted: false,
                extend: false,
            },
        }
    }

    /// The phase.
    #[cfg(test)]
    pub(super) fn phase(&self) -> &Phase<R> {
        &self.phase
    }

    // ----- derived -----

    /// References held: work requests in flight, the awaited response,
    /// the RMPP transfer.
    pub(super) fn refs(&self) -> u32 {
        self.wr
            + match self.phase {
                Phase::Queued { .. } => 1,
                Phase::Open { awaiting, rmpp, .. } => u32::from(awaiting) + u32::from(rmpp),
                Phase::Answered { .. } | Phase::Failed(_) => 0,
            }
    }

    /// No reference left: the send completes.
    pub(super) fn is_released(&self) -> bool {
        self.refs() == 0
    }

    /// Work requests in flight.
    #[cfg(test)]
    pub(super) fn wr(&self) -> u32 {
        self.wr
    }

    /// Waiting in the backlog.
    pub(super) fn is_queued(&self) -> bool {
        matches!(self.phase, Phase::Queued { .. })
    }

    /// No outcome yet (queued or open): it can be canceled or modified.
    pub(super) fn is_active(&self) -> bool {
        matches!(self.phase, Phase::Queued { .. } | Phase::Open { .. })
    }

    /// Holds the response reference (queued, or open and awaiting).
    pub(super) fn awaits_response(&self) -> bool {
        matches!(
            self.phase,
            Phase::Queued { .. } | Phase::Open { awaiting: true, .. }
        )
    }

    /// Holds the RMPP transfer reference.
    pub(super) fn rmpp_active(&self) -> bool {
        matches!(self.phase, Phase::Open { rmpp: true, .. })
    }

    /// Holds a flow-control slot.
    #[cfg(test)]
    pub(super) fn holds_slot(&self) -> bool {
        matches!(self.phase, Phase::Open { slot: true, .. })
    }

    /// A flush of this attempt was reposted.
    pub(super) fn flush_reposted(&self) -> bool {
        matches!(
            self.phase,
            Phase::Open {
                flush_reposted: true,
                ..
            } | Phase::Answered {
                flush_reposted: true,
                ..
            }
        )
    }

    /// Only the response reference is left: the response timer starts.
    pub(super) fn ready_to_wait(&self) -> bool {
        self.wr == 0
            && matches!(
                self.phase,
                Phase::Open {
                    awaiting: true,
                    rmpp: false,
                    ..
                }
            )
    }

    /// The failure recorded (a failed send's status, or an answered
    /// send's late work-request error).
    pub(super) fn failure(&self) -> Option<SendStatus> {
        match &self.phase {
            Phase::Failed(st) => Some(*st),
            Phase::Answered { late_error, .. } => *late_error,
            _ => None,
        }
    }

    /// The response, once answered.
    pub(super) fn response(&self) -> Option<&R> {
        match &self.phase {
            Phase::Answered { response, .. } => Some(response),
            _ => None,
        }
    }

    /// The final status and the response, for the completion.
    pub(super) fn into_outcome(self) -> (SendStatus, Option<R>) {
        match self.phase {
            Phase::Failed(st) => (st, None),
            Phase::Answered {
                response,
                late_error,
                ..
            } => (late_error.unwrap_or(SendStatus::Success), Some(response)),
            Phase::Queued { .. } | Phase::Open { .. } => (SendStatus::Success, None),
        }
    }

    // ----- transitions -----

    /// A work request was posted (the first post of a backlogged request
    /// goes through [`SendState::dequeue`] first).
    pub(super) fn wr_posted(&mut self) -> Result<(), Refused> {
        if self.is_queued() {
            return Err(Refused);
        }
        self.wr += 1;
        Ok(())
    }

    /// A work request completed; refused when none is in flight.
    pub(super) fn wr_completed(&mut self) -> Result<(), Refused> {
        self.wr = self.wr.checked_sub(1).ok_or(Refused)?;
        Ok(())
    }

    /// A backlogged request leaves the backlog to be posted; returns
    /// whether a modify asked to extend its total timeout.
    pub(super) fn dequeue(&mut self) -> Result<bool, Refused> {
        let Phase::Queued { extend, .. } = self.phase else {
            return Err(Refused);
        };
        self.phase = Phase::Open {
            awaiting: true,
            rmpp: false,
            slot: false,
            flush_reposted: false,
            extend: false,
        };
        Ok(extend)
    }

    /// An open request awaiting a response takes a flow-control slot.
    pub(super) fn take_slot(&mut self) -> Result<(), Refused> {
        match &mut self.phase {
            Phase::Open {
                awaiting: true,
                slot,
                ..
            } if !*slot => {
                *slot = true;
                Ok(())
            }
            _ => Err(Refused),
        }
    }

    /// Gives the flow-control slot back; true if one was held.
    pub(super) fn release_slot(&mut self) -> bool {
        match &mut self.phase {
            Phase::Open { slot, .. } => std::mem::take(slot),
            _ => false,
        }
    }

    /// The RMPP transfer no longer holds the send; true if it did.
    pub(super) fn end_transfer(&mut self) -> bool {
        match &mut self.phase {
            Phase::Open { rmpp, .. } => std::mem::take(rmpp),
            _ => false,
        }
    }

    /// An open send's RMPP transfer starts again (a retry).
    pub(super) fn restart_transfer(&mut self) -> Result<(), Refused> {
        match &mut self.phase {
            Phase::Open { rmpp, .. } => {
                *rmpp = true;
                Ok(())
            }
            _ => Err(Refused),
        }
    }

    /// A new attempt (a retry) of an open send: its flush may be reposted
    /// again.
    pub(super) fn new_attempt(&mut self) -> Result<(), Refused> {
        match &mut self.phase {
            Phase::Open { flush_reposted, .. } => {
                *flush_reposted = false;
                Ok(())
            }
            _ => Err(Refused),
        }
    }

    /// A flushed work request of an open send is reposted: once per
    /// attempt.
    pub(super) fn flush_repost(&mut self) -> Result<(), Refused> {
        match &mut self.phase {
            Phase::Open { flush_reposted, .. } if !*flush_reposted => {
                *flush_reposted = true;
                Ok(())
            }
            _ => Err(Refused),
        }
    }

    /// A modify while the wait has not started: the deadline grows later
    /// (at the first post of a queued request, at the start of the wait of
    /// an open one).
    pub(super) fn mark_extend(&mut self) -> Result<(), Refused> {
        match &mut self.phase {
            Phase::Queued { extend, .. } | Phase::Open { extend, .. } => {
                *extend = true;
                Ok(())
            }
            _ => Err(Refused),
        }
    }

    /// Takes an open send's pending extension (the wait starts).
    pub(super) fn take_extend(&mut self) -> bool {
        match &mut self.phase {
            Phase::Open { extend, .. } => std::mem::take(extend),
            _ => false,
        }
    }

    /// The send fails with `status`; refused once it has an outcome (the
    /// first outcome wins). Returns what it gave up.
    pub(super) fn fail(&mut self, status: SendStatus) -> Result<Released, Refused> {
        let released = match self.phase {
            Phase::Queued { seq, .. } => Released {
                queued: Some(seq),
                slot: false,
                awaited: true,
            },
            Phase::Open { slot, awaiting, .. } => Released {
                queued: None,
                slot,
                awaited: awaiting,
            },
            Phase::Answered { .. } | Phase::Failed(_) => return Err(Refused),
        };
        self.phase = Phase::Failed(status);
        Ok(released)
    }

    /// The response to an open send awaiting one arrived; refused
    /// otherwise (a backlogged request was not sent, so it cannot be
    /// answered). Returns what it gave up.
    pub(super) fn answer(&mut self, response: R) -> Result<Released, Refused> {
        let Phase::Open {
            awaiting: true,
            slot,
            flush_reposted,
            ..
        } = self.phase
        else {
            return Err(Refused);
        };
        self.phase = Phase::Answered {
            response,
            late_error: None,
            flush_reposted,
        };
        Ok(Released {
            queued: None,
            slot,
            awaited: true,
        })
    }

    /// A work-request error after the response: recorded once, and only
    /// for an answered send.
    pub(super) fn late_error(&mut self, status: SendStatus) -> Result<(), Refused> {
        match &mut self.phase {
            Phase::Answered { late_error, .. } if late_error.is_none() => {
                *late_error = Some(status);
                Ok(())
            }
            _ => Err(Refused),
        }
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;

//! One HTTP connection's guards: a write timeout around its socket (a
//! client that stops reading loses its connection after
//! [`WRITE_TIMEOUT`] without progress), and the shared record the accept
//! loop keeps of it to pick a connection to close when the cap is
//! reached (the oldest one not in the middle of an answer).

use std::future::Future as _;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper::rt::{Read, ReadBufCursor, Write};
use tokio::sync::Notify;
use tokio::time::Sleep;

/// How long a write may make no progress before the connection is
/// closed.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// A socket whose writes time out after `timeout` without progress.
#[derive(Debug)]
pub struct WriteTimeout<T> {
    io: T,
    timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    /// Wraps `io`.
    pub fn new(io: T, timeout: Duration) -> Self {
        Self {
            io,
            timeout,
            stalled: None,
        }
    }

    /// What a pending write becomes: still pending, or an error once the
    /// timer (started by the first pending write) has run out.
    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<R>> {
        let timeout = self.timeout;
        let t = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        if t.as_mut().poll(cx).is_ready() {
            Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client read nothing for the write timeout",
            )))
        } else {
            Poll::Pending
        }
    }

    fn done<R>(&mut self, r: std::io::Result<R>) -> Poll<std::io::Result<R>> {
        self.stalled = None;
        Poll::Ready(r)
    }
}

impl<T: Read + Unpin> Read for WriteTimeout<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for WriteTimeout<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        match Pin::new(&mut me.io).poll_write(cx, buf) {
            Poll::Ready(r) => me.done(r),
            Poll::Pending => me.pending(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let me = self.get_mut();
        match Pin::new(&mut me.io).poll_write_vectored(cx, bufs) {
            Poll::Ready(r) => me.done(r),
            Poll::Pending => me.pending(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        match Pin::new(&mut me.io).poll_flush(cx) {
            Poll::Ready(r) => me.done(r),
            Poll::Pending => me.pending(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let me = self.get_mut();
        match Pin::new(&mut me.io).poll_shutdown(cx) {
            Poll::Ready(r) => me.done(r),
            Poll::Pending => me.pending(cx),
        }
    }
}

/// What the accept loop knows of a connection.
#[derive(Debug)]
pub struct Conn {
    /// When it was accepted.
    pub since: Instant,
    busy: AtomicBool,
    done: AtomicBool,
    close: Notify,
}

impl Conn {
    /// A connection accepted now.
    #[must_use]
    pub fn new() -> Arc<Self> {
        Arc::new(Self {
            since: Instant::now(),
            busy: AtomicBool::new(false),
            done: AtomicBool::new(false),
            close: Notify::new(),
        })
    }

    /// True while an answer is being written on it.
    #[must_use]
    pub fn busy(&self) -> bool {
        self.busy.load(Ordering::Relaxed)
    }

    /// True once its task has ended.
    #[must_use]
    pub fn done(&self) -> bool {
        self.done.load(Ordering::Relaxed)
    }

    /// Marks its task ended.
    pub fn set_done(&self) {
        self.done.store(true, Ordering::Relaxed);
    }

    /// Asks its task to close it (kept until the task looks).
    pub fn close(&self) {
        self.close.notify_one();
    }

    /// Resolves when [`Conn::close`] was called.
    pub async fn closed(&self) {
        self.close.notified().await;
    }

    /// Marks an answer under way until the returned guard is dropped.
    #[must_use]
    pub fn answering(self: &Arc<Self>) -> Busy {
        self.busy.store(true, Ordering::Relaxed);
        Busy(Arc::clone(self))
    }
}

/// An answer under way on a [`Conn`] (see [`Conn::answering`]).
#[derive(Debug)]
pub struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.store(false, Ordering::Relaxed);
    }
}

/// The connection to close to make room for a new one: the oldest not
/// answering, else the oldest.
#[must_use]
pub fn victim(conns: &[Arc<Conn>]) -> Option<usize> {
    conns
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.busy())
        .min_by_key(|(_, c)| c.since)
        .or_else(|| conns.iter().enumerate().min_by_key(|(_, c)| c.since))
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_idle_connection_goes_first_then_the_oldest_busy_one() {
        let a = Conn::new();
        std::thread::sleep(Duration::from_millis(2));
        let b = Conn::new();
        std::thread::sleep(Duration::from_millis(2));
        let c = Conn::new();
        let conns = vec![Arc::clone(&a), Arc::clone(&b), Arc::clone(&c)];
        assert_eq!(victim(&conns), Some(0));
        let busy_a = a.answering();
        assert_eq!(victim(&conns), Some(1));
        let busy_b = b.answering();
        let busy_c = c.answering();
        assert_eq!(victim(&conns), Some(0));
        drop((busy_a, busy_b, busy_c));
        assert!(!a.busy());
        assert_eq!(victim(&[]), None);
    }
}

//! `--pcap FILE`: a [`Transport`] wrapper that writes every MAD posted
//! and received to a pcap file (ERF records that tshark decodes), then
//! hands it on unchanged.

use std::fs::File;
use std::io::BufWriter;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use mad_core::pcap::{Direction, PcapWriter, Timestamp};
use mad_core::transport::{Address, OutMad, Posted, Received, Transport, TransportError, WrId};
use std::time::Duration;

type Writer = PcapWriter<BufWriter<File>>;

/// The capture file shared by the wrapper and whoever closes it.
#[derive(Debug, Clone)]
pub struct Capture {
    inner: Arc<Mutex<CaptureState>>,
}

#[derive(Debug)]
struct CaptureState {
    writer: Option<Writer>,
    error: Option<String>,
    records: u64,
}

impl Capture {
    /// Creates `path` and writes the pcap file header.
    ///
    /// # Errors
    /// The file cannot be created or written.
    pub fn create(path: &Path) -> Result<Self, String> {
        let f = File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let w =
            PcapWriter::new(BufWriter::new(f)).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Self {
            inner: Arc::new(Mutex::new(CaptureState {
                writer: Some(w),
                error: None,
                records: 0,
            })),
        })
    }

    fn record(&self, mad: &[u8], slid: u16, dlid: u16, dir: Direction) {
        let mut s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let ts = Timestamp::try_from(SystemTime::now()).unwrap_or_default();
        let r = match s.writer.as_mut() {
            Some(w) => w.write_mad_auto(ts, mad, slid, dlid, dir),
            None => return,
        };
        match r {
            Ok(()) => s.records += 1,
            Err(e) => {
                if s.error.is_none() {
                    s.error = Some(e.to_string());
                }
            }
        }
    }

    /// Flushes and closes the file; returns the number of MADs written.
    ///
    /// # Errors
    /// The first write error, or the flush's.
    pub fn finish(&self) -> Result<u64, String> {
        let mut s = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = s.writer.take() {
            if let Err(e) = w.into_inner() {
                if s.error.is_none() {
                    s.error = Some(e.to_string());
                }
            }
        }
        match s.error.take() {
            Some(e) => Err(e),
            None => Ok(s.records),
        }
    }
}

/// A transport that records what crosses it into a [`Capture`].
pub struct PcapTap<T: Transport> {
    inner: T,
    capture: Capture,
}

impl<T: Transport> PcapTap<T> {
    /// Wraps `inner`.
    pub fn new(inner: T, capture: Capture) -> Self {
        Self { inner, capture }
    }
}

mad_core::transport_layer!([T: Transport] PcapTap<T>, inner: T);

impl<T: Transport> PcapTap<T> {
    /// Records `mad`, sent to `dest`, when its post `r` succeeded; `r`.
    fn record_sent(
        &mut self,
        r: Result<WrId, TransportError>,
        mad: &[u8],
        dest: &Address,
    ) -> Result<WrId, TransportError> {
        if r.is_ok() {
            let slid = self.inner.port_attrs().lid;
            self.capture.record(mad, slid, dest.lid, Direction::Sent);
        }
        r
    }
}

impl<T: Transport> Transport for PcapTap<T> {
    fn post(&mut self, mad: OutMad<'_>, dest: &Address, wait: Duration) -> Posted {
        let r = self.inner.post(mad, dest, wait);
        self.record_sent(r, mad.bytes(), dest)
    }

    fn poll_recv(&mut self) -> Result<Option<Received>, TransportError> {
        let r = self.inner.poll_recv()?;
        if let Some(rx) = &r {
            let dlid = self.inner.port_attrs().lid;
            self.capture
                .record(&rx.mad, rx.src.lid, dlid, Direction::Received);
        }
        Ok(r)
    }

    mad_core::forward_transport!(control);
}

#[cfg(test)]
mod tests {
    use super::*;
    use mad_core::pcap::PcapReader;
    use mad_core::transport::loopback::Loopback;
    use mad_core::transport::{PortAttrs, Qp};

    #[test]
    fn every_posted_and_received_mad_is_written_in_order() {
        let dir = std::env::temp_dir().join(format!("mad-tools-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.pcap");
        let cap = Capture::create(&path).unwrap();
        let lb = Loopback::new(PortAttrs::default(), 16).with_responder(Box::new(
            |qp: Qp, m: &[u8], to: &Address| {
                let mut r = m.to_vec();
                mad_testkit::header::edit(&mut r, |h| h.response = true);
                vec![Received {
                    qp,
                    src: Address {
                        lid: to.lid,
                        ..Address::default()
                    },
                    mad: r.into(),
                }]
            },
        ));
        let mut t = PcapTap::new(lb, cap.clone());
        let mad = mad_testkit::MadBuilder::new(
            mad_core::wire::MgmtClass::PERF_MGT,
            1,
            mad_core::wire::Method::GET,
            mad_core::wire::AttributeId(0),
        )
        .to_vec();
        t.post_send(Qp::Qp1, &mad, &Address::gsi(1)).unwrap();
        let mut c = Vec::new();
        t.poll_send_completions(&mut c).unwrap();
        while t.poll_recv().unwrap().is_some() {}
        let n = cap.finish().unwrap();
        assert_eq!(n, 2);
        let bytes = std::fs::read(&path).unwrap();
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        let first = r.next_record().unwrap().unwrap();
        assert_eq!(first.mad, mad);
        assert_eq!(first.meta.direction, Direction::Sent);
        let second = r.next_record().unwrap().unwrap();
        assert_eq!(second.meta.direction, Direction::Received);
        let h = mad_testkit::header::of(&second.mad);
        assert_eq!((h.method, h.response), (mad_core::wire::Method::GET, true));
        assert!(r.next_record().unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }
    #[test]
    fn request_registrations_reach_the_inner_transport() {
        // With `--pcap` on a real port, an agent's methods must still be
        // registered with the kernel below the tap.
        let dir = std::env::temp_dir().join(format!("mad-tools-pcap-reg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cap = Capture::create(&dir.join("r.pcap")).unwrap();
        let rec = mad_testkit::Recording::new();
        let inner = mad_testkit::Wrapped::new(Loopback::new(PortAttrs::default(), 16), rec.clone());
        let mut t = PcapTap::new(inner, cap);
        t.register_requests(mad_core::wire::MgmtClass::PERF_MGT, 1, 1 << 1, None)
            .unwrap();
        let r = rec.record();
        assert_eq!(r.registrations.len(), 1);
        assert_eq!(
            r.registrations[0].class,
            mad_core::wire::MgmtClass::PERF_MGT
        );
        drop(r);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

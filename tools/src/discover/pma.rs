//! Batches of PerfMgt Gets and Sets, all in flight at once (bounded per
//! LID and per port by the [`pipeline`](super::pipeline)): what
//! `ibqueryerrors` reads (ClassPortInfo, PortCounters,
//! PortCountersExtended, `AllPortSelect` reads) and resets, in rounds
//! that each depend on the answers of the one before.

use mad_core::transport::{Address, Qp};
use mad_core::wire::perf::{PERF_CLASS_VERSION, PERF_DATA_OFFSET};
use mad_core::wire::{AttributeId, Mad, Method, MgmtClass, MAD_LEN};

use super::pipeline::{Exchange, Limits, Outcome, Pipeline, PipelineError, Request};

/// One PerfMgt query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmaQuery {
    /// Destination LID (PerfMgt is LID routed).
    pub lid: u16,
    /// The attribute.
    pub attr: AttributeId,
    /// PortSelect (byte 1 of the data), when the attribute has one.
    pub port: Option<u8>,
    /// A Set with these leading data bytes (after PortSelect is put in);
    /// `None` for a Get.
    pub set: Option<Vec<u8>>,
}

impl PmaQuery {
    /// A Get of `attr` at `lid` with PortSelect `port`.
    #[must_use]
    pub fn get(lid: u16, attr: AttributeId, port: Option<u8>) -> Self {
        Self {
            lid,
            attr,
            port,
            set: None,
        }
    }

    fn request(&self, ctx: usize) -> Request<usize> {
        let mut mad = [0u8; MAD_LEN];
        {
            let mut m = Mad::new_unchecked(&mut mad[..]);
            let method = if self.set.is_some() {
                Method::SET
            } else {
                Method::GET
            };
            m.set_request(
                MgmtClass::PERF_MGT,
                PERF_CLASS_VERSION,
                method,
                self.attr,
                0,
            );
        }
        if let Some(d) = &self.set {
            let end = (PERF_DATA_OFFSET + d.len()).min(MAD_LEN);
            mad[PERF_DATA_OFFSET..end].copy_from_slice(&d[..end - PERF_DATA_OFFSET]);
        }
        if let Some(p) = self.port {
            mad[PERF_DATA_OFFSET + 1] = p;
        }
        Request {
            qp: Qp::Qp1,
            mad,
            dest: Address::gsi(self.lid),
            dest_key: Some(u64::from(self.lid)),
            ctx,
        }
    }
}

/// What one query got: the attribute data (from the PerfMgt data
/// offset), or why not (`timeout`, `MAD status 0x....`, a transport
/// error).
pub type PmaResult = Result<Vec<u8>, String>;

/// Runs every query of `batch` through `ex` and returns their results in
/// the same order.
///
/// # Errors
/// A transport failure.
pub fn run_batch(
    ex: &mut dyn Exchange,
    limits: Limits,
    batch: &[PmaQuery],
) -> Result<Vec<PmaResult>, PipelineError> {
    let mut out: Vec<PmaResult> = vec![Err("not sent".into()); batch.len()];
    if batch.is_empty() {
        return Ok(out);
    }
    let mut p: Pipeline<usize> = Pipeline::new(limits);
    for (i, q) in batch.iter().enumerate() {
        p.submit(q.request(i));
    }
    p.run(ex, &mut |_p: &mut Pipeline<usize>, i: usize, o: Outcome| {
        let r = match o {
            Outcome::Answer(m) => {
                let st = Mad::new_unchecked(&m[..]).status().0;
                if st == 0 {
                    Ok(m.get(PERF_DATA_OFFSET..)
                        .map(<[u8]>::to_vec)
                        .unwrap_or_default())
                } else {
                    Err(format!("MAD status 0x{st:04x}"))
                }
            }
            Outcome::Timeout => Err("timeout".into()),
            Outcome::Failed(e) => Err(e),
        };
        if let Some(slot) = out.get_mut(i) {
            *slot = r;
        }
        Ok(())
    })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_carries_its_data_and_port_select_and_a_get_is_a_get() {
        let q = PmaQuery {
            lid: 3,
            attr: AttributeId::PM_PORT_COUNTERS,
            port: Some(5),
            set: Some(vec![0, 0, 0x0f, 0xff]),
        };
        let r = q.request(7);
        let m = Mad::new_unchecked(&r.mad[..]);
        assert_eq!(m.method(), Method::SET);
        assert_eq!(r.mad[PERF_DATA_OFFSET + 1], 5);
        assert_eq!(
            r.mad[PERF_DATA_OFFSET + 2..PERF_DATA_OFFSET + 4],
            [0x0f, 0xff]
        );
        assert_eq!(r.ctx, 7);
        let g = PmaQuery::get(3, AttributeId::CLASS_PORT_INFO, None).request(0);
        assert_eq!(Mad::new_unchecked(&g.mad[..]).method(), Method::GET);
        assert_eq!(g.mad[PERF_DATA_OFFSET + 1], 0);
    }
}

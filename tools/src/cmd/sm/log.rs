//! `mad sm`'s log: OpenSM-like lines (`Dec 06 05:30:00 123456 [mad-sm]
//! SUBNET UP`) to `-f FILE` or stderr, or with `--json` one JSON object
//! per event on stdout.

use std::fs::File;
use std::io::Write;
use std::time::Duration;

use mad_sm::SmEvent;
use serde_json::{json, Value};

use super::conf::SmOpts;
use crate::command::{CliError, Io};

/// Where the log goes.
pub struct Log<'a, 'b> {
    io: &'a mut Io<'b>,
    file: Option<File>,
    json: bool,
    tz: jiff::tz::TimeZone,
}

impl<'a, 'b> Log<'a, 'b> {
    /// The log `o` asks for.
    ///
    /// # Errors
    /// The log file cannot be opened.
    pub fn open(o: &SmOpts, io: &'a mut Io<'b>) -> Result<Self, CliError> {
        let file = match &o.log_file {
            Some(p) => Some(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|e| {
                        CliError::Failed(format!("sm: cannot open log file {}: {e}", p.display()))
                    })?,
            ),
            None => None,
        };
        Ok(Self {
            io,
            file,
            json: o.json,
            tz: jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC),
        })
    }

    /// Logs `text`, or prints `event` (with `--json`; a log file still
    /// gets `text`).
    pub fn line(&mut self, text: &str, mut event: Value) {
        let now = jiff::Timestamp::now();
        let stamp = now
            .to_zoned_datetime(self.tz.clone())
            .strftime("%b %d %H:%M:%S%.6f");
        let line = format!("{stamp} [mad-sm] {text}\n");
        if let Some(f) = &mut self.file {
            let _ = f.write_all(line.as_bytes());
            let _ = f.flush();
        }
        if self.json {
            if let Value::Object(m) = &mut event {
                m.insert("time".to_owned(), Value::from(now.to_string()));
            }
            self.io.out(&format!("{event}\n"));
        } else if self.file.is_none() {
            self.io.err(&line);
        }
    }

    /// Logs the end of a sweep.
    pub fn sweep_done(&mut self, ev: &SmEvent, since_start: Duration) {
        if let SmEvent::SweepDone {
            nodes,
            switches,
            lids,
            sets,
            smps,
            retries,
            errors,
        } = ev
        {
            self.line(
                &format!(
                    "sweep done after {:.3} s: {nodes} nodes ({switches} switches), {lids} LIDs, \
                     {sets} Sets, {smps} SMPs, {retries} retries, {errors} errors",
                    since_start.as_secs_f64()
                ),
                json!({"event": "sweep_done", "nodes": nodes, "switches": switches, "lids": lids,
                       "sets": sets, "smps": smps, "retries": retries, "errors": errors,
                       "seconds": since_start.as_secs_f64()}),
            );
        }
    }

    /// Logs a trap, another SM found, a HANDOVER sent, the master lost,
    /// or an error.
    pub fn event(&mut self, ev: &SmEvent) {
        match ev {
            SmEvent::Trap { number, issuer_lid } => {
                let n = number.map_or_else(|| "?".to_owned(), |n| n.to_string());
                self.line(
                    &format!("Received Trap {n} from LID {issuer_lid}"),
                    json!({"event": "trap", "number": number, "issuer_lid": issuer_lid}),
                );
            }
            SmEvent::RemoteSm {
                guid,
                priority,
                state,
            } => {
                let st = state.to_string().to_uppercase().replace(' ', "");
                self.line(
                    &format!(
                        "Found remote SM with GUID {guid:#018x}, priority {priority}, state {st}"
                    ),
                    json!({"event": "remote_sm", "guid": format!("{guid:#018x}"),
                           "priority": priority, "state": st}),
                );
            }
            SmEvent::HandoverSent { guid } => self.line(
                &format!("Sending HANDOVER to SM with GUID {guid:#018x}"),
                json!({"event": "handover_sent", "guid": format!("{guid:#018x}")}),
            ),
            SmEvent::MasterLost { guid } => self.line(
                &format!("SM with GUID {guid:#018x} stopped answering: master lost"),
                json!({"event": "master_lost", "guid": format!("{guid:#018x}")}),
            ),
            SmEvent::Error(e) => self.line(
                &format!("ERR: {e}"),
                json!({"event": "error", "message": e.to_string()}),
            ),
            SmEvent::Routed { engine, notes } => {
                for n in notes {
                    self.line(n, json!({"event": "routing_note", "text": n}));
                }
                self.line(
                    &format!("routing engine {} routed the fabric", engine.name()),
                    json!({"event": "routed", "engine": engine.name()}),
                );
            }
            SmEvent::StateChanged { to, .. } => {
                let name = to.to_string().to_uppercase().replace(' ', "");
                self.line(
                    &format!("Entering {name} state"),
                    json!({"event": "state", "state": name}),
                );
            }
            // Quiet when nothing changed, as OpenSM's log is between
            // sweeps that find nothing.
            SmEvent::LightSweepDone { changed: false, .. } => {}
            SmEvent::LightSweepDone {
                changed: true,
                smps,
            } => self.line(
                &format!("light sweep found a change ({smps} SMPs): heavy sweep"),
                json!({"event": "light_sweep_changed", "smps": smps}),
            ),
            other => self.line(
                &format!("{other:?}"),
                json!({"event": "other", "text": format!("{other:?}")}),
            ),
        }
    }
}

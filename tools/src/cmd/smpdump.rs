//! `smpdump` (infiniband-diags `smpdump.c`): one raw SMP Get, LID routed
//! or (`-D`) directed route, and the 64 bytes of the answer's SMP data
//! as hex (libibmad's `xdump`), or with `-s` as text up to the first
//! NUL; a non-zero status word follows (`SMP status: 0x8000` is the
//! direction bit of every directed-route answer).
//!
//! ```text
//! smpdump [options] <dlid|dr_path> <attr> [mod]
//! ```
//! As the C tool, one send (no retries) with the `-t` timeout (1000 ms);
//! without an answer the request's data (zeros) is printed and the exit
//! status is still 0.
//!
//! # `--json` (stable shape)
//! ```json
//! {"command": "smpdump", "dest": DEST, "attr": 17, "attr_mod": 0,
//!  "answered": true, "status": 32768, "data": "0101..."}
//! ```
//! `data` is the 64 bytes as lowercase hex; DEST as in tools/README.md.

use mad_agents::smp::SmpTarget;
use mad_core::wire::{AttributeId, Mad, Method};

use crate::command::{CliError, Invocation};
use crate::ibdiag::{self, Dest, DestType, Opt, ToolSpec};
use crate::json::{Json, JsonExt};

/// smpdump's own option.
pub const OPTS: &[Opt] = &[Opt::new("string", 's', false, None, "")];

/// The command line of smpdump.
pub const SPEC: ToolSpec<'static> = ToolSpec {
    opts: OPTS,
    exclude: "GKs",
    usage_args: "<dlid|dr_path> <attr> [mod]",
    examples: &[
        " -- DR routed examples:",
        "-D 0,1,2,3,5 16\t# NODE DESC",
        "-D 0,1,2 0x15 2\t# PORT INFO, port 2",
        " -- LID routed examples:",
        "3 0x15 2\t# PORT INFO, lid 3 port 2",
        "0xa0 0x11\t# NODE INFO, lid 0xa0",
    ],
};

/// Offset of the SMP data in a MAD.
const SMP_DATA_OFFSET: usize = 64;
/// Length of the SMP data.
const SMP_DATA_LEN: usize = 64;

/// libibmad's `xdump`: two bytes per group, eight groups a line.
#[must_use]
pub fn xdump(bytes: &[u8]) -> String {
    let mut s = String::new();
    for (i, b) in bytes.iter().enumerate() {
        s.push_str(&format!("{b:02x}"));
        let n = i + 1;
        if n == bytes.len() {
            break;
        }
        if n % 16 == 0 {
            s.push('\n');
        } else if n % 2 == 0 {
            s.push(' ');
        }
    }
    if !bytes.is_empty() {
        s.push('\n');
    }
    s
}

/// Runs `smpdump`.
///
/// # Errors
/// Bad options or fewer than two arguments (usage, exit 2), an empty
/// directed route (`ibpanic`, exit 255), no port.
pub fn run(inv: &mut Invocation<'_, '_>) -> Result<(), CliError> {
    let p = ibdiag::parse(inv, &SPEC)?;
    let as_string = p.has(i32::from(b's'));
    if p.args.len() < 2 {
        return Err(CliError::ToolUsage(ibdiag::usage_text(&inv.prog, &SPEC)));
    }
    let pid = std::process::id();
    let dr = p.common.dest_type == DestType::DrPath;
    let dest = if dr {
        let path = ibdiag::str2drpath(&p.args[0]);
        match path.and_then(|v| Dest::dr(&v)) {
            Some(d) => d,
            None => {
                return Err(CliError::Stderr(
                    format!(
                        "ibpanic: [{pid}] main: bad path str '{}': Success\n",
                        p.args[0]
                    ),
                    255,
                ))
            }
        }
    } else {
        Dest::lid(crate::cnum::c_strtoul(&p.args[0]) as u16)
    };
    let attr = crate::cnum::c_strtoul(&p.args[1]) as u16;
    let attr_mod = p
        .args
        .get(2)
        .map_or(0, |m| crate::cnum::c_strtoul(m) as u32);
    let session = match ibdiag::open_session(inv, &p.common) {
        Ok(s) => s,
        Err(CliError::IbExit(_)) => {
            return Err(CliError::Stderr(
                format!(
                    "ibpanic: [{pid}] main: can't open UMAD port ({}:{}): Success\n",
                    p.common.ca.as_deref().unwrap_or("(null)"),
                    p.common.port.unwrap_or(0)
                ),
                255,
            ))
        }
        Err(e) => return Err(e),
    };
    let c = session.smp();
    let timeout = std::time::Duration::from_millis(u64::from(p.common.timeout_ms.unwrap_or(1000)));
    let target: &SmpTarget = &dest.target;
    let req = mad_agents::smp::request(
        target,
        Method::GET,
        AttributeId(attr),
        attr_mod,
        &[],
        c.m_key,
    )
    .expect_response(timeout, 0);
    let answer = c
        .agent()
        .send_and_wait(req)
        .ok()
        .and_then(|done| done.response)
        .map(|m| m.bytes().to_vec());
    let _ = session.close();
    // Without an answer the C tool prints the request it sent: zeros.
    let mad = answer.clone().unwrap_or_else(|| vec![0u8; 256]);
    let data = mad
        .get(SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_LEN)
        .map_or_else(|| vec![0u8; SMP_DATA_LEN], <[u8]>::to_vec);
    let status = Mad::new_unchecked(&mad[..]).status().0;
    if p.common.json {
        ibdiag::print_json(
            inv,
            &Json::obj()
                .with("dest", ibdiag::dest_json(&dest))
                .with("attr", Json::from(u64::from(attr)))
                .with("attr_mod", Json::from(u64::from(attr_mod)))
                .with("answered", Json::Bool(answer.is_some()))
                .with("status", Json::from(u64::from(status)))
                .with(
                    "data",
                    Json::from(data.iter().map(|b| format!("{b:02x}")).collect::<String>()),
                ),
        );
        return Ok(());
    }
    let mut out = if as_string {
        let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
        let mut s = String::from_utf8_lossy(&data[..end]).into_owned();
        s.push('\n');
        s
    } else {
        xdump(&data)
    };
    if status != 0 {
        out.push_str(&format!("SMP status: 0x{status:x}\n"));
    }
    inv.io.out(&out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdump_groups_two_bytes_and_breaks_every_sixteen() {
        let mut b = vec![0u8; 64];
        b[0] = 0x01;
        b[1] = 0xa1;
        b[17] = 0xff;
        let s = xdump(&b);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], "01a1 0000 0000 0000 0000 0000 0000 0000");
        assert_eq!(lines[1], "00ff 0000 0000 0000 0000 0000 0000 0000");
        assert_eq!(xdump(&[1, 2, 3]), "0102 03\n");
    }
}

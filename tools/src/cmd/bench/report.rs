//! The results as a table, as JSON and as an SVG plot.

use std::fmt::Write as _;

use super::opts::{Opts, RmppResult, SmpResult};
use crate::json::Json;

/// `x` rounded to 3 decimals (JSON `null` when not finite).
pub(super) fn fnum(x: f64) -> Json {
    if x.is_finite() {
        Json::from((x * 1000.0).round() / 1000.0)
    } else {
        Json::Null
    }
}

/// The numbers as JSON (the shape in the module documentation), without
/// the envelope.
pub(super) fn to_json(
    transport: &str,
    place: &str,
    o: &Opts,
    smp: &[SmpResult],
    rm: &[RmppResult],
) -> Json {
    let base = smp.iter().find(|r| r.imp == "libibmad").map(|r| r.qps);
    let rows = smp;
    let smp: Vec<Json> = smp
        .iter()
        .map(|r| {
            serde_json::json!({
                "impl": r.imp,
                "outstanding": r.w,
                "queries": r.answered,
                "errors": r.errors,
                "seconds": fnum(r.seconds),
                "qps": fnum(r.qps),
                "lat_us": {
                    "p50": fnum(r.lat_us[0]),
                    "p99": fnum(r.lat_us[1]),
                    "p99.9": fnum(r.lat_us[2]),
                    "max": fnum(r.lat_us[3]),
                },
                "ratio_vs_libibmad": base.map_or(Json::Null, |b| fnum(r.qps / b)),
                "ratio_vs_engine": vs_engine(rows, r).map_or(Json::Null, fnum),
            })
        })
        .collect();
    let rmpp: Vec<Json> = rm
        .iter()
        .map(|r| {
            serde_json::json!({
                "table": r.table,
                "records": r.records,
                "bytes": r.bytes,
                "repeats": r.repeats,
                "seconds_per_table": r.seconds_per_table,
                "bytes_per_sec": fnum(r.bytes as f64 / r.seconds_per_table),
            })
        })
        .collect();
    serde_json::json!({
        "transport": transport,
        "where": place,
        "targets": o.targets,
        "attribute": "NodeInfo",
        "smp": smp,
        "rmpp": rmpp,
    })
}

/// `r`'s rate over the engine's at the same W, when the engine was
/// measured (`--sim`) and `r` is not the anchor.
fn vs_engine(rows: &[SmpResult], r: &SmpResult) -> Option<f64> {
    if r.imp == "libibmad" {
        return None;
    }
    rows.iter()
        .find(|e| e.imp == "engine" && e.w == r.w)
        .map(|e| r.qps / e.qps)
}

pub(super) fn format_table(smp: &[SmpResult], rm: &[RmppResult]) -> String {
    let base = smp.iter().find(|r| r.imp == "libibmad").map(|r| r.qps);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<9} {:>5} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10} {:>10}",
        "impl",
        "W",
        "queries/s",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "answered",
        "errors",
        "vs ibmad",
        "vs engine"
    );
    let ratio = |x: Option<f64>| x.map_or_else(|| "-".to_owned(), |x| format!("{x:.2}x"));
    for r in smp {
        let _ = writeln!(
            s,
            "{:<9} {:>5} {:>12.0} {:>9.1} {:>9.1} {:>9.1} {:>9} {:>7} {:>10} {:>10}",
            r.imp,
            r.w,
            r.qps,
            r.lat_us[0],
            r.lat_us[1],
            r.lat_us[2],
            r.answered,
            r.errors,
            ratio(base.map(|b| r.qps / b)),
            ratio(vs_engine(smp, r))
        );
    }
    if !rm.is_empty() {
        let _ = writeln!(
            s,
            "\n{:<15} {:>8} {:>10} {:>8} {:>12} {:>12}",
            "SA GetTable", "records", "bytes", "repeats", "ms/table", "MB/s"
        );
        for r in rm {
            let _ = writeln!(
                s,
                "{:<15} {:>8} {:>10} {:>8} {:>12.3} {:>12.2}",
                r.table,
                r.records,
                r.bytes,
                r.repeats,
                r.seconds_per_table * 1e3,
                r.bytes as f64 / r.seconds_per_table / 1e6
            );
        }
    }
    s
}

/// A hand-written SVG: rate against W (log-log), and GetTable bytes/s
/// against table size.
#[must_use]
pub fn plot_svg(smp: &[SmpResult], rm: &[RmppResult]) -> String {
    let panels = if rm.is_empty() { 1 } else { 2 };
    let (pw, ph) = (480.0_f64, 320.0_f64);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
        pw * f64::from(panels),
        ph
    );
    let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
    // Panel geometry: margins, log scales.
    let (l, r, t, b) = (70.0, 20.0, 30.0, 45.0);
    let axis = |s: &mut String, x0: f64, title: &str, xl: &str, yl: &str| {
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{title}</text>\n\
             <line x1=\"{a}\" y1=\"{c}\" x2=\"{bx}\" y2=\"{c}\" stroke=\"black\"/>\n\
             <line x1=\"{a}\" y1=\"{t}\" x2=\"{a}\" y2=\"{c}\" stroke=\"black\"/>\n\
             <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{xl}</text>\n\
             <text x=\"14\" y=\"{}\" transform=\"rotate(-90 {} {})\" text-anchor=\"middle\">{yl}</text>\n",
            x0 + pw / 2.0,
            x0 + (l + pw - r) / 2.0,
            ph - 8.0,
            ph / 2.0,
            x0 + 14.0,
            ph / 2.0,
            a = x0 + l,
            bx = x0 + pw - r,
            c = ph - b,
        );
    };
    let scale = |v: &[f64]| -> (f64, f64) {
        let lo = v
            .iter()
            .copied()
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        let hi = v.iter().copied().fold(0.0, f64::max);
        if !lo.is_finite() || hi <= 0.0 {
            return (0.0, 1.0);
        }
        let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
        (lo, if hi > lo { hi } else { lo + 1.0 })
    };
    let map = |v: f64, (lo, hi): (f64, f64), a: f64, b: f64| -> f64 {
        let x = if v > 0.0 { v.log10() } else { lo };
        a + (x - lo) / (hi - lo) * (b - a)
    };
    let yticks = |s: &mut String, x0: f64, ys: (f64, f64)| {
        let mut e = ys.0;
        while e <= ys.1 + 1e-9 {
            let y = map(10f64.powf(e), ys, ph - b, t);
            let _ = writeln!(
                s,
                "<line x1=\"{}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">1e{e}</text>",
                x0 + l,
                x0 + pw - r,
                x0 + l - 4.0,
                y + 4.0
            );
            e += 1.0;
        }
    };
    // Panel 1: queries/s against W.
    axis(
        &mut s,
        0.0,
        "SMP Get NodeInfo",
        "outstanding (W)",
        "queries / s",
    );
    let ws: Vec<f64> = smp.iter().map(|r| r.w as f64).collect();
    let xs = scale(&ws);
    let ys = scale(&smp.iter().map(|r| r.qps).collect::<Vec<_>>());
    yticks(&mut s, 0.0, ys);
    let mut w_ticks: Vec<usize> = smp.iter().map(|r| r.w).collect();
    w_ticks.sort_unstable();
    w_ticks.dedup();
    for w in &w_ticks {
        let x = map(*w as f64, xs, l, pw - r);
        let _ = writeln!(
            s,
            "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">{w}</text>",
            ph - b + 14.0
        );
    }
    let mut imps: Vec<&str> = Vec::new();
    for r in smp {
        if !imps.contains(&r.imp.as_str()) {
            imps.push(&r.imp);
        }
    }
    for (i, imp) in imps.iter().enumerate() {
        let color = colors[i % colors.len()];
        let pts: Vec<(f64, f64)> = smp
            .iter()
            .filter(|r| r.imp == *imp)
            .map(|x| (map(x.w as f64, xs, l, pw - r), map(x.qps, ys, ph - b, t)))
            .collect();
        if *imp == "libibmad" {
            // One query at a time: a level across the plot.
            if let Some(&(_, y)) = pts.first() {
                let _ = writeln!(
                    s,
                    "<line x1=\"{l}\" y1=\"{y:.1}\" x2=\"{}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-dasharray=\"5,4\"/>",
                    pw - r
                );
            }
        } else {
            let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
            let _ = writeln!(
                s,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>",
                path.join(" ")
            );
        }
        for (x, y) in &pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{color}\"/>"
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" fill=\"{color}\">{imp}</text>",
            l + 10.0,
            t + 14.0 * (i as f64 + 1.0)
        );
    }
    if !rm.is_empty() {
        let x0 = pw;
        axis(
            &mut s,
            x0,
            "SA GetTable (RMPP)",
            "table size (bytes)",
            "bytes / s",
        );
        let sizes: Vec<f64> = rm.iter().map(|r| r.bytes as f64).collect();
        let rates: Vec<f64> = rm
            .iter()
            .map(|r| r.bytes as f64 / r.seconds_per_table)
            .collect();
        let xs = scale(&sizes);
        let ys = scale(&rates);
        yticks(&mut s, x0, ys);
        let mut pts: Vec<(f64, f64, &str)> = rm
            .iter()
            .zip(&rates)
            .map(|(x, q)| {
                (
                    map(x.bytes as f64, xs, x0 + l, x0 + pw - r),
                    map(*q, ys, ph - b, t),
                    x.table,
                )
            })
            .collect();
        pts.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut e = xs.0;
        while e <= xs.1 + 1e-9 {
            let x = map(10f64.powf(e), xs, x0 + l, x0 + pw - r);
            let _ = writeln!(
                s,
                "<text x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">1e{e}</text>",
                ph - b + 14.0
            );
            e += 1.0;
        }
        let path: Vec<String> = pts
            .iter()
            .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            colors[0],
            path.join(" ")
        );
        for (x, y, name) in &pts {
            let _ = writeln!(
                s,
                "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3\" fill=\"{}\"/><text x=\"{:.1}\" y=\"{:.1}\">{name}</text>",
                colors[0],
                x + 5.0,
                y - 5.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plot_has_a_point_per_measurement() {
        let r = |imp: &str, w, qps| SmpResult {
            imp: imp.into(),
            w,
            answered: 10,
            errors: 0,
            seconds: 1.0,
            qps,
            lat_us: [1.0; 4],
        };
        let svg = plot_svg(&[r("runtime", 1, 1e4), r("runtime", 16, 1e5)], &[]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}

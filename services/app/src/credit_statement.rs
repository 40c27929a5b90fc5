//! A credit statement as a printable page: one self-contained HTML document (inline CSS, no scripts) with every entry, each objective's result, the policy's formula, every step of the computation and the total.
//!
//! Every value is HTML-escaped: names, references and the computation's
//! text come from tenants' documents. The steps are read from each entry's
//! `computation` (the domain's `CreditRecord`, as the compensation worker
//! records it), so the page shows what the ledger holds and nothing
//! recomputed.

use std::fmt::Write as _;

use serde_json::Value;
use slaproof_domain::credit::{CreditComputation, CreditInputs, CreditRecord, Money};

use crate::credits::{Credit, CreditStatement};

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#111}\
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #999;margin-top:2em}\
h3{font-size:1em;margin-bottom:.3em}\
table{border-collapse:collapse;margin:.5em 0;width:100%}\
th,td{border:1px solid #bbb;padding:.25em .5em;text-align:left;vertical-align:top}\
th{background:#eee}\
.total{font-size:1.2em;font-weight:bold}\
@media print{body{margin:0;max-width:none}h2{break-before:auto}}";

/// The statement as a printable HTML page.
pub fn statement_html(statement: &CreditStatement) -> String {
    let mut page = String::new();
    let title = format!(
        "Credit statement: {} for {}, period from {}",
        statement.sla,
        statement.customer_ref,
        statement.period_start.to_rfc3339()
    );
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(page, "<title>{}</title>", escape(&title));
    let _ = writeln!(page, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(page, "<h1>{}</h1>", escape(&title));
    page.push_str("<table>\n");
    row(&mut page, "SLA", &statement.sla);
    row(
        &mut page,
        "Customer",
        &format!("{} ({})", statement.customer_name, statement.customer_ref),
    );
    row(
        &mut page,
        "Period",
        &format!(
            "{} to {} (end exclusive)",
            statement.period_start.to_rfc3339(),
            statement.period_end.to_rfc3339()
        ),
    );
    row(&mut page, "Currency", &statement.currency);
    row(&mut page, "Entries", &statement.entries.len().to_string());
    page.push_str("</table>\n");
    for (n, entry) in statement.entries.iter().enumerate() {
        entry_section(&mut page, n + 1, entry);
    }
    let _ = writeln!(
        page,
        "<h2>Total</h2>\n<p class=\"total\">Credit owed for the period: {} {}</p>",
        escape(&statement.total),
        escape(&statement.currency)
    );
    page.push_str("</body>\n</html>\n");
    page
}

fn entry_section(page: &mut String, n: usize, entry: &Credit) {
    let _ = writeln!(
        page,
        "<h2>Entry {n}: {} (revision {})</h2>",
        escape(&entry.kind),
        entry.revision
    );
    page.push_str("<table>\n");
    row(page, "Credit", &entry.id.to_string());
    row(page, "Recorded", &entry.created_at.to_rfc3339());
    row(page, "SLA version", &entry.version.to_string());
    if let Some(corrects) = &entry.corrects {
        row(page, "Corrects", &corrects.to_string());
    }
    row(
        page,
        "Amount of this entry",
        &format!("{} {}", entry.amount, entry.currency),
    );
    row(
        page,
        "Period total after it",
        &format!("{} {}", entry.total, entry.currency),
    );
    for a in &entry.attestations {
        row(
            page,
            &format!("Attestation of {} (revision {})", a.objective, a.revision),
            &format!("{} ({})", a.id, a.status),
        );
    }
    page.push_str("</table>\n");

    // The record as the compensation worker wrote it: the domain's types,
    // so a renamed field is a build error here, not a blank cell.
    match serde_json::from_value::<CreditRecord>(entry.computation.clone()) {
        Ok(record) => {
            objective_results(page, &record.inputs);
            let steps = &record.computation;
            page.push_str("<h3>Policy</h3>\n<table>\n");
            row(page, "Kind", &steps.kind);
            row(page, "Formula", &steps.formula);
            row(page, "Fee for the period", &money(steps.fee.as_ref()));
            if let Some(c) = &record.fee_correction {
                row(
                    page,
                    "Fee corrected",
                    &format!(
                        "from {} by {} on {}: {}",
                        money(c.was.as_ref()),
                        c.corrected_by,
                        c.corrected_at.to_rfc3339(),
                        c.reason
                    ),
                );
            }
            row(
                page,
                "Requests priced on",
                &record.inputs.priced_on.as_ref().map_or_else(
                    || "not recorded (a credit computed before SLAs had scopes: every request of the service)".to_owned(),
                    slaproof_domain::credit::PricedOn::describe,
                ),
            );
            page.push_str("</table>\n");
            computation_steps(page, steps, &entry.currency);
        }
        Err(err) => {
            let _ = writeln!(
                page,
                "<p>The recorded computation could not be read: {}</p>",
                escape(&err.to_string())
            );
        }
    }
    links(page, &entry.results);
}

fn objective_results(page: &mut String, inputs: &CreditInputs) {
    page.push_str("<h3>Results of the period</h3>\n<table>\n<tr><th>Objective</th><th>Achieved</th><th>Met</th></tr>\n");
    for outcome in &inputs.objectives {
        cells(
            page,
            &[
                outcome.objective.to_string(),
                ppm_percent(outcome.achieved_ppm),
                yes_no(outcome.met),
            ],
        );
    }
    if let Some(composite) = &inputs.composite {
        cells(
            page,
            &[
                "composite".to_owned(),
                ppm_percent(composite.achieved_ppm),
                yes_no(composite.met),
            ],
        );
    }
    page.push_str("</table>\n");
}

/// The steps; exact amounts (`raw`, `capped`, each part) are in major
/// units of `currency`.
fn computation_steps(page: &mut String, steps: &CreditComputation, currency: &str) {
    page.push_str("<h3>Computation</h3>\n");
    for (t, table) in steps.tier_tables.iter().enumerate() {
        let _ = writeln!(
            page,
            "<p>Tier table {} ({}): {}% of the fee = {} {}</p>",
            t + 1,
            escape(&table.scope),
            escape(&table.percent),
            escape(&table.amount),
            escape(currency)
        );
        page.push_str("<table>\n<tr><th>Objective</th><th>Achieved %</th><th>Met</th><th>Tier below %</th><th>Percent of fee</th><th>Note</th></tr>\n");
        for line in &table.lines {
            cells(
                page,
                &[
                    line.objective
                        .as_ref()
                        .map_or_else(|| "composite".to_owned(), ToString::to_string),
                    or_dash(line.achieved.as_deref()),
                    yes_no(line.met),
                    or_dash(line.tier_below.as_deref()),
                    line.percent.clone(),
                    or_dash(line.note.as_deref()),
                ],
            );
        }
        page.push_str("</table>\n");
    }
    if !steps.incidents.is_empty() {
        page.push_str("<table>\n<tr><th>Objective</th><th>Start</th><th>End</th><th>Duration s</th><th>Requests</th><th>QPS</th><th>Level</th><th>Coefficient</th><th>Base rate</th><th>Amount</th><th>Note</th></tr>\n");
        for incident in &steps.incidents {
            cells(
                page,
                &[
                    incident.objective.to_string(),
                    incident.start.to_rfc3339(),
                    incident.end.to_rfc3339(),
                    incident.duration_seconds.clone(),
                    incident.requests.to_string(),
                    incident.qps.clone(),
                    or_dash(incident.level.map(|l| l.as_str())),
                    incident.coefficient.clone(),
                    incident.base_rate.clone(),
                    incident.amount.clone(),
                    or_dash(incident.note.as_deref()),
                ],
            );
        }
        page.push_str("</table>\n");
    }
    page.push_str("<table>\n<tr><th>Step</th><th>Value</th></tr>\n");
    let exact = |value: &str| format!("{value} {currency}");
    cells(
        page,
        &["Raw (sum of the parts)".to_owned(), exact(&steps.raw)],
    );
    for cap in &steps.caps {
        let rule = match &cap.percent {
            Some(percent) => format!("{} ({percent}% of the fee)", cap.rule),
            None => cap.rule.clone(),
        };
        let exceeded = if cap.exceeded {
            "exceeded: applied"
        } else {
            "not exceeded"
        };
        cells(
            page,
            &[format!("Cap: {rule}"), format!("{}, {exceeded}", cap.limit)],
        );
    }
    cells(page, &["Capped".to_owned(), exact(&steps.capped)]);
    cells(page, &["Rounding".to_owned(), steps.rounding.to_string()]);
    cells(page, &["Rounded".to_owned(), steps.rounded.to_string()]);
    let minimum = match &steps.minimum {
        Some(m) if m.applied => format!("{}, applied: below it, nothing is issued", m.minimum),
        Some(m) => format!("{}, reached", m.minimum),
        None => "none".to_owned(),
    };
    cells(page, &["Minimum".to_owned(), minimum]);
    cells(page, &["Total".to_owned(), steps.total.to_string()]);
    page.push_str("</table>\n");
}

fn links(page: &mut String, results: &Value) {
    let results = array(results);
    if results.is_empty() {
        return;
    }
    page.push_str("<h3>Frozen results it was computed from</h3>\n<table>\n<tr><th>Objective</th><th>Period result</th><th>Revision</th></tr>\n");
    for link in results {
        let objective = if link["composite"] == true {
            "composite".to_owned()
        } else {
            text(&link["objective"])
        };
        cells(
            page,
            &[
                objective,
                text(&link["periodResult"]),
                text(&link["revision"]),
            ],
        );
    }
    page.push_str("</table>\n");
}

fn array(value: &Value) -> &[Value] {
    value.as_array().map(Vec::as_slice).unwrap_or_default()
}

fn row(page: &mut String, name: &str, value: &str) {
    let _ = writeln!(
        page,
        "<tr><th>{}</th><td>{}</td></tr>",
        escape(name),
        escape(value)
    );
}

fn cells(page: &mut String, values: &[String]) {
    page.push_str("<tr>");
    for value in values {
        let _ = write!(page, "<td>{}</td>", escape(value));
    }
    page.push_str("</tr>\n");
}

/// A JSON value as plain text: strings unquoted, null as a dash.
fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn yes_no(value: bool) -> String {
    if value { "yes" } else { "no" }.to_owned()
}

fn or_dash(value: Option<&str>) -> String {
    value.unwrap_or("-").to_owned()
}

/// Parts per million as a percent, exact (`999500` → `99.95%`).
fn ppm_percent(ppm: Option<i64>) -> String {
    let Some(ppm) = ppm else {
        return "no data".to_owned();
    };
    let sign = if ppm < 0 { "-" } else { "" };
    let abs = ppm.unsigned_abs();
    let (whole, fraction) = (abs / 10_000, abs % 10_000);
    let fraction = format!("{fraction:04}");
    let fraction = fraction.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{sign}{whole}%")
    } else {
        format!("{sign}{whole}.{fraction}%")
    }
}

/// Money as `300.00 EUR`, or a dash.
fn money(value: Option<&Money>) -> String {
    value.map_or_else(|| "-".to_owned(), ToString::to_string)
}

/// Text made safe for HTML content and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use slaproof_domain::credit::Currency;

    use super::*;

    #[test]
    fn text_is_escaped_and_percents_are_exact() {
        assert_eq!(
            escape("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        assert_eq!(ppm_percent(Some(999_500)), "99.95%");
        assert_eq!(ppm_percent(Some(980_000)), "98%");
        assert_eq!(ppm_percent(Some(-25_000)), "-2.5%");
        assert_eq!(ppm_percent(None), "no data");
        let eur = Currency::new("EUR", None).unwrap();
        assert_eq!(money(Some(&Money::new(30_000, eur))), "300.00 EUR");
    }
}

//! A credit statement as a printable page: one self-contained HTML document (inline CSS, no scripts) with every entry, each objective's result, the policy's formula, every step of the computation and the total.
//!
//! Every value is HTML-escaped: names, references and the computation's
//! text come from tenants' documents. The steps are read from each entry's
//! `computation` (`{"inputs": …, "computation": …}`, as the compensation
//! worker records it), so the page shows what the ledger holds and nothing
//! recomputed.

use std::fmt::Write as _;

use serde_json::Value;
use slaproof_domain::credit::Currency;

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
    if let Some(attestation) = &entry.attestation {
        row(page, "Attestation", attestation);
    }
    page.push_str("</table>\n");

    let inputs = &entry.computation["inputs"];
    let steps = &entry.computation["computation"];
    objective_results(page, inputs);
    page.push_str("<h3>Policy</h3>\n<table>\n");
    row(page, "Kind", &text(&steps["kind"]));
    row(page, "Formula", &text(&steps["formula"]));
    row(page, "Fee for the period", &money(&steps["fee"]));
    page.push_str("</table>\n");
    computation_steps(page, steps, &entry.currency);
    links(page, &entry.results);
}

fn objective_results(page: &mut String, inputs: &Value) {
    page.push_str("<h3>Results of the period</h3>\n<table>\n<tr><th>Objective</th><th>Achieved</th><th>Met</th></tr>\n");
    for outcome in array(&inputs["objectives"]) {
        cells(
            page,
            &[
                text(&outcome["objective"]),
                ppm_percent(&outcome["achieved_ppm"]),
                yes_no(&outcome["met"]),
            ],
        );
    }
    if inputs["composite"].is_object() {
        let composite = &inputs["composite"];
        cells(
            page,
            &[
                "composite".to_owned(),
                ppm_percent(&composite["achieved_ppm"]),
                yes_no(&composite["met"]),
            ],
        );
    }
    page.push_str("</table>\n");
}

/// The steps; exact amounts (`raw`, `capped`, each part) are in major
/// units of `currency`.
fn computation_steps(page: &mut String, steps: &Value, currency: &str) {
    page.push_str("<h3>Computation</h3>\n");
    for (t, table) in array(&steps["tier_tables"]).iter().enumerate() {
        let _ = writeln!(
            page,
            "<p>Tier table {} ({}): {}% of the fee = {} {}</p>",
            t + 1,
            escape(&text(&table["scope"])),
            escape(&text(&table["percent"])),
            escape(&text(&table["amount"])),
            escape(currency)
        );
        page.push_str("<table>\n<tr><th>Objective</th><th>Achieved %</th><th>Met</th><th>Tier below %</th><th>Percent of fee</th><th>Note</th></tr>\n");
        for line in array(&table["lines"]) {
            let objective = match &line["objective"] {
                Value::Null => "composite".to_owned(),
                other => text(other),
            };
            cells(
                page,
                &[
                    objective,
                    text(&line["achieved"]),
                    yes_no(&line["met"]),
                    text(&line["tier_below"]),
                    text(&line["percent"]),
                    text(&line["note"]),
                ],
            );
        }
        page.push_str("</table>\n");
    }
    let incidents = array(&steps["incidents"]);
    if !incidents.is_empty() {
        page.push_str("<table>\n<tr><th>Objective</th><th>Start</th><th>End</th><th>Duration s</th><th>Requests</th><th>QPS</th><th>Level</th><th>Coefficient</th><th>Base rate</th><th>Amount</th><th>Note</th></tr>\n");
        for incident in incidents {
            cells(
                page,
                &[
                    text(&incident["objective"]),
                    text(&incident["start"]),
                    text(&incident["end"]),
                    text(&incident["duration_seconds"]),
                    text(&incident["requests"]),
                    text(&incident["qps"]),
                    text(&incident["level"]),
                    text(&incident["coefficient"]),
                    text(&incident["base_rate"]),
                    text(&incident["amount"]),
                    text(&incident["note"]),
                ],
            );
        }
        page.push_str("</table>\n");
    }
    page.push_str("<table>\n<tr><th>Step</th><th>Value</th></tr>\n");
    let exact = |value: &Value| format!("{} {currency}", text(value));
    cells(
        page,
        &["Raw (sum of the parts)".to_owned(), exact(&steps["raw"])],
    );
    for cap in array(&steps["caps"]) {
        let rule = match cap["percent"].as_str() {
            Some(percent) => format!("{} ({percent}% of the fee)", text(&cap["rule"])),
            None => text(&cap["rule"]),
        };
        let exceeded = if cap["exceeded"] == true {
            "exceeded: applied"
        } else {
            "not exceeded"
        };
        cells(
            page,
            &[
                format!("Cap: {rule}"),
                format!("{}, {exceeded}", money(&cap["limit"])),
            ],
        );
    }
    cells(page, &["Capped".to_owned(), exact(&steps["capped"])]);
    cells(page, &["Rounding".to_owned(), text(&steps["rounding"])]);
    cells(page, &["Rounded".to_owned(), money(&steps["rounded"])]);
    if steps["minimum"].is_object() {
        let applied = if steps["minimum"]["applied"] == true {
            "applied: below it, nothing is issued"
        } else {
            "reached"
        };
        cells(
            page,
            &[
                "Minimum".to_owned(),
                format!("{}, {applied}", money(&steps["minimum"]["minimum"])),
            ],
        );
    } else {
        cells(page, &["Minimum".to_owned(), "none".to_owned()]);
    }
    cells(page, &["Total".to_owned(), money(&steps["total"])]);
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

fn yes_no(value: &Value) -> String {
    match value.as_bool() {
        Some(true) => "yes".to_owned(),
        Some(false) => "no".to_owned(),
        None => "-".to_owned(),
    }
}

/// Parts per million as a percent, exact (`999500` → `99.95%`).
fn ppm_percent(value: &Value) -> String {
    let Some(ppm) = value.as_i64() else {
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

/// A `Money` as recorded (`{"minor": 30000, "currency": {"code": "EUR",
/// "exponent": 2}}`) as `300.00 EUR`.
fn money(value: &Value) -> String {
    let (Some(minor), Some(code)) = (value["minor"].as_i64(), value["currency"]["code"].as_str())
    else {
        return "-".to_owned();
    };
    let exponent = value["currency"]["exponent"]
        .as_u64()
        .and_then(|e| u8::try_from(e).ok());
    match Currency::new(code, exponent) {
        Ok(currency) => format!("{} {code}", currency.amount_text(minor)),
        Err(_) => format!("{minor} minor units of {code}"),
    }
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
    use super::*;

    #[test]
    fn text_is_escaped_and_percents_are_exact() {
        assert_eq!(
            escape("<script>\"a\" & 'b'</script>"),
            "&lt;script&gt;&quot;a&quot; &amp; &#39;b&#39;&lt;/script&gt;"
        );
        assert_eq!(ppm_percent(&serde_json::json!(999_500)), "99.95%");
        assert_eq!(ppm_percent(&serde_json::json!(980_000)), "98%");
        assert_eq!(ppm_percent(&serde_json::json!(-25_000)), "-2.5%");
        assert_eq!(ppm_percent(&Value::Null), "no data");
        assert_eq!(
            money(&serde_json::json!({"minor": 30000, "currency": {"code": "EUR", "exponent": 2}})),
            "300.00 EUR"
        );
    }
}

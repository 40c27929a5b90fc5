//! The YAML slaproof writes, made safe for YAML 1.1 readers: PyYAML (and so Ansible) reads a plain `12:00` as the base-60 integer 720, so values of that shape are single-quoted. YAML 1.2 readers, slaproof's own among them, read either form as the same string.
//!
//! `serde_yaml_ng` quotes only what its own YAML 1.2 reading would not
//! take for a string, which leaves a maintenance schedule's `from: 12:00`
//! bare.

/// `text`, as `serde_yaml_ng` writes it (block style), with every plain
/// value a YAML 1.1 reader would take for a base-60 number single-quoted.
/// Lines inside block scalars (`|`, `>`) are content and left alone.
pub(crate) fn quote_for_yaml11(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // The indentation of the line that opened a block scalar, while in one.
    let mut block: Option<usize> = None;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        let indent = body.len() - body.trim_start().len();
        if let Some(opened) = block {
            if body.trim().is_empty() || indent > opened {
                out.push_str(line);
                continue;
            }
            block = None;
        }
        let value = plain_value(body);
        if value.starts_with('|') || value.starts_with('>') {
            block = Some(indent);
        }
        if is_base_60(value) {
            out.push_str(&body[..body.len() - value.len()]);
            out.push('\'');
            out.push_str(value);
            out.push('\'');
            out.push_str(&line[body.len()..]);
        } else {
            out.push_str(line);
        }
    }
    out
}

/// The value a block-style line ends with: after the last `: ` (a plain
/// value never holds one, and a key that does is quoted), or after `- `.
fn plain_value(line: &str) -> &str {
    if let Some(at) = line.rfind(": ") {
        return &line[at + 2..];
    }
    line.trim_start().strip_prefix("- ").unwrap_or("")
}

/// Whether a YAML 1.1 reader takes `value` for a base-60 integer or float
/// (`190:20:30`, `12:00`, `1:30.5`): digits, then one or more `:` and
/// one or two digits below 60. Leading zeros are quoted too, though
/// YAML 1.1 itself reads `02:00` as a string, so that a schedule reads
/// the same on every line.
fn is_base_60(value: &str) -> bool {
    let unsigned = value.strip_prefix(['-', '+']).unwrap_or(value);
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (unsigned, None),
    };
    if fraction.is_some_and(|f| !f.chars().all(|c| c.is_ascii_digit() || c == '_')) {
        return false;
    }
    let mut parts = whole.split(':');
    let first = parts.next().unwrap_or_default();
    if !first.starts_with(|c: char| c.is_ascii_digit())
        || !first.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    let mut sixtieths = 0;
    for part in parts {
        let below_60 = match part.as_bytes() {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        };
        if !below_60 {
            return false;
        }
        sixtieths += 1;
    }
    sixtieths > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sla::SlaDefinition;

    #[test]
    fn base_60_shapes_are_recognised() {
        for yes in [
            "12:00",
            "02:00",
            "22:30",
            "1:2:3",
            "190:20:30",
            "-1:30",
            "1:30.5",
        ] {
            assert!(is_base_60(yes), "{yes}");
        }
        for no in [
            "", "12", "12:", ":30", "12:60", "12:000", "a:00", "12:0a", "1.5", "http://x",
            "'12:00'", "12:00 x",
        ] {
            assert!(!is_base_60(no), "{no}");
        }
    }

    #[test]
    fn values_are_quoted_keys_and_block_scalars_are_not() {
        let text = "a: 12:00\nb:\n- 22:30\n- x\nc: |-\n  at: 12:00\n  - 13:00\nd: 02:00\n'e: f': 3:04\ng: '12:00'\n";
        assert_eq!(
            quote_for_yaml11(text),
            "a: '12:00'\nb:\n- '22:30'\n- x\nc: |-\n  at: 12:00\n  - 13:00\nd: '02:00'\n'e: f': '3:04'\ng: '12:00'\n"
        );
    }

    /// Found in review: the export wrote `from: 12:00`, which PyYAML reads
    /// as 720.
    #[test]
    fn a_schedule_is_written_quoted_and_reads_back_the_same() {
        let sla = SlaDefinition::from_document(
            "apiVersion: slaproof/v1\nkind: SLA\nmetadata:\n  name: chat\nspec:\n  description: |-\n    window at: 12:00\n    or later\n  service: chat\n  window: {calendar: month, timeZone: Europe/Berlin}\n  objectives:\n  - name: availability\n    target: 99.9%\n    ratio: {good: status < 500}\n  policy:\n    maintenance:\n      maxPerPeriod: 4h\n      schedule:\n      - {days: [sat], from: \"12:00\", to: \"22:30\"}\n",
        )
        .unwrap();
        let native = sla.to_native_yaml();
        assert!(native.contains("from: '12:00'"), "{native}");
        assert!(native.contains("to: '22:30'"), "{native}");
        // The description's lines are content: left as they were.
        assert!(native.contains("  window at: 12:00\n"), "{native}");
        assert_eq!(SlaDefinition::from_document(&native).unwrap(), sla);
        let openslo = sla.to_openslo_yaml();
        assert!(openslo.contains("  window at: 12:00\n"), "{openslo}");
        assert_eq!(SlaDefinition::from_document(&openslo).unwrap(), sla);
    }
}

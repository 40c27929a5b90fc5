//! Exact decimal numbers read from text, so that `99.95%` is 999500 ppm and never 999499.

use std::fmt;

/// A decimal written in a document, kept as `digits × 10^-scale`.
///
/// Documents carry targets and thresholds as decimal text (`99.95`, `0.999`,
/// `3.2`); going through `f64` would turn some of them into the neighbouring
/// value, and an SLA is paid on that value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Decimal {
    pub negative: bool,
    digits: u128,
    /// Number of decimal places; may be negative after an exponent (`1e3`).
    scale: i32,
}

/// Why a decimal cannot be scaled to an integer unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScaleError {
    /// The number has digits below the unit (e.g. `0.0000001` in ppm).
    TooPrecise,
    /// The number does not fit.
    TooLarge,
}

impl Decimal {
    /// Reads `[-+]digits[.digits][e[-+]digits]`; `None` when it is not a number.
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (negative, rest) = match text.as_bytes().first()? {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        let (mantissa, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        let (int_part, frac_part) = match mantissa.split_once('.') {
            Some((i, f)) => (i, f),
            None => (mantissa, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        if !int_part
            .bytes()
            .chain(frac_part.bytes())
            .all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let mut digits: u128 = 0;
        let mut significant = 0usize;
        for b in int_part.bytes().chain(frac_part.bytes()) {
            if digits == 0 && b == b'0' {
                continue;
            }
            significant += 1;
            // 38 significant digits always fit in a u128.
            if significant > 38 {
                return None;
            }
            digits = digits * 10 + u128::from(b - b'0');
        }
        let mut scale = i32::try_from(frac_part.len()).ok()?;
        if let Some(exp) = exponent {
            let exp: i32 = exp.parse().ok()?;
            if exp.abs() > 1000 {
                return None;
            }
            scale -= exp;
        }
        Some(Self {
            negative: negative && digits != 0,
            digits,
            scale,
        })
    }

    pub(crate) fn is_zero(&self) -> bool {
        self.digits == 0
    }

    /// The value × 10^`places`, exactly, or why not.
    pub(crate) fn scaled(&self, places: u32) -> Result<u128, ScaleError> {
        let mut digits = self.digits;
        let mut scale = self.scale;
        // Trailing zeros carry no precision: `0.5000000` is as exact as `0.5`.
        while digits != 0 && digits.is_multiple_of(10) && scale > 0 {
            digits /= 10;
            scale -= 1;
        }
        if digits == 0 {
            return Ok(0);
        }
        let shift = i64::from(places) - i64::from(scale);
        if shift < 0 {
            return Err(ScaleError::TooPrecise);
        }
        let mut value = digits;
        for _ in 0..shift {
            value = value.checked_mul(10).ok_or(ScaleError::TooLarge)?;
        }
        Ok(value)
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        write!(f, "{}e{}", self.digits, -self.scale)
    }
}

/// Writes `value / 10^places` as the shortest exact decimal (`999500, 4` → `99.95`).
pub(crate) fn format_scaled(value: u128, places: u32) -> String {
    let divisor = 10u128.pow(places);
    let int = value / divisor;
    let frac = value % divisor;
    if frac == 0 {
        return int.to_string();
    }
    let frac = format!("{frac:0width$}", width = places as usize);
    format!("{int}.{}", frac.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_exactly() {
        let d = Decimal::parse("99.95").unwrap();
        assert_eq!(d.scaled(4), Ok(999_500));
        assert_eq!(Decimal::parse("0.999").unwrap().scaled(6), Ok(999_000));
        assert_eq!(
            Decimal::parse("1e-7").unwrap().scaled(6),
            Err(ScaleError::TooPrecise)
        );
        assert_eq!(Decimal::parse("1e-6").unwrap().scaled(6), Ok(1));
        assert_eq!(
            Decimal::parse("0.5000000000").unwrap().scaled(6),
            Ok(500_000)
        );
        assert_eq!(Decimal::parse("3.2").unwrap().scaled(3), Ok(3200));
    }

    #[test]
    fn refuses_what_is_not_a_number() {
        for bad in [
            "", ".", "-", "1.2.3", "abc", "1e", "--1", "1,5", "0x10", "１",
        ] {
            assert!(Decimal::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn formats_shortest() {
        assert_eq!(format_scaled(999_500, 4), "99.95");
        assert_eq!(format_scaled(1_000_000, 4), "100");
        assert_eq!(format_scaled(1, 6), "0.000001");
    }
}

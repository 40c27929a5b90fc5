//! Money as whole minor units of an ISO 4217 currency, so that a credit is never a float.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

use crate::decimal::{Decimal, ScaleError};

/// Why a currency or an amount is refused; the message is the rule that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MoneyError(pub String);

/// The minor-unit exponent of common ISO 4217 currencies; others need an
/// explicit `minorUnits` in the policy. Kept short on purpose: a wrong
/// exponent pays a hundred times too much, so an unknown code is asked for
/// rather than guessed.
const EXPONENTS: &[(&str, u8)] = &[
    ("AUD", 2),
    ("BHD", 3),
    ("BRL", 2),
    ("CAD", 2),
    ("CHF", 2),
    ("CLP", 0),
    ("CNY", 2),
    ("CZK", 2),
    ("DKK", 2),
    ("EUR", 2),
    ("GBP", 2),
    ("HKD", 2),
    ("HUF", 2),
    ("IDR", 2),
    ("ILS", 2),
    ("INR", 2),
    ("ISK", 0),
    ("JOD", 3),
    ("JPY", 0),
    ("KRW", 0),
    ("KWD", 3),
    ("MXN", 2),
    ("NOK", 2),
    ("NZD", 2),
    ("OMR", 3),
    ("PLN", 2),
    ("SEK", 2),
    ("SGD", 2),
    ("TND", 3),
    ("TRY", 2),
    ("USD", 2),
    ("VND", 0),
    ("ZAR", 2),
];

/// The most minor-unit digits a currency may have (ISO 4217 has none above 4).
pub(crate) const MAX_EXPONENT: u8 = 4;

/// An ISO 4217 currency: its code and how many decimals its minor unit has.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Currency {
    code: String,
    exponent: u8,
}

impl Currency {
    /// A currency by its code, with the exponent from the table of known
    /// currencies or, when given, `minor_units` (which overrides it).
    pub fn new(code: &str, minor_units: Option<u8>) -> Result<Self, MoneyError> {
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(MoneyError(format!(
                "must be an ISO 4217 code of three upper-case letters such as \"EUR\", got {code:?}"
            )));
        }
        let exponent = match (minor_units, Self::known_exponent(code)) {
            (Some(e), _) if e > MAX_EXPONENT => {
                return Err(MoneyError(format!(
                    "minor units must be from 0 to {MAX_EXPONENT}, got {e}"
                )));
            }
            (Some(e), _) | (None, Some(e)) => e,
            (None, None) => {
                return Err(MoneyError(format!(
                    "{code} is not a currency slaproof knows: give its minor units (`minorUnits`, e.g. 2 for cents)"
                )));
            }
        };
        Ok(Self {
            code: code.to_owned(),
            exponent,
        })
    }

    /// The exponent the table gives `code`, if it knows it.
    pub fn known_exponent(code: &str) -> Option<u8> {
        EXPONENTS.iter().find(|(c, _)| *c == code).map(|(_, e)| *e)
    }

    /// `EUR`
    pub fn code(&self) -> &str {
        &self.code
    }

    /// Decimals of the minor unit: 2 for EUR, 0 for JPY.
    pub const fn exponent(&self) -> u8 {
        self.exponent
    }

    /// Whether `minorUnits` must be written for the document to read back the same.
    pub fn needs_minor_units(&self) -> bool {
        Self::known_exponent(&self.code) != Some(self.exponent)
    }

    /// Reads `"500"` or `"500.25"` major units as minor units, exactly,
    /// refusing negatives and digits below the minor unit.
    pub fn parse_amount(&self, text: &str) -> Result<i64, MoneyError> {
        let Some(d) = Decimal::parse(text) else {
            return Err(MoneyError(format!(
                "must be an amount such as \"100.00\", got {text:?}"
            )));
        };
        if d.negative {
            return Err(MoneyError(format!(
                "must not be negative, got {}",
                text.trim()
            )));
        }
        match d.scaled(u32::from(self.exponent)) {
            Ok(v) => i64::try_from(v).map_err(|_| too_large(text)),
            Err(ScaleError::TooPrecise) => Err(MoneyError(format!(
                "must not be more precise than the minor unit of {} ({} decimals), got {}",
                self.code,
                self.exponent,
                text.trim()
            ))),
            Err(ScaleError::TooLarge) => Err(too_large(text)),
        }
    }

    /// `minor` minor units written in major units (`12345` EUR → `123.45`).
    pub fn amount_text(&self, minor: i64) -> String {
        let places = usize::from(self.exponent);
        let sign = if minor < 0 { "-" } else { "" };
        let abs = minor.unsigned_abs();
        if places == 0 {
            return format!("{sign}{abs}");
        }
        let divisor = 10u64.pow(u32::from(self.exponent));
        format!(
            "{sign}{}.{:0places$}",
            abs / divisor,
            abs % divisor,
            places = places
        )
    }
}

fn too_large(text: &str) -> MoneyError {
    MoneyError(format!("is too large, got {}", text.trim()))
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.code)
    }
}

impl<'de> Deserialize<'de> for Currency {
    /// Checked as [`Currency::new`] checks it, so a ledger row cannot carry `"eur"`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            code: String,
            exponent: u8,
        }
        let raw = Raw::deserialize(d)?;
        Self::new(&raw.code, Some(raw.exponent)).map_err(serde::de::Error::custom)
    }
}

/// An amount of money: whole minor units of a currency (12345 EUR cents = 123.45 EUR).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Money {
    /// Minor units (cents for EUR, yen for JPY).
    pub minor: i64,
    pub currency: Currency,
}

impl Money {
    pub fn new(minor: i64, currency: Currency) -> Self {
        Self { minor, currency }
    }

    /// Nothing, in `currency`.
    pub fn zero(currency: Currency) -> Self {
        Self::new(0, currency)
    }

    /// `123.45` (major units, no code).
    pub fn amount_text(&self) -> String {
        self.currency.amount_text(self.minor)
    }
}

impl fmt::Display for Money {
    /// `123.45 EUR`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.amount_text(), self.currency)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_currencies_have_their_exponent_and_others_must_say_it() {
        assert_eq!(Currency::new("EUR", None).unwrap().exponent(), 2);
        assert_eq!(Currency::new("JPY", None).unwrap().exponent(), 0);
        assert_eq!(Currency::new("KWD", None).unwrap().exponent(), 3);
        let err = Currency::new("XTS", None).unwrap_err();
        assert!(err.0.contains("minorUnits"), "{err}");
        assert_eq!(Currency::new("XTS", Some(2)).unwrap().exponent(), 2);
        assert!(Currency::new("XTS", Some(2)).unwrap().needs_minor_units());
        assert!(!Currency::new("EUR", Some(2)).unwrap().needs_minor_units());
        for bad in ["eur", "EURO", "E1R", ""] {
            assert!(Currency::new(bad, None).is_err(), "{bad}");
        }
        assert!(Currency::new("EUR", Some(5)).is_err());
    }

    #[test]
    fn amounts_read_exactly_to_the_minor_unit() {
        let eur = Currency::new("EUR", None).unwrap();
        let jpy = Currency::new("JPY", None).unwrap();
        assert_eq!(eur.parse_amount("123.45"), Ok(12_345));
        assert_eq!(eur.parse_amount("0.1"), Ok(10));
        assert_eq!(eur.parse_amount("500"), Ok(50_000));
        assert!(
            eur.parse_amount("0.001")
                .unwrap_err()
                .0
                .contains("2 decimals")
        );
        assert!(eur.parse_amount("-1").unwrap_err().0.contains("negative"));
        assert_eq!(jpy.parse_amount("500"), Ok(500));
        assert!(
            jpy.parse_amount("0.5")
                .unwrap_err()
                .0
                .contains("0 decimals")
        );
        assert_eq!(eur.amount_text(12_345), "123.45");
        assert_eq!(eur.amount_text(5), "0.05");
        assert_eq!(jpy.amount_text(500), "500");
        assert_eq!(Money::new(-7, eur).to_string(), "-0.07 EUR");
    }

    #[test]
    fn money_serializes_with_its_currency_and_refuses_a_bad_one() {
        let m = Money::new(12_345, Currency::new("EUR", None).unwrap());
        let json = serde_json::to_string(&m).unwrap();
        assert_eq!(
            json,
            r#"{"minor":12345,"currency":{"code":"EUR","exponent":2}}"#
        );
        assert_eq!(serde_json::from_str::<Money>(&json).unwrap(), m);
        assert!(
            serde_json::from_str::<Money>(r#"{"minor":1,"currency":{"code":"eur","exponent":2}}"#)
                .is_err()
        );
    }
}

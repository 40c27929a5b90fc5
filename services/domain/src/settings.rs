//! A configuration setting that breaks its rule: the one error every crate's settings section answers with.

/// A setting that breaks its rule; `key` is its full configuration path
/// (`evaluator.batch`), so the operator knows what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {rule}")]
pub struct SettingsError {
    pub key: &'static str,
    pub rule: String,
}

impl SettingsError {
    pub fn new(key: &'static str, rule: impl Into<String>) -> Self {
        Self {
            key,
            rule: rule.into(),
        }
    }
}

/// Checks that setting `key` is within `min..=max`, naming both bounds when
/// it is not.
pub fn within(key: &'static str, value: u64, min: u64, max: u64) -> Result<(), SettingsError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(SettingsError::new(
            key,
            format!("must be between {min} and {max}, got {value}"),
        ))
    }
}

/// Whether a URL's host is this machine (`localhost`, 127.0.0.0/8, `::1`):
/// the only host a secret or a trusted answer may be fetched from over
/// plain http, since on any other path it could be read or swapped.
pub fn is_loopback_host(host: &str) -> bool {
    host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod loopback_tests {
    use super::is_loopback_host;

    #[test]
    fn only_this_machine_is_loopback() {
        for host in ["localhost", "127.0.0.1", "127.9.9.9", "[::1]", "::1"] {
            assert!(is_loopback_host(host), "{host}");
        }
        for host in [
            "10.0.0.1",
            "rpc.example.com",
            "localhost.example.com",
            "[::2]",
        ] {
            assert!(!is_loopback_host(host), "{host}");
        }
    }
}

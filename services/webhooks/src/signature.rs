//! Standard Webhooks signing: the body every delivery carries and the
//! `webhook-signature` over it.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, SecondsFormat, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The body of a delivery: `{"type", "timestamp", "data"}`, the timestamp
/// being when the fact was written (RFC 3339), not when it is sent.
pub fn body(event_type: &str, at: DateTime<Utc>, data: &serde_json::Value) -> Vec<u8> {
    let document = serde_json::json!({
        "type": event_type,
        "timestamp": at.to_rfc3339_opts(SecondsFormat::Millis, true),
        "data": data,
    });
    // A Value always serialises.
    serde_json::to_vec(&document).unwrap_or_default()
}

/// `v1,` + base64(HMAC-SHA256(secret, "{id}.{timestamp}.{body}")).
pub fn sign(secret: &[u8], id: &str, timestamp: i64, body: &[u8]) -> String {
    // HMAC takes a key of any length.
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    mac.update(id.as_bytes());
    mac.update(b".");
    mac.update(timestamp.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_specification_example_signs_as_published() {
        // The example of the Standard Webhooks specification (and of its
        // reference libraries' tests).
        let secret = STANDARD.decode("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
        let signature = sign(
            &secret,
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            br#"{"test": 2432232314}"#,
        );
        assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn the_body_carries_type_timestamp_and_data() {
        let at = DateTime::parse_from_rfc3339("2026-12-01T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let body: serde_json::Value =
            serde_json::from_slice(&body("sla.breached", at, &serde_json::json!({"a": 1})))
                .unwrap();
        assert_eq!(body["type"], "sla.breached");
        assert_eq!(body["timestamp"], "2026-12-01T10:00:00.000Z");
        assert_eq!(body["data"]["a"], 1);
    }
}

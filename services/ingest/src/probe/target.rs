//! The outbound checks of probes: the operator's policy at the URL and at
//! every resolution, each refusal told without the addresses a name
//! resolved to.

use slaproof_http::outbound::{OutboundPolicy, Refusal};

/// A target refused by the outbound policy, as the provider reads it in its
/// probe's last run: the host and the class of address, never an address
/// the host resolved to (those go to the operator's log only).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text}")]
pub struct TargetRefused {
    /// `dns` or `refused_target`.
    pub class: &'static str,
    pub text: String,
}

impl TargetRefused {
    pub(super) fn of(host: Option<&str>, refusal: &Refusal) -> Self {
        match refusal {
            Refusal::Address { address, .. } | Refusal::NeverTarget { address, .. } => {
                tracing::warn!(host, %address, %refusal, "probe target refused");
            }
            _ => tracing::warn!(host, %refusal, "probe target refused"),
        }
        Self {
            class: if refusal.is_dns() {
                "dns"
            } else {
                "refused_target"
            },
            // The policy's messages name no resolved address.
            text: refusal.to_string(),
        }
    }
}

/// Parses a probe's URL and checks what needs no DNS: the policy's rules,
/// and for an address literal (the client never resolves those) the
/// address itself.
pub fn check_literal(policy: &OutboundPolicy, url: &str) -> Result<url::Url, TargetRefused> {
    let parsed = policy
        .parse_target(url)
        .map_err(|refusal| TargetRefused::of(None, &refusal))?;
    policy
        .check_literal(&parsed)
        .map_err(|refusal| TargetRefused::of(parsed.host_str(), &refusal))?;
    Ok(parsed)
}

/// Resolves and checks every name a probe connects to, at the resolution
/// the connection uses (the policy checks each address it answers), each
/// refusal told as [`TargetRefused`].
#[derive(Debug)]
pub(super) struct ProbeResolver {
    pub(super) policy: OutboundPolicy,
}

impl reqwest::dns::Resolve for ProbeResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str();
            // Port 0: the client puts the URL's port in.
            let addresses = policy
                .resolve(host, 0)
                .await
                .map_err(|refusal| TargetRefused::of(Some(host), &refusal))?;
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;

    /// The policy's check, as the runner applies it to every address.
    fn refused(policy: &OutboundPolicy, address: &str) -> Option<String> {
        let ip: IpAddr = address.parse().unwrap();
        policy
            .check_ip("target.example", ip)
            .err()
            .map(|refusal| TargetRefused::of(Some("target.example"), &refusal).text)
    }

    #[test]
    fn addresses_that_reach_inside_are_refused_whatever_ipv6_wraps_them() {
        let strict = OutboundPolicy::strict();
        // (address, the class named, or None for a public target)
        let table: &[(&str, Option<&str>)] = &[
            // NAT64 local use (RFC 8215): the operator's own translator.
            ("64:ff9b:1::a00:1", Some("NAT64 local-use")),
            ("64:ff9b:1::808:808", Some("NAT64 local-use")),
            ("64:ff9b:1:abcd::1", Some("NAT64 local-use")),
            // The well-known NAT64 prefix: its IPv4 address decides.
            ("64:ff9b::a00:1", Some("private")),
            ("64:ff9b::c0a8:101", Some("private")),
            ("64:ff9b::7f00:1", Some("loopback")),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::808:808", None),
            // IPv4-mapped.
            ("::ffff:10.0.0.1", Some("private")),
            ("::ffff:172.16.0.1", Some("private")),
            ("::ffff:169.254.169.254", Some("link-local")),
            ("::ffff:8.8.8.8", None),
            // 6to4 embedding a private or a public IPv4 address.
            ("2002:a00:1::1", Some("private")),
            ("2002:c0a8:101::1", Some("private")),
            ("2002:808:808::1", None),
            // Teredo (2001::/32) and its neighbours.
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("2001::/23")),
            // Outside global unicast, and new documentation space.
            ("64:ff9b:2::1", Some("reserved")),
            ("5f00::1", Some("reserved")),
            ("3fff::1", Some("documentation")),
            ("2606:4700:4700::1111", None),
            ("8.8.8.8", None),
        ];
        for (address, want) in table {
            let got = refused(&strict, address);
            match want {
                None => assert_eq!(got, None, "{address}"),
                Some(range) => {
                    let text = got.unwrap_or_else(|| panic!("{address} passed"));
                    assert!(text.contains(range), "{address}: {text}");
                    // The class, never the address.
                    assert!(!text.contains(address), "{address}: {text}");
                    assert!(
                        text.starts_with("target.example is or resolves to a"),
                        "{text}"
                    );
                }
            }
        }
        // What the operator allows, the runner allows.
        let allowing = OutboundPolicy::allowing(["64:ff9b:1::/48".parse().unwrap()]);
        assert_eq!(refused(&allowing, "64:ff9b:1::a00:1"), None);
        assert!(refused(&allowing, "64:ff9b::a00:1").is_some());
    }
}

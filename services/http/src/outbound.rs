//! The outbound-address policy: which addresses slaproof may connect to on
//! a tenant's behalf (probe targets now, webhook endpoints later).
//!
//! A tenant names a URL; slaproof connects from inside the operator's
//! network. Without a policy a tenant could make slaproof reach the cloud
//! metadata endpoint (169.254.169.254), a database on 10.0.0.5 or an admin
//! port on localhost (server-side request forgery). So every address in a
//! special-purpose range — loopback, private, link-local, CGNAT, unique
//! local, IPv4 hidden in IPv6 — is refused unless the operator allows it,
//! all of them (`allow_private_targets`) or by network (`allowed_networks`).
//!
//! The check runs twice: when a URL is saved (a clear 422 for the person
//! typing it) and at every connection, inside the HTTP client's resolver
//! ([`OutboundPolicy::client_builder`]): a host that resolved to a public
//! address yesterday and to 127.0.0.1 now (DNS rebinding) is refused at the
//! resolution the connection actually uses.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use serde::Deserialize;
use url::{Host, Url};

/// How long a name may take to resolve before the check gives up.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The operator's rule for outbound connections; `slaproof`'s `[outbound]`
/// section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OutboundPolicy {
    /// Allow every special-purpose range (loopback, private, link-local, …)
    /// except those no connection can go to (unspecified, multicast,
    /// broadcast). For single-tenant installs inside a private network.
    pub allow_private_targets: bool,
    /// Networks allowed even though they are special-purpose, e.g.
    /// `10.20.0.0/16` for an inference cluster on the operator's network.
    pub allowed_networks: Vec<IpNet>,
}

/// Why a target is refused. The messages name the host and the rule, for
/// the person who typed the URL; never an address a name resolved to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("is not a valid URL: {0}")]
    Syntax(String),
    #[error("must use http or https, not {0}")]
    Scheme(String),
    #[error("must not carry credentials; send them in a header")]
    Credentials,
    #[error("must name a host")]
    NoHost,
    /// The message names the host and the class of address, never the
    /// address a name resolved to: the operator's DNS answers are internal,
    /// and whoever typed the URL may be a tenant. Log the `address` where
    /// the operator reads it.
    #[error(
        "{host} is or resolves to a {range} address; targets must be public unless the operator allows the range (outbound.allowed_networks or outbound.allow_private_targets)"
    )]
    Address {
        host: String,
        address: IpAddr,
        range: &'static str,
    },
    #[error("{range} addresses can never be a target")]
    NeverTarget {
        address: IpAddr,
        range: &'static str,
    },
    #[error("{host} does not resolve: {reason}")]
    Resolve { host: String, reason: String },
    #[error("{0} resolves to no address")]
    NoAddress(String),
}

impl Refusal {
    /// Whether the host could not be resolved (as opposed to resolving to
    /// an address the policy refuses).
    pub fn is_dns(&self) -> bool {
        matches!(self, Refusal::Resolve { .. } | Refusal::NoAddress(_))
    }
}

/// A special-purpose range an address is in, and whether the operator may
/// allow it at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialRange {
    pub name: &'static str,
    /// Unspecified, multicast and broadcast addresses are no target for a
    /// connection whatever the operator allows.
    pub allowable: bool,
}

const fn range(name: &'static str) -> Option<SpecialRange> {
    Some(SpecialRange {
        name,
        allowable: true,
    })
}

const fn never(name: &'static str) -> Option<SpecialRange> {
    Some(SpecialRange {
        name,
        allowable: false,
    })
}

/// The special-purpose range (IANA registries, RFC 6890) `ip` is in, or
/// `None` for a public address.
pub fn special_range(ip: IpAddr) -> Option<SpecialRange> {
    match ip {
        IpAddr::V4(v4) => special_v4(v4),
        IpAddr::V6(v6) => special_v6(v6),
    }
}

fn special_v4(ip: Ipv4Addr) -> Option<SpecialRange> {
    let [a, b, c, _] = ip.octets();
    if ip.is_unspecified() {
        return never("unspecified");
    }
    if ip.is_broadcast() {
        return never("broadcast");
    }
    if ip.is_multicast() {
        return never("multicast");
    }
    match (a, b, c) {
        (0, _, _) => range("\"this network\" (0.0.0.0/8)"),
        (127, _, _) => range("loopback"),
        (10, _, _) | (192, 168, _) => range("private (RFC 1918)"),
        (172, 16..=31, _) => range("private (RFC 1918)"),
        (100, 64..=127, _) => range("shared (CGNAT, 100.64.0.0/10)"),
        (169, 254, _) => range("link-local (incl. cloud metadata)"),
        (192, 0, 0) => range("IETF protocol assignment (192.0.0.0/24)"),
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => range("documentation"),
        (198, 18..=19, _) => range("benchmarking (198.18.0.0/15)"),
        (192, 88, 99) => range("6to4 relay anycast"),
        (240..=255, _, _) => range("reserved (240.0.0.0/4)"),
        _ => None,
    }
}

fn special_v6(ip: Ipv6Addr) -> Option<SpecialRange> {
    if ip.is_unspecified() {
        return never("unspecified");
    }
    if ip.is_loopback() {
        return range("loopback");
    }
    if ip.is_multicast() {
        return never("multicast");
    }
    let s = ip.segments();
    // IPv4 inside IPv6 reaches the IPv4 address: judge that one.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return special_v4(v4);
    }
    // NAT64 (64:ff9b::/96) translates to the embedded IPv4 address.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return special_v4(v4);
    }
    // 6to4 (2002::/16) tunnels to the IPv4 address in bits 16-48.
    if s[0] == 0x2002 {
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return special_v4(v4);
    }
    // NAT64 for local use (RFC 8215): the operator's own translator, to
    // IPv4 addresses of its choosing, private ones included.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1 {
        return range("NAT64 local-use (64:ff9b:1::/48)");
    }
    match s[0] {
        // ::/96 (deprecated IPv4-compatible) and the rest of ::/8.
        0x0000 => range("reserved (::/8, IPv4-compatible)"),
        0x0100 if s[1..4] == [0, 0, 0] => range("discard-only (100::/64)"),
        0x2001 if s[1] == 0x0db8 => range("documentation"),
        // Teredo and the other IETF assignments in 2001::/23.
        0x2001 if s[1] < 0x0200 => range("IETF protocol assignment (2001::/23)"),
        x if x & 0xfe00 == 0xfc00 => range("unique local (fc00::/7)"),
        x if x & 0xffc0 == 0xfe80 => range("link-local (fe80::/10)"),
        x if x & 0xffc0 == 0xfec0 => range("site-local (fec0::/10)"),
        // Documentation (RFC 9637).
        0x3fff if s[1] < 0x1000 => range("documentation (3fff::/20)"),
        // Everything outside global unicast is reserved by the IETF (RFC
        // 4291; SRv6 SIDs in 5f00::/16 among it): no public target.
        x if x & 0xe000 != 0x2000 => range("reserved (outside global unicast 2000::/3)"),
        _ => None,
    }
}

impl OutboundPolicy {
    /// A policy that refuses every special-purpose address.
    pub fn strict() -> Self {
        Self::default()
    }

    /// Allows the given networks besides public addresses (tests allow
    /// loopback this way).
    pub fn allowing(networks: impl IntoIterator<Item = IpNet>) -> Self {
        Self {
            allow_private_targets: false,
            allowed_networks: networks.into_iter().collect(),
        }
    }

    /// Whether `ip` may be connected to, or why not (`host` is what the
    /// user named, for the message).
    pub fn check_ip(&self, host: &str, ip: IpAddr) -> Result<(), Refusal> {
        let canonical = ip.to_canonical();
        let Some(special) = special_range(canonical) else {
            return Ok(());
        };
        if !special.allowable {
            return Err(Refusal::NeverTarget {
                address: ip,
                range: special.name,
            });
        }
        let allowed = self.allow_private_targets
            || self
                .allowed_networks
                .iter()
                .any(|net| net.contains(&ip) || net.contains(&canonical));
        if allowed {
            Ok(())
        } else {
            Err(Refusal::Address {
                host: host.to_owned(),
                address: ip,
                range: special.name,
            })
        }
    }

    /// Parses a target URL and checks what can be checked without DNS:
    /// the scheme, credentials, a host, and an address literal.
    pub fn parse_target(&self, text: &str) -> Result<Url, Refusal> {
        let url = Url::parse(text).map_err(|e| Refusal::Syntax(e.to_string()))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Scheme(url.scheme().to_owned()));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Credentials);
        }
        self.check_literal(&url)?;
        Ok(url)
    }

    /// Checks a URL whose host is an address literal (the HTTP client does
    /// not resolve those, so its resolver never sees them); names pass.
    pub fn check_literal(&self, url: &Url) -> Result<(), Refusal> {
        match url.host() {
            None => Err(Refusal::NoHost),
            Some(Host::Ipv4(ip)) => self.check_ip(&ip.to_string(), IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => self.check_ip(&ip.to_string(), IpAddr::V6(ip)),
            Some(Host::Domain(_)) => Ok(()),
        }
    }

    /// Parses and fully checks a target: a host name is resolved and every
    /// address it resolves to must be allowed (one private address among
    /// public ones is how rebinding attacks hedge).
    pub async fn check_target(&self, text: &str) -> Result<Url, Refusal> {
        let url = self.parse_target(text)?;
        if let Some(Host::Domain(host)) = url.host() {
            let port = url.port_or_known_default().unwrap_or(80);
            self.resolve(host, port).await?;
        }
        Ok(url)
    }

    /// Resolves `host` and refuses it unless every address is allowed.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        let lookup = tokio::net::lookup_host((host, port));
        let addresses: Vec<SocketAddr> = match tokio::time::timeout(RESOLVE_TIMEOUT, lookup).await {
            Ok(Ok(found)) => found.collect(),
            Ok(Err(err)) => {
                return Err(Refusal::Resolve {
                    host: host.to_owned(),
                    reason: err.to_string(),
                });
            }
            Err(_) => {
                return Err(Refusal::Resolve {
                    host: host.to_owned(),
                    reason: format!("no answer within {}s", RESOLVE_TIMEOUT.as_secs()),
                });
            }
        };
        if addresses.is_empty() {
            return Err(Refusal::NoAddress(host.to_owned()));
        }
        for address in &addresses {
            self.check_ip(host, address.ip())?;
        }
        Ok(addresses)
    }

    /// An HTTP client builder that connects only where this policy allows:
    /// every name is resolved and checked by the policy at connection time
    /// (the client connects to exactly the addresses checked), redirects
    /// are not followed (a 302 to `http://127.0.0.1/` would skip the check
    /// of literals) and no proxy from the environment is used. Callers must
    /// still [`check_literal`](Self::check_literal) each URL.
    pub fn client_builder(&self) -> reqwest::ClientBuilder {
        reqwest::Client::builder()
            .dns_resolver(Arc::new(PolicyResolver {
                policy: self.clone(),
            }))
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
    }
}

/// The HTTP client's resolver: the policy's check on every resolution.
#[derive(Debug)]
struct PolicyResolver {
    policy: OutboundPolicy,
}

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            // Port 0: the client puts the URL's port in.
            let addresses = policy
                .resolve(name.as_str(), 0)
                .await
                .map_err(|refusal| Box::new(refusal) as Box<dyn std::error::Error + Send + Sync>)?;
            Ok(Box::new(addresses.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The policy refusal behind an HTTP client error, if that is what failed
/// it (the resolver's error is nested in the client's connect error).
pub fn refusal_of<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Refusal> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = current {
        if let Some(refusal) = e.downcast_ref::<Refusal>() {
            return Some(refusal);
        }
        current = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn special_ranges_are_refused_and_public_addresses_pass() {
        let policy = OutboundPolicy::strict();
        // (address, refused?, range named in the message)
        let table: &[(&str, Option<&str>)] = &[
            ("8.8.8.8", None),
            ("1.1.1.1", None),
            ("93.184.216.34", None),
            ("172.32.0.1", None),
            ("100.128.0.1", None),
            ("127.0.0.1", Some("loopback")),
            ("127.255.255.254", Some("loopback")),
            ("10.0.0.5", Some("private")),
            ("172.16.0.1", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.1.1", Some("private")),
            ("100.64.0.1", Some("CGNAT")),
            ("169.254.169.254", Some("link-local")),
            ("0.0.0.0", Some("unspecified")),
            ("0.1.2.3", Some("this network")),
            ("255.255.255.255", Some("broadcast")),
            ("224.0.0.1", Some("multicast")),
            ("240.0.0.1", Some("reserved")),
            ("192.0.2.10", Some("documentation")),
            ("198.18.0.1", Some("benchmarking")),
            ("2606:4700:4700::1111", None),
            ("2001:4860:4860::8888", None),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fc00::1", Some("unique local")),
            ("fd12:3456::1", Some("unique local")),
            ("fe80::1", Some("link-local")),
            ("febf::1", Some("link-local")),
            ("fec0::1", Some("site-local")),
            ("ff02::1", Some("multicast")),
            ("2001:db8::1", Some("documentation")),
            ("::ffff:127.0.0.1", Some("loopback")),
            ("::ffff:10.1.2.3", Some("private")),
            ("::ffff:169.254.169.254", Some("link-local")),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::a9fe:a9fe", Some("link-local")),
            ("64:ff9b::808:808", None),
            ("2002:7f00:1::1", Some("loopback")),
            ("2002:0808:0808::1", None),
            ("::127.0.0.1", Some("reserved")),
            ("100::1", Some("discard")),
            // NAT64 local use (RFC 8215), whatever it embeds: found by
            // reading the code, it passed as public.
            ("64:ff9b:1::a00:1", Some("NAT64 local-use")),
            ("64:ff9b:1::808:808", Some("NAT64 local-use")),
            // Teredo and the rest of 2001::/23.
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Some("2001::/23")),
            // Outside global unicast, and the new documentation space.
            ("64:ff9b:2::1", Some("reserved")),
            ("5f00::1", Some("reserved")),
            ("4000::1", Some("reserved")),
            ("3fff::1", Some("documentation")),
            ("3fff:fff::1", Some("documentation")),
            ("3fff:1000::1", None),
        ];
        for (address, refused) in table {
            let result = policy.check_ip("host", ip(address));
            match refused {
                None => assert_eq!(result, Ok(()), "{address}"),
                Some(range) => {
                    let message = result.expect_err(address).to_string();
                    assert!(message.contains(range), "{address}: {message}");
                    // The class, never the address: the operator's DNS
                    // answers are not the tenant's to read.
                    assert!(!message.contains(address), "{address}: {message}");
                }
            }
        }
        // What the operator allows is allowed, NAT64 local use included.
        let allowing = OutboundPolicy::allowing(["64:ff9b:1::/48".parse().unwrap()]);
        assert_eq!(allowing.check_ip("host", ip("64:ff9b:1::a00:1")), Ok(()));
        assert!(allowing.check_ip("host", ip("64:ff9b::a00:1")).is_err());
    }

    #[test]
    fn the_operator_can_allow_networks_or_all_private_ranges() {
        let loopback = OutboundPolicy::allowing(["127.0.0.0/8".parse().unwrap()]);
        assert_eq!(loopback.check_ip("h", ip("127.0.0.1")), Ok(()));
        // The mapped form of an allowed address is the same address.
        assert_eq!(loopback.check_ip("h", ip("::ffff:127.0.0.1")), Ok(()));
        assert!(loopback.check_ip("h", ip("10.0.0.1")).is_err());
        assert!(loopback.check_ip("h", ip("::1")).is_err());

        let private = OutboundPolicy {
            allow_private_targets: true,
            allowed_networks: vec![],
        };
        for address in ["10.0.0.1", "127.0.0.1", "fd00::1", "169.254.169.254"] {
            assert_eq!(private.check_ip("h", ip(address)), Ok(()), "{address}");
        }
        // No connection can go to these, whatever is allowed.
        for address in ["0.0.0.0", "255.255.255.255", "224.0.0.1", "ff02::1", "::"] {
            assert!(private.check_ip("h", ip(address)).is_err(), "{address}");
        }
    }

    #[test]
    fn urls_need_http_a_host_and_no_credentials() {
        let policy = OutboundPolicy::strict();
        assert!(policy.parse_target("https://api.example.com/v1").is_ok());
        assert!(matches!(
            policy.parse_target("ftp://example.com/"),
            Err(Refusal::Scheme(s)) if s == "ftp"
        ));
        assert!(matches!(
            policy.parse_target("file:///etc/passwd"),
            Err(Refusal::Scheme(_))
        ));
        assert_eq!(
            policy.parse_target("https://user:pw@example.com/"),
            Err(Refusal::Credentials)
        );
        assert!(matches!(
            policy.parse_target("not a url"),
            Err(Refusal::Syntax(_))
        ));
        // Literals are judged without DNS, in every spelling the URL parser
        // normalises (decimal, hex, bracketed IPv6).
        for literal in [
            "http://127.0.0.1:8080/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://[::1]/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data/",
        ] {
            assert!(
                matches!(policy.parse_target(literal), Err(Refusal::Address { .. })),
                "{literal}"
            );
        }
    }

    #[tokio::test]
    async fn names_are_resolved_and_every_address_checked() {
        let policy = OutboundPolicy::strict();
        let refused = policy
            .check_target("http://localhost:9/")
            .await
            .unwrap_err();
        assert!(
            matches!(refused, Refusal::Address { range, .. } if range == "loopback"),
            "{refused}"
        );
        let allowed = OutboundPolicy {
            allow_private_targets: true,
            allowed_networks: vec![],
        };
        assert!(allowed.check_target("http://localhost:9/").await.is_ok());
        let unknown = policy
            .check_target("http://does-not-exist.invalid/")
            .await
            .unwrap_err();
        assert!(unknown.is_dns(), "{unknown}");
    }

    #[tokio::test]
    async fn the_client_refuses_at_connection_time() {
        // A name that passed an earlier check but now resolves to
        // loopback is refused by the client's own resolver.
        let client = OutboundPolicy::strict().client_builder().build().unwrap();
        let err = client.get("http://localhost:9/").send().await.unwrap_err();
        let refusal = refusal_of(&err).expect("the policy refused it");
        assert!(matches!(refusal, Refusal::Address { .. }), "{refusal}");
    }
}

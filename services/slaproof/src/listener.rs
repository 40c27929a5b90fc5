//! Serving a listener's connections within bounds: every request's headers on a timer, at most so many connections at once, and at most so many from one client address.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What bounds the connections of a listener.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) header_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_per_address: usize,
}

/// Serves `router` over HTTP/1 on `listener` until `shutdown`, then waits
/// for the connections' requests in flight. Not `axum::serve`: it sets no
/// timer, so a client trickling its headers (slowloris) would hold a
/// connection for ever; here each request's headers must arrive within
/// `header_timeout`. A connection beyond its address's share is answered
/// 503 and closed at once, before anything of it is read.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    use hyper_util::server::graceful::GracefulShutdown;
    use hyper_util::service::TowerToHyperService;

    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let addresses = Arc::new(PerAddress::new(limits.max_per_address));
    loop {
        // A slot before accepting: at the cap, new connections wait in the
        // kernel's queue instead of each holding a task and a socket here.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = shutdown.cancelled() => break,
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: the listener
                    // stays usable, so wait a little rather than spin.
                    tracing::warn!(error = %err, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => break,
        };
        let Some(share) = addresses.admit(peer.ip()) else {
            // Waiting for a slot of the address's own would leave the
            // global queue to one client; so it is told, and the slot
            // freed at once. One write that never waits: the socket's
            // buffer is empty.
            tracing::debug!(%peer, cap = limits.max_per_address, "a connection beyond its address's share was refused");
            let _ = stream.try_write(&refusal(limits.max_per_address));
            drop(stream);
            drop(slot);
            continue;
        };
        let service = TowerToHyperService::new(router.clone());
        // No upgrades: slaproof serves no WebSocket or CONNECT.
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                tracing::debug!(error = %err, "connection ended with an error");
            }
            drop(share);
            drop(slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The answer to a connection beyond its address's share: a problem
/// document (RFC 9457) naming the setting, and the connection closed.
fn refusal(cap: usize) -> Vec<u8> {
    let body = serde_json::json!({
        "type": "about:blank",
        "title": "Service Unavailable",
        "status": 503,
        "detail": format!(
            "this address already has {cap} connections open (server.max_connections_per_address): reuse one, or close one and retry"
        ),
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The connections open from each client address (IPv6 by its /64, what
/// one host is usually given), so that no one client takes every slot.
struct PerAddress {
    cap: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    fn new(cap: usize) -> Self {
        Self {
            cap,
            open: Mutex::new(HashMap::new()),
        }
    }

    /// A share for one more connection from `ip`, or `None` at the cap.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Option<Share> {
        let key = client_of(ip);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(key).or_insert(0);
        if *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(Share {
            table: Arc::clone(self),
            key,
        })
    }
}

/// One connection's place in its address's count, given back on drop.
struct Share {
    table: Arc<PerAddress>,
    key: IpAddr,
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut open = self.table.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

/// The client `ip` is counted as: itself for IPv4 (an IPv4-mapped IPv6
/// address too), its /64 for IPv6.
fn client_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => {
            let network = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(network))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_share_and_it_comes_back_when_a_connection_ends() {
        let table = Arc::new(PerAddress::new(2));
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        let first = table.admit(a).unwrap();
        let _second = table.admit(a).unwrap();
        assert!(table.admit(a).is_none(), "a third from one address");
        assert!(table.admit(b).is_some(), "another address is not held up");
        drop(first);
        assert!(table.admit(a).is_some());
    }

    #[test]
    fn ipv6_hosts_are_counted_by_their_64_and_mapped_ipv4_as_ipv4() {
        let one: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let same_host: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(client_of(one), client_of(same_host));
        assert_ne!(client_of(one), client_of(other));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(client_of(mapped), "192.0.2.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn the_refusal_is_a_whole_http_answer_naming_the_setting() {
        let answer = String::from_utf8(refusal(64)).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(body.contains("server.max_connections_per_address"));
        assert!(body.contains("64 connections"));
    }
}

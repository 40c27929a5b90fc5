//! The dashboard pages under `slaproof up`: built on first start when they
//! are not (npm from the registry, as `scripts/test` does), and the demo
//! customer's dashboard address announced once the API answers.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use slaproof_domain::ids::CustomerId;

/// Builds `frontend/dist` with npm when the pages are missing and the
/// sources are here; says what to do otherwise. Never fails `up`: the API
/// answers 503 on `/embed/` until the pages are built.
pub(crate) async fn ensure_built(configured: Option<&Path>) {
    let dir = slaproof_api::pages_dir(configured);
    if dir.join("index.html").is_file() {
        return;
    }
    let Some(sources) = dir.parent().filter(|f| f.join("package.json").is_file()) else {
        eprintln!(
            "the dashboard pages are not built ({} is missing)",
            dir.display()
        );
        return;
    };
    let sources = sources.to_owned();
    let built = tokio::task::spawn_blocking(move || {
        crate::npm::ci(&sources, "the dashboard pages' build tools")
            && crate::npm::run(&sources, "build")
    })
    .await
    .unwrap_or(false);
    if !built {
        eprintln!(
            "could not build the dashboard pages: install npm and run `npm ci --prefix frontend && npm run build --prefix frontend`"
        );
    }
}

/// Once the API answers, mints an embed token for the demo customer's SLA
/// (every read scope, an hour) and prints the dashboard's address.
pub(crate) async fn announce_dashboard(
    addr: SocketAddr,
    provider_admin: String,
    customer: CustomerId,
    sla: String,
) {
    let http = reqwest::Client::new();
    let url = format!("http://{addr}");
    for _ in 0..60 {
        if http
            .get(format!("{url}/readyz"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let minted = http
        .post(format!("{url}/v1/embed-tokens"))
        .bearer_auth(provider_admin)
        .json(&serde_json::json!({
            "customer": customer.to_string(),
            "dashboard": sla,
            // Every scope an embed token may carry: the application's list.
            "scopes": slaproof_app::embed::EMBEDDABLE
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>(),
            "ttl_secs": 3600,
        }))
        .send()
        .await;
    let token = match minted {
        Ok(r) if r.status().is_success() => r
            .json::<serde_json::Value>()
            .await
            .ok()
            .and_then(|v| v["token"].as_str().map(str::to_owned)),
        Ok(r) => {
            eprintln!(
                "could not mint the demo dashboard's embed token: {}",
                r.status()
            );
            None
        }
        Err(err) => {
            eprintln!("could not mint the demo dashboard's embed token: {err}");
            None
        }
    };
    if let Some(token) = token {
        println!(
            "  Dashboard   {url}/embed/?token={token}\n              (the demo customer's dashboard, valid 1 h; mint more with POST /v1/embed-tokens)\n  Console     {url}/console/   (sign in with the provider admin token above)\n  Auditor     {url}/audit/\n"
        );
    }
}

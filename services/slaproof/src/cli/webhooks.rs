//! The operator commands on a tenant's webhook endpoints (`webhook`):
//! listing them, a test-send, replay and recovery, re-sealing secrets after a key rotation, through the application layer
//! under the same rules as `/v1/webhook-endpoints`.

use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::Subcommand;
use slaproof_app::webhooks::TEST_SEND_WAIT;

use super::tenancy::{TenantArg, application};
use crate::config::Config;

#[derive(Debug, Subcommand)]
pub enum WebhookCommand {
    /// Seal every endpoint's signing secret, in every tenant, under the
    /// configured webhooks.secret_key: after a key rotation, the keys in
    /// webhooks.previous_secret_keys (and the platform-made key) can then
    /// be dropped.
    Reseal,
    /// List the tenant's webhook endpoints.
    List {
        #[command(flatten)]
        tenant: TenantArg,
    },
    /// Deliver one message to an endpoint again, now, with its webhook-id
    /// (like `POST /v1/webhook-endpoints/{id}/messages/{msg_id}/resend`).
    Resend {
        #[command(flatten)]
        tenant: TenantArg,
        /// The endpoint (ep_…).
        endpoint: String,
        /// The message (msg_…, the webhook-id).
        message: String,
    },
    /// Send a webhook.test message to an endpoint (through the running
    /// webhook worker) and show how its first attempt went.
    Test {
        #[command(flatten)]
        tenant: TenantArg,
        /// The endpoint (ep_…).
        endpoint: String,
    },
    /// Deliver again to an endpoint every message since a time that its
    /// filter takes, at most 10,000 (like `POST …/recover`).
    Recover {
        #[command(flatten)]
        tenant: TenantArg,
        /// The endpoint (ep_…).
        endpoint: String,
        /// RFC 3339, e.g. 2026-12-01T12:00:00Z.
        #[arg(long)]
        since: String,
    },
}

pub(super) async fn webhook(config: &Config, command: WebhookCommand) -> anyhow::Result<()> {
    let app = application(config).await?;
    match command {
        WebhookCommand::Reseal => {
            // Without a configured key, the platform's own: what a re-seal
            // then does is seal what was stored before sealing existed.
            let under = if config.webhooks.secret_key.is_some() {
                "webhooks.secret_key"
            } else {
                "the platform's key (webhooks.secret_key is not set)"
            };
            let done = app.reseal_webhook_secrets().await?;
            // One line per kind: looked at, re-sealed, already under the
            // key, and what to do about those that open under none.
            let tell = |kind: &str, looked: u64, resealed: u64, unopenable: u64, fix: &str| {
                let already = looked - resealed - unopenable;
                let stuck = if unopenable > 0 {
                    format!(", {unopenable} opening under none of the configured keys ({fix})")
                } else {
                    String::new()
                };
                println!(
                    "{looked} {kind}: {resealed} re-sealed under {under}, {already} already under it{stuck}"
                );
            };
            tell(
                "endpoint(s)",
                done.endpoints,
                done.resealed,
                done.unopenable,
                "rotate their secrets",
            );
            tell(
                "probe(s)",
                done.probes,
                done.probes_resealed,
                done.unopenable_probes,
                "set their headers again",
            );
        }
        WebhookCommand::List { tenant } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            for endpoint in app.list_webhook_endpoints(&admin).await? {
                println!(
                    "{}\t{}\t{}\t{}{}",
                    endpoint.id,
                    endpoint.url,
                    endpoint.event_types.join(","),
                    if endpoint.enabled {
                        "enabled"
                    } else {
                        "disabled"
                    },
                    endpoint
                        .disabled_reason
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                );
            }
        }
        WebhookCommand::Resend {
            tenant,
            endpoint,
            message,
        } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            let replay = app
                .resend_webhook_message(&admin, &endpoint, &message)
                .await?;
            if replay.queued == 0 {
                println!("{message} is already queued again for {endpoint}");
            } else {
                println!("queued {message} again for {endpoint}");
            }
        }
        WebhookCommand::Test { tenant, endpoint } => {
            let admin = app.operator_in(&tenant.tenant).await?;
            let sent = app
                .test_webhook_endpoint(&admin, &endpoint, TEST_SEND_WAIT)
                .await?;
            match sent.attempt {
                Some(attempt) => println!(
                    "{} {}: {} in {} ms{}",
                    sent.message_id,
                    if sent.delivered {
                        "delivered"
                    } else {
                        "failed"
                    },
                    attempt
                        .status
                        .map_or_else(|| "no answer".to_owned(), |s| format!("status {s}")),
                    attempt.duration_ms,
                    attempt.error.map(|e| format!(" ({e})")).unwrap_or_default()
                ),
                None => println!(
                    "{} queued; no webhook worker tried it within {} s (is one running?)",
                    sent.message_id,
                    TEST_SEND_WAIT.as_secs()
                ),
            }
        }
        WebhookCommand::Recover {
            tenant,
            endpoint,
            since,
        } => {
            let since: DateTime<Utc> = DateTime::parse_from_rfc3339(&since)
                .with_context(|| format!("--since {since:?} is not RFC 3339"))?
                .with_timezone(&Utc);
            let admin = app.operator_in(&tenant.tenant).await?;
            let replay = app
                .recover_webhook_messages(&admin, &endpoint, since)
                .await?;
            println!(
                "queued {} message(s) since {} again for {endpoint}",
                replay.queued,
                since.to_rfc3339()
            );
            if let Some(next) = replay.next_since {
                println!(
                    "stopped at the cap; for the rest, recover again with --since {}",
                    next.to_rfc3339()
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::{Cli, Command};

    use super::WebhookCommand;

    #[test]
    fn the_replay_commands_parse() {
        let cli = Cli::try_parse_from([
            "slaproof",
            "webhook",
            "recover",
            "--tenant",
            "acme-ai",
            "ep_1",
            "--since",
            "2026-12-01T00:00:00Z",
        ])
        .unwrap();
        let Command::Webhook {
            command:
                WebhookCommand::Recover {
                    tenant,
                    endpoint,
                    since,
                },
        } = cli.command
        else {
            panic!("{:?}", cli.command);
        };
        assert_eq!(
            (tenant.tenant.as_str(), endpoint.as_str(), since.as_str()),
            ("acme-ai", "ep_1", "2026-12-01T00:00:00Z")
        );
        for args in [
            &[
                "slaproof", "webhook", "resend", "-t", "acme-ai", "ep_1", "msg_1",
            ][..],
            &["slaproof", "webhook", "test", "-t", "acme-ai", "ep_1"],
            &["slaproof", "webhook", "list", "-t", "acme-ai"],
        ] {
            assert!(Cli::try_parse_from(args).is_ok(), "{args:?}");
        }
    }
}

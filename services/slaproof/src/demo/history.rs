//! The demo's history: on its first start `slaproof up` gives the demo
//! tenant the loadgen's traffic from the start of the previous month (in
//! the demo SLAs' zone) to now, so that a newcomer meets a closed period at
//! once: acme-corp's month missed (a six-hour incident on the 70B model,
//! which globex never uses), its credit, its proofs and their anchors.
//!
//! The traffic is drawn from a seed and stored as if each request had been
//! received when it finished: the evaluator, the log and the prover meet
//! it as they would have met it live. That is the one thing simulated, and
//! the banner says so: the log days and their anchors are made now, after
//! the month ended, so an auditor sees them anchored after the period.

use std::sync::Arc;

use anyhow::Context;
use chrono::{DateTime, Duration, DurationRound, Utc};
use slaproof_domain::ids::TenantId;
use slaproof_domain::window::{Period, TimeWindow};
use slaproof_ingest::EventIn;
use slaproof_ingest::event::{IdSeed, TimeBounds};
use slaproof_ingest::loadgen::{self, Customers, Stretch};
use slaproof_store::Database;
use slaproof_store::events::StoredEvent;

/// The seed every demo history is drawn from: the same month's traffic
/// tells the same story on every machine.
const SEED: u64 = 20_261_101;
/// When the incident starts, counted from the previous period's start: the
/// 12th, 09:00 in the SLA's zone.
const INCIDENT_FROM_START: Duration = Duration::hours(11 * 24 + 9);
/// Six hours of a quarter of the 70B model's requests failing: about 0.15%
/// of acme-corp's month, more than its availability's 0.1% budget.
const INCIDENT_LENGTH: Duration = Duration::hours(6);

/// How far apart the evaluator's rounds over the history are, in days:
/// well within the days a round measures back, so that no day of the
/// closed month falls between two rounds unmeasured.
const ROUND_STEP_DAYS: i64 = 7;
const _: () = assert!(ROUND_STEP_DAYS < slaproof_evaluator::MEASURE_LOOKBACK_DAYS);
const ROUND_STEP: Duration = Duration::days(ROUND_STEP_DAYS);

/// What the history covers.
#[derive(Debug, Clone)]
pub struct HistoryPlan {
    /// The previous period of the demo SLA (acme-enterprise), which the
    /// history closes missed.
    pub closed: Period,
    /// From the earliest start of the demo SLAs' previous periods (each
    /// has its own zone) to now.
    pub stretch: Stretch,
    /// The instant of the evaluator's first round: within every demo SLA's
    /// previous period, so that each is judged from its start, as if the
    /// evaluator had run all along.
    pub first_round: DateTime<Utc>,
}

impl HistoryPlan {
    /// The history of the demo SLAs' previous periods (the last that ended a
    /// day or more before `now`) and up to `now`, at `rate` requests a
    /// second at the day's mean.
    pub fn for_demo(now: DateTime<Utc>, rate: f64) -> anyhow::Result<Self> {
        let window = |document: &str| {
            slaproof_domain::sla::SlaDefinition::from_document(document)
                .map(|d| d.window)
                .context("a shipped demo SLA is invalid")
        };
        // The last period that ended a day or more ago, so that it has
        // closed by the time the history is written whatever the hour (a
        // close waits out the late grace): on the 1st, the month before.
        let previous = |window: &TimeWindow| {
            let current = window.period_containing(now - Duration::days(1));
            window.period_containing(current.start - Duration::seconds(1))
        };
        let closed = previous(&window(super::SLA_DOCUMENT)?);
        let mut starts = vec![closed.start];
        for (document, _) in super::OTHER_SLAS {
            starts.push(previous(&window(document)?).start);
        }
        let from = starts.iter().min().copied().unwrap_or(closed.start);
        let first_round = starts.iter().max().copied().unwrap_or(closed.start);
        let incident_start = closed.start + INCIDENT_FROM_START;
        Ok(Self {
            stretch: Stretch {
                from,
                to: now,
                rate,
                diurnal: true,
                incident: Some((incident_start, incident_start + INCIDENT_LENGTH)),
                seed: SEED,
                customers: Arc::new(Customers::demo()),
            },
            closed,
            first_round,
        })
    }

    /// The incident's start and end.
    pub fn incident(&self) -> (DateTime<Utc>, DateTime<Utc>) {
        self.stretch
            .incident
            .expect("a demo history has an incident")
    }
}

/// The loadgen's traffic that started within `stretch`, validated as
/// ingest validates a native event, each with the instant it finished
/// (when it was sent, and so received).
pub fn traffic(stretch: &Stretch, retention_days: u32) -> Vec<(StoredEvent, DateTime<Utc>)> {
    let bounds = TimeBounds::at(stretch.to, retention_days, Duration::minutes(5));
    loadgen::requests(stretch)
        .iter()
        .enumerate()
        .filter_map(|(i, r)| {
            let json = r.to_event(&format!("demo-history-{i}"));
            // Drawn by the loadgen, so always valid; one that is not (a
            // retention shorter than the stretch) is left out as ingest
            // would refuse it.
            let event: EventIn = serde_json::from_value(json).ok()?;
            let stored = event.validate(i, &bounds, IdSeed::Fresh).ok()?;
            Some((stored, r.finished_at()))
        })
        .collect()
}

/// Writes the history of `plan` for `tenant` in one transaction, unless the
/// tenant has events already or the evaluator has read its events: it
/// learns events in the order they were received, so a past is only
/// written before it ever ran. Then runs the evaluator's first round as of
/// `plan.first_round`, as it would have run then (each SLA is judged from
/// its previous period's start on), then one a week (`ROUND_STEP`) and one
/// as of the stretch's end; the live evaluator goes on from there. Returns the number of events written
/// (0 when none were).
pub async fn write(
    db: &Database,
    tenant: TenantId,
    plan: &HistoryPlan,
    retention_days: u32,
    evaluator: &slaproof_evaluator::Settings,
) -> anyhow::Result<usize> {
    // Every later start stops here, before any other work. The check's
    // transaction ends before the partitions are made: creating one waits
    // for every reader of `events`. Nothing else writes the tenant before
    // the services start, so the check still holds for the insert.
    let mut tx = db.tenant_tx(tenant).await?;
    let written_before = slaproof_store::events::any_or_evaluated(&mut tx).await?;
    tx.commit().await?;
    if written_before {
        return Ok(0);
    }
    slaproof_store::partitions::ensure(
        db,
        plan.stretch.from.date_naive() - chrono::Days::new(1),
        plan.stretch.to.date_naive() + chrono::Days::new(1),
    )
    .await
    .context("creating the history's event partitions")?;
    let mut tx = db.tenant_tx(tenant).await?;
    // Requests still running at the stretch's end have not been sent yet.
    let mut events = traffic(&plan.stretch, retention_days);
    events.retain(|(_, received)| *received <= plan.stretch.to);
    slaproof_store::events::insert_received(&mut tx, &events)
        .await
        .context("writing the demo's history")?;
    tx.commit().await?;
    // Then rounds a week apart up to the stretch's end, as the live
    // evaluator's would have gone: the previous periods close (their
    // credits and proofs are queued) and every past day is measured before
    // the log over them is built and anchored, so that their commitments
    // go with its first anchor rather than wait for the next day's. A
    // round measures the days of the last five weeks only (LOOKBACK_DAYS), so one round at
    // the end left the closed month's first days unmeasured from about the
    // 5th of the next month on, and its proof fell back to the threshold
    // circuit.
    let end = plan
        .stretch
        .to
        .duration_trunc(Duration::minutes(1))
        .context("the history's end as a minute")?;
    let rounds = std::iter::successors(Some(plan.first_round), |t| {
        Some(*t + ROUND_STEP).filter(|next| *next < end)
    })
    .chain(std::iter::once(end));
    for target in rounds {
        let mut tx = db.tenant_tx(tenant).await?;
        slaproof_evaluator::evaluate_tenant_up_to(&mut tx, evaluator, Some(target))
            .await
            .context("the evaluator's round over the demo's history")?;
        tx.commit().await?;
    }
    Ok(events.len())
}

/// What a start wrote of the history.
#[derive(Debug, Clone)]
pub struct Written {
    pub plan: HistoryPlan,
    /// Events written.
    pub events: usize,
    /// Log days built over them.
    pub log_days: usize,
}

/// Gives the demo tenant its history at `rate` requests a second unless it
/// has events (or `rate` is 0), then builds its transparency log over the
/// history: a new log starts at most `transparency.lookback_days` back,
/// so this first build looks back to the history's start.
pub async fn ensure(
    db: &Database,
    config: &crate::Config,
    tenant: TenantId,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Written>> {
    let rate = config.demo.history_rate;
    if rate <= 0.0 {
        return Ok(None);
    }
    let plan = HistoryPlan::for_demo(now, rate)?;
    let retention = config.events.retention_days;
    let events = write(db, tenant, &plan, retention, &config.evaluator).await?;
    if events == 0 {
        return Ok(None);
    }
    let app = slaproof_app::App::with_default_policy(db.clone())
        .await
        .context("loading the authorization policy")?;
    let span_days = (now - plan.stretch.from).num_days() + 2;
    let settings = slaproof_app::transparency::TransparencySettings {
        lookback_days: u32::try_from(span_days.clamp(1, 366)).unwrap_or(366),
        ..config.transparency.clone()
    };
    let secrets = app.log_secrets().await?;
    let built = app
        .build_tenant_log(&secrets, &settings, tenant, now)
        .await
        .context("building the transparency log over the demo's history")?;
    Ok(Some(Written {
        plan,
        events,
        log_days: built.len(),
    }))
}

/// Where a newcomer checks the history's closed month, printed by
/// [`announce`] once its proofs are anchored.
#[derive(Debug, Clone)]
pub(crate) struct Pointers {
    /// The HTTP base URL, `http://…`.
    pub url: String,
    pub provider_admin: String,
    pub customer_admin: String,
    /// The SLA whose month was missed.
    pub sla: String,
    pub closed: Period,
    /// The chain `up` anchors on: its RPC URL, chain id, EAS and attester.
    pub chain: Option<(
        url::Url,
        u64,
        alloy::primitives::Address,
        alloy::primitives::Address,
    )>,
}

/// How long [`announce`] waits for the closed month's first anchored proof:
/// the evaluator's close, the credits, the daily measurements' anchors and
/// a proof take a few minutes on a first start (keys are made first).
const ANNOUNCE_WITHIN: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// Waits for an anchored proof of the closed month of `p.sla`, then prints
/// the credit statement, the proof, `slaproof verify` with every pin, and
/// the auditor's page for it. Says so when it did not come in time.
pub(crate) async fn announce(p: Pointers, shutdown: tokio_util::sync::CancellationToken) {
    let http = reqwest::Client::new();
    let start = p
        .closed
        .start
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let deadline = tokio::time::Instant::now() + ANNOUNCE_WITHIN;
    let anchored = loop {
        if let Some(found) = anchored_proof(&http, &p, &start).await {
            break found;
        }
        if tokio::time::Instant::now() >= deadline {
            println!(
                "  History     no proof of {}'s closed month was anchored within {} minutes; see GET /v1/slas/{}/attestations and the log\n",
                p.sla,
                ANNOUNCE_WITHIN.as_secs() / 60,
                p.sla
            );
            return;
        }
        tokio::select! {
            () = shutdown.cancelled() => return,
            () = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
        }
    };
    let credit = statement_total(&http, &p, &start)
        .await
        .unwrap_or_else(|| "not computed yet".to_owned());
    let url = &p.url;
    let mut out = format!(
        "  History     ready: {sla}'s month from {from} closed missed; its credit and proof:\n",
        sla = p.sla,
        from = p.closed.start.format("%Y-%m-%d %H:%M UTC"),
    );
    out.push_str(&format!(
        "    credit    {credit}: curl -H 'Authorization: Bearer {token}' '{url}/v1/slas/{sla}/credits/{start}?format=html'\n",
        token = p.provider_admin,
        sla = p.sla,
    ));
    out.push_str(&format!(
        "    proof     attestation {id} ({objective}), anchored\n",
        id = anchored.0,
        objective = anchored.1,
    ));
    // Every pin, so that the verdict can be VERIFIED: the key hash is the
    // one the provider publishes (here, its own API), the chain up's anvil.
    // The history's days were anchored at this first start, after the
    // month ended: `days in time` cannot pass; and the demo's keys come
    // from a single-party setup: `key setup` cannot pass. The command
    // accepts both by name, as the note below says.
    let pins = match &p.chain {
        Some((rpc, chain_id, eas, attester)) => format!(
            " --vk-sha256 {vk} --rpc-url {rpc} --chain-id {chain_id} --eas {eas} --attester {attester} --allow-unpinned timely,setup",
            vk = anchored.2
        ),
        None => format!(" --vk-sha256 {} --allow-unpinned setup", anchored.2),
    };
    out.push_str(&format!(
        "    verify    SLAPROOF_TOKEN={token} cargo run -p slaproof -- verify --attestation {id} --api-url {url} --dir demo-proof{pins}\n",
        token = p.customer_admin,
        id = anchored.0,
    ));
    out.push_str(&format!(
        "    auditor   {url}/audit/?attestation={id}#token={token}\n",
        id = anchored.0,
        token = p.customer_admin,
    ));
    out.push_str(
        "              (history written at this first start: its days were logged and anchored after the month ended,\n               which `days in time` reports and --allow-unpinned timely accepts; a month anchored day by day needs none;\n               its keys come from a one-party setup, which `key setup` reports as a development key and\n               --allow-unpinned setup accepts; keys from `slaproof ceremony` are checked with --ceremony and --ptau)\n",
    );
    println!("{out}");
}

/// The first anchored attestation of the closed month, availability first:
/// its id, objective and verifying key's sha256.
async fn anchored_proof(
    http: &reqwest::Client,
    p: &Pointers,
    start: &str,
) -> Option<(String, String, String)> {
    let page = provider_get(
        http,
        p,
        &format!("/v1/slas/{}/attestations?period_start={start}", p.sla),
    )
    .await?;
    let mut anchored: Vec<&serde_json::Value> = page["attestations"]
        .as_array()?
        .iter()
        .filter(|a| a["status"] == "anchored")
        .collect();
    anchored.sort_by_key(|a| a["objective"] != "availability");
    let first = anchored.first()?;
    Some((
        first["id"].as_str()?.to_owned(),
        first["objective"].as_str()?.to_owned(),
        first["vk_sha256"].as_str()?.to_owned(),
    ))
}

/// The statement's total, e.g. `1000.00 EUR`.
async fn statement_total(http: &reqwest::Client, p: &Pointers, start: &str) -> Option<String> {
    let statement = provider_get(http, p, &format!("/v1/slas/{}/credits/{start}", p.sla)).await?;
    Some(format!(
        "{} {}",
        statement["total"].as_str()?,
        statement["currency"].as_str()?
    ))
}

/// `path` read with the provider admin's token; `None` unless a 2xx JSON
/// answer came (the announcer asks again later).
async fn provider_get(
    http: &reqwest::Client,
    p: &Pointers,
    path: &str,
) -> Option<serde_json::Value> {
    http.get(format!("{}{path}", p.url))
        .bearer_auth(&p.provider_admin)
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()
}

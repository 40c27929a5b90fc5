//! An oracle for the evaluator: a Berlin month across the DST change, with
//! maintenance, late telemetry and other customers' requests on the same
//! service, judged by plain SQL over the raw events
//! written from the contract's rules (sharing no code with the evaluator),
//! must give the very numbers the evaluator froze when the month closed.

use chrono::{DateTime, Duration, Utc};
use slaproof_domain::budget::Tally;
use slaproof_store::events::{EventSource, StoredEvent};
use slaproof_store::{maintenance, slas};
use slaproof_tests::maintenance::{agreed, announced};
use slaproof_tests::scenario::{Scenario, at};
use slaproof_tests::traffic::Xorshift;

/// The SLA as a customer signs it: three objectives over calendar months
/// in Berlin, two hours for late telemetry, and a maintenance schedule the
/// customer agreed to (Tuesdays 02:00–04:00 and 10:00–13:00, Thursdays
/// 14:00–15:00, Berlin time) with 48 hours' notice (not the 72-hour
/// default) and a cap the month does not reach (the cap's order is the
/// domain's unit tests' to check).
const SLA: &str = r#"
apiVersion: slaproof/v1
kind: SLA
metadata:
  name: chat-sla
spec:
  service: chat
  customer: acme-corp
  window: {calendar: month, timeZone: Europe/Berlin}
  objectives:
  - name: availability
    target: 94%
    ratio: {good: status < 500}
  - name: latency
    target: 93.5%
    threshold: {field: latency, op: lte, value: 800ms}
  - name: good-days
    target: 90%
    timeSlices:
      sliceLength: 1d
      budgeting: Timeslices
      sliceTarget: 95%
      ratio: {good: status < 500}
  policy:
    lateGrace: 2h
    maintenance:
      notice: 48h
      maxPerPeriod: 100h
      schedule:
      - {days: [tue], from: "02:00", to: "04:00"}
      - {days: [tue], from: "10:00", to: "13:00"}
      - {days: [thu], from: "14:00", to: "15:00"}
  credits:
    currency: EUR
    cap: "1000000.00"
    impact:
      levels: {availability: L3, latency: L1}
      incidents:
        availability: {minRequests: 2, minMinutes: 3}
        latency: {minuteBelow: 50}
      owedWhen: always
"#;

/// October 2026 in Berlin: from midnight CEST to midnight CET, 31 days and
/// one hour (the clocks went back at 03:00 on the 25th).
const START: &str = "2026-09-30T22:00:00Z";
const END: &str = "2026-10-31T23:00:00Z";
/// The end plus the SLA's late grace: what is received from then on is late.
const CLOSE: &str = "2026-11-01T01:00:00Z";

/// The rounds the evaluator runs, each after the events received before it
/// have arrived: through the month (one inside maintenance, one inside the
/// emergency, one inside the repeated hour of the DST change), just before
/// the close, and two hours after it, when it closes the month with the
/// late telemetry of those two hours in hand.
const ROUNDS: [&str; 8] = [
    "2026-10-01T00:00:00Z",
    "2026-10-05T12:00:00Z",
    "2026-10-13T23:00:00Z",
    "2026-10-20T09:00:00Z",
    "2026-10-25T01:30:00Z",
    "2026-10-31T22:30:00Z",
    "2026-11-01T00:59:00Z",
    "2026-11-01T03:00:00Z",
];

/// The contract, read with SQL: the events of the SLA's service that
/// served its customer, in the period; late when received from the period's end plus the grace on;
/// excluded when inside a window agreed for the SLA (announced with the
/// SLA's notice and, in Berlin time, within one day's slot of the
/// schedule; or accepted by its customer) and not cancelled; counted
/// otherwise. The three objectives over the counted events: a ratio, a
/// latency threshold (events without a latency are not measured by it,
/// unless they timed out: a timeout is slower than any threshold),
/// and Berlin days good at 95% (days without counted events weigh
/// nothing). Met when good × 10⁶ ≥ target (ppm) × total. A request with no
/// answer (no status) is bad: `status < 500` does not hold for it. No event
/// is both late and excluded (the windows are over before the month's last
/// night), so the oracle need not say which it would be.
///
/// The marked lines are the rules the mutations below replace.
const ORACLE: &str = "
WITH contract AS (
    SELECT $1::timestamptz AS period_start, $2::timestamptz AS period_end,
           interval '2 hours' AS late_grace, interval '48 hours' AS notice, $3::uuid AS sla_id,
           'Europe/Berlin'::text AS zone -- ZONE
),
schedule (dow, from_time, to_time) AS (
    VALUES (2, time '02:00', time '04:00'), (2, time '10:00', time '13:00'),
           (4, time '14:00', time '15:00')
),
windows AS (
    SELECT w.id, w.starts_at, w.ends_at, w.created_at,
           w.starts_at AT TIME ZONE c.zone AS local_start, w.ends_at AT TIME ZONE c.zone AS local_end
    FROM maintenance_windows w, contract c
    WHERE w.cancelled_at IS NULL
      AND (w.sla_id IS NULL OR w.sla_id = c.sla_id)
),
scheduled AS (
    SELECT w.id
    FROM windows w JOIN schedule s ON extract(isodow FROM w.local_start) = s.dow
    WHERE w.local_start::date = w.local_end::date
      AND w.local_start::time >= s.from_time AND w.local_end::time <= s.to_time
),
agreed AS (
    SELECT w.starts_at, w.ends_at
    FROM windows w, contract c
    WHERE (w.starts_at - w.created_at >= c.notice -- AGREEMENT
           AND w.id IN (SELECT id FROM scheduled)) -- SCHEDULED
       OR EXISTS (SELECT 1 FROM maintenance_acceptances a JOIN customers k ON k.id = a.customer_id
                  WHERE a.window_id = w.id AND a.sla_id = c.sla_id AND k.external_ref = 'acme-corp')
),
judged AS (
    SELECT e.occurred_at, e.status, e.latency_us,
           (e.latency_us IS NOT NULL OR e.error_class = 'timeout' OR e.status = 504) AS measured, -- TIMEOUTS
           EXISTS (SELECT 1 FROM agreed m
                   WHERE e.occurred_at >= m.starts_at AND e.occurred_at < m.ends_at) AS excluded,
           e.received_at >= c.period_end + c.late_grace AS late -- LATENESS
    FROM events e, contract c
    WHERE e.service = 'chat' AND e.occurred_at >= c.period_start AND e.occurred_at < c.period_end
      AND e.customer = 'acme-corp' -- CUSTOMER
),
counted AS (
    SELECT * FROM judged WHERE NOT excluded AND NOT late
),
days AS (
    SELECT count(*) FILTER (WHERE status < 500) AS good, count(*) AS total
    FROM counted
    GROUP BY date_trunc('day', occurred_at AT TIME ZONE 'Europe/Berlin') -- DAYS
),
objectives AS (
    SELECT 'availability' AS objective,
           (SELECT count(*) FILTER (WHERE status < 500) FROM counted) AS good,
           (SELECT count(*) FROM counted) AS total,
           (SELECT count(*) FILTER (WHERE status < 500) FROM judged WHERE excluded) AS excluded_good,
           (SELECT count(*) FROM judged WHERE excluded) AS excluded,
           (SELECT count(*) FILTER (WHERE status < 500) FROM judged WHERE late AND NOT excluded) AS late_good,
           (SELECT count(*) FROM judged WHERE late AND NOT excluded) AS late
    UNION ALL
    SELECT 'latency',
           (SELECT count(*) FILTER (WHERE latency_us <= 800000) FROM counted WHERE measured),
           (SELECT count(*) FROM counted WHERE measured),
           (SELECT count(*) FILTER (WHERE latency_us <= 800000) FROM judged WHERE excluded AND measured),
           (SELECT count(*) FROM judged WHERE excluded AND measured),
           (SELECT count(*) FILTER (WHERE latency_us <= 800000) FROM judged WHERE late AND NOT excluded AND measured),
           (SELECT count(*) FROM judged WHERE late AND NOT excluded AND measured)
    UNION ALL
    SELECT 'good-days',
           (SELECT count(*) FILTER (WHERE good * 100 >= 95 * total) FROM days),
           (SELECT count(*) FROM days),
           (SELECT count(*) FILTER (WHERE status < 500) FROM judged WHERE excluded),
           (SELECT count(*) FROM judged WHERE excluded),
           (SELECT count(*) FILTER (WHERE status < 500) FROM judged WHERE late AND NOT excluded),
           (SELECT count(*) FROM judged WHERE late AND NOT excluded)
)
SELECT o.objective, o.good, o.total, o.excluded_good, o.excluded, o.late_good, o.late,
       o.good * 1000000 >= t.target_ppm * o.total AS met
FROM objectives o
JOIN (VALUES ('availability', 940000), ('latency', 935000), ('good-days', 900000))
    AS t (objective, target_ppm) USING (objective)
ORDER BY o.objective
";

/// The incidents of the impact credit (`docs/CREDITS.md`, "Impact"), read
/// with SQL from the same contract ([`ORACLE`]'s rules up to `judged`):
/// per UTC minute, the events not late (those in maintenance included:
/// a minute counts whole unless it lies wholly inside an agreed window,
/// and then it is left out); a minute is judged when it has at least the
/// objective's `minRequests` (availability 2, latency 1 measured
/// request), and is bad when its share of good ones is below
/// `minuteBelow` (availability: its target, 94%; latency 50%). An incident
/// is a run of bad judged minutes with no good judged minute between them,
/// at least `minMinutes` long (availability 3, latency 1) from its first
/// minute's start to its last minute's end; its requests are its judged
/// minutes' events.
const INCIDENTS: &str = "
minutes AS (
    SELECT date_trunc('minute', j.occurred_at) AS minute,
           count(*) FILTER (WHERE j.status < 500) AS a_good, count(*) AS a_total,
           count(*) FILTER (WHERE j.measured AND j.latency_us <= 800000) AS l_good,
           count(*) FILTER (WHERE j.measured) AS l_total
    FROM judged j WHERE NOT j.late
    GROUP BY 1
),
kept AS (
    SELECT m.* FROM minutes m
    WHERE NOT EXISTS (SELECT 1 FROM agreed w
                      WHERE w.starts_at <= m.minute AND w.ends_at >= m.minute + interval '1 minute') -- WHOLLY
),
rules (objective, below_ppm, min_requests, min_minutes) AS (
    VALUES ('availability', 940000, 2, 3), ('latency', 500000, 1, 1)
),
judged_minutes AS (
    SELECT 'availability' AS objective, minute, a_good AS good, a_total AS total FROM kept
    UNION ALL
    SELECT 'latency', minute, l_good, l_total FROM kept
),
flagged AS (
    SELECT m.objective, m.minute, m.total, m.good * 1000000 < r.below_ppm * m.total AS bad,
           r.min_minutes
    FROM judged_minutes m JOIN rules r USING (objective)
    WHERE m.total > 0 AND m.total >= r.min_requests
),
islands AS (
    SELECT f.*, count(*) FILTER (WHERE NOT f.bad)
               OVER (PARTITION BY f.objective ORDER BY f.minute) AS island
    FROM flagged f
)
SELECT objective, min(minute) AS start, max(minute) + interval '1 minute' AS end,
       sum(total)::int8 AS requests
FROM islands WHERE bad
GROUP BY objective, island, min_minutes
HAVING max(minute) + interval '1 minute' - min(minute) >= make_interval(mins => min_minutes)
ORDER BY objective, start
";

/// [`INCIDENTS`] on [`ORACLE`]'s rules, with `oracle` for [`ORACLE`] (the
/// contract's or a mutation of it).
fn incidents_sql(oracle: &str) -> String {
    let head = oracle
        .split_once("counted AS (")
        .expect("the oracle's CTEs end with `counted`")
        .0;
    format!("{head}{INCIDENTS}")
}

/// The rules a careless reading would apply instead, each one line of
/// [`ORACLE`] replaced: lateness judged per minute (an event counts when
/// received within the grace of its own minute), slices of UTC days, every
/// scheduled window excluded however late it was announced, the platform's
/// 72-hour notice instead of the SLA's, notice required to exceed rather
/// than reach the SLA's, every window with the notice excluded whether or
/// not the customer's schedule has it (the rule before maintenance needed
/// the customer's agreement), the schedule read in UTC; and every request
/// of the service counted, whichever customer it served. The generated
/// traffic must tell each from the contract.
const MUTATIONS: [(&str, &str, &str); 9] = [
    (
        "timeouts without a latency dropped",
        "(e.latency_us IS NOT NULL OR e.error_class = 'timeout' OR e.status = 504) AS measured, -- TIMEOUTS",
        "(e.latency_us IS NOT NULL) AS measured,",
    ),
    (
        "every customer's requests",
        "AND e.customer = 'acme-corp' -- CUSTOMER",
        "",
    ),
    (
        "lateness per minute",
        "e.received_at >= c.period_end + c.late_grace AS late -- LATENESS",
        "e.received_at >= date_trunc('minute', e.occurred_at) + interval '1 minute' + c.late_grace AS late",
    ),
    (
        "slices of UTC days",
        "GROUP BY date_trunc('day', occurred_at AT TIME ZONE 'Europe/Berlin') -- DAYS",
        "GROUP BY date_trunc('day', occurred_at AT TIME ZONE 'UTC')",
    ),
    (
        "every scheduled window excluded",
        "WHERE (w.starts_at - w.created_at >= c.notice -- AGREEMENT",
        "WHERE (true",
    ),
    (
        "the default notice",
        "WHERE (w.starts_at - w.created_at >= c.notice -- AGREEMENT",
        "WHERE (w.starts_at - w.created_at >= interval '72 hours'",
    ),
    (
        "notice exceeded, not reached",
        "WHERE (w.starts_at - w.created_at >= c.notice -- AGREEMENT",
        "WHERE (w.starts_at - w.created_at > c.notice",
    ),
    (
        "every window with the notice, scheduled or not",
        "AND w.id IN (SELECT id FROM scheduled)) -- SCHEDULED",
        "AND true)",
    ),
    (
        "the schedule in UTC",
        "'Europe/Berlin'::text AS zone -- ZONE",
        "'UTC'::text AS zone",
    ),
];

/// One objective's figures at the close, as the oracle and the evaluator
/// state them. `late_folded` is left out: the contract says nothing of it
/// (and the evaluator counts there events it then excludes for
/// maintenance, which its documentation says are part of the tally).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Figures {
    objective: String,
    /// Counted: good and total events (slices, for `good-days`).
    tally: Tally,
    /// Left out for agreed maintenance (events).
    excluded: Tally,
    /// Received after the close: not counted (events).
    late: Tally,
    met: bool,
}

fn micros(n: i64) -> Duration {
    Duration::microseconds(n)
}

/// A request to `service` for acme-corp and when it was received.
fn request(
    service: &str,
    occurred_at: DateTime<Utc>,
    received_at: DateTime<Utc>,
    status: Option<i32>,
    latency_us: Option<i64>,
) -> (StoredEvent, DateTime<Utc>) {
    request_of(
        Some("acme-corp"),
        service,
        occurred_at,
        received_at,
        status,
        latency_us,
    )
}

/// A request to `service` that served `customer`, and when it was received.
fn request_of(
    customer: Option<&str>,
    service: &str,
    occurred_at: DateTime<Utc>,
    received_at: DateTime<Utc>,
    status: Option<i32>,
    latency_us: Option<i64>,
) -> (StoredEvent, DateTime<Utc>) {
    let event = StoredEvent {
        id: Default::default(),
        occurred_at,
        source: EventSource::Provider,
        service: service.to_owned(),
        customer: customer.map(str::to_owned),
        model: Some("big".to_owned()),
        request_id: None,
        status,
        // A request that got no answer timed out.
        error_class: status.is_none().then(|| "timeout".to_owned()),
        latency_us,
        ttft_us: None,
        tpot_us: None,
        input_tokens: None,
        output_tokens: None,
        streaming: None,
        attributes: serde_json::json!({}),
    };
    (event, received_at)
}

/// Traffic: who answered what, how fast, and how long its telemetry took.
struct Traffic {
    rng: Xorshift,
    events: Vec<(StoredEvent, DateTime<Utc>)>,
}

impl Traffic {
    /// Most telemetry arrives within a second and a half; one request in
    /// twenty is reported between a minute and three hours late.
    fn delay(&mut self) -> Duration {
        if self.rng.chance(50) {
            micros(60_000_000 + self.rng.below(3 * 3_600_000_000 - 60_000_000))
        } else {
            micros(self.rng.below(1_500_000))
        }
    }

    /// A `chat` request at `occurred_at`, failing `bad_per_mille` times in
    /// a thousand (a few with no answer at all), slow (over 800 ms)
    /// `slow_per_mille` times; received `received_at`, or after
    /// [`Self::delay`].
    fn chat(
        &mut self,
        occurred_at: DateTime<Utc>,
        bad_per_mille: i64,
        slow_per_mille: i64,
        received_at: Option<DateTime<Utc>>,
    ) {
        let status = if self.rng.chance(bad_per_mille) {
            // One failure in eight got no answer.
            (!self.rng.chance(125)).then(|| [500, 502, 503][self.rng.below(3) as usize])
        } else if self.rng.chance(40) {
            Some([404, 429][self.rng.below(2) as usize])
        } else {
            Some(200)
        };
        let latency_us = match status {
            None => None,
            // A failed request sometimes reports no latency.
            Some(s) if s >= 500 && self.rng.chance(300) => None,
            _ if self.rng.chance(slow_per_mille) => Some(800_001 + self.rng.below(5_000_000)),
            // Exactly at the threshold: good.
            _ if self.rng.chance(10) => Some(800_000),
            _ => Some(20_000 + self.rng.below(780_001)),
        };
        let received_at = match received_at {
            Some(r) => r,
            None => occurred_at + self.delay(),
        };
        self.events.push(request(
            "chat",
            occurred_at,
            received_at,
            status,
            latency_us,
        ));
    }

    /// `chat` requests over `[from, to)`, one at a random instant of each
    /// `step`.
    fn stretch(
        &mut self,
        from: &str,
        to: &str,
        step: Duration,
        bad_per_mille: i64,
        slow_per_mille: i64,
    ) {
        let (mut t, to) = (at(from), at(to));
        while t < to {
            let jitter = micros(self.rng.below(step.num_microseconds().unwrap_or(1)));
            self.chat(t + jitter, bad_per_mille, slow_per_mille, None);
            t += step;
        }
    }

    /// A request received promptly at exactly `occurred_at`.
    fn exact(&mut self, occurred_at: DateTime<Utc>, status: i32) {
        self.events.push(request(
            "chat",
            occurred_at,
            occurred_at + micros(300_000),
            Some(status),
            Some(120_000),
        ));
    }
}

/// The month's traffic, deterministic: steady requests with 2% failures,
/// bad stretches (some inside maintenance, one during an emergency that was
/// announced too late), the repeated hour of the DST change, the period's
/// first and last microseconds, telemetry held up over the month's last
/// night (some of it arriving after the close), and another service.
fn october() -> Vec<(StoredEvent, DateTime<Utc>)> {
    let mut t = Traffic {
        rng: Xorshift(0x5eed_0c70_2026_1025),
        events: Vec::new(),
    };
    let (start, end) = (at(START), at(END));
    let month_us = (end - start).num_microseconds().unwrap_or(0);
    for _ in 0..6000 {
        let occurred_at = start + micros(t.rng.below(month_us));
        t.chat(occurred_at, 20, 40, None);
    }
    // An incident on the night of the 13th, partly inside the planned
    // window.
    t.stretch(
        "2026-10-13T20:00:00Z",
        "2026-10-14T05:00:00Z",
        Duration::seconds(60),
        400,
        500,
    );
    // The outage the emergency window was announced for, too late.
    t.stretch(
        "2026-10-20T08:00:00Z",
        "2026-10-20T10:30:00Z",
        Duration::seconds(30),
        600,
        300,
    );
    // Failures inside the other windows: excluded only where agreed.
    for (from, to) in [
        ("2026-10-08T12:00:00Z", "2026-10-08T13:00:00Z"),
        ("2026-10-17T14:00:00Z", "2026-10-17T14:45:00Z"),
        ("2026-10-22T06:00:00Z", "2026-10-22T07:00:00Z"),
        ("2026-10-27T01:00:00Z", "2026-10-27T02:30:00Z"),
    ] {
        t.stretch(from, to, Duration::seconds(60), 500, 500);
    }
    // Both runs of 02:00–03:00 local on the 25th (CEST, then CET): a shaky
    // hour, twice.
    t.stretch(
        "2026-10-25T00:00:00Z",
        "2026-10-25T02:00:00Z",
        Duration::seconds(90),
        120,
        80,
    );
    // The month's last night: its telemetry is held up and arrives in two
    // batches, one before the close and one after it.
    let (mut occurred_at, last) = (at("2026-10-31T21:30:00Z"), end);
    while occurred_at < last {
        let received_at = if occurred_at < at("2026-10-31T22:15:00Z") {
            at("2026-11-01T00:40:00Z")
        } else {
            at("2026-11-01T01:30:00Z")
        };
        let jittered = occurred_at + micros(t.rng.below(60_000_000));
        t.chat(jittered, 100, 60, Some(received_at));
        occurred_at += Duration::seconds(60);
    }
    // The period's edges, to the microsecond: its first instants and last
    // count, the instant before it and the one it ends at do not.
    t.exact(start, 200);
    t.exact(start + micros(1), 503);
    t.exact(end - micros(1), 503);
    t.exact(end - Duration::seconds(1), 200);
    t.exact(start - micros(1), 503);
    t.exact(end, 503);
    // At the close, to the microsecond: just before it counts, at it is late.
    t.chat(
        at("2026-10-31T22:10:00Z"),
        1000,
        0,
        Some(at(CLOSE) - micros(1)),
    );
    t.chat(at("2026-10-31T22:11:00Z"), 1000, 0, Some(at(CLOSE)));
    // The planned window's edges: its start is inside, its end is not.
    let (w_start, w_end) = planned_window();
    for instant in [w_start - micros(1), w_start, w_end - micros(1), w_end] {
        t.exact(instant, 503);
    }
    // Another service's failures: not this SLA's.
    for _ in 0..300 {
        let occurred_at = start + micros(t.rng.below(month_us));
        t.events.push(request(
            "embed",
            occurred_at,
            occurred_at,
            Some(503),
            Some(9_000_000),
        ));
    }
    // Other customers' requests on the same service, and requests that
    // name no customer: failing, and not this SLA's.
    for customer in [Some("globex"), None] {
        for _ in 0..300 {
            let occurred_at = start + micros(t.rng.below(month_us));
            t.events.push(request_of(
                customer,
                "chat",
                occurred_at,
                occurred_at,
                Some(503),
                Some(9_000_000),
            ));
        }
    }
    // Slow and failing requests inside the proposed window (last, so that
    // the draws before it stay as they were): they count, as the customer
    // never agreed to it.
    t.stretch(
        "2026-10-06T14:00:00Z",
        "2026-10-06T15:00:00Z",
        Duration::seconds(120),
        100,
        500,
    );
    t.events.sort_by_key(|(_, received_at)| *received_at);
    t.events
}

/// The planned window over the incident of the 13th: the whole Berlin day
/// of the 13th and the small hours of the 14th, ending mid-second.
fn planned_window() -> (DateTime<Utc>, DateTime<Utc>) {
    (
        at("2026-10-12T22:00:00Z"),
        at("2026-10-14T03:17:42.123456Z"),
    )
}

/// Records the month's maintenance windows, announced at chosen instants,
/// for the SLA or for every SLA of the tenant.
async fn announce_windows(s: &Scenario) {
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let stored = slas::find(&mut tx, "chat-sla", None).await.unwrap();
    let (sla, acme) = (stored.id, stored.customer.unwrap());
    let (w_start, w_end) = planned_window();
    // Outside the schedule, announced 30 days ahead, and accepted by the
    // customer.
    agreed(&mut tx, sla, w_start, w_end, "database upgrade")
        .await
        .unwrap();
    let window = |start: &str, end: &str, notice: Duration| {
        let (start, end) = (at(start), at(end));
        (start, end, start - notice)
    };
    // An emergency: inside the schedule (a Tuesday, 10:00–12:30 Berlin),
    // announced a second short of the SLA's 48 hours, never accepted. It
    // counts against the provider.
    let (start, end, when) = window(
        "2026-10-20T08:00:00Z",
        "2026-10-20T10:30:00Z",
        Duration::hours(48) - Duration::seconds(1),
    );
    announced(&mut tx, None, start, end, "failover", when)
        .await
        .unwrap();
    // Announced exactly 48 hours ahead, inside the schedule (a Tuesday,
    // 02:00–03:30 Berlin, in winter time): planned.
    let (start, end, when) = window(
        "2026-10-27T01:00:00Z",
        "2026-10-27T02:30:00Z",
        Duration::hours(48),
    );
    announced(&mut tx, Some(sla), start, end, "kernel patch", when)
        .await
        .unwrap();
    // Announced 60 hours ahead, the whole of Thursday's slot (14:00–15:00
    // Berlin, in summer time; 12:00–13:00 UTC): planned under this SLA's
    // 48 hours, though not under the platform's default 72.
    let (start, end, when) = window(
        "2026-10-08T12:00:00Z",
        "2026-10-08T13:00:00Z",
        Duration::hours(60),
    );
    announced(&mut tx, None, start, end, "network change", when)
        .await
        .unwrap();
    // Proposed: announced 5 days ahead, but a Tuesday 16:00–17:00 Berlin,
    // outside the schedule; never accepted. It counts against the provider.
    let (start, end, when) = window(
        "2026-10-06T14:00:00Z",
        "2026-10-06T15:00:00Z",
        Duration::days(5),
    );
    announced(&mut tx, Some(sla), start, end, "index rebuild", when)
        .await
        .unwrap();
    // An emergency announced an hour ahead, which the customer accepted.
    let (start, end, when) = window(
        "2026-10-17T14:00:00Z",
        "2026-10-17T14:45:00Z",
        Duration::hours(1),
    );
    let accepted = announced(&mut tx, Some(sla), start, end, "hotfix", when)
        .await
        .unwrap();
    maintenance::accept(&mut tx, accepted.id, sla, Some(acme), "cto@acme")
        .await
        .unwrap();
    // A planned window, cancelled: the provider did not take it.
    let (start, end, when) = window(
        "2026-10-22T06:00:00Z",
        "2026-10-22T07:00:00Z",
        Duration::days(10),
    );
    let cancelled = announced(&mut tx, Some(sla), start, end, "migration", when)
        .await
        .unwrap();
    maintenance::cancel(&mut tx, cancelled.id, "ops@provider")
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

/// An incident as the credit statement lists it: objective, start, end, requests.
type IncidentLine = (String, DateTime<Utc>, DateTime<Utc>, i64);

/// The incidents with `sql` ([`incidents_sql`]).
async fn incidents(s: &Scenario, sql: &str) -> Vec<IncidentLine> {
    rows_of(s, sql).await
}

/// The rows of an oracle query (`$1`, `$2`: the month; `$3`: the SLA).
async fn rows_of<R>(s: &Scenario, sql: &str) -> Vec<R>
where
    R: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> + Send + Unpin,
{
    let mut tx = s.db.tenant_tx(s.tenant).await.unwrap();
    let sla = slas::find(&mut tx, "chat-sla", None).await.unwrap().id;
    let rows: Vec<R> = sqlx::query_as(sql)
        .bind(at(START))
        .bind(at(END))
        .bind(sla.uuid())
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    rows
}

/// The oracle's figures (with `sql`, the contract's or a mutation of it).
async fn oracle(s: &Scenario, sql: &str) -> Vec<Figures> {
    type Row = (String, i64, i64, i64, i64, i64, i64, bool);
    let rows: Vec<Row> = rows_of(s, sql).await;
    let count = |n: i64| u64::try_from(n).expect("a count");
    let tally = |good: i64, total: i64| Tally {
        good: count(good),
        total: count(total),
    };
    rows.into_iter()
        .map(
            |(objective, good, total, excluded_good, excluded, late_good, late, met)| Figures {
                objective,
                tally: tally(good, total),
                excluded: tally(excluded_good, excluded),
                late: tally(late_good, late),
                met,
            },
        )
        .collect()
}

#[tokio::test]
async fn a_berlin_month_across_dst_with_maintenance_and_late_events_closes_as_plain_sql_counts_it()
{
    let s = Scenario::new(SLA, "2026-09-30", "2026-11-02").await;
    announce_windows(&s).await;
    let traffic = october();

    // Each round sees what was received before it.
    let mut sent = 0;
    let mut closing = None;
    for round in ROUNDS {
        let arrived = traffic.partition_point(|(_, received_at)| *received_at < at(round));
        s.insert_events(&traffic[sent..arrived]).await;
        sent = arrived;
        let run = s.run(round).await;
        if at(round) < at(CLOSE) {
            assert!(run.closed.is_empty(), "closed at {round}: {:?}", run.closed);
        } else {
            closing = Some(run);
        }
    }
    assert_eq!(sent, traffic.len(), "all of it arrived by the close");
    let closing = closing.expect("a round after the close");

    let mut evaluator: Vec<Figures> = closing
        .closed
        .iter()
        .map(|c| {
            let e = &c.evaluation;
            assert_eq!(c.revision, 1, "{}", e.objective);
            assert_eq!(
                (e.period.start, e.period.end),
                (at(START), at(END)),
                "{}",
                e.objective
            );
            Figures {
                objective: e.objective.clone(),
                tally: e.budget.tally,
                excluded: e.excluded,
                late: e.late,
                met: e.budget.met(),
            }
        })
        .collect();
    evaluator.sort_by(|a, b| a.objective.cmp(&b.objective));
    let expected = oracle(&s, ORACLE).await;
    assert_eq!(evaluator, expected);

    // Not vacuous: every rule had events to act on, the 13th (a Berlin day
    // wholly in agreed maintenance) is no slice of the 31, and the
    // verdicts differ: the emergency breaches availability, good days meet
    // their target exactly (27 of 30 is 90%), and latency is breached by
    // the requests that timed out without a latency (met when they are
    // dropped, as before they were counted: see the mutation).
    for f in &expected {
        assert!(
            f.tally.total > 0 && f.excluded.total > 0 && f.late.total > 0,
            "{f:?}"
        );
    }
    let verdicts: Vec<_> = expected
        .iter()
        .map(|f| (f.objective.as_str(), f.tally.total, f.met))
        .collect();
    assert_eq!(verdicts[1], ("good-days", 30, true));
    assert!(!verdicts[0].2 && !verdicts[2].2, "{verdicts:?}");

    // The data tells the contract from each careless reading of it.
    for (name, rule, replacement) in MUTATIONS {
        assert!(ORACLE.contains(rule), "{name}: the rule is in the oracle");
        let mutated = oracle(&s, &ORACLE.replace(rule, replacement)).await;
        assert_ne!(mutated, expected, "{name} gives the same figures");
    }

    // The impact credit's incidents, as the compensation worker finds them
    // in the minute rollups, are the ones plain SQL finds in the events.
    slaproof_compensation::work_due(&s.db, &slaproof_compensation::Settings::default(), "oracle")
        .await
        .unwrap();
    let (app, admin) = s.app().await;
    let credits = app
        .list_credits(
            &admin,
            &slaproof_app::credits::CreditQuery::default(),
            &slaproof_app::PageRequest::default(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(credits.len(), 1, "{credits:?}");
    let mut credited: Vec<IncidentLine> = credits[0].computation["computation"]["incidents"]
        .as_array()
        .expect("the statement lists its incidents")
        .iter()
        .map(|i| {
            (
                i["objective"].as_str().unwrap().to_owned(),
                i["start"].as_str().unwrap().parse().unwrap(),
                i["end"].as_str().unwrap().parse().unwrap(),
                i["requests"].as_i64().unwrap(),
            )
        })
        .collect();
    credited.sort();
    let expected_incidents = incidents(&s, &incidents_sql(ORACLE)).await;
    assert_eq!(credited, expected_incidents);
    // Not vacuous: both objectives have incidents, and the data tell the
    // contract from careless readings: every minute touching maintenance
    // left out (the planned window of the 13th ends mid-minute, and that
    // minute counts whole), late telemetry counted, every customer's
    // requests counted.
    for objective in ["availability", "latency"] {
        assert!(
            expected_incidents.iter().any(|i| i.0 == objective),
            "{objective}: {expected_incidents:?}"
        );
    }
    for (name, sql) in [
        (
            "minutes partly in maintenance left out",
            incidents_sql(ORACLE).replace(
                "w.starts_at <= m.minute AND w.ends_at >= m.minute + interval '1 minute') -- WHOLLY",
                "w.starts_at < m.minute + interval '1 minute' AND w.ends_at > m.minute)",
            ),
        ),
        (
            "late telemetry counted",
            incidents_sql(ORACLE).replace("FROM judged j WHERE NOT j.late", "FROM judged j"),
        ),
        (
            "every customer's requests",
            incidents_sql(&ORACLE.replace("AND e.customer = 'acme-corp' -- CUSTOMER", "")),
        ),
    ] {
        assert_ne!(sql, incidents_sql(ORACLE), "{name}: the rule is in the oracle");
        assert_ne!(
            incidents(&s, &sql).await,
            expected_incidents,
            "{name} gives the same incidents"
        );
    }

    // Telemetry arriving later still does not reopen the month.
    let straggler = request(
        "chat",
        at("2026-10-15T12:00:00Z"),
        at("2026-11-02T09:00:00Z"),
        Some(503),
        Some(100_000),
    );
    s.insert_events(&[straggler]).await;
    let run = s.run("2026-11-02T12:00:00Z").await;
    assert!(run.closed.is_empty(), "{:?}", run.closed);
}

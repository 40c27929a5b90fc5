-- The evaluator's tables: exact per-minute rollups of each objective, the
-- watermark they advance from, append-only evaluations, frozen period
-- results and burn-rate alert state.
--
-- Counts are integers: verdicts customers are paid on are never estimates.
-- Like every tenant table, keys lead with tenant_id and row-level security
-- is enabled, forced and keyed on app.tenant_id.

-- ---------------------------------------------------------------------------
-- Finding new events
-- ---------------------------------------------------------------------------
-- The evaluator reads events in the order they arrived (received_at), from
-- its watermark, so that an event arriving late is still seen exactly once
-- without rescanning whole days. Created on the partitioned parent, so every
-- daily partition gets it, now and later.
CREATE INDEX events_tenant_received ON events (tenant_id, received_at);

-- ---------------------------------------------------------------------------
-- Watermark
-- ---------------------------------------------------------------------------
CREATE TABLE evaluator_watermarks (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    -- Every event of the tenant received before this instant is in the
    -- rollups (or counted late); the next run reads from here on.
    received_before timestamptz NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id)
);
COMMENT ON TABLE evaluator_watermarks IS
    'Per tenant, how far (by arrival time) events have been rolled up: the evaluator advances it in the same transaction as the rollups, so no event is counted twice or missed.';

-- ---------------------------------------------------------------------------
-- Which SLA versions have rollups, and since when
-- ---------------------------------------------------------------------------
CREATE TABLE evaluator_coverage (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    -- The rollups of this version count every event that occurred at or
    -- after this instant: a new version is backfilled from here when it is
    -- first seen, then kept up to date from the watermark.
    covers_from timestamptz NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, version),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES sla_versions (tenant_id, sla_id, version)
);
COMMENT ON TABLE evaluator_coverage IS
    'The SLA versions the evaluator keeps rollups for and the first instant they cover, so a verdict never rests on a partly backfilled version.';

-- ---------------------------------------------------------------------------
-- Rollups
-- ---------------------------------------------------------------------------
CREATE TABLE evaluator_rollups (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    objective text NOT NULL,
    -- The UTC minute the events occurred in. Whole minutes line up with
    -- every time zone's midnight that matters and with time slices.
    minute timestamptz NOT NULL CONSTRAINT evaluator_rollups_whole_minute
        CHECK (extract(epoch FROM minute)::numeric % 60 = 0),
    -- Events counted by the objective that were good, and all counted
    -- events; maintenance is not applied here (windows may be added or
    -- cancelled later) but when evaluating.
    good bigint NOT NULL CONSTRAINT evaluator_rollups_good_nonnegative CHECK (good >= 0),
    total bigint NOT NULL CONSTRAINT evaluator_rollups_total_covers_good CHECK (total >= good),
    -- Of those, how many arrived after their minute had closed but within
    -- the grace period, and were folded in.
    late_folded bigint NOT NULL DEFAULT 0 CONSTRAINT evaluator_rollups_late_folded_range CHECK (late_folded >= 0 AND late_folded <= total),
    -- Counted events that arrived after the grace period: kept out of the
    -- verdict (the minute may already be part of a frozen period) but
    -- counted here, never dropped, and reported with every evaluation.
    late_good bigint NOT NULL DEFAULT 0 CONSTRAINT evaluator_rollups_late_good_nonnegative CHECK (late_good >= 0),
    late_total bigint NOT NULL DEFAULT 0 CONSTRAINT evaluator_rollups_late_total_covers_good CHECK (late_total >= late_good),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, version, objective, minute),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES evaluator_coverage (tenant_id, sla_id, version)
);
COMMENT ON TABLE evaluator_rollups IS
    'Exact good and total counts per objective and minute, advanced from the watermark: re-evaluating a month reads 43,200 rows per objective instead of every event.';

-- ---------------------------------------------------------------------------
-- Evaluations (append-only)
-- ---------------------------------------------------------------------------
CREATE TABLE evaluations (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    objective text NOT NULL,
    evaluated_at timestamptz NOT NULL DEFAULT now(),
    -- The data the verdict rests on: events received before this instant.
    as_of timestamptz NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    target_ppm integer NOT NULL CONSTRAINT evaluations_target_range CHECK (target_ppm > 0 AND target_ppm < 1000000),
    -- The numbers behind the verdict, so it can be explained and re-checked.
    good bigint NOT NULL,
    total bigint NOT NULL,
    excluded bigint NOT NULL,
    late_folded bigint NOT NULL,
    late_total bigint NOT NULL,
    met boolean NOT NULL,
    -- NULL when there were no counted events.
    compliance_ppm integer,
    budget_allowed bigint NOT NULL,
    budget_consumed bigint NOT NULL,
    budget_remaining bigint NOT NULL,
    -- Over the last hour, in thousandths (14400 = 14.4×).
    burn_rate_milli bigint NOT NULL,
    -- NULL: the budget is not burning.
    exhaustion_secs bigint,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT evaluations_counts CHECK (good >= 0 AND total >= good AND excluded >= 0 AND late_total >= 0),
    CONSTRAINT evaluations_period_ordered CHECK (period_end > period_start),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES sla_versions (tenant_id, sla_id, version)
);
CREATE INDEX evaluations_latest ON evaluations (tenant_id, sla_id, objective, evaluated_at DESC);
COMMENT ON TABLE evaluations IS
    'Append-only record of every verdict the evaluator reached, with the counts behind it: what was decided is never rewritten.';

-- ---------------------------------------------------------------------------
-- Frozen period results (append-only; corrections are new revisions)
-- ---------------------------------------------------------------------------
CREATE TABLE period_results (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    objective text NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    -- 1 when the period closes; a later correction adds revision 2, 3, …
    -- and the highest revision is in force. Rows are never updated.
    revision integer NOT NULL CONSTRAINT period_results_revision_positive CHECK (revision > 0),
    closed_at timestamptz NOT NULL DEFAULT now(),
    as_of timestamptz NOT NULL,
    target_ppm integer NOT NULL CONSTRAINT period_results_target_range CHECK (target_ppm > 0 AND target_ppm < 1000000),
    good bigint NOT NULL,
    total bigint NOT NULL,
    excluded bigint NOT NULL,
    late_total bigint NOT NULL,
    met boolean NOT NULL,
    compliance_ppm integer,
    -- The evaluation this result froze, for the trail from credit back to counts.
    evaluation_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT period_results_counts CHECK (good >= 0 AND total >= good AND excluded >= 0 AND late_total >= 0),
    CONSTRAINT period_results_period_ordered CHECK (period_end > period_start),
    CONSTRAINT period_results_revision_unique UNIQUE (tenant_id, sla_id, objective, period_start, revision),
    FOREIGN KEY (tenant_id, evaluation_id) REFERENCES evaluations (tenant_id, id)
);
COMMENT ON TABLE period_results IS
    'The immutable result of each closed period, consumed by compensation and attestation; later corrections are new revisions that supersede, never rewrite.';

-- ---------------------------------------------------------------------------
-- Burn-rate alert state
-- ---------------------------------------------------------------------------
CREATE TABLE alert_states (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    objective text NOT NULL,
    -- page-1h, page-6h, ticket-3d (see the domain's BurnRateAlertRule).
    rule text NOT NULL,
    firing boolean NOT NULL,
    -- When it last started or stopped firing.
    changed_at timestamptz NOT NULL,
    evaluated_at timestamptz NOT NULL,
    long_burn_milli bigint NOT NULL,
    short_burn_milli bigint NOT NULL,
    PRIMARY KEY (tenant_id, sla_id, objective, rule),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE alert_states IS
    'Whether each multiwindow burn-rate alert fires, so that firing and resolving are told once each (through the outbox), not at every evaluation.';

-- ---------------------------------------------------------------------------
-- Row-level security and privileges
-- ---------------------------------------------------------------------------
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['evaluator_watermarks', 'evaluator_coverage', 'evaluator_rollups',
                             'evaluations', 'period_results', 'alert_states'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

-- Working state may change; facts (evaluations, period results) may only be added.
GRANT SELECT, INSERT, UPDATE ON evaluator_watermarks TO slaproof_service;
GRANT SELECT, INSERT ON evaluator_coverage TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON evaluator_rollups TO slaproof_service;
GRANT SELECT, INSERT ON evaluations TO slaproof_service;
GRANT SELECT, INSERT ON period_results TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON alert_states TO slaproof_service;

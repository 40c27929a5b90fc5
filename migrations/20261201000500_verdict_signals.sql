-- In-period signals of an objective, judged against the period's expected
-- volume rather than the events so far (see services/evaluator/src/signals.rs):
-- at risk, budget exhausted, degrade level. A breach is only ever a closed
-- period not met, told at its close.

ALTER TABLE evaluations
    -- The events (or slices) the whole period is expected to hold: the
    -- volume so far extrapolated over the period. NULL with no events.
    ADD COLUMN expected_total bigint,
    -- Bad events the period would end with if the rest of it failed at the
    -- recent rate (the longest alert lookback).
    ADD COLUMN projected_bad bigint,
    ADD COLUMN at_risk boolean NOT NULL DEFAULT false,
    -- More bad events than the expected period may hold: the period can
    -- no longer be met at its expected volume.
    ADD COLUMN exhausted boolean NOT NULL DEFAULT false,
    -- 0 none, 1 light degrade, 2 full degrade (the SLA's degrade policy).
    ADD COLUMN degrade_level smallint NOT NULL DEFAULT 0
        CONSTRAINT evaluations_degrade_level CHECK (degrade_level BETWEEN 0 AND 2);

-- The signal state per objective and period, so that each change is told
-- once and a new period starts clean.
CREATE TABLE objective_signals (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    objective text NOT NULL,
    period_start timestamptz NOT NULL,
    at_risk boolean NOT NULL DEFAULT false,
    exhausted boolean NOT NULL DEFAULT false,
    degrade_level smallint NOT NULL DEFAULT 0
        CONSTRAINT objective_signals_degrade_level CHECK (degrade_level BETWEEN 0 AND 2),
    -- Evaluations in a row with the short burn rate at or above the light
    -- degrade threshold.
    light_streak integer NOT NULL DEFAULT 0 CONSTRAINT objective_signals_streak CHECK (light_streak >= 0),
    changed_at timestamptz NOT NULL,
    evaluated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, sla_id, objective),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE objective_signals IS
    'In-period signals of each objective (at risk, budget exhausted at the expected volume, degrade level) as of the latest evaluation, kept so that each change is told once.';

ALTER TABLE objective_signals ENABLE ROW LEVEL SECURITY;
ALTER TABLE objective_signals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON objective_signals USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON objective_signals TO slaproof_service;

-- The old in-period breach and exhaustion states meant something else.
DELETE FROM alert_states WHERE rule IN ('breached', 'budget-exhausted');

-- Missing data per SLA: no events of its service for the SLA's
-- `policy.noData.after` while it is in force.
CREATE TABLE sla_signals (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    no_data boolean NOT NULL DEFAULT false,
    -- The end of the last minute with an event the SLA counts; NULL: none yet.
    last_event_at timestamptz,
    -- Since when data is missing (the end of the last minute with data, or
    -- the start of coverage); NULL while data arrives.
    no_data_since timestamptz,
    changed_at timestamptz NOT NULL,
    evaluated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, sla_id),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE sla_signals IS
    'Whether each SLA is missing data (no events of its service for its noData.after), since when, as of the latest evaluation.';

ALTER TABLE sla_signals ENABLE ROW LEVEL SECURITY;
ALTER TABLE sla_signals FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sla_signals USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON sla_signals TO slaproof_service;

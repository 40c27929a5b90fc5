-- Gauge values delivered by callback (a quality score for a request id),
-- judged by gauge objectives.
--
-- A value is about one request, named by (service, request_id); an SLA about
-- requests means the request's own time, so a value is placed at the
-- occurred_at of its request's event. The value may come before that event
-- (callbacks race with batched telemetry) or hours after it; it is stored at
-- once either way and stays pending until the evaluator finds the event and
-- attributes it, in the same transaction as the rollups it adds to, so each
-- value is counted exactly once.

-- ---------------------------------------------------------------------------
-- Finding a request's event
-- ---------------------------------------------------------------------------
-- The evaluator looks events up by (service, request_id) for pending values.
-- The idempotency key of events is (tenant_id, occurred_at, id), which
-- cannot be searched without the time, so this index is needed; partial,
-- because events without a request id are never looked up. It costs every
-- event write one more index entry (see docs/ARCHITECTURE.md).
CREATE INDEX events_tenant_request ON events (tenant_id, service, request_id)
    WHERE request_id IS NOT NULL;

-- ---------------------------------------------------------------------------
-- Values
-- ---------------------------------------------------------------------------
CREATE TABLE gauge_values (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    -- The gauge's name, as objectives name it (`quality_score`).
    metric text NOT NULL CONSTRAINT gauge_values_metric_name CHECK (metric ~ '^[a-z][a-z0-9_]{0,62}$'),
    service text NOT NULL,
    request_id text NOT NULL,
    value double precision NOT NULL
        CONSTRAINT gauge_values_value_finite CHECK (value <> 'NaN' AND value <> 'Infinity' AND value <> '-Infinity'),
    -- When the sender measured the value, if it said; kept for the record,
    -- not used to place the value (its request's time does that).
    measured_at timestamptz,
    received_at timestamptz NOT NULL DEFAULT now(),
    -- Set together when the evaluator attributes the value: its request's
    -- time, when value and event were both stored (the later of their
    -- arrivals, which lateness is judged on), and the watermark of the
    -- evaluator round that counted it. NULL while the event is missing.
    occurred_at timestamptz,
    arrived_at timestamptz,
    attributed_at timestamptz,
    PRIMARY KEY (tenant_id, metric, service, request_id),
    CONSTRAINT gauge_values_attributed_together CHECK (
        (occurred_at IS NULL) = (arrived_at IS NULL) AND (occurred_at IS NULL) = (attributed_at IS NULL)),
    CONSTRAINT gauge_values_arrived_after_receipt CHECK (arrived_at >= received_at)
);
-- Pending values, in arrival order: what each evaluator round tries to attribute.
CREATE INDEX gauge_values_pending ON gauge_values (tenant_id, received_at) WHERE attributed_at IS NULL;
-- Attributed values by their request's time: recounts, backfills of new SLA
-- versions and minutes cut by maintenance.
CREATE INDEX gauge_values_occurred ON gauge_values (tenant_id, service, metric, occurred_at)
    WHERE occurred_at IS NOT NULL;
COMMENT ON TABLE gauge_values IS
    'Values delivered by callback for one request each (a quality score), placed at the request''s time once its event is stored; one value per (metric, service, request_id), never replaced.';

ALTER TABLE gauge_values ENABLE ROW LEVEL SECURITY;
ALTER TABLE gauge_values FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON gauge_values USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());

-- UPDATE of the attribution columns only: a stored value is never rewritten
-- (ingest refuses a different value for a stored key), and the schema says so.
GRANT SELECT, INSERT ON gauge_values TO slaproof_service;
GRANT UPDATE (occurred_at, arrived_at, attributed_at) ON gauge_values TO slaproof_service;

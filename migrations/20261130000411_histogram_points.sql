-- GenAI histogram data points received over OTLP/HTTP `POST /v1/metrics`
-- (gen_ai.server.request.duration, gen_ai.server.time_to_first_token, ...).
--
-- A histogram is an aggregate, not requests: it cannot become per-request
-- events without inventing data, so each data point is kept as sent, for
-- charts and, later, for threshold objectives whose threshold is one of its
-- bucket bounds (the count of values <= T is exact exactly when T is a
-- bound).

CREATE TABLE histogram_points (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    -- Derived from the point's identity (metric, resource and point
    -- attributes, start and time), so an export sent again is stored once.
    id uuid NOT NULL,
    metric text NOT NULL,
    -- The instrument's unit as sent (`s` for durations, `{token}` for usage).
    unit text NOT NULL,
    -- The resource's service.name, and gen_ai.response.model (else
    -- gen_ai.request.model) of the point's attributes: what charts split by.
    service text NOT NULL,
    model text,
    -- The other attributes of the point (gen_ai.operation.name,
    -- gen_ai.token.type, error.type, ...), as strings, numbers or booleans.
    attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- delta: counts of [start_time, time); cumulative: since start_time.
    temporality text NOT NULL CONSTRAINT histogram_points_temporality_known
        CHECK (temporality IN ('delta', 'cumulative')),
    start_time timestamptz,
    time timestamptz NOT NULL,
    -- Explicit bucket bounds, strictly increasing; bucket i counts values in
    -- (bounds[i-1], bounds[i]], the last one values above the last bound.
    bounds double precision[] NOT NULL,
    bucket_counts bigint[] NOT NULL,
    count bigint NOT NULL CONSTRAINT histogram_points_count_nonnegative CHECK (count >= 0),
    sum double precision,
    min double precision,
    max double precision,
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT histogram_points_buckets_match_bounds CHECK (
        cardinality(bucket_counts) = cardinality(bounds) + 1 OR cardinality(bucket_counts) = 0)
);
CREATE INDEX histogram_points_series ON histogram_points (tenant_id, metric, service, time);
COMMENT ON TABLE histogram_points IS
    'GenAI histogram data points from OTLP metrics, stored as sent (bounds, bucket counts, sum, count): aggregates, never turned into per-request events.';

ALTER TABLE histogram_points ENABLE ROW LEVEL SECURITY;
ALTER TABLE histogram_points FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON histogram_points USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());

-- Facts as sent: added, never changed.
GRANT SELECT, INSERT ON histogram_points TO slaproof_service;

-- Chart sketches beside the rollups: per SLA version and UTC minute (and
-- hour), a DDSketch of the latency, time to first token and time per output
-- token of the events the SLA's service covers.
--
-- For charts only, never for verdicts: a percentile objective is judged on
-- exact counts at or under its threshold (evaluator_rollups). One row per
-- SLA and minute, not per objective: the three distributions are the
-- service's, whatever each objective filters, so three sketches a minute
-- serve every chart of the SLA at a fraction of the space.
--
-- Each column holds the sketch in the sketches-java binary encoding
-- (slaproof_evaluator::sketch); NULL when no event of the minute carried
-- the field. Sketches cannot be merged in SQL: the evaluator reads the rows
-- it touches, merges in Rust and writes them back, under the tenant's
-- watermark lock like the counts.

CREATE TABLE evaluator_sketches (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    minute timestamptz NOT NULL CONSTRAINT evaluator_sketches_whole_minute
        CHECK (extract(epoch FROM minute)::numeric % 60 = 0),
    -- Microseconds. Events within the grace period are folded in, as they
    -- are into the counts; later ones are not.
    latency bytea,
    ttft bytea,
    tpot bytea,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, version, minute),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES evaluator_coverage (tenant_id, sla_id, version)
);
COMMENT ON TABLE evaluator_sketches IS
    'Per SLA version and minute, mergeable DDSketches of latency, TTFT and TPOT for charts (never verdicts).';

CREATE TABLE evaluator_sketches_hourly (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    hour timestamptz NOT NULL CONSTRAINT evaluator_sketches_hourly_whole_hour
        CHECK (extract(epoch FROM hour)::numeric % 3600 = 0),
    -- The merge of the minute sketches of the same hour, written with them.
    latency bytea,
    ttft bytea,
    tpot bytea,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, version, hour),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES evaluator_coverage (tenant_id, sla_id, version)
);
COMMENT ON TABLE evaluator_sketches_hourly IS
    'Per SLA version and hour, the merged minute sketches: charts over weeks read hours.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['evaluator_sketches', 'evaluator_sketches_hourly'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

GRANT SELECT, INSERT, UPDATE ON evaluator_sketches TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON evaluator_sketches_hourly TO slaproof_service;

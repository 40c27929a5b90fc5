-- Composite verdicts: when any objective of an SLA carries a weight, the
-- SLA's weighted composite (slaproof_domain::composite) is evaluated beside
-- its objectives, and frozen with them when a period closes.
--
-- Its own tables rather than rows of `evaluations`/`period_results`: a
-- composite has no good/total counts and no target of its own (it is met
-- when the weighted share of error budget consumed, C, is at most 1), so
-- reusing those columns would make every reader tell the two apart. The
-- rows keep the parts they combined (each objective's weight, target,
-- counts and the evaluation they came from), so a composite verdict is
-- explained from the objectives' own numbers. Append-only like the
-- objectives' records: corrections are new revisions.

CREATE TABLE composite_evaluations (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    evaluated_at timestamptz NOT NULL DEFAULT now(),
    -- The data the verdict rests on: events received before this instant.
    as_of timestamptz NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    -- C × 10¹²: the weighted share of the objectives' error budgets used
    -- (10¹² = exactly spent); at most 10¹⁸ (every event bad at a 1 ppm
    -- budget), so it fits.
    consumed_pico bigint NOT NULL CONSTRAINT composite_evaluations_consumed_nonnegative CHECK (consumed_pico >= 0),
    -- 1 − C, for readers; negative once overspent.
    remaining_pico bigint GENERATED ALWAYS AS (1000000000000 - consumed_pico) STORED,
    -- C ≤ 1; NULL when no objective had any counted event or slice.
    met boolean,
    -- The weighted mean of the objectives' burn rates over the last hour,
    -- in thousandths.
    burn_rate_milli bigint NOT NULL,
    -- NULL: the composite budget is not burning.
    exhaustion_secs bigint,
    -- [{objective, weightMicros, targetPpm, good, total, consumedPico, evaluation}]
    parts jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT composite_evaluations_period_ordered CHECK (period_end > period_start),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES sla_versions (tenant_id, sla_id, version)
);
CREATE INDEX composite_evaluations_latest ON composite_evaluations (tenant_id, sla_id, evaluated_at DESC);
COMMENT ON TABLE composite_evaluations IS
    'Append-only record of every composite verdict (weighted error budgets of an SLA''s objectives), with the parts it combined.';

CREATE TABLE composite_period_results (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    -- 1 when the period closes; a correction adds the next, the highest is
    -- in force. Rows are never updated.
    revision integer NOT NULL CONSTRAINT composite_period_results_revision_positive CHECK (revision > 0),
    closed_at timestamptz NOT NULL DEFAULT now(),
    as_of timestamptz NOT NULL,
    consumed_pico bigint NOT NULL CONSTRAINT composite_period_results_consumed_nonnegative CHECK (consumed_pico >= 0),
    remaining_pico bigint GENERATED ALWAYS AS (1000000000000 - consumed_pico) STORED,
    met boolean,
    -- As in composite_evaluations; `evaluation` names the objective's
    -- evaluation frozen in period_results.
    parts jsonb NOT NULL,
    composite_evaluation_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT composite_period_results_period_ordered CHECK (period_end > period_start),
    CONSTRAINT composite_period_results_revision_unique UNIQUE (tenant_id, sla_id, period_start, revision),
    FOREIGN KEY (tenant_id, composite_evaluation_id) REFERENCES composite_evaluations (tenant_id, id)
);
COMMENT ON TABLE composite_period_results IS
    'The immutable composite result of each closed period; later corrections are new revisions that supersede, never rewrite.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['composite_evaluations', 'composite_period_results'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

-- Facts may only be added.
GRANT SELECT, INSERT ON composite_evaluations TO slaproof_service;
GRANT SELECT, INSERT ON composite_period_results TO slaproof_service;

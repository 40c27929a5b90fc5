-- Hourly rollups beside the minute ones: re-evaluating a month sums 720
-- rows per objective (plus the minutes of the partial hours at its edges)
-- instead of 43,200.
--
-- Both tables are keyed time first, then objective: every read is a time
-- range over all objectives of one SLA version (a period, its edges, the
-- alert lookbacks, maintenance), which is then one contiguous index range.
ALTER TABLE evaluator_rollups DROP CONSTRAINT evaluator_rollups_pkey;
ALTER TABLE evaluator_rollups ADD PRIMARY KEY (tenant_id, sla_id, version, minute, objective);

CREATE TABLE evaluator_rollups_hourly (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    objective text NOT NULL,
    -- The UTC hour the events occurred in.
    hour timestamptz NOT NULL CONSTRAINT evaluator_rollups_hourly_whole_hour
        CHECK (extract(epoch FROM hour)::numeric % 3600 = 0),
    -- Always the sums of the minute rows of the same hour: both are written
    -- in the same transaction from the same counts.
    good bigint NOT NULL CONSTRAINT evaluator_rollups_hourly_good_nonnegative CHECK (good >= 0),
    total bigint NOT NULL CONSTRAINT evaluator_rollups_hourly_total_covers_good CHECK (total >= good),
    late_folded bigint NOT NULL DEFAULT 0 CONSTRAINT evaluator_rollups_hourly_late_folded_range CHECK (late_folded >= 0 AND late_folded <= total),
    late_good bigint NOT NULL DEFAULT 0 CONSTRAINT evaluator_rollups_hourly_late_good_nonnegative CHECK (late_good >= 0),
    late_total bigint NOT NULL DEFAULT 0 CONSTRAINT evaluator_rollups_hourly_late_total_covers_good CHECK (late_total >= late_good),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, version, hour, objective),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES evaluator_coverage (tenant_id, sla_id, version)
);
COMMENT ON TABLE evaluator_rollups_hourly IS
    'Exact good and total counts per objective and UTC hour, the sums of evaluator_rollups: long periods are summed from hours, their edges from minutes.';

ALTER TABLE evaluator_rollups_hourly ENABLE ROW LEVEL SECURITY;
ALTER TABLE evaluator_rollups_hourly FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON evaluator_rollups_hourly
    USING (tenant_id = slaproof_current_tenant()) WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON evaluator_rollups_hourly TO slaproof_service;

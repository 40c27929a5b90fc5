-- Maintenance changes the evaluator cannot miss.
--
-- The evaluator judges a day or a period again when a maintenance window
-- over it changed after it was last judged: it compared the window's
-- created_at / cancelled_at / accepted_at with when the day was measured.
-- Those stamps were the writer's transaction start (now()) or the API's own
-- clock, and a transaction that started before a measurement but committed
-- after it was invisible to the measurement and stamped earlier than it:
-- the change was never judged (the day's measurement, and so the proof,
-- kept counting a minute the period's result excludes). And a day measured
-- again to the same numbers writes no revision, so a window that changes
-- nothing on a day made it "changed" every round after.
--
-- Now:
--   * every change to a window is stamped changed_at by the database clock
--     after taking the tenant's maintenance lock in shared mode
--     (slaproof_maintenance_change, held to the writer's commit);
--   * a reader takes that lock exclusively for an instant
--     (slaproof_maintenance_settled): every change in flight has committed
--     by then, and every later one is stamped after the instant it answers,
--     which the reader records as when it judged;
--   * a day measured again without a new revision is noted in
--     measurement_checks, as period_checks does for periods.

ALTER TABLE maintenance_windows ADD COLUMN changed_at timestamptz;
UPDATE maintenance_windows SET changed_at = greatest(created_at, cancelled_at, accepted_at);
ALTER TABLE maintenance_windows ALTER COLUMN changed_at SET NOT NULL;
COMMENT ON COLUMN maintenance_windows.changed_at IS
    'When the window last changed what it excludes (announced, cancelled, accepted), by the database clock under the tenant''s maintenance lock: what the evaluator compares with when it last judged a day or period.';

CREATE FUNCTION slaproof_maintenance_change(tenant uuid) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    -- Shared: changes do not wait on each other, only on a reader settling.
    PERFORM pg_advisory_xact_lock_shared(hashtextextended('slaproof-maintenance:' || tenant::text, 0));
    RETURN clock_timestamp();
END
$$;
COMMENT ON FUNCTION slaproof_maintenance_change(uuid) IS
    'Takes the tenant''s maintenance lock in shared mode until the transaction ends and answers the clock after it: the stamp of a maintenance change.';

CREATE FUNCTION slaproof_maintenance_settled(tenant uuid) RETURNS timestamptz
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    at timestamptz;
BEGIN
    -- The lock is taken in a subtransaction that is then rolled back, which
    -- releases it at once (a session-level lock could outlive a cancelled
    -- call on a pooled connection; a transaction-level one would block
    -- every change until the reader's round ends). The variable survives.
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtextextended('slaproof-maintenance:' || tenant::text, 0));
        at := clock_timestamp();
        RAISE SQLSTATE 'SPM01';
    EXCEPTION WHEN SQLSTATE 'SPM01' THEN
        NULL;
    END;
    RETURN at;
END
$$;
COMMENT ON FUNCTION slaproof_maintenance_settled(uuid) IS
    'Waits until no maintenance change of the tenant is in flight and answers the clock at that instant: every change stamped at or before it is visible to statements after it.';

CREATE TABLE measurement_checks (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    sla_version integer NOT NULL,
    day_start timestamptz NOT NULL,
    checked_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, sla_id, sla_version, day_start),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE measurement_checks IS
    'When a measured day was last measured again without a new revision (its numbers unchanged): without it, a change that moves nothing on the day would make it stale every round.';

ALTER TABLE measurement_checks ENABLE ROW LEVEL SECURITY;
ALTER TABLE measurement_checks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON measurement_checks USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON measurement_checks TO slaproof_service;

-- Failing work is retried, never given up on; one SLA that cannot be
-- evaluated no longer fails its tenant's evaluation (issue #12, item 5).
--
-- Before: a job that failed max_attempts (10) times got failed_at, claiming
-- skipped it, and asking for it again did not clear it: a tenant whose
-- evaluation failed for five minutes (the evaluator asks every round) was
-- never evaluated again. And any SLA whose evaluation failed failed the
-- whole tenant's, every round.
--
-- Now:
--   * a failed attempt is retried after a delay that grows with the
--     attempts in a row (2^attempts seconds, capped at ten minutes, less a
--     random part; chosen by the caller of slaproof_store::jobs::fail);
--   * once attempts reach max_attempts the job is marked stuck
--     (stuck_since, the renamed failed_at) and shown as such, but still
--     retried at the capped delay;
--   * a success, or an explicit request for the work, clears the failure
--     state (the evaluator's routine request of every round does not, or
--     it would undo the delay);
--   * a job with a dedup key is kept after it succeeds (run_at NULL: not
--     asked for), so a tenant's evaluation has one row that says when it
--     last succeeded; jobs without a key are still deleted when done;
--   * the evaluator evaluates each SLA in a savepoint of its own and keeps
--     the ones that fail in evaluation_failures, going on with the others.

-- ---------------------------------------------------------------------------
-- Jobs: retried with backoff, marked stuck, kept after success
-- ---------------------------------------------------------------------------
-- Rows marked failed by the old rule are stuck now: their run_at is in the
-- past, so the claim below takes them again.
ALTER TABLE jobs RENAME COLUMN failed_at TO stuck_since;
COMMENT ON COLUMN jobs.stuck_since IS
    'When the attempts in a row since the last success first reached max_attempts: the job is shown as stuck, and still retried at the longest delay.';
ALTER TABLE jobs ADD COLUMN failing_since timestamptz;
COMMENT ON COLUMN jobs.failing_since IS
    'The first failed attempt since the last success (or explicit request); NULL when the job is not failing.';
ALTER TABLE jobs ADD COLUMN last_failed_at timestamptz;
COMMENT ON COLUMN jobs.last_failed_at IS 'The latest failed attempt since the last success.';
ALTER TABLE jobs ADD COLUMN succeeded_at timestamptz;
COMMENT ON COLUMN jobs.succeeded_at IS 'When the last successful run (of a job kept after success) started.';
UPDATE jobs SET failing_since = stuck_since, last_failed_at = stuck_since WHERE stuck_since IS NOT NULL;

-- NULL: done and kept (a job with a dedup key) until the work is asked for
-- again; asking sets it, since least() ignores NULL.
ALTER TABLE jobs ALTER COLUMN run_at DROP NOT NULL;
COMMENT ON COLUMN jobs.run_at IS
    'When the job is due: asked for, or retried after a failure; NULL for a job kept after success until its work is asked for again.';

DROP INDEX jobs_due;
CREATE INDEX jobs_due ON jobs (kind, run_at) WHERE run_at IS NOT NULL;
COMMENT ON TABLE jobs IS
    'Background work, claimed by any replica with FOR UPDATE SKIP LOCKED under a lease, retried with a growing delay when it fails; done jobs are deleted, or kept until asked for again when they have a dedup key.';

-- As in 20261201000100 (search path, qualified names, grants unchanged),
-- without the filter on failed_at: a stuck job is due at its run_at like
-- any other.
CREATE OR REPLACE FUNCTION public.slaproof_claim_jobs(p_kind text, p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, kind text, payload jsonb, attempts integer)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        WITH due AS (
            SELECT j.tenant_id, j.id FROM public.jobs j
            WHERE j.kind = p_kind AND j.run_at <= pg_catalog.now()
              AND (j.locked_until IS NULL OR j.locked_until < pg_catalog.now())
            ORDER BY j.run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.jobs j
        SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease,
            attempts = j.attempts + CAST(1 AS pg_catalog.int4), requeued = false
        FROM due WHERE j.tenant_id = due.tenant_id AND j.id = due.id
        RETURNING j.tenant_id, j.id, j.kind, j.payload, j.attempts
    $$;

-- ---------------------------------------------------------------------------
-- SLAs whose evaluation fails while their tenant's others go on
-- ---------------------------------------------------------------------------
CREATE TABLE evaluation_failures (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    -- The version that failed: the one in force, or an earlier one kept to
    -- close its last period.
    version integer NOT NULL,
    -- Evaluation rounds in a row that failed on this SLA.
    failures integer NOT NULL DEFAULT 1 CONSTRAINT evaluation_failures_failures_positive CHECK (failures > 0),
    -- What went wrong, as the evaluator's error says it (shown to the
    -- provider): the SLA's other evaluations are unaffected.
    last_error text NOT NULL,
    first_failed_at timestamptz NOT NULL DEFAULT now(),
    last_failed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE evaluation_failures IS
    'SLAs whose latest evaluation failed (rolled back to its own savepoint while the tenant''s other SLAs were evaluated), since when and why; a row goes when the SLA is evaluated again.';

ALTER TABLE evaluation_failures ENABLE ROW LEVEL SECURITY;
ALTER TABLE evaluation_failures FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON evaluation_failures USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());

-- The evaluator records and clears failures; the API reads them.
GRANT SELECT, INSERT, UPDATE, DELETE ON evaluation_failures TO slaproof_service;

-- The claim functions in PL/pgSQL, each row locked on its own: what Citus
-- (docs/OPERATIONS.md, "Citus") needs, and the same claims on a single
-- Postgres.
--
-- On a Citus cluster (tried on 13.2.2, three nodes) the LANGUAGE sql
-- versions fail on every call: Citus cannot plan a SQL function's
-- parameters against distributed tables ("could not create distributed
-- plan"), and a `SELECT … ORDER BY … LIMIT … FOR UPDATE SKIP LOCKED` over
-- every shard is refused ("could not run distributed query with FOR
-- UPDATE/SHARE commands"). These read the due rows without a lock (one
-- multi-shard read), then take each with a single-row `FOR UPDATE SKIP
-- LOCKED` filtered on tenant_id and id (routed to one shard), re-checking
-- that it is still due, so two claimers never take the same row. Up to
-- four times the limit is read so that rows another claimer took do not
-- starve the round. Signatures, results and grants are unchanged.
--
-- slaproof_message_customers moves to PL/pgSQL for the same planning
-- reason (a SQL function with parameters reading `slas`).

CREATE OR REPLACE FUNCTION public.slaproof_claim_jobs(p_kind text, p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, kind text, payload jsonb, attempts integer)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        c record;
        taken integer := 0;
    BEGIN
        FOR c IN
            SELECT j.tenant_id, j.id FROM public.jobs j
            WHERE j.kind = p_kind AND j.run_at <= pg_catalog.now()
              AND (j.locked_until IS NULL OR j.locked_until < pg_catalog.now())
            ORDER BY j.run_at
            LIMIT p_limit * 4
        LOOP
            EXIT WHEN taken >= p_limit;
            -- one shard: lock the row unless another claimer holds it, and
            -- only if it is still due
            PERFORM 1 FROM public.jobs j
            WHERE j.tenant_id = c.tenant_id AND j.id = c.id
              AND j.run_at <= pg_catalog.now()
              AND (j.locked_until IS NULL OR j.locked_until < pg_catalog.now())
            FOR UPDATE SKIP LOCKED;
            CONTINUE WHEN NOT FOUND;
            RETURN QUERY
                UPDATE public.jobs j
                SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease,
                    attempts = j.attempts + CAST(1 AS pg_catalog.int4), requeued = false
                WHERE j.tenant_id = c.tenant_id AND j.id = c.id
                RETURNING j.tenant_id, j.id, j.kind, j.payload, j.attempts;
            taken := taken + 1;
        END LOOP;
    END
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_claim_outbox(p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, seq bigint, event_type text, payload jsonb, created_at timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        c record;
        taken integer := 0;
    BEGIN
        FOR c IN
            SELECT o.tenant_id, o.id FROM public.outbox o
            WHERE o.dispatched_at IS NULL AND (o.locked_until IS NULL OR o.locked_until < pg_catalog.now())
            ORDER BY o.seq
            LIMIT p_limit * 4
        LOOP
            EXIT WHEN taken >= p_limit;
            PERFORM 1 FROM public.outbox o
            WHERE o.tenant_id = c.tenant_id AND o.id = c.id
              AND o.dispatched_at IS NULL AND (o.locked_until IS NULL OR o.locked_until < pg_catalog.now())
            FOR UPDATE SKIP LOCKED;
            CONTINUE WHEN NOT FOUND;
            RETURN QUERY
                UPDATE public.outbox o
                SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease
                WHERE o.tenant_id = c.tenant_id AND o.id = c.id
                RETURNING o.tenant_id, o.id, o.seq, o.event_type, o.payload, o.created_at;
            taken := taken + 1;
        END LOOP;
    END
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_claim_probes(p_limit integer)
    RETURNS TABLE (tenant_id uuid, id uuid, scheduled_at timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        c record;
        taken integer := 0;
    BEGIN
        FOR c IN
            SELECT p.tenant_id, p.id FROM public.probes p
            WHERE p.enabled AND p.next_run_at <= pg_catalog.now()
            ORDER BY p.next_run_at
            LIMIT p_limit * 4
        LOOP
            EXIT WHEN taken >= p_limit;
            PERFORM 1 FROM public.probes p
            WHERE p.tenant_id = c.tenant_id AND p.id = c.id
              AND p.enabled AND p.next_run_at <= pg_catalog.now()
            FOR UPDATE SKIP LOCKED;
            CONTINUE WHEN NOT FOUND;
            -- as in 20261201000100: the next run on the probe's phase grid
            RETURN QUERY
                WITH due AS (
                    SELECT p.tenant_id, p.id, p.next_run_at, p.interval_secs,
                        CAST((pg_catalog.hashtextextended(CAST(p.id AS pg_catalog.text), CAST(0 AS pg_catalog.int8))
                                % CAST(p.interval_secs * 1000 AS pg_catalog.int8)
                            + CAST(p.interval_secs * 1000 AS pg_catalog.int8))
                            % CAST(p.interval_secs * 1000 AS pg_catalog.int8) AS pg_catalog.numeric)
                            / CAST(1000 AS pg_catalog.numeric) AS phase
                    FROM public.probes p
                    WHERE p.tenant_id = c.tenant_id AND p.id = c.id
                )
                UPDATE public.probes p
                SET next_run_at = pg_catalog.to_timestamp(CAST(due.phase + due.interval_secs
                        * (pg_catalog.floor((EXTRACT(epoch FROM pg_catalog.now()) - due.phase) / due.interval_secs) + 1)
                        AS pg_catalog.float8))
                FROM due WHERE p.tenant_id = c.tenant_id AND p.id = c.id AND due.tenant_id = p.tenant_id AND due.id = p.id
                RETURNING p.tenant_id, p.id, due.next_run_at;
            taken := taken + 1;
        END LOOP;
    END
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_message_customers(p_tenant uuid, p_payload jsonb) RETURNS uuid[]
    LANGUAGE plpgsql STABLE
    AS $$
    BEGIN
        RETURN (
            SELECT coalesce(array_agg(DISTINCT c.customer_id), '{}') FROM (
                SELECT slaproof_prefixed_uuid(p_payload ->> 'customer', 'cus') AS customer_id
                UNION ALL
                SELECT s.customer_id FROM slas s
                WHERE s.tenant_id = p_tenant
                  AND s.id IN (
                      SELECT slaproof_prefixed_uuid(p_payload ->> 'sla', 'sla')
                      UNION ALL
                      SELECT slaproof_prefixed_uuid(x ->> 'sla', 'sla')
                      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_payload -> 'slas') = 'array'
                                                     THEN p_payload -> 'slas' ELSE '[]'::jsonb END) AS x)
            ) c
            WHERE c.customer_id IS NOT NULL);
    END
    $$;

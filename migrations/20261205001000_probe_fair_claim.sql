-- Probe runs fair across tenants (issue #31, item 5). Before, the runner
-- claimed due probes in `next_run_at` order into every free slot: one
-- tenant with many slow probes held every slot of every runner, and the
-- other tenants' probes that fell due meanwhile were claimed late or, their
-- slot passed, skipped.
--
-- Now the runner says what it holds of each tenant (`p_held_tenants`,
-- `p_held_counts`), a tenant is given no more than `p_per_tenant` of its
-- slots, and the due probes are taken in turns: each tenant's earliest,
-- then each tenant's second, and so on. Otherwise as in
-- 20261201001600_citus_claims.sql (the candidates read unlocked, each
-- locked and moved on to its next slot one at a time, for Citus).

DROP FUNCTION public.slaproof_claim_probes(integer);

CREATE FUNCTION public.slaproof_claim_probes(p_limit integer, p_per_tenant integer,
                                             p_held_tenants uuid[], p_held_counts integer[])
    RETURNS TABLE (tenant_id uuid, id uuid, scheduled_at timestamptz)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        c record;
        taken integer := 0;
        -- The tenants met in this claim and what each holds, counting what
        -- this claim gave it.
        v_tenants uuid[] := '{}';
        v_held integer[] := '{}';
        v_i integer;
    BEGIN
        FOR c IN
            SELECT d.tenant_id, d.id FROM (
                SELECT p.tenant_id, p.id, p.next_run_at,
                       pg_catalog.row_number() OVER (PARTITION BY p.tenant_id
                                                     ORDER BY p.next_run_at, p.id) AS turn
                FROM public.probes p
                WHERE p.enabled AND p.next_run_at <= pg_catalog.now()
            ) d
            ORDER BY d.turn, d.next_run_at
            LIMIT p_limit * 4
        LOOP
            EXIT WHEN taken >= p_limit;
            v_i := pg_catalog.array_position(v_tenants, c.tenant_id);
            IF v_i IS NULL THEN
                v_tenants := v_tenants || c.tenant_id;
                v_held := v_held || COALESCE(
                    p_held_counts[pg_catalog.array_position(p_held_tenants, c.tenant_id)], 0);
                v_i := pg_catalog.cardinality(v_tenants);
            END IF;
            CONTINUE WHEN v_held[v_i] >= p_per_tenant;
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
            v_held[v_i] := v_held[v_i] + 1;
            taken := taken + 1;
        END LOOP;
    END
    $$;
REVOKE ALL ON FUNCTION slaproof_claim_probes(integer, integer, uuid[], integer[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_claim_probes(integer, integer, uuid[], integer[]) TO slaproof_service;

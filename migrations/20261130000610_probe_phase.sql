-- Probe jitter: probes created together (a `slaproof apply`, a script) used
-- to keep firing together, every run of every probe at the same second: a
-- thundering herd on the provider's endpoint and on the runners. Each
-- probe now runs on a grid of its own: the slots at phase + k * interval
-- seconds since the Unix epoch, with the phase taken from a hash of the
-- probe's id (millisecond resolution, within the interval). The phase is
-- deterministic, so the slots of one probe stay exactly one interval apart
-- and every replica computes the same ones; across many probes the hash
-- spreads the phases evenly over the interval.
--
-- The first run stays due at creation (a new probe shows a result within a
-- poll); the claim then moves next_run_at to the probe's next grid slot,
-- so the second run may come sooner than one interval after the first,
-- and from then on one interval apart. Claiming is unchanged otherwise:
-- FOR UPDATE SKIP LOCKED, next_run_at moved past now() in the same
-- statement (each slot claimed once; missed slots skipped, not run in a
-- burst), the claimed slot returned.
CREATE OR REPLACE FUNCTION slaproof_claim_probes(p_limit integer)
    RETURNS TABLE (tenant_id uuid, id uuid, scheduled_at timestamptz)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        WITH due AS (
            SELECT p.tenant_id, p.id, p.next_run_at, p.interval_secs,
                -- the phase in seconds, in [0, interval), to the millisecond
                ((hashtextextended(p.id::text, 0) % (p.interval_secs * 1000)
                    + p.interval_secs * 1000) % (p.interval_secs * 1000))::numeric / 1000 AS phase
            FROM public.probes p
            WHERE p.enabled AND p.next_run_at <= now()
            ORDER BY p.next_run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.probes p
        SET next_run_at = to_timestamp((due.phase + due.interval_secs
                * (floor((extract(epoch FROM now()) - due.phase) / due.interval_secs) + 1))::double precision)
        FROM due WHERE p.tenant_id = due.tenant_id AND p.id = due.id
        RETURNING p.tenant_id, p.id, due.next_run_at
    $$;

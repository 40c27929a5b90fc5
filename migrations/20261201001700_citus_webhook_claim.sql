-- The webhook delivery claim without a row lock across shards, for Citus
-- (docs/OPERATIONS.md, "Citus"): a multi-shard `FOR UPDATE … SKIP LOCKED`
-- is refused there ("could not run distributed query with FOR UPDATE/SHARE
-- commands"), and so is now(), or time arithmetic, inside CASE in an UPDATE. Claims are one at
-- a time already (the transaction-scoped advisory lock), so the candidates
-- are read without a lock and the lease is taken by an UPDATE that checks
-- again that each delivery is unfinished and unleased; a delivery whose
-- attempt is being recorded meanwhile waits for that row's lock and is then
-- left. The time is one variable for the whole claim. Otherwise as in
-- 20261201001200_webhooks_flow.sql.

CREATE OR REPLACE FUNCTION public.slaproof_claim_webhook_deliveries(p_worker text, p_limit integer, p_lease interval,
                                                  p_per_endpoint integer)
    RETURNS TABLE (tenant_id uuid, id uuid, endpoint_id uuid, url text, secret_sealed bytea,
                   previous_secret_sealed bytea, message_id uuid, event_type text, payload jsonb,
                   message_created_at timestamptz, attempt integer, headers jsonb)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        -- One instant for the whole claim, and a parameter to Citus, which
        -- refuses now() inside CASE in an UPDATE.
        v_now timestamptz := pg_catalog.now();
        -- Computed here: timestamptz arithmetic is not immutable either.
        v_window timestamptz := pg_catalog.now() - interval '1 second';
    BEGIN
        -- One claim at a time, to the end of the caller's statement: the
        -- statement below then sees every lease an earlier claim took.
        PERFORM pg_advisory_xact_lock(hashtextextended('slaproof.webhook_claim', 0));
        RETURN QUERY
        WITH candidates AS (
            SELECT d.tenant_id, d.id, d.endpoint_id, d.message_id, d.next_attempt_at
            FROM public.webhook_deliveries d
            WHERE d.delivered_at IS NULL AND d.failed_at IS NULL
              AND d.next_attempt_at <= v_now
              AND (d.locked_until IS NULL OR d.locked_until < v_now)
              AND EXISTS (
                  SELECT 1 FROM public.webhook_endpoints e
                  WHERE e.tenant_id = d.tenant_id AND e.id = d.endpoint_id AND e.enabled
                    AND (NOT e.ordered OR NOT EXISTS (
                        SELECT 1 FROM public.webhook_deliveries p
                        JOIN public.outbox po ON po.tenant_id = p.tenant_id AND po.id = p.message_id
                        JOIN public.outbox o ON o.tenant_id = d.tenant_id AND o.id = d.message_id
                        WHERE p.tenant_id = d.tenant_id AND p.endpoint_id = d.endpoint_id
                          AND p.delivered_at IS NULL AND p.failed_at IS NULL
                          AND (po.seq, p.id) < (o.seq, d.id))))
            ORDER BY d.next_attempt_at
            LIMIT p_limit * 4
        ), ranked AS (
            SELECT c.tenant_id, c.id, c.endpoint_id, c.next_attempt_at,
                   pg_catalog.row_number() OVER (PARTITION BY c.tenant_id, c.endpoint_id
                                                 ORDER BY o.seq, c.id) AS rank
            FROM candidates c
            JOIN public.outbox o ON o.tenant_id = c.tenant_id AND o.id = c.message_id
        ), room AS (
            SELECT e.tenant_id, e.id,
                   LEAST(
                       CASE WHEN e.ordered THEN 1 ELSE p_per_endpoint END
                           - (SELECT pg_catalog.count(*) FROM public.webhook_deliveries f
                              WHERE f.tenant_id = e.tenant_id AND f.endpoint_id = e.id
                                AND f.delivered_at IS NULL AND f.failed_at IS NULL
                                AND f.locked_until IS NOT NULL
                                AND f.locked_until >= v_now),
                       CASE WHEN e.rate_limit_per_sec IS NULL THEN p_limit
                            WHEN e.rate_window_start > v_window
                                THEN e.rate_limit_per_sec - e.rate_window_count
                            ELSE e.rate_limit_per_sec END) AS room
            FROM public.webhook_endpoints e
            WHERE (e.tenant_id, e.id) IN (SELECT c.tenant_id, c.endpoint_id FROM candidates c)
        ), chosen AS (
            SELECT r.tenant_id, r.id, r.endpoint_id FROM ranked r
            JOIN room ON room.tenant_id = r.tenant_id AND room.id = r.endpoint_id
            WHERE r.rank <= room.room
            ORDER BY r.next_attempt_at
            LIMIT p_limit
        ), counted AS (
            UPDATE public.webhook_endpoints e
            SET rate_window_count = CASE WHEN e.rate_window_start > v_window
                                         THEN e.rate_window_count + n.started ELSE n.started END,
                rate_window_start = CASE WHEN e.rate_window_start > v_window
                                         THEN e.rate_window_start ELSE v_now END
            FROM (SELECT ch.tenant_id, ch.endpoint_id, pg_catalog.count(*)::integer AS started
                  FROM chosen ch GROUP BY ch.tenant_id, ch.endpoint_id) n
            WHERE e.tenant_id = n.tenant_id AND e.id = n.endpoint_id AND e.rate_limit_per_sec IS NOT NULL
            RETURNING e.id
        ), claimed AS (
            UPDATE public.webhook_deliveries d
            SET locked_by = p_worker, locked_until = v_now + p_lease, attempts = d.attempts + 1
            FROM chosen WHERE d.tenant_id = chosen.tenant_id AND d.id = chosen.id
              -- Re-checked here rather than locked when found: a delivery
              -- finished or leased meanwhile (its attempt recorded) is left.
              AND d.delivered_at IS NULL AND d.failed_at IS NULL
              AND (d.locked_until IS NULL OR d.locked_until < v_now)
            RETURNING d.tenant_id, d.id, d.endpoint_id, d.message_id, d.attempts
        )
        SELECT c.tenant_id, c.id, c.endpoint_id, e.url, e.secret_sealed,
               CASE WHEN e.previous_secret_expires_at > v_now THEN e.previous_secret_sealed END,
               c.message_id, o.event_type, o.payload, o.created_at, c.attempts, e.headers
        FROM claimed c
        JOIN public.webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
        JOIN public.outbox o ON o.tenant_id = c.tenant_id AND o.id = c.message_id
        -- Sent in the order written, whatever order the claim found them.
        ORDER BY o.seq;
    END
    $$;

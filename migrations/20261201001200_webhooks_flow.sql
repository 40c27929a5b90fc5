-- Webhook flow control (issue #14): a customer filter, a rate limit, strict
-- ordering on request, and bounded concurrency per endpoint.
--
-- The claim decides what is sent, so every limit lives there, under one
-- lock: two workers claiming at once would each see the other's leases
-- only after it committed, and could together pass an endpoint's limit or
-- send an ordered endpoint's next message before the previous one.

-- Only the facts about one customer (its SLAs' facts, its own alerts and
-- credits): a provider that forwards a customer's facts to that customer's
-- system, or routes per account. NULL: every fact.
ALTER TABLE webhook_endpoints
    ADD COLUMN customer_id uuid,
    ADD CONSTRAINT webhook_endpoints_customer FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id),
    -- At most this many attempts started per second (a receiver behind a
    -- gateway with a quota); NULL: no limit but the worker's.
    ADD COLUMN rate_limit_per_sec integer
        CONSTRAINT webhook_endpoints_rate_limit_range CHECK (rate_limit_per_sec BETWEEN 1 AND 10000),
    -- One message at a time, in the order they were written: a message is
    -- not sent while an earlier one to this endpoint is neither delivered
    -- nor given up on. A receiver that cannot reorder pays for it with
    -- head-of-line blocking while an attempt is retried.
    ADD COLUMN ordered boolean NOT NULL DEFAULT false,
    -- The rate limit's current one-second window and the attempts started
    -- in it (the claim's bookkeeping, not the provider's).
    ADD COLUMN rate_window_start timestamptz,
    ADD COLUMN rate_window_count integer NOT NULL DEFAULT 0;

-- Which of the tenant's customers a fact concerns: the `customer` it names
-- (an alert line, a credit) and the customers of the SLAs it names (`sla`,
-- or each of `slas[].sla` for a maintenance window). Ids are the prefixed
-- form the payloads carry (`cus_<32 hex>`, `sla_<32 hex>`). Runs with the
-- caller's rights: row-level security keeps it to the caller's tenant.
CREATE FUNCTION slaproof_prefixed_uuid(p_text text, p_prefix text) RETURNS uuid
    LANGUAGE sql IMMUTABLE
    AS $$
        SELECT CASE WHEN p_text ~ ('^' || p_prefix || '_[0-9a-f]{32}$')
                    THEN substr(p_text, length(p_prefix) + 2)::uuid END
    $$;

CREATE FUNCTION slaproof_message_customers(p_tenant uuid, p_payload jsonb) RETURNS uuid[]
    LANGUAGE sql STABLE
    AS $$
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
        WHERE c.customer_id IS NOT NULL
    $$;
GRANT EXECUTE ON FUNCTION slaproof_prefixed_uuid(text, text) TO slaproof_service;
GRANT EXECUTE ON FUNCTION slaproof_message_customers(uuid, jsonb) TO slaproof_service;

-- Ordered endpoints ask for the earliest unfinished delivery to them.
CREATE INDEX webhook_deliveries_unfinished ON webhook_deliveries (tenant_id, endpoint_id)
    WHERE delivered_at IS NULL AND failed_at IS NULL;

-- The deliveries in flight: leased and unfinished (a lease is cleared when
-- its attempt is recorded).
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (tenant_id, endpoint_id, locked_until)
    WHERE delivered_at IS NULL AND failed_at IS NULL AND locked_until IS NOT NULL;

-- The claim, now with the limits: per endpoint, deliveries in the order
-- their messages were written, at most `p_per_endpoint` in flight (one for
-- an ordered endpoint), and no more attempts started in a second than its
-- rate limit. Its cost follows what it hands out, not the backlog: the due
-- deliveries are walked in `next_attempt_at` order on the partial index
-- and stop at the window (the endpoint's conditions checked per row, the
-- message's order read only for the rows found), and the leases in flight
-- are counted from an index of leased rows only.
DROP FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval);
CREATE FUNCTION slaproof_claim_webhook_deliveries(p_worker text, p_limit integer, p_lease interval,
                                                  p_per_endpoint integer)
    RETURNS TABLE (tenant_id uuid, id uuid, endpoint_id uuid, url text, secret_sealed bytea,
                   previous_secret_sealed bytea, message_id uuid, event_type text, payload jsonb,
                   message_created_at timestamptz, attempt integer, headers jsonb)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    BEGIN
        -- One claim at a time, to the end of the caller's statement: the
        -- statement below then sees every lease an earlier claim took.
        PERFORM pg_advisory_xact_lock(hashtextextended('slaproof.webhook_claim', 0));
        RETURN QUERY
        WITH candidates AS (
            SELECT d.tenant_id, d.id, d.endpoint_id, d.message_id, d.next_attempt_at
            FROM public.webhook_deliveries d
            WHERE d.delivered_at IS NULL AND d.failed_at IS NULL
              AND d.next_attempt_at <= pg_catalog.now()
              AND (d.locked_until IS NULL OR d.locked_until < pg_catalog.now())
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
            FOR UPDATE OF d SKIP LOCKED
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
                                AND f.locked_until >= pg_catalog.now()),
                       CASE WHEN e.rate_limit_per_sec IS NULL THEN p_limit
                            WHEN e.rate_window_start > pg_catalog.now() - interval '1 second'
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
            SET rate_window_count = CASE WHEN e.rate_window_start > pg_catalog.now() - interval '1 second'
                                         THEN e.rate_window_count + n.started ELSE n.started END,
                rate_window_start = CASE WHEN e.rate_window_start > pg_catalog.now() - interval '1 second'
                                         THEN e.rate_window_start ELSE pg_catalog.now() END
            FROM (SELECT ch.tenant_id, ch.endpoint_id, pg_catalog.count(*)::integer AS started
                  FROM chosen ch GROUP BY ch.tenant_id, ch.endpoint_id) n
            WHERE e.tenant_id = n.tenant_id AND e.id = n.endpoint_id AND e.rate_limit_per_sec IS NOT NULL
            RETURNING e.id
        ), claimed AS (
            UPDATE public.webhook_deliveries d
            SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease, attempts = d.attempts + 1
            FROM chosen WHERE d.tenant_id = chosen.tenant_id AND d.id = chosen.id
            RETURNING d.tenant_id, d.id, d.endpoint_id, d.message_id, d.attempts
        )
        SELECT c.tenant_id, c.id, c.endpoint_id, e.url, e.secret_sealed,
               CASE WHEN e.previous_secret_expires_at > pg_catalog.now() THEN e.previous_secret_sealed END,
               c.message_id, o.event_type, o.payload, o.created_at, c.attempts, e.headers
        FROM claimed c
        JOIN public.webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
        JOIN public.outbox o ON o.tenant_id = c.tenant_id AND o.id = c.message_id
        -- Sent in the order written, whatever order the claim found them.
        ORDER BY o.seq;
    END
    $$;
REVOKE ALL ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval, integer) TO slaproof_service;

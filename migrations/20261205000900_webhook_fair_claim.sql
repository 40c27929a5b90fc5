-- Webhook claims fair across tenants (issue #31, item 5). Before, the claim
-- walked every tenant's due deliveries in one `next_attempt_at` order and
-- took the first `p_limit * 4`: one tenant with a backlog for slow
-- endpoints filled every claim and every slot of every worker, and another
-- tenant's delivery waited behind it for hours.
--
-- Now:
-- - a worker holds at most `p_per_tenant` deliveries of one tenant at once
--   (counted on the leases it holds), so the rest of its slots stay open
--   for the other tenants however far behind one of them is;
-- - each tenant with unfinished deliveries offers its own earliest due ones,
--   found one tenant at a time (a loose scan of the index below: one probe
--   per tenant with unfinished deliveries, then one range of that tenant),
--   so a backlog is never walked past and never hides another tenant;
-- - the chosen deliveries are taken in turns, each tenant's first, then each
--   tenant's second, and so on, up to `p_limit`.
-- Each of the loop's statements names one tenant or is a plain ordered
-- scan, which Citus runs as it is (docs/OPERATIONS.md, "Citus"); the limits
-- per endpoint, the ordering and the rate limit are as in
-- 20261201001700_citus_webhook_claim.sql. It also answers the endpoint's
-- sealed headers (20261205000800).

CREATE INDEX webhook_deliveries_due_by_tenant ON webhook_deliveries (tenant_id, next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;

DROP FUNCTION public.slaproof_claim_webhook_deliveries(text, integer, interval, integer);

CREATE FUNCTION public.slaproof_claim_webhook_deliveries(p_worker text, p_limit integer, p_lease interval,
                                                  p_per_endpoint integer, p_per_tenant integer)
    RETURNS TABLE (tenant_id uuid, id uuid, endpoint_id uuid, url text, secret_sealed bytea,
                   previous_secret_sealed bytea, message_id uuid, event_type text, payload jsonb,
                   message_created_at timestamptz, attempt integer, headers jsonb,
                   headers_sealed bytea)
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        v_now timestamptz := pg_catalog.now();
        v_window timestamptz := pg_catalog.now() - interval '1 second';
        v_tenant uuid;
        v_next uuid;
        v_room integer;
        v_found uuid[];
        -- The tenants offering deliveries, the room each has left in this
        -- worker (same positions), and the deliveries they offer.
        v_tenants uuid[] := '{}';
        v_rooms integer[] := '{}';
        v_ids uuid[] := '{}';
    BEGIN
        -- One claim at a time, to the end of the caller's statement: the
        -- statements below then see every lease an earlier claim took.
        PERFORM pg_advisory_xact_lock(hashtextextended('slaproof.webhook_claim', 0));
        SELECT d.tenant_id INTO v_next FROM public.webhook_deliveries d
        WHERE d.delivered_at IS NULL AND d.failed_at IS NULL
        ORDER BY d.tenant_id LIMIT 1;
        WHILE v_next IS NOT NULL LOOP
            v_tenant := v_next;
            v_room := LEAST(p_limit, p_per_tenant - (
                SELECT pg_catalog.count(*)::integer FROM public.webhook_deliveries f
                WHERE f.tenant_id = v_tenant AND f.delivered_at IS NULL AND f.failed_at IS NULL
                  AND f.locked_until IS NOT NULL AND f.locked_until >= v_now
                  AND f.locked_by = p_worker));
            IF v_room > 0 THEN
                v_found := ARRAY(
                    SELECT d.id FROM public.webhook_deliveries d
                    WHERE d.tenant_id = v_tenant
                      AND d.delivered_at IS NULL AND d.failed_at IS NULL
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
                    -- More than the room: some may be held back by their
                    -- endpoint's own limits below.
                    LIMIT v_room * 4);
                IF pg_catalog.cardinality(v_found) > 0 THEN
                    v_tenants := v_tenants || v_tenant;
                    v_rooms := v_rooms || v_room;
                    v_ids := v_ids || v_found;
                END IF;
            END IF;
            SELECT d.tenant_id INTO v_next FROM public.webhook_deliveries d
            WHERE d.delivered_at IS NULL AND d.failed_at IS NULL AND d.tenant_id > v_tenant
            ORDER BY d.tenant_id LIMIT 1;
        END LOOP;
        IF pg_catalog.cardinality(v_ids) = 0 THEN
            RETURN;
        END IF;
        RETURN QUERY
        WITH candidates AS (
            SELECT d.tenant_id, d.id, d.endpoint_id, d.message_id, d.next_attempt_at,
                   v_rooms[pg_catalog.array_position(v_tenants, d.tenant_id)] AS tenant_room
            FROM public.webhook_deliveries d
            WHERE d.tenant_id = ANY (v_tenants) AND d.id = ANY (v_ids)
        ), ranked AS (
            SELECT c.tenant_id, c.id, c.endpoint_id, c.next_attempt_at, c.tenant_room,
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
        ), allowed AS (
            -- Within its endpoint's limits; `turn` is the place in its
            -- tenant's queue.
            SELECT r.tenant_id, r.id, r.endpoint_id, r.next_attempt_at, r.tenant_room,
                   pg_catalog.row_number() OVER (PARTITION BY r.tenant_id
                                                 ORDER BY r.next_attempt_at, r.id) AS turn
            FROM ranked r
            JOIN room ON room.tenant_id = r.tenant_id AND room.id = r.endpoint_id
            WHERE r.rank <= room.room
        ), chosen AS (
            SELECT a.tenant_id, a.id, a.endpoint_id FROM allowed a
            WHERE a.turn <= a.tenant_room
            ORDER BY a.turn, a.next_attempt_at
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
               c.message_id, o.event_type, o.payload, o.created_at, c.attempts, e.headers,
               e.headers_sealed
        FROM claimed c
        JOIN public.webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
        JOIN public.outbox o ON o.tenant_id = c.tenant_id AND o.id = c.message_id
        -- Sent in the order written, whatever order the claim found them.
        ORDER BY o.seq;
    END
    $$;
REVOKE ALL ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval, integer, integer) TO slaproof_service;

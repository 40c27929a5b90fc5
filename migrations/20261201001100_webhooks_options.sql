-- Webhook endpoint options (issue #14): custom headers sent with every
-- delivery.
--
-- Attempt retention (webhooks.attempts_retention_days) needs no grant here:
-- the service role already deletes from webhook_attempts and
-- webhook_deliveries (20261201000800_webhooks.sql), tenant by tenant under
-- row-level security.

-- Headers the provider's receiver expects (e.g. a token of its gateway):
-- an object of lower-case header name to value, at most 10, checked by the
-- application (names, reserved names, 1 KiB values). Values may be
-- credentials: never logged, never answered by the API (only the names).
ALTER TABLE webhook_endpoints
    ADD COLUMN headers jsonb NOT NULL DEFAULT '{}'::jsonb
        CONSTRAINT webhook_endpoints_headers_object CHECK (jsonb_typeof(headers) = 'object');

-- The claim answers the endpoint's headers too: same claim, one more column.
DROP FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval);
CREATE FUNCTION slaproof_claim_webhook_deliveries(p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, endpoint_id uuid, url text, secret_sealed bytea,
                   previous_secret_sealed bytea, message_id uuid, event_type text, payload jsonb,
                   message_created_at timestamptz, attempt integer, headers jsonb)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        WITH due AS (
            SELECT d.tenant_id, d.id FROM public.webhook_deliveries d
            JOIN public.webhook_endpoints e ON e.tenant_id = d.tenant_id AND e.id = d.endpoint_id
            WHERE d.delivered_at IS NULL AND d.failed_at IS NULL AND e.enabled
              AND d.next_attempt_at <= pg_catalog.now()
              AND (d.locked_until IS NULL OR d.locked_until < pg_catalog.now())
            ORDER BY d.next_attempt_at
            LIMIT p_limit
            FOR UPDATE OF d SKIP LOCKED
        ), claimed AS (
            UPDATE public.webhook_deliveries d
            SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease, attempts = d.attempts + 1
            FROM due WHERE d.tenant_id = due.tenant_id AND d.id = due.id
            RETURNING d.tenant_id, d.id, d.endpoint_id, d.message_id, d.attempts
        )
        SELECT c.tenant_id, c.id, c.endpoint_id, e.url, e.secret_sealed,
               CASE WHEN e.previous_secret_expires_at > pg_catalog.now() THEN e.previous_secret_sealed END,
               c.message_id, o.event_type, o.payload, o.created_at, c.attempts, e.headers
        FROM claimed c
        JOIN public.webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
        JOIN public.outbox o ON o.tenant_id = c.tenant_id AND o.id = c.message_id
    $$;
REVOKE ALL ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval) TO slaproof_service;

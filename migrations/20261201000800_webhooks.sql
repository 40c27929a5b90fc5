-- Webhooks (issue #14): tenants' endpoints, one delivery per (outbox
-- message, endpoint), and every attempt to deliver it.
--
-- The outbox holds the facts; the webhook worker claims them
-- (slaproof_claim_outbox) and, in the tenant's transaction that marks them
-- dispatched, writes a delivery for each enabled endpoint whose filter
-- matches. Deliveries are then claimed across tenants with FOR UPDATE SKIP
-- LOCKED under a lease (slaproof_claim_webhook_deliveries), so two workers
-- never send the same attempt at once, and each attempt is recorded.

-- ---------------------------------------------------------------------------
-- Endpoints
-- ---------------------------------------------------------------------------
CREATE TABLE webhook_endpoints (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    -- Checked against the operator's outbound policy when saved, and again
    -- at every connection (the worker's resolver).
    url text NOT NULL CONSTRAINT webhook_endpoints_url_length CHECK (char_length(url) BETWEEN 1 AND 2048),
    description text NOT NULL DEFAULT '' CONSTRAINT webhook_endpoints_description_length CHECK (char_length(description) <= 1000),
    -- Event types this endpoint receives: exact (`sla.breached`), a prefix
    -- (`sla.*`) or everything (`*`).
    event_types text[] NOT NULL CONSTRAINT webhook_endpoints_event_types_present CHECK (cardinality(event_types) BETWEEN 1 AND 64),
    enabled boolean NOT NULL DEFAULT true,
    -- Why the endpoint is disabled when the platform disabled it (a 410).
    disabled_reason text,
    -- The signing secret, sealed with AES-256-GCM: a 12-byte nonce, then
    -- the ciphertext and tag. Never stored in the clear: whoever reads a
    -- backup of this table cannot sign as slaproof.
    secret_sealed bytea NOT NULL CONSTRAINT webhook_endpoints_secret_sealed_length CHECK (octet_length(secret_sealed) >= 12 + 16 + 24),
    -- The secret before the last rotation, sealed the same way, and until
    -- when deliveries carry its signature beside the new one: receivers
    -- switch secrets without refusing a delivery.
    previous_secret_sealed bytea,
    previous_secret_expires_at timestamptz,
    CONSTRAINT webhook_endpoints_previous_secret_whole
        CHECK ((previous_secret_sealed IS NULL) = (previous_secret_expires_at IS NULL)),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
COMMENT ON TABLE webhook_endpoints IS
    'URLs a tenant receives its facts at (Standard Webhooks), with an event-type filter and a sealed signing secret.';

-- ---------------------------------------------------------------------------
-- Deliveries: one per (message, endpoint)
-- ---------------------------------------------------------------------------
CREATE TABLE webhook_deliveries (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    endpoint_id uuid NOT NULL,
    -- The outbox message: its id is the stable `webhook-id` (msg_…) of
    -- every attempt, so a receiver can deduplicate redeliveries.
    message_id uuid NOT NULL,
    -- Attempts claimed so far (a claim counts even when its worker died).
    attempts integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    locked_by text,
    locked_until timestamptz,
    delivered_at timestamptz,
    -- Set when the schedule is exhausted or the endpoint answered 410.
    failed_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT webhook_deliveries_once UNIQUE (tenant_id, endpoint_id, message_id),
    FOREIGN KEY (tenant_id, endpoint_id) REFERENCES webhook_endpoints (tenant_id, id) ON DELETE CASCADE,
    FOREIGN KEY (tenant_id, message_id) REFERENCES outbox (tenant_id, id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
COMMENT ON TABLE webhook_deliveries IS
    'One outbox message to one endpoint, delivered at least once: claimed with FOR UPDATE SKIP LOCKED under a lease, retried on the Standard Webhooks schedule.';

-- ---------------------------------------------------------------------------
-- Attempts: what each try sent back
-- ---------------------------------------------------------------------------
CREATE TABLE webhook_attempts (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    delivery_id uuid NOT NULL,
    attempt integer NOT NULL,
    started_at timestamptz NOT NULL,
    duration_ms integer NOT NULL,
    -- The answer's status; NULL when there was none (timeout, refused).
    status integer,
    -- At most 1 KiB of the answer, for the provider debugging its receiver.
    response_excerpt text CONSTRAINT webhook_attempts_excerpt_length CHECK (octet_length(response_excerpt) <= 1024),
    error text,
    PRIMARY KEY (tenant_id, delivery_id, attempt),
    FOREIGN KEY (tenant_id, delivery_id) REFERENCES webhook_deliveries (tenant_id, id) ON DELETE CASCADE
);
COMMENT ON TABLE webhook_attempts IS 'Every attempt to deliver a webhook: status, duration, an excerpt of the answer or the error.';

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['webhook_endpoints', 'webhook_deliveries', 'webhook_attempts'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;
-- The claim below runs as the owner across tenants.
CREATE POLICY owner_functions ON webhook_endpoints TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY owner_functions ON webhook_deliveries TO CURRENT_USER USING (true) WITH CHECK (true);

GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints TO slaproof_service;
-- DELETE: only through deleting an endpoint (ON DELETE CASCADE).
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_deliveries TO slaproof_service;
GRANT SELECT, INSERT, DELETE ON webhook_attempts TO slaproof_service;

-- Claims due deliveries to enabled endpoints across tenants, under a
-- lease, counting the attempt; answers what sending needs.
CREATE FUNCTION slaproof_claim_webhook_deliveries(p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, endpoint_id uuid, url text, secret_sealed bytea,
                   previous_secret_sealed bytea, message_id uuid, event_type text, payload jsonb,
                   message_created_at timestamptz, attempt integer)
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
               c.message_id, o.event_type, o.payload, o.created_at, c.attempts
        FROM claimed c
        JOIN public.webhook_endpoints e ON e.tenant_id = c.tenant_id AND e.id = c.endpoint_id
        JOIN public.outbox o ON o.tenant_id = c.tenant_id AND o.id = c.message_id
    $$;
REVOKE ALL ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_claim_webhook_deliveries(text, integer, interval) TO slaproof_service;

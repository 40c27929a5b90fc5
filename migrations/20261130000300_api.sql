-- The API's own state.

-- ---------------------------------------------------------------------------
-- Idempotency keys
-- ---------------------------------------------------------------------------
-- A creating request sent with `Idempotency-Key` is done once: the first
-- request claims the key (status NULL while it runs), its answer is kept,
-- and a retry with the same key and the same request gets that answer again
-- instead of creating a second resource.
CREATE TABLE api_idempotency_keys (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    -- The token's subject: keys are chosen by clients, so two users of one
    -- tenant picking the same key must not see each other's answers.
    subject text NOT NULL,
    key text NOT NULL CONSTRAINT api_idempotency_keys_key_format
        CHECK (char_length(key) BETWEEN 1 AND 255),
    -- SHA-256 of the route and the body: the same key with another request
    -- is a client bug, refused rather than answered with the wrong result.
    fingerprint bytea NOT NULL,
    -- NULL while the first request is still running.
    status smallint,
    response jsonb,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, subject, key)
);
CREATE INDEX api_idempotency_keys_age ON api_idempotency_keys (created_at);
COMMENT ON TABLE api_idempotency_keys IS
    'Answers of creating API requests by Idempotency-Key, so that a retried request creates nothing twice.';

ALTER TABLE api_idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_idempotency_keys
    USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE, DELETE ON api_idempotency_keys TO slaproof_service;

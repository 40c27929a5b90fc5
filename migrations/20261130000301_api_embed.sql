-- Origins allowed to frame a tenant's embedded dashboards: answers to embed
-- tokens carry them as CSP `frame-ancestors`, so only the provider's own
-- console can show its customers' dashboards.
CREATE TABLE api_embed_origins (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    -- scheme://host[:port], lower case: exactly what frame-ancestors takes.
    origin text NOT NULL CONSTRAINT api_embed_origins_format
        CHECK (origin ~ '^https?://[a-z0-9.-]+(:[0-9]{1,5})?$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, origin)
);
COMMENT ON TABLE api_embed_origins IS
    'Origins allowed to frame embedded dashboards (CSP frame-ancestors of embed-token answers).';

ALTER TABLE api_embed_origins ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_embed_origins FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_embed_origins
    USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, DELETE ON api_embed_origins TO slaproof_service;

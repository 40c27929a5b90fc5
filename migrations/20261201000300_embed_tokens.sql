-- Embed tokens revoked before they expire. Tokens are not stored (they are
-- signed, and live an hour at most); a revocation names one by its `jti`,
-- and every request with an embed token checks this table. A row is useless
-- once the longest-lived token it could name has expired, so housekeeping
-- deletes rows older than that.
CREATE TABLE api_embed_revocations (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    token_id uuid NOT NULL,
    revoked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, token_id)
);
COMMENT ON TABLE api_embed_revocations IS
    'Embed tokens (by jti) revoked before they expire; kept until no such token can still be valid.';

ALTER TABLE api_embed_revocations ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_embed_revocations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_embed_revocations
    USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, DELETE ON api_embed_revocations TO slaproof_service;

-- Secrets of the platform itself, made on first use and shared by every
-- replica that uses this database: the key embed tokens are signed with
-- when `api.embed_secret` is not configured. Not tenant data: the service
-- role has no access to the table, only to the function below, which
-- keeps the first secret offered under a name and answers the kept one.
CREATE TABLE platform_secrets (
    name text PRIMARY KEY CONSTRAINT platform_secrets_name_format CHECK (name ~ '^[a-z][a-z0-9_]{0,62}$'),
    secret bytea NOT NULL CONSTRAINT platform_secrets_secret_length CHECK (octet_length(secret) >= 32),
    created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE platform_secrets IS
    'Secrets the platform makes for itself on first use (e.g. the embed-token key), shared by all replicas.';
REVOKE ALL ON platform_secrets FROM PUBLIC;

CREATE FUNCTION slaproof_platform_secret(secret_name text, fresh bytea) RETURNS bytea
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
BEGIN
    INSERT INTO public.platform_secrets (name, secret) VALUES (secret_name, fresh)
        ON CONFLICT (name) DO NOTHING;
    RETURN (SELECT s.secret FROM public.platform_secrets AS s WHERE s.name = secret_name);
END
$$;
REVOKE ALL ON FUNCTION slaproof_platform_secret(text, bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_platform_secret(text, bytea) TO slaproof_service;

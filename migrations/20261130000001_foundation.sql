-- The one schema every slaproof service shares.
--
-- Two roles matter here:
--   * the owner: whoever runs the migrations. It owns every table and the few
--     SECURITY DEFINER functions below, and is trusted.
--   * slaproof_service: a NOLOGIN group role that services log in through
--     (a login role that is a member of it). It owns nothing, has no
--     BYPASSRLS, and sees tenant rows only through the row-level security
--     policies below, which read `app.tenant_id`, a setting that the store
--     crate sets per transaction (set_config(..., true)).
--
-- Every tenant table leads its keys with tenant_id (ready for Citus) and has
-- no foreign key to another tenant's rows.

-- ---------------------------------------------------------------------------
-- Roles
-- ---------------------------------------------------------------------------
-- Roles are cluster-wide, so several databases (tests create one each) may
-- race to create it; a duplicate is fine.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'slaproof_service') THEN
        BEGIN
            CREATE ROLE slaproof_service NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE;
        EXCEPTION WHEN duplicate_object OR unique_violation THEN
            NULL;
        END;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO slaproof_service;

-- The tenant a transaction acts for, or NULL when none is set: a session that
-- forgot to set it sees and writes nothing rather than failing open.
CREATE FUNCTION slaproof_current_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('app.tenant_id', true), '')::uuid $$;

-- ---------------------------------------------------------------------------
-- Tenants
-- ---------------------------------------------------------------------------
CREATE TABLE tenants (
    id uuid PRIMARY KEY,
    -- A short, unique handle operators type in the CLI (`--tenant acme`).
    name text NOT NULL CONSTRAINT tenants_name_format CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    display_name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tenants_name_unique UNIQUE (name)
);
COMMENT ON TABLE tenants IS
    'Providers using slaproof. Every other tenant row points here; a tenant sees only its own row.';

-- ---------------------------------------------------------------------------
-- Ingest keys
-- ---------------------------------------------------------------------------
CREATE TABLE ingest_keys (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    -- The public part of the key (`spk_` + 12 characters): shown in lists and
    -- logs so a key can be recognized, and used to find the row fast.
    prefix text NOT NULL,
    -- SHA-256 of the whole key. Keys carry 256 random bits, so a fast hash
    -- is enough; the key itself is shown once and never stored.
    secret_sha256 bytea NOT NULL CONSTRAINT ingest_keys_hash_length CHECK (length(secret_sha256) = 32),
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Revocation is a fact with a time, not a deletion: audits can still
    -- tell which key sent what.
    revoked_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT ingest_keys_prefix_unique UNIQUE (prefix)
);
COMMENT ON TABLE ingest_keys IS
    'Credentials providers send telemetry with; stored hashed, shown once, revocable, known by prefix.';

-- ---------------------------------------------------------------------------
-- Customers
-- ---------------------------------------------------------------------------
CREATE TABLE customers (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    -- The provider's own id for this customer, so SLA documents and embed
    -- tokens can name customers the way the provider does.
    external_ref text NOT NULL CONSTRAINT customers_external_ref_format CHECK (external_ref ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$'),
    name text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT customers_external_ref_unique UNIQUE (tenant_id, external_ref)
);
COMMENT ON TABLE customers IS
    'Customers of a provider: the other party of an SLA and the viewer of its dashboard.';

-- ---------------------------------------------------------------------------
-- SLA definitions (versioned) and their objectives
-- ---------------------------------------------------------------------------
CREATE TABLE slas (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    name text NOT NULL CONSTRAINT slas_name_format CHECK (name ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
    customer_id uuid,
    -- The version in force. Versions themselves never change; applying a new
    -- document adds a version and moves this pointer.
    current_version integer NOT NULL CONSTRAINT slas_current_version_positive CHECK (current_version > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT slas_name_unique UNIQUE (tenant_id, name),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
COMMENT ON TABLE slas IS
    'An SLA between a provider and one of its customers, identified by a stable name across versions.';

CREATE TABLE sla_versions (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL CONSTRAINT sla_versions_version_positive CHECK (version > 0),
    -- The validated definition in slaproof's native JSON shape: what the
    -- evaluator measures against and what `sla export` prints.
    definition jsonb NOT NULL,
    -- SHA-256 of the canonical definition, so re-applying an unchanged
    -- document is recognized and does not make a new version.
    definition_sha256 bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, version),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE sla_versions IS
    'Append-only history of SLA definitions: a verdict can always be traced to the exact terms it was measured against.';

CREATE TABLE objectives (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    name text NOT NULL,
    -- ratio | threshold | time_slices | gauge; the full SLI is in the
    -- version's definition, these columns are for queries and joins.
    kind text NOT NULL CONSTRAINT objectives_kind_known CHECK (kind IN ('ratio', 'threshold', 'time_slices', 'gauge')),
    target_ppm integer NOT NULL CONSTRAINT objectives_target_range CHECK (target_ppm > 0 AND target_ppm < 1000000),
    sli jsonb NOT NULL,
    PRIMARY KEY (tenant_id, sla_id, version, name),
    FOREIGN KEY (tenant_id, sla_id, version) REFERENCES sla_versions (tenant_id, sla_id, version)
);
COMMENT ON TABLE objectives IS
    'The objectives of each SLA version, one row each, so evaluations and credits can reference one objective.';

-- ---------------------------------------------------------------------------
-- Maintenance windows
-- ---------------------------------------------------------------------------
CREATE TABLE maintenance_windows (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    -- NULL: applies to every SLA of the tenant.
    sla_id uuid,
    starts_at timestamptz NOT NULL,
    ends_at timestamptz NOT NULL,
    description text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Cancelling keeps the row: an evaluation that excluded the window must
    -- still be explainable afterwards.
    cancelled_at timestamptz,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT maintenance_windows_ordered CHECK (ends_at > starts_at),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
CREATE INDEX maintenance_windows_span ON maintenance_windows (tenant_id, starts_at, ends_at);
COMMENT ON TABLE maintenance_windows IS
    'Planned maintenance agreed with customers; excluded from numerator and denominator of every SLI it covers.';

-- ---------------------------------------------------------------------------
-- Events (time-partitioned)
-- ---------------------------------------------------------------------------
CREATE TABLE events (
    tenant_id uuid NOT NULL,
    occurred_at timestamptz NOT NULL,
    id uuid NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    -- provider: reported by the provider; probe: measured by slaproof itself.
    source text NOT NULL CONSTRAINT events_source_known CHECK (source IN ('provider', 'probe')),
    service text NOT NULL,
    model text,
    request_id text,
    status integer,
    error_class text,
    -- Durations in microseconds: exact integers for the evaluator and the
    -- circuits (values < 2^32 cover more than an hour).
    latency_us bigint CONSTRAINT events_latency_nonnegative CHECK (latency_us >= 0),
    ttft_us bigint CONSTRAINT events_ttft_nonnegative CHECK (ttft_us >= 0),
    tpot_us bigint CONSTRAINT events_tpot_nonnegative CHECK (tpot_us >= 0),
    input_tokens integer CONSTRAINT events_input_tokens_nonnegative CHECK (input_tokens >= 0),
    output_tokens integer CONSTRAINT events_output_tokens_nonnegative CHECK (output_tokens >= 0),
    streaming boolean,
    -- Free numeric attributes (region, cache hit, ...) that filters can use.
    attributes jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (tenant_id, occurred_at, id)
) PARTITION BY RANGE (occurred_at);
COMMENT ON TABLE events IS
    'One row per request or probe: the raw facts every SLI is computed from. Daily partitions; retention drops whole days.';

-- ---------------------------------------------------------------------------
-- Jobs
-- ---------------------------------------------------------------------------
CREATE TABLE jobs (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    kind text NOT NULL,
    payload jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- At most one pending job per (tenant, kind, dedup_key): evaluating a
    -- tenant twice at once is prevented by the schema, not by luck.
    dedup_key text,
    run_at timestamptz NOT NULL DEFAULT now(),
    attempts integer NOT NULL DEFAULT 0,
    max_attempts integer NOT NULL DEFAULT 10,
    -- A claim is a lease: a worker that dies loses it when it expires.
    locked_by text,
    locked_until timestamptz,
    last_error text,
    failed_at timestamptz,
    -- Set when the same work is asked for again while a worker holds the
    -- job: the job then runs once more instead of the request being lost.
    requeued boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX jobs_dedup ON jobs (tenant_id, kind, dedup_key) WHERE dedup_key IS NOT NULL;
CREATE INDEX jobs_due ON jobs (kind, run_at) WHERE failed_at IS NULL;
COMMENT ON TABLE jobs IS
    'Background work, claimed by any replica with FOR UPDATE SKIP LOCKED under a lease; done jobs are deleted.';

-- ---------------------------------------------------------------------------
-- Transactional outbox
-- ---------------------------------------------------------------------------
CREATE TABLE outbox (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    -- Global order for the relay; tenants never see each other's numbers.
    seq bigint GENERATED ALWAYS AS IDENTITY,
    event_type text NOT NULL CONSTRAINT outbox_event_type_format CHECK (event_type ~ '^[a-z_]+(\.[a-z_]+)+$'),
    payload jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    locked_by text,
    locked_until timestamptz,
    dispatched_at timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX outbox_pending ON outbox (seq) WHERE dispatched_at IS NULL;
COMMENT ON TABLE outbox IS
    'Facts to tell the outside world, written in the same transaction as the change they describe, relayed at least once.';

-- ---------------------------------------------------------------------------
-- Row-level security: one policy per tenant table, enabled and forced.
-- ---------------------------------------------------------------------------
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
    USING (id = slaproof_current_tenant()) WITH CHECK (id = slaproof_current_tenant());

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['ingest_keys', 'customers', 'slas', 'sla_versions', 'objectives',
                             'maintenance_windows', 'events', 'jobs', 'outbox'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

-- The few cross-tenant operations (finding the tenant of an ingest key or a
-- tenant name, claiming due work) run in SECURITY DEFINER functions owned by
-- the migration owner. FORCE makes policies bind the owner too, so these
-- tables get a second policy for the owner alone; the service role is not a
-- member of it and stays behind tenant_isolation.
CREATE POLICY owner_functions ON tenants TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY owner_functions ON ingest_keys TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY owner_functions ON jobs TO CURRENT_USER USING (true) WITH CHECK (true);
CREATE POLICY owner_functions ON outbox TO CURRENT_USER USING (true) WITH CHECK (true);

-- ---------------------------------------------------------------------------
-- Privileges of the service role. Facts are append-only: no UPDATE or
-- DELETE where history must not change.
-- ---------------------------------------------------------------------------
GRANT SELECT, INSERT, UPDATE ON tenants TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON ingest_keys TO slaproof_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON customers TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON slas TO slaproof_service;
GRANT SELECT, INSERT ON sla_versions TO slaproof_service;
GRANT SELECT, INSERT ON objectives TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON maintenance_windows TO slaproof_service;
GRANT SELECT, INSERT ON events TO slaproof_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON jobs TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON outbox TO slaproof_service;

-- ---------------------------------------------------------------------------
-- Cross-tenant functions (SECURITY DEFINER, pinned search_path)
-- ---------------------------------------------------------------------------

-- The tenant and key an ingest key belongs to, or no row when the key is
-- unknown, revoked or its hash does not match.
CREATE FUNCTION slaproof_authenticate_ingest_key(p_prefix text, p_secret_sha256 bytea)
    RETURNS TABLE (tenant_id uuid, key_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT k.tenant_id, k.id FROM public.ingest_keys k
        WHERE k.prefix = p_prefix AND k.secret_sha256 = p_secret_sha256 AND k.revoked_at IS NULL
    $$;

-- Operators name tenants by handle; the handle is not tenant data.
CREATE FUNCTION slaproof_tenant_id_by_name(p_name text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT t.id FROM public.tenants t WHERE t.name = p_name $$;

CREATE FUNCTION slaproof_list_tenants()
    RETURNS TABLE (id uuid, name text, display_name text, created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$ SELECT t.id, t.name, t.display_name, t.created_at FROM public.tenants t ORDER BY t.name $$;

-- Claims up to p_limit due jobs of one kind under a lease. SKIP LOCKED lets
-- replicas claim side by side without waiting on each other; the lease makes
-- a job claimed by a dead worker due again.
CREATE FUNCTION slaproof_claim_jobs(p_kind text, p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, kind text, payload jsonb, attempts integer)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        WITH due AS (
            SELECT j.tenant_id, j.id FROM public.jobs j
            WHERE j.kind = p_kind AND j.run_at <= now() AND j.failed_at IS NULL
              AND (j.locked_until IS NULL OR j.locked_until < now())
            ORDER BY j.run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.jobs j
        SET locked_by = p_worker, locked_until = now() + p_lease, attempts = j.attempts + 1, requeued = false
        FROM due WHERE j.tenant_id = due.tenant_id AND j.id = due.id
        RETURNING j.tenant_id, j.id, j.kind, j.payload, j.attempts
    $$;

-- Claims pending outbox messages in order, under a lease, for the relay.
CREATE FUNCTION slaproof_claim_outbox(p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, seq bigint, event_type text, payload jsonb, created_at timestamptz)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        WITH pending AS (
            SELECT o.tenant_id, o.id FROM public.outbox o
            WHERE o.dispatched_at IS NULL AND (o.locked_until IS NULL OR o.locked_until < now())
            ORDER BY o.seq
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.outbox o
        SET locked_by = p_worker, locked_until = now() + p_lease
        FROM pending WHERE o.tenant_id = pending.tenant_id AND o.id = pending.id
        RETURNING o.tenant_id, o.id, o.seq, o.event_type, o.payload, o.created_at
    $$;

-- Creates the daily partitions of `events` for [p_from, p_to] that do not
-- exist yet. Partition DDL needs the table owner, hence SECURITY DEFINER; an
-- advisory lock serializes replicas doing the same at the same time.
CREATE FUNCTION slaproof_ensure_event_partitions(p_from date, p_to date) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    DECLARE
        d date := p_from;
        part text;
        created integer := 0;
    BEGIN
        IF p_to < p_from THEN
            RAISE EXCEPTION 'partition range ends (%) before it starts (%)', p_to, p_from;
        END IF;
        IF p_to - p_from > 1000 THEN
            RAISE EXCEPTION 'refusing to create % daily partitions at once (at most 1000)', p_to - p_from + 1;
        END IF;
        PERFORM pg_advisory_xact_lock(hashtext('slaproof_event_partitions'));
        WHILE d <= p_to LOOP
            part := 'events_p' || to_char(d, 'YYYYMMDD');
            IF to_regclass('public.' || part) IS NULL THEN
                EXECUTE format(
                    'CREATE TABLE public.%I PARTITION OF public.events FOR VALUES FROM (%L) TO (%L)',
                    part, d::text || ' 00:00:00+00', (d + 1)::text || ' 00:00:00+00');
                -- Reached only through the parent by the service role, but a
                -- partition is a table too: it gets the same wall.
                EXECUTE format('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY', part);
                EXECUTE format('ALTER TABLE public.%I FORCE ROW LEVEL SECURITY', part);
                EXECUTE format('CREATE POLICY tenant_isolation ON public.%I '
                               'USING (tenant_id = public.slaproof_current_tenant()) '
                               'WITH CHECK (tenant_id = public.slaproof_current_tenant())', part);
                created := created + 1;
            END IF;
            d := d + 1;
        END LOOP;
        RETURN created;
    END
    $$;

-- Drops the daily partitions of `events` that end on or before p_before, and
-- returns their names. Retention drops whole days: no row-by-row DELETE, no
-- bloat.
CREATE FUNCTION slaproof_drop_event_partitions(p_before date) RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
    DECLARE
        part record;
    BEGIN
        PERFORM pg_advisory_xact_lock(hashtext('slaproof_event_partitions'));
        FOR part IN
            SELECT c.relname FROM pg_inherits i
            JOIN pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = 'public.events'::regclass
              AND c.relname ~ '^events_p[0-9]{8}$'
              AND to_date(substr(c.relname, 9), 'YYYYMMDD') + 1 <= p_before
            ORDER BY c.relname
        LOOP
            EXECUTE format('DROP TABLE public.%I', part.relname);
            RETURN NEXT part.relname;
        END LOOP;
    END
    $$;

-- The days for which event partitions exist, for health checks and ingest.
CREATE FUNCTION slaproof_event_partition_days() RETURNS SETOF date
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        SELECT to_date(substr(c.relname, 9), 'YYYYMMDD') FROM pg_inherits i
        JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'public.events'::regclass AND c.relname ~ '^events_p[0-9]{8}$'
        ORDER BY 1
    $$;

DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'slaproof_authenticate_ingest_key(text, bytea)',
        'slaproof_tenant_id_by_name(text)',
        'slaproof_list_tenants()',
        'slaproof_claim_jobs(text, text, integer, interval)',
        'slaproof_claim_outbox(text, integer, interval)',
        'slaproof_ensure_event_partitions(date, date)',
        'slaproof_drop_event_partitions(date)',
        'slaproof_event_partition_days()'] LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO slaproof_service', f);
    END LOOP;
END
$$;

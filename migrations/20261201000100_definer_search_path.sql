-- SECURITY DEFINER functions: a search_path without any writable schema,
-- and nothing in their bodies left to overload resolution (issue #11).
--
-- The definer functions ran with `search_path = pg_catalog, public, pg_temp`.
-- pg_catalog coming first protects only calls that match a built-in exactly:
-- a call that needs an implicit cast (to_char(date, ..) matching
-- to_char(timestamptz, text), substr(name, ..), pg_advisory_xact_lock(int),
-- hashtextextended(text, 0) with an integer 0, an operator between a bigint
-- and an integer) is resolved to whichever candidate matches best, and a
-- function or operator in public with the exact argument types wins. On
-- PostgreSQL 13 and 14 every role may create objects in public, so the
-- service role could plant, say, public.to_char(date, text), and the next
-- call of slaproof_ensure_event_partitions ran it as the owner of the schema.
--
-- Now:
--   * nobody but the owner creates objects in public (PostgreSQL 15 and
--     later already start that way);
--   * every definer function runs with `search_path = pg_catalog, pg_temp`:
--     functions and operators are looked up in pg_catalog alone (pg_temp is
--     never searched for them), and pg_temp, listed last, cannot shadow a
--     relation either;
--   * their bodies name every table `public.*` and every function
--     `pg_catalog.*`, and cast arguments to the built-ins' exact parameter
--     types, so they do not depend on the path at all.
-- Signatures, results, volatility, owners and grants are unchanged: CREATE OR
-- REPLACE keeps a function's owner and privileges, and each function below
-- is the latest definition (slaproof_claim_probes: 20261130000610) with the
-- same attributes.
--
-- Definer functions added later must follow suit: tests/tests/definer.rs
-- fails on one whose search_path names any schema but pg_catalog and pg_temp.

-- ---------------------------------------------------------------------------
-- Schema public: the owner's alone
-- ---------------------------------------------------------------------------
-- Only the schema's owner (or a superuser) can take back what PUBLIC was
-- given; anyone else's REVOKE is a no-op with a warning. The role running the
-- migrations owns every table, so it is normally that owner; when it is not,
-- say so loudly rather than pretend. The pinned search_path below holds
-- either way.
DO $$
DECLARE
    may_revoke boolean;
BEGIN
    SELECT r.rolsuper OR pg_catalog.pg_has_role(r.oid, n.nspowner, 'USAGE'::text)
        INTO may_revoke
        FROM pg_catalog.pg_roles r, pg_catalog.pg_namespace n
        WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER
          AND n.nspname OPERATOR(pg_catalog.=) 'public'::pg_catalog.name;
    IF may_revoke THEN
        REVOKE CREATE ON SCHEMA public FROM PUBLIC;
        -- Never granted by these migrations, but a deployment may have.
        REVOKE CREATE ON SCHEMA public FROM slaproof_service;
    ELSE
        RAISE WARNING 'schema public is not owned by %: have its owner run "REVOKE CREATE ON SCHEMA public FROM PUBLIC, slaproof_service"',
            CURRENT_USER;
    END IF;
END
$$;

-- ---------------------------------------------------------------------------
-- The tenant a transaction acts for
-- ---------------------------------------------------------------------------
-- Not a definer function, but every policy calls it, so it runs as the owner
-- inside the definer functions below. It must stay inlinable (no SET clause:
-- policies call it per row), so its body is made independent of the path
-- instead: a qualified function, and arguments of exactly the built-in's
-- types. Same result as before.
CREATE OR REPLACE FUNCTION public.slaproof_current_tenant() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
        SELECT CAST(NULLIF(pg_catalog.current_setting(CAST('app.tenant_id' AS pg_catalog.text), true),
                           CAST('' AS pg_catalog.text)) AS pg_catalog.uuid)
    $$;

-- ---------------------------------------------------------------------------
-- The definer functions (as in 20261130000001 unless noted)
-- ---------------------------------------------------------------------------
CREATE OR REPLACE FUNCTION public.slaproof_authenticate_ingest_key(p_prefix text, p_secret_sha256 bytea)
    RETURNS TABLE (tenant_id uuid, key_id uuid)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT k.tenant_id, k.id FROM public.ingest_keys k
        WHERE k.prefix = p_prefix AND k.secret_sha256 = p_secret_sha256 AND k.revoked_at IS NULL
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_tenant_id_by_name(p_name text) RETURNS uuid
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ SELECT t.id FROM public.tenants t WHERE t.name = p_name $$;

CREATE OR REPLACE FUNCTION public.slaproof_list_tenants()
    RETURNS TABLE (id uuid, name text, display_name text, created_at timestamptz)
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$ SELECT t.id, t.name, t.display_name, t.created_at FROM public.tenants t ORDER BY t.name $$;

CREATE OR REPLACE FUNCTION public.slaproof_claim_jobs(p_kind text, p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, kind text, payload jsonb, attempts integer)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        WITH due AS (
            SELECT j.tenant_id, j.id FROM public.jobs j
            WHERE j.kind = p_kind AND j.run_at <= pg_catalog.now() AND j.failed_at IS NULL
              AND (j.locked_until IS NULL OR j.locked_until < pg_catalog.now())
            ORDER BY j.run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.jobs j
        SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease, attempts = j.attempts + 1,
            requeued = false
        FROM due WHERE j.tenant_id = due.tenant_id AND j.id = due.id
        RETURNING j.tenant_id, j.id, j.kind, j.payload, j.attempts
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_claim_outbox(p_worker text, p_limit integer, p_lease interval)
    RETURNS TABLE (tenant_id uuid, id uuid, seq bigint, event_type text, payload jsonb, created_at timestamptz)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        WITH pending AS (
            SELECT o.tenant_id, o.id FROM public.outbox o
            WHERE o.dispatched_at IS NULL AND (o.locked_until IS NULL OR o.locked_until < pg_catalog.now())
            ORDER BY o.seq
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.outbox o
        SET locked_by = p_worker, locked_until = pg_catalog.now() + p_lease
        FROM pending WHERE o.tenant_id = pending.tenant_id AND o.id = pending.id
        RETURNING o.tenant_id, o.id, o.seq, o.event_type, o.payload, o.created_at
    $$;

-- to_char: a date formatted as a timestamp without time zone, so the name no
-- longer goes through the session's time zone (it was a timestamptz at local
-- midnight formatted in that same zone: the same day). The advisory lock key
-- is the same number as before (the int4 hash widened to bigint).
CREATE OR REPLACE FUNCTION public.slaproof_ensure_event_partitions(p_from date, p_to date) RETURNS integer
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        d pg_catalog.date := p_from;
        part pg_catalog.text;
        created pg_catalog.int4 := 0;
    BEGIN
        IF p_to < p_from THEN
            RAISE EXCEPTION 'partition range ends (%) before it starts (%)', p_to, p_from;
        END IF;
        IF p_to - p_from > 1000 THEN
            RAISE EXCEPTION 'refusing to create % daily partitions at once (at most 1000)', p_to - p_from + 1;
        END IF;
        PERFORM pg_catalog.pg_advisory_xact_lock(
            CAST(pg_catalog.hashtext(CAST('slaproof_event_partitions' AS pg_catalog.text)) AS pg_catalog.int8));
        WHILE d <= p_to LOOP
            part := CAST('events_p' AS pg_catalog.text)
                || pg_catalog.to_char(CAST(d AS pg_catalog.timestamp), CAST('YYYYMMDD' AS pg_catalog.text));
            IF pg_catalog.to_regclass(CAST('public.' AS pg_catalog.text) || part) IS NULL THEN
                EXECUTE pg_catalog.format(
                    CAST('CREATE TABLE public.%I PARTITION OF public.events FOR VALUES FROM (%L) TO (%L)'
                         AS pg_catalog.text),
                    part,
                    CAST(d AS pg_catalog.text) || CAST(' 00:00:00+00' AS pg_catalog.text),
                    CAST(d + 1 AS pg_catalog.text) || CAST(' 00:00:00+00' AS pg_catalog.text));
                -- Reached only through the parent by the service role, but a
                -- partition is a table too: it gets the same wall.
                EXECUTE pg_catalog.format(
                    CAST('ALTER TABLE public.%I ENABLE ROW LEVEL SECURITY' AS pg_catalog.text), part);
                EXECUTE pg_catalog.format(
                    CAST('ALTER TABLE public.%I FORCE ROW LEVEL SECURITY' AS pg_catalog.text), part);
                EXECUTE pg_catalog.format(
                    CAST('CREATE POLICY tenant_isolation ON public.%I '
                         'USING (tenant_id = public.slaproof_current_tenant()) '
                         'WITH CHECK (tenant_id = public.slaproof_current_tenant())' AS pg_catalog.text),
                    part);
                created := created + 1;
            END IF;
            d := d + 1;
        END LOOP;
        RETURN created;
    END
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_drop_event_partitions(p_before date) RETURNS SETOF text
    LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
    DECLARE
        part record;
    BEGIN
        PERFORM pg_catalog.pg_advisory_xact_lock(
            CAST(pg_catalog.hashtext(CAST('slaproof_event_partitions' AS pg_catalog.text)) AS pg_catalog.int8));
        FOR part IN
            SELECT c.relname FROM pg_catalog.pg_inherits i
            JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
            WHERE i.inhparent = CAST('public.events' AS pg_catalog.regclass)
              AND c.relname ~ CAST('^events_p[0-9]{8}$' AS pg_catalog.text)
              AND pg_catalog.to_date(pg_catalog.substr(CAST(c.relname AS pg_catalog.text), 9),
                                     CAST('YYYYMMDD' AS pg_catalog.text)) + 1 <= p_before
            ORDER BY c.relname
        LOOP
            EXECUTE pg_catalog.format(CAST('DROP TABLE public.%I' AS pg_catalog.text), part.relname);
            RETURN NEXT part.relname;
        END LOOP;
    END
    $$;

CREATE OR REPLACE FUNCTION public.slaproof_event_partition_days() RETURNS SETOF date
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        SELECT pg_catalog.to_date(pg_catalog.substr(CAST(c.relname AS pg_catalog.text), 9),
                                  CAST('YYYYMMDD' AS pg_catalog.text))
        FROM pg_catalog.pg_inherits i
        JOIN pg_catalog.pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = CAST('public.events' AS pg_catalog.regclass)
          AND c.relname ~ CAST('^events_p[0-9]{8}$' AS pg_catalog.text)
        ORDER BY 1
    $$;

-- As in 20261130000610 (the phase from a hash of the probe's id). The hash
-- seed is the bigint it was converted to before; the modulo's divisor,
-- widened to bigint before too, is widened explicitly. The rest is numeric
-- (or, on PostgreSQL 13, double precision: extract's result type) arithmetic
-- left as it was: with only pg_catalog on the path no other operator can be
-- chosen.
CREATE OR REPLACE FUNCTION public.slaproof_claim_probes(p_limit integer)
    RETURNS TABLE (tenant_id uuid, id uuid, scheduled_at timestamptz)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    AS $$
        WITH due AS (
            SELECT p.tenant_id, p.id, p.next_run_at, p.interval_secs,
                -- the phase in seconds, in [0, interval), to the millisecond
                CAST((pg_catalog.hashtextextended(CAST(p.id AS pg_catalog.text), CAST(0 AS pg_catalog.int8))
                        % CAST(p.interval_secs * 1000 AS pg_catalog.int8)
                    + CAST(p.interval_secs * 1000 AS pg_catalog.int8))
                    % CAST(p.interval_secs * 1000 AS pg_catalog.int8) AS pg_catalog.numeric)
                    / CAST(1000 AS pg_catalog.numeric) AS phase
            FROM public.probes p
            WHERE p.enabled AND p.next_run_at <= pg_catalog.now()
            ORDER BY p.next_run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.probes p
        SET next_run_at = pg_catalog.to_timestamp(CAST(due.phase + due.interval_secs
                * (pg_catalog.floor((EXTRACT(epoch FROM pg_catalog.now()) - due.phase) / due.interval_secs) + 1)
                AS pg_catalog.float8))
        FROM due WHERE p.tenant_id = due.tenant_id AND p.id = due.id
        RETURNING p.tenant_id, p.id, due.next_run_at
    $$;

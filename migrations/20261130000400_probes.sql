-- Synthetic probes: endpoints of a provider that slaproof measures itself,
-- on a schedule, independent of what the provider reports. Each run becomes
-- an event with source 'probe' in the tenant's events.
--
-- Scheduling passes through this table, not memory: a runner claims due
-- probes with FOR UPDATE SKIP LOCKED and moves next_run_at on in the same
-- statement, so replicas never run one probe's slot twice.

CREATE TABLE probes (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    -- A handle providers type (`slaproof probe delete chat-eu`).
    name text NOT NULL CONSTRAINT probes_name_format CHECK (name ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    -- The event `service` (and `model`) the results carry, so SLAs can
    -- filter on them like on the provider's own events.
    service text NOT NULL CONSTRAINT probes_service_length CHECK (char_length(service) BETWEEN 1 AND 256),
    model text CONSTRAINT probes_model_length CHECK (char_length(model) BETWEEN 1 AND 256),
    -- http: one request, good when the status is the expected one.
    -- streaming_completion: an OpenAI-style chat completion with
    -- stream: true, timing the first token and the tokens after it.
    kind text NOT NULL CONSTRAINT probes_kind_known CHECK (kind IN ('http', 'streaming_completion')),
    method text NOT NULL CONSTRAINT probes_method_known CHECK (method IN ('GET', 'HEAD', 'POST', 'PUT', 'OPTIONS')),
    -- Checked against the operator's outbound-address policy when saved
    -- and again at every connection (DNS may change in between).
    url text NOT NULL CONSTRAINT probes_url_length CHECK (char_length(url) BETWEEN 1 AND 2048),
    -- Request headers, name → value. Values may be credentials (an API key
    -- for the completion endpoint): the API accepts them but only ever
    -- answers their names.
    headers jsonb NOT NULL DEFAULT '{}'::jsonb CONSTRAINT probes_headers_object CHECK (jsonb_typeof(headers) = 'object'),
    -- The JSON request body, if any (the completion request).
    body jsonb,
    expected_status integer NOT NULL CONSTRAINT probes_expected_status_range CHECK (expected_status BETWEEN 100 AND 599),
    -- Bounded: more often than every 10 s is load, not measurement.
    interval_secs integer NOT NULL CONSTRAINT probes_interval_range CHECK (interval_secs BETWEEN 10 AND 86400),
    timeout_ms integer NOT NULL CONSTRAINT probes_timeout_range
        CHECK (timeout_ms BETWEEN 100 AND 120000 AND timeout_ms <= interval_secs * 1000),
    enabled boolean NOT NULL DEFAULT true,
    -- The next scheduled run; advanced by whoever claims the probe.
    next_run_at timestamptz NOT NULL,
    -- The last run, for operators ("why is my probe red?"); the events are
    -- the record, this is a summary.
    last_run_at timestamptz,
    -- good, bad (answered, but not as expected) or error (no answer).
    last_outcome text CONSTRAINT probes_last_outcome_known CHECK (last_outcome IN ('good', 'bad', 'error')),
    last_status integer,
    last_error text,
    last_latency_us bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT probes_name_unique UNIQUE (tenant_id, name)
);
-- What the runners ask for every second, across tenants.
CREATE INDEX probes_due ON probes (next_run_at) WHERE enabled;
COMMENT ON TABLE probes IS
    'Synthetic probes of providers'' endpoints: definitions, their schedule (claimed with SKIP LOCKED) and their last result; results are events with source probe.';

ALTER TABLE probes ENABLE ROW LEVEL SECURITY;
ALTER TABLE probes FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON probes
    USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
-- For the claiming function below, as on jobs.
CREATE POLICY owner_functions ON probes TO CURRENT_USER USING (true) WITH CHECK (true);
GRANT SELECT, INSERT, UPDATE, DELETE ON probes TO slaproof_service;

-- Claims up to p_limit due probes across tenants and moves each one's
-- next_run_at past now on its own cadence (missed slots are skipped, not
-- run in a burst). Only keys and the slot leave this function; the runner
-- reads the definition in a tenant transaction.
CREATE FUNCTION slaproof_claim_probes(p_limit integer)
    RETURNS TABLE (tenant_id uuid, id uuid, scheduled_at timestamptz)
    LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, public, pg_temp
    AS $$
        WITH due AS (
            SELECT p.tenant_id, p.id, p.next_run_at, p.interval_secs FROM public.probes p
            WHERE p.enabled AND p.next_run_at <= now()
            ORDER BY p.next_run_at
            LIMIT p_limit
            FOR UPDATE SKIP LOCKED
        )
        UPDATE public.probes p
        SET next_run_at = due.next_run_at + make_interval(secs => due.interval_secs::double precision
                * (floor(extract(epoch FROM now() - due.next_run_at) / due.interval_secs) + 1))
        FROM due WHERE p.tenant_id = due.tenant_id AND p.id = due.id
        RETURNING p.tenant_id, p.id, due.next_run_at
    $$;
REVOKE ALL ON FUNCTION slaproof_claim_probes(integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slaproof_claim_probes(integer) TO slaproof_service;

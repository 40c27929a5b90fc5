-- The transparency log (issue #19): each tenant's events fixed day by day in
-- an append-only Merkle log (RFC 6962 hashes, C2SP tlog stored-hash layout),
-- so that a customer can check its own requests against a signed, anchored
-- head and an auditor can recompute a day from exported files.
--
-- The log grows once a day per tenant, in one transaction that adds the
-- day's entries, their stored hashes and the day's signed head, so a day is
-- logged whole or not at all. Rows are appended, never changed: the one
-- exception is the last, partial chunk of stored hashes, which a later day
-- extends (its earlier bytes are kept, which the trigger checks).

-- One row per tenant with a log: its size and the last day logged. Its row
-- lock serializes builders of one tenant's log across replicas.
CREATE TABLE transparency_logs (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    size bigint NOT NULL DEFAULT 0 CONSTRAINT transparency_logs_size_nonnegative CHECK (size >= 0),
    logged_through date,
    PRIMARY KEY (tenant_id)
);
COMMENT ON TABLE transparency_logs IS
    'Each tenant''s transparency log: how many leaves it holds and the last day built.';

-- Which event is which leaf. Keyed like events, so "not yet logged" is an
-- anti-join on the events key; the leaf index is unique within the log.
CREATE TABLE transparency_entries (
    tenant_id uuid NOT NULL,
    occurred_at timestamptz NOT NULL,
    event_id uuid NOT NULL,
    leaf_index bigint NOT NULL CONSTRAINT transparency_entries_index_nonnegative CHECK (leaf_index >= 0),
    -- The day whose batch logged it; later than the event's own day when
    -- it arrived after that day was built (a late event).
    log_day date NOT NULL,
    late boolean NOT NULL,
    -- The event's request id, kept here with an index so that a customer's
    -- lookup by request id is an index probe: the events table has none
    -- (ingest pays 13-30% for one, see 20261130000413); the daily build
    -- pays for this one instead.
    request_id text,
    PRIMARY KEY (tenant_id, occurred_at, event_id),
    CONSTRAINT transparency_entries_index_unique UNIQUE (tenant_id, leaf_index),
    FOREIGN KEY (tenant_id) REFERENCES transparency_logs (tenant_id)
);
CREATE INDEX transparency_entries_event ON transparency_entries (tenant_id, event_id);
CREATE INDEX transparency_entries_request ON transparency_entries (tenant_id, request_id)
    WHERE request_id IS NOT NULL;
COMMENT ON TABLE transparency_entries IS
    'The leaf index of every logged event; the leaf itself is recomputed from the event, so a changed event no longer matches its logged hash.';

-- The log's stored hashes (C2SP tlog order: stored_hash_index), packed 1024
-- to a chunk of 32-byte hashes so a 10-million-event day is 20 thousand
-- rows, not 20 million. Stored uncompressed (hashes do not compress) so a
-- proof reads its few hashes with substring() without detoasting a chunk.
CREATE TABLE transparency_hashes (
    tenant_id uuid NOT NULL,
    chunk bigint NOT NULL CONSTRAINT transparency_hashes_chunk_nonnegative CHECK (chunk >= 0),
    hashes bytea NOT NULL CONSTRAINT transparency_hashes_whole CHECK (octet_length(hashes) % 32 = 0
        AND octet_length(hashes) BETWEEN 32 AND 32768),
    PRIMARY KEY (tenant_id, chunk),
    FOREIGN KEY (tenant_id) REFERENCES transparency_logs (tenant_id)
);
ALTER TABLE transparency_hashes ALTER COLUMN hashes SET STORAGE EXTERNAL;
COMMENT ON TABLE transparency_hashes IS
    'The stored hashes of each tenant''s log, 1024 to a chunk; a chunk only ever grows.';

-- One signed head per tenant and day: the log after that day's batch.
CREATE TABLE transparency_heads (
    tenant_id uuid NOT NULL,
    log_day date NOT NULL,
    -- The day's leaves are [first_index, size).
    first_index bigint NOT NULL CONSTRAINT transparency_heads_first_nonnegative CHECK (first_index >= 0),
    size bigint NOT NULL,
    root bytea NOT NULL CONSTRAINT transparency_heads_root_length CHECK (octet_length(root) = 32),
    late_entries bigint NOT NULL DEFAULT 0,
    -- The C2SP checkpoint in a signed note, under verifier_key.
    checkpoint text NOT NULL,
    verifier_key text NOT NULL,
    -- The events counted were those stored when the day was built.
    built_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, log_day),
    CONSTRAINT transparency_heads_size_covers CHECK (size >= first_index),
    FOREIGN KEY (tenant_id) REFERENCES transparency_logs (tenant_id)
);
COMMENT ON TABLE transparency_heads IS
    'The signed tree head of each tenant''s log after each day''s batch.';

-- Entries and heads are facts: never changed nor deleted. A chunk may
-- grow, keeping its bytes. No one holds the privilege to change the log,
-- and a refusal says so.
CREATE FUNCTION slaproof_refuse_log_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        RAISE EXCEPTION 'the transparency log is append-only: % on % refused', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END
    $$;
CREATE FUNCTION slaproof_refuse_log_hash_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        IF TG_OP = 'UPDATE' AND NEW.tenant_id = OLD.tenant_id AND NEW.chunk = OLD.chunk
           AND substring(NEW.hashes FROM 1 FOR octet_length(OLD.hashes)) = OLD.hashes THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'the transparency log is append-only: % on % refused', TG_OP, TG_TABLE_NAME
            USING ERRCODE = 'insufficient_privilege';
    END
    $$;
CREATE TRIGGER transparency_entries_append_only BEFORE UPDATE OR DELETE ON transparency_entries
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_log_change();
CREATE TRIGGER transparency_hashes_append_only BEFORE UPDATE OR DELETE ON transparency_hashes
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_log_hash_change();
CREATE TRIGGER transparency_heads_append_only BEFORE UPDATE OR DELETE ON transparency_heads
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_log_change();

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['transparency_logs', 'transparency_entries', 'transparency_hashes',
                             'transparency_heads'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

GRANT SELECT, INSERT, UPDATE ON transparency_logs TO slaproof_service;
GRANT SELECT, INSERT ON transparency_entries TO slaproof_service;
GRANT SELECT, INSERT, UPDATE ON transparency_hashes TO slaproof_service;
GRANT SELECT, INSERT ON transparency_heads TO slaproof_service;

-- Where each day's head is anchored: the head's id (what the chain holds,
-- as the one member of a batch-root attestation for the day) and the
-- attestation. Written once, by the attestation worker.
CREATE TABLE transparency_anchors (
    tenant_id uuid NOT NULL,
    log_day date NOT NULL,
    head_id text NOT NULL CONSTRAINT transparency_anchors_head_id_format CHECK (head_id ~ '^0x[0-9a-f]{64}$'),
    anchor jsonb NOT NULL,
    anchored_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, log_day),
    FOREIGN KEY (tenant_id, log_day) REFERENCES transparency_heads (tenant_id, log_day)
);
COMMENT ON TABLE transparency_anchors IS
    'The chain attestation of each day''s transparency log head.';
CREATE TRIGGER transparency_anchors_append_only BEFORE UPDATE OR DELETE ON transparency_anchors
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_log_change();
ALTER TABLE transparency_anchors ENABLE ROW LEVEL SECURITY;
ALTER TABLE transparency_anchors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON transparency_anchors USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT ON transparency_anchors TO slaproof_service;

-- A check of a client-side log against the log, kept as the report the
-- customer (or the provider) was given, so it can be read again and the
-- dashboard can show the last one.
CREATE TABLE transparency_checks (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    -- The customer whose user ran it; none when the provider did.
    customer_id uuid,
    checked_by text NOT NULL,
    checked_at timestamptz NOT NULL,
    -- The head the proofs were checked against, when a day was built.
    head_day date,
    head_size bigint,
    requests integer NOT NULL,
    included integer NOT NULL,
    disagreeing integer NOT NULL,
    altered integer NOT NULL,
    not_logged integer NOT NULL,
    missing integer NOT NULL,
    report jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
CREATE INDEX transparency_checks_latest ON transparency_checks (tenant_id, customer_id, checked_at DESC);
COMMENT ON TABLE transparency_checks IS
    'Reports of checks of client-side request logs against the transparency log.';
ALTER TABLE transparency_checks ENABLE ROW LEVEL SECURITY;
ALTER TABLE transparency_checks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON transparency_checks USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT ON transparency_checks TO slaproof_service;

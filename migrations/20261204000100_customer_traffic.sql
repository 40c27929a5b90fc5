-- Customer traffic: every event may name the customer it served, so that
-- an SLA with a customer is judged on that customer's requests only.
--
-- `customer` is the provider's own reference (`customers.external_ref`),
-- not a foreign key: a reference slaproof does not know yet is stored, not
-- refused (traffic must not be lost because onboarding lags), and counts
-- for that customer as soon as the provider registers it, history intact.
-- Ingest is the only writer and checks the reference's format (the same
-- rule as customers_external_ref_format); a CHECK here would cost every
-- event a regular expression on the hot path. NULL: the event names no
-- customer (the provider's own probes, traffic it does not attribute),
-- counted by service-wide SLAs only.
ALTER TABLE events ADD COLUMN customer text;
COMMENT ON COLUMN events.customer IS
    'The customer the request served, by the provider''s reference (customers.external_ref); NULL when the event names none.';

-- A probe may run on behalf of one customer (with that customer's
-- credentials in its headers): its measurements then name that customer
-- and count for its SLAs as well as the service's. NULL: the provider's
-- own probe, counted by service-wide SLAs only.
ALTER TABLE probes ADD COLUMN customer text
    CONSTRAINT probes_customer_format CHECK (customer ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$');

-- Gauge values are placed by their request's event; the request's customer
-- decides which customer SLAs the value counts for.
ALTER TABLE gauge_requests ADD COLUMN customer text;
-- And an attributed value keeps it, so that a new customer SLA's backfill
-- places the values attributed before it was seen.
ALTER TABLE gauge_values ADD COLUMN customer text;
-- The evaluator sets it as it attributes a value (its other columns are
-- granted one by one, so this one is too).
GRANT UPDATE (customer) ON gauge_values TO slaproof_service;

-- Each log entry keeps the customer its event named when the day was
-- built: a customer's lookups (inclusion proofs, bulk checks, what was
-- logged for it) read this fixed copy, so a provider who re-attributes a
-- logged event afterwards cannot hide it from its customer (its leaf no
-- longer matches: the proof says `altered`). Entries are append-only.
ALTER TABLE transparency_entries ADD COLUMN customer text;
CREATE INDEX transparency_entries_customer ON transparency_entries (tenant_id, customer, occurred_at)
    WHERE customer IS NOT NULL;

-- ---------------------------------------------------------------------------
-- Customer references seen in traffic
-- ---------------------------------------------------------------------------
-- The evaluator tallies, as it reads each round's events, the customer
-- references they name, so that a provider sees which references it has
-- not registered (`evaluation-status`) and how much traffic each carried,
-- without a scan of the events table.
CREATE TABLE customer_references (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    external_ref text NOT NULL,
    first_seen_at timestamptz NOT NULL,
    last_seen_at timestamptz NOT NULL,
    -- Events read by the evaluator that named this reference.
    events bigint NOT NULL CONSTRAINT customer_references_events_nonnegative CHECK (events >= 0),
    PRIMARY KEY (tenant_id, external_ref)
);
COMMENT ON TABLE customer_references IS
    'Per tenant, every customer reference its events named, with how many: unknown ones are shown to the provider to register.';

ALTER TABLE customer_references ENABLE ROW LEVEL SECURITY;
ALTER TABLE customer_references FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON customer_references USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON customer_references TO slaproof_service;

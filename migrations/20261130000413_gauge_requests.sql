-- The requests gauge values can be placed at, recorded by the evaluator
-- while it reads new events, instead of an index on events(request_id).
--
-- A gauge value counts at its request's time: the occurred_at of the first
-- stored event with the value's (service, request_id). Finding that event
-- through an index on events made every event of every tenant pay one more
-- index entry (13-18% of sustained HTTP ingest, about 45% of the raw COPY
-- ceiling; docs/BENCHMARKS.md), for a feature only SLAs with gauge
-- objectives use. The evaluator reads every new event once anyway (rollups
-- advance from the watermark): while it does, it keeps here the first
-- event of each request of a service some gauge objective measures, and
-- attribution joins pending values to this table. Rows are written in the
-- evaluator's transaction, so the write path of ingest is untouched, and
-- only tenants with gauge objectives have rows at all.

CREATE TABLE gauge_requests (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    service text NOT NULL,
    request_id text NOT NULL,
    -- The request's time: the earliest occurred_at among its events seen
    -- since gauge coverage began, and when that event was stored (the
    -- value's arrival is the later of the value's and this).
    occurred_at timestamptz NOT NULL,
    received_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, service, request_id)
);
-- Pruning by the request's time (rows of events past retention).
CREATE INDEX gauge_requests_occurred ON gauge_requests (tenant_id, occurred_at);
COMMENT ON TABLE gauge_requests IS
    'The first event of each request of a service a gauge objective measures, recorded by the evaluator as it reads events: where gauge values by callback are placed in time.';

ALTER TABLE gauge_requests ENABLE ROW LEVEL SECURITY;
ALTER TABLE gauge_requests FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON gauge_requests USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());

-- UPDATE keeps the earliest event on conflict; DELETE prunes rows whose
-- events are gone (past the events' retention).
GRANT SELECT, INSERT, UPDATE, DELETE ON gauge_requests TO slaproof_service;

-- Events are no longer looked up by request id (see above).
DROP INDEX events_request;

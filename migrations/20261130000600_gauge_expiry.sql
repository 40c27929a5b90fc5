-- Gauge values that can never count: a value whose request's event never
-- arrives (a callback for a request that was never reported, a typo in the
-- request id) or that no gauge objective measures used to stay pending for
-- ever, looked at again by every evaluator round that measures its
-- service and metric.
--
-- The evaluator now marks values pending longer than a bound (the events'
-- default retention, 400 days: a request whose event is older is gone from
-- events and could never be found) as expired, in its round, tenant by
-- tenant. Marked, not deleted: that the value arrived stays on record
-- (ingest still answers a re-send as a duplicate, and a different value as
-- a conflict). An expired value is never attributed, even if its event
-- arrives later, so it never counts; recounts leave it out as well.
ALTER TABLE gauge_values ADD COLUMN expired_at timestamptz;
ALTER TABLE gauge_values ADD CONSTRAINT gauge_values_expired_unattributed
    CHECK (expired_at IS NULL OR attributed_at IS NULL);
COMMENT ON COLUMN gauge_values.expired_at IS
    'When the evaluator gave up on the value (pending past the bound): never attributed after it.';
GRANT UPDATE (expired_at) ON gauge_values TO slaproof_service;

-- What each round tries to attribute: pending values not expired.
DROP INDEX gauge_values_pending;
CREATE INDEX gauge_values_pending ON gauge_values (tenant_id, received_at)
    WHERE attributed_at IS NULL AND expired_at IS NULL;

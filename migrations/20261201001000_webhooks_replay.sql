-- Webhook replay and recovery (issue #14): a message delivered again to an
-- endpoint, on the provider's request, as a delivery of its own.
--
-- Until now a (message, endpoint) pair had one delivery at most. A resend
-- or a recovery writes another one, with its own attempt count (so the
-- retry schedule starts over) and the same message, so the same
-- `webhook-id`: the receiver deduplicates as it would a retry.

-- Where a delivery came from: the outbox fan-out, a replay asked for, or
-- a test-send (a `webhook.test` message written for one endpoint, marked
-- dispatched at once so the relay never fans it out to the others).
ALTER TABLE webhook_deliveries
    ADD COLUMN origin text NOT NULL DEFAULT 'fan_out'
        CONSTRAINT webhook_deliveries_origin_known CHECK (origin IN ('fan_out', 'resend', 'recover', 'test'));

-- The fan-out still writes one delivery per (message, endpoint): a relay
-- repeated after a crash adds nothing.
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_once;
CREATE UNIQUE INDEX webhook_deliveries_once ON webhook_deliveries (tenant_id, endpoint_id, message_id)
    WHERE origin = 'fan_out';
-- At most one replay of a message to an endpoint pending at a time: a
-- recovery asked twice, or a resend of a message a recovery already
-- queued, queues nothing more.
CREATE UNIQUE INDEX webhook_deliveries_one_pending_replay ON webhook_deliveries (tenant_id, endpoint_id, message_id)
    WHERE origin <> 'fan_out' AND delivered_at IS NULL AND failed_at IS NULL;

-- A recovery reads a tenant's messages since a time.
CREATE INDEX outbox_tenant_created ON outbox (tenant_id, created_at);

-- The worker asks, after a failed attempt, since when every attempt to the
-- endpoint has failed (an endpoint failing for webhooks.disable_after_failing_secs
-- is disabled): its deliveries, found by endpoint.
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (tenant_id, endpoint_id);

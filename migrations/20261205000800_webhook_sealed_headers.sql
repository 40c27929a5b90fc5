-- An endpoint's custom headers sealed at rest (issue #31, item 8): their
-- values are often the receiver's credentials (`Authorization: Bearer …`),
-- and were stored in the clear in `headers`. They are now sealed like the
-- endpoint's secret (AES-256-GCM under the webhook key, the tenant and
-- endpoint bound in), in `headers_sealed`; `headers` keeps the names only,
-- each with an empty value, for listing. A row written before this keeps
-- its values in `headers` with no `headers_sealed` until the endpoint's
-- headers are next set or `slaproof webhook reseal` seals them; the worker
-- sends either.
ALTER TABLE webhook_endpoints ADD COLUMN headers_sealed bytea;
COMMENT ON COLUMN webhook_endpoints.headers_sealed IS
    'The custom headers, names and values as JSON, sealed under the webhook key with the tenant and endpoint bound in; headers then holds the names only.';

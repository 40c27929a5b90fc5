-- The lookup of a request's event by request id (gauge values by callback,
-- see 20261130000410_gauges.sql) through a hash index on request_id alone
-- instead of a b-tree on (tenant_id, service, request_id): every event
-- written pays for this index, and in a bulk-insert measurement a hash
-- index costs about half what the b-tree did (+53% against +114% insert
-- time over the table's other two indexes; docs/BENCHMARKS.md). Lookups are
-- equalities on a value that is nearly unique, which is what hash indexes
-- are for; the tenant and service are checked on the few rows found.
DROP INDEX events_tenant_request;
CREATE INDEX events_request ON events USING hash (request_id) WHERE request_id IS NOT NULL;

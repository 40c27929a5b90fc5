-- distribute.sql — turn a migrated slaproof database on a Citus coordinator
-- into the layout docs/OPERATIONS.md ("Citus (distributed Postgres)") asks for:
--
--   * reference tables (a full copy on every node): `tenants`, `ingest_keys`
--     (its unique key on `prefix` does not lead with tenant_id, so it cannot
--     be sharded by tenant) and every other table without a `tenant_id`
--     column (today: `platform_secrets`);
--   * every table with a `tenant_id` column distributed by `tenant_id`, all in
--     one colocation group (anchored on `customers`), so every foreign key
--     between tenant tables and every per-tenant join stays on one shard.
--     The partitioned `events` is distributed through its parent; partitions
--     that exist are distributed with it, and ones created later
--     (slaproof_ensure_event_partitions) become distributed on creation.
--
-- The list comes from the catalog, not by hand, so tables added by later
-- migrations are picked up; `_sqlx_migrations` stays a local table on the
-- coordinator.
--
-- Foreign keys: the tables are taken in foreign-key order (reference tables
-- first, then each table after every table it references), but that alone
-- does not work on Citus 13.2: as soon as `tenants` is a reference table,
-- Citus turns every local table referencing it into a "Citus local table",
-- and the first create_distributed_table then fails with
--   ERROR: cannot create foreign key constraint since foreign keys from
--   reference tables and local tables to distributed tables are not supported
-- (the still-local children reference the newly distributed parent). So the
-- foreign keys of the tables below are saved, dropped, the tables
-- distributed, and the keys added back exactly as they were (same names and
-- definitions, validated). All of it in one transaction: a failure leaves
-- the database as it was.
--
-- Run as the owner of the tables (the role that ran `slaproof migrate`) on
-- the coordinator, after `slaproof migrate` and before any data is loaded
-- (with data it still works, but copies every row):
--
--   psql -h 127.0.0.1 -p 5441 -U postgres -d slaproof -f deploy/citus/distribute.sql
--
-- Idempotent: tables already in pg_dist_partition are skipped, so it can be
-- run again after a migration that adds tables.
--
-- Nothing else to apply afterwards: the claim functions Citus needs
-- (PL/pgSQL, one routed `FOR UPDATE SKIP LOCKED` per row) come with the
-- migrations since 20261201001600_citus_claims.sql, which replaced the
-- hand-check workaround claim-functions.sql; the webhook delivery claim
-- came with 20261201001700_citus_webhook_claim.sql.
\set ON_ERROR_STOP on

-- credit_entries carries a BEFORE UPDATE OR DELETE trigger (append-only
-- ledger). Citus refuses a table with triggers unless this is on; the
-- trigger only raises an error and reads no other row, so it is safe on the
-- shards. Set for the database too, so that later migrations adding
-- triggers to distributed tables are accepted.
SELECT format('ALTER DATABASE %I SET citus.enable_unsafe_triggers = on', current_database()) \gexec
SET citus.enable_unsafe_triggers = on;

BEGIN;
-- Reference tables and foreign keys created in the same transaction as
-- distributed tables need Citus to use one connection per node.
SET LOCAL citus.multi_shard_modify_mode = 'sequential';

-- The plan: every table of the schema not yet distributed, whether it becomes
-- a reference table, and its depth in the foreign-key graph.
CREATE TEMP TABLE citus_plan ON COMMIT DROP AS
WITH RECURSIVE
tbl AS (
    SELECT c.oid, c.relname,
           EXISTS (SELECT 1 FROM information_schema.columns col
                   WHERE col.table_schema = 'public' AND col.table_name = c.relname
                     AND col.column_name = 'tenant_id') AS has_tenant
    FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace
      AND c.relkind IN ('r', 'p')          -- plain and partitioned tables
      AND NOT c.relispartition             -- partitions follow their parent
      AND c.relname <> '_sqlx_migrations'  -- migration bookkeeping
      AND NOT EXISTS (SELECT 1 FROM pg_dist_partition d WHERE d.logicalrelid = c.oid)
),
fk AS (
    SELECT conrelid AS child, confrelid AS parent
    FROM pg_constraint
    WHERE contype = 'f' AND conrelid <> confrelid   -- a self-reference does not order
),
depth (oid, d) AS (
    SELECT oid, 0 FROM tbl
    UNION ALL
    SELECT fk.child, depth.d + 1 FROM depth JOIN fk ON fk.parent = depth.oid
)
SELECT t.oid, t.relname,
       (NOT t.has_tenant OR t.relname IN ('tenants', 'ingest_keys')) AS reference,
       max(depth.d) AS d
FROM tbl t JOIN depth USING (oid)
GROUP BY t.oid, t.relname, t.has_tenant;

-- The foreign keys to drop and add back: every one from or to a planned
-- table (keys inherited by partitions go with their parent's).
CREATE TEMP TABLE citus_fks ON COMMIT DROP AS
SELECT con.conrelid::regclass::text AS tbl, con.conname, pg_get_constraintdef(con.oid) AS def, p.d
FROM pg_constraint con
JOIN citus_plan p ON p.oid = con.conrelid
WHERE con.contype = 'f' AND con.conparentid = 0
UNION
SELECT con.conrelid::regclass::text, con.conname, pg_get_constraintdef(con.oid), 0
FROM pg_constraint con
JOIN citus_plan p ON p.oid = con.confrelid
WHERE con.contype = 'f' AND con.conparentid = 0
  AND con.conrelid NOT IN (SELECT oid FROM citus_plan);  -- from an already distributed table

\echo 'Plan (reference tables first, then the anchor, then by foreign-key depth):'
SELECT relname AS "table", CASE WHEN reference THEN 'reference' ELSE 'distributed' END AS kind, d AS depth
FROM citus_plan ORDER BY NOT reference, relname <> 'customers', d, relname;

DO $distribute$
DECLARE
    anchor CONSTANT text := 'customers';  -- colocation anchor for tenant tables
    r record;
    n_fks integer := 0;
BEGIN
    -- 1. Save (above) and drop the foreign keys.
    FOR r IN SELECT * FROM citus_fks ORDER BY d DESC, tbl, conname LOOP
        EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', r.tbl, r.conname);
        n_fks := n_fks + 1;
    END LOOP;
    RAISE NOTICE 'dropped % foreign keys for the move', n_fks;

    -- 2. Reference tables, then the anchor, then the rest, parents first.
    FOR r IN SELECT * FROM citus_plan ORDER BY NOT reference, relname <> anchor, d, relname LOOP
        IF r.reference THEN
            RAISE NOTICE 'create_reference_table(%)', r.relname;
            PERFORM create_reference_table(r.oid::regclass);
        ELSIF r.relname = anchor
              OR NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = anchor::regclass) THEN
            RAISE NOTICE 'create_distributed_table(%, tenant_id) (colocation anchor)', r.relname;
            PERFORM create_distributed_table(r.oid::regclass, 'tenant_id', colocate_with => 'default');
        ELSE
            RAISE NOTICE 'create_distributed_table(%, tenant_id, colocate_with => %)', r.relname, anchor;
            PERFORM create_distributed_table(r.oid::regclass, 'tenant_id', colocate_with => anchor);
        END IF;
    END LOOP;

    -- 3. The foreign keys back, parents' tables first, as they were.
    FOR r IN SELECT * FROM citus_fks ORDER BY d, tbl, conname LOOP
        EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', r.tbl, r.conname, r.def);
    END LOOP;
    RAISE NOTICE 'added back % foreign keys', n_fks;
END
$distribute$;

COMMIT;

-- What came out: every table of the schema, its kind and colocation group.
SELECT p.logicalrelid::regclass AS "table",
       CASE p.partmethod WHEN 'h' THEN 'distributed' WHEN 'n' THEN 'reference' ELSE p.partmethod::text END AS kind,
       p.colocationid AS colocation,
       (SELECT count(*) FROM pg_constraint con WHERE con.conrelid = p.logicalrelid AND con.contype = 'f') AS fks
FROM pg_dist_partition p
JOIN pg_class c ON c.oid = p.logicalrelid
WHERE c.relnamespace = 'public'::regnamespace AND NOT c.relispartition
ORDER BY 2 DESC, 1::text;

-- Tables of the schema left out (should be only _sqlx_migrations).
SELECT c.relname AS "not distributed"
FROM pg_class c
WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND NOT EXISTS (SELECT 1 FROM pg_dist_partition d WHERE d.logicalrelid = c.oid);

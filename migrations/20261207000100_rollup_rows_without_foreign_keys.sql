-- The four rollup tables lose their foreign keys to evaluator_coverage
-- (issue #29, the catch-up round). Each key was checked row by row: a
-- trigger per inserted row that looks the coverage row up and locks it
-- FOR KEY SHARE. A backlog of sparse traffic writes about one row per
-- event into each table (2,000,000 events made 8,000,000 rows in the
-- credits bench), and the checks were about half of the insert's cost:
-- 2,000,000 upserts of such rows in batches of 5,000 took 43.8-47.7 s with
-- the key and 23.1-24.8 s without (psql, one table, same box; see
-- docs/BENCHMARKS.md, "The catch-up round after fewer statements").
--
-- What the keys guarded still holds: only the evaluator writes these rows,
-- in the transaction that holds the tenant's watermark and has recorded
-- the version's coverage first (rollup::track_readable), and nothing
-- deletes coverage. Row-level security, the checks on each row and the
-- primary keys stay.
ALTER TABLE evaluator_rollups DROP CONSTRAINT evaluator_rollups_tenant_id_sla_id_version_fkey;
ALTER TABLE evaluator_rollups_hourly DROP CONSTRAINT evaluator_rollups_hourly_tenant_id_sla_id_version_fkey;
ALTER TABLE evaluator_sketches DROP CONSTRAINT evaluator_sketches_tenant_id_sla_id_version_fkey;
ALTER TABLE evaluator_sketches_hourly DROP CONSTRAINT evaluator_sketches_hourly_tenant_id_sla_id_version_fkey;

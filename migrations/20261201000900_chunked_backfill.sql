-- A new SLA version learns the events received before it was first seen
-- in bounded chunks, one per evaluator round, rather than all at once in
-- one round's transaction (a year window could read a year of events).
ALTER TABLE evaluator_coverage
    -- Events received before this instant are still being backfilled;
    -- NULL once the backfill is complete (or when there was nothing to do).
    ADD COLUMN backfill_before timestamptz,
    -- Where the backfill stands, in `(occurred_at, id)` order.
    ADD COLUMN backfill_occurred_at timestamptz,
    ADD COLUMN backfill_id uuid;

-- The evaluator moves the backfill along; what a version covers stays put.
GRANT UPDATE (backfill_before, backfill_occurred_at, backfill_id) ON evaluator_coverage TO slaproof_service;

-- The evaluator's watermark each daily measurement was counted at: every
-- event received before it is in the counts, none after. An auditor's
-- recount from the transparency log's leaves needs it to count the same
-- events (docs/TRANSPARENCY.md). Measurements recorded before this column
-- have none and cannot be recounted.
ALTER TABLE transparency_measurements ADD COLUMN counted_to timestamptz;

-- Why each revision of a period's result was frozen (contract terms,
-- finality): a revision names its cause, so that a customer reading a
-- corrected month sees what moved it. {"kind": "close"} for the first; for
-- a correction {"kind": "maintenance", "changes": [...]} (each window
-- announced, cancelled or accepted since, with who and when) or
-- {"kind": "counts"} (late telemetry under lateCorrections, or a recount).
-- Results frozen before this change have none.
ALTER TABLE period_results ADD COLUMN cause jsonb;
ALTER TABLE composite_period_results ADD COLUMN cause jsonb;
COMMENT ON COLUMN period_results.cause IS
    'Why this revision was frozen: close, maintenance (the changes since the last revision) or counts; NULL for results frozen before causes were kept.';

-- Thinning of old evaluations: one row per objective (and composite) per
-- round — 2,880 a day at the default 30 s — is more than a chart of last
-- month needs. Housekeeping keeps every evaluation for
-- `evaluator.evaluations_full_days`, and of older ones the last of each
-- hour per objective (per SLA for composites), and never one a frozen
-- period result or a kept composite names (see slaproof_evaluator::thinning).
--
-- The only DELETE the service role gets on evaluator facts: period results
-- (what credits and proofs rest on) stay insert-only, and the foreign key
-- from them keeps every evaluation they froze.
GRANT DELETE ON evaluations TO slaproof_service;
GRANT DELETE ON composite_evaluations TO slaproof_service;

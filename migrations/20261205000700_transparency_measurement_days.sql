-- The evaluator asks every round, of every SLA, which of its last month of
-- days were measured when: by SLA version and day, not by objective first
-- as the primary key orders them (10,000 customer SLAs spent most of a
-- round's database time scanning each SLA's measurements once per day).
-- `objective` and `measured_at` are included so the answer comes from the
-- index alone.
CREATE INDEX transparency_measurements_days
    ON transparency_measurements (tenant_id, sla_id, sla_version, day_start)
    INCLUDE (objective, measured_at);

-- Daily measurements fixed as a period goes (issue #19): each day of each
-- provable objective, once past its grace, is measured by the evaluator
-- (the day's good and bad weights, exactly the period vector's slots of
-- that day) and committed with a salted Poseidon hash anchored with the
-- next transparency-log head, so the data a period is proven over is fixed
-- on chain day by day, before the period's outcome is known.
--
-- A day whose counts change after it was measured (late events, a
-- maintenance window added) gets a new revision; earlier ones are kept.

CREATE TABLE transparency_measurements (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    sla_version integer NOT NULL,
    objective text NOT NULL,
    -- The local day (of the SLA window's time zone), cut to when the SLA
    -- version began to count, exactly as a period's vector cuts it.
    day_start timestamptz NOT NULL,
    revision integer NOT NULL CONSTRAINT transparency_measurements_revision_positive CHECK (revision > 0),
    day_end timestamptz NOT NULL,
    -- The form proven (`docs/CIRCUITS.md`): field, unit, `<=`, T.
    field text NOT NULL,
    unit text NOT NULL,
    threshold bigint NOT NULL CONSTRAINT transparency_measurements_threshold_u32 CHECK (threshold BETWEEN 0 AND 4294967295),
    good bigint NOT NULL CONSTRAINT transparency_measurements_good_40_bits CHECK (good BETWEEN 0 AND 1099511627775),
    bad bigint NOT NULL CONSTRAINT transparency_measurements_bad_40_bits CHECK (bad BETWEEN 0 AND 1099511627775),
    measured_at timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, sla_id, sla_version, objective, day_start, revision),
    CONSTRAINT transparency_measurements_day CHECK (day_end > day_start),
    FOREIGN KEY (tenant_id, sla_id, sla_version) REFERENCES sla_versions (tenant_id, sla_id, version)
);
COMMENT ON TABLE transparency_measurements IS
    'Each provable objective''s good and bad weights per local day, measured once the day is past its grace; a new revision when they change.';

-- The commitment of each measurement and where it is anchored: a member of
-- the batch-root attestation of a log day, beside that day's head.
-- Written once, by the attestation worker, in the transaction that records
-- the day's anchor.
CREATE TABLE transparency_commitments (
    tenant_id uuid NOT NULL,
    sla_id uuid NOT NULL,
    sla_version integer NOT NULL,
    objective text NOT NULL,
    day_start timestamptz NOT NULL,
    revision integer NOT NULL,
    -- The Poseidon commitment, decimal (a BN254 field element).
    commitment text NOT NULL CONSTRAINT transparency_commitments_decimal CHECK (commitment ~ '^[0-9]{1,78}$'),
    -- keccak256 of the member's ABI encoding: the leaf the chain holds.
    member_id text NOT NULL CONSTRAINT transparency_commitments_member_format CHECK (member_id ~ '^0x[0-9a-f]{64}$'),
    log_day date NOT NULL,
    -- The member's proof of inclusion in the day's batch root.
    proof jsonb NOT NULL,
    PRIMARY KEY (tenant_id, sla_id, sla_version, objective, day_start, revision),
    FOREIGN KEY (tenant_id, sla_id, sla_version, objective, day_start, revision)
        REFERENCES transparency_measurements (tenant_id, sla_id, sla_version, objective, day_start, revision),
    FOREIGN KEY (tenant_id, log_day) REFERENCES transparency_anchors (tenant_id, log_day)
);
CREATE INDEX transparency_commitments_day ON transparency_commitments (tenant_id, log_day);
COMMENT ON TABLE transparency_commitments IS
    'The anchored commitment of each daily measurement: its member of a log day''s batch root and the proof.';

CREATE TRIGGER transparency_measurements_append_only BEFORE UPDATE OR DELETE ON transparency_measurements
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_log_change();
CREATE TRIGGER transparency_commitments_append_only BEFORE UPDATE OR DELETE ON transparency_commitments
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_log_change();

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['transparency_measurements', 'transparency_commitments'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

GRANT SELECT, INSERT ON transparency_measurements TO slaproof_service;
GRANT SELECT, INSERT ON transparency_commitments TO slaproof_service;

-- Which circuit proved an attestation: `threshold` (a vector committed at
-- the close) or `daily` (the period's anchored daily commitments, listed in
-- `days` with their anchors, so that an auditor follows the proof to them).
ALTER TABLE attestations
    ADD COLUMN circuit text NOT NULL DEFAULT 'threshold'
        CONSTRAINT attestations_circuit_known CHECK (circuit IN ('threshold', 'daily')),
    ADD COLUMN days jsonb;
COMMENT ON COLUMN attestations.days IS
    'For a period proven over daily commitments: each day''s label, commitment, member id, inclusion proof and anchor.';

-- Attestations (issue #16): one per frozen period result of a provable
-- objective. The evaluator writes it, with the day-by-day vector it is
-- proven over, in the transaction that freezes the result; the attestation
-- worker proves it, then anchors the proof on chain. A row moves forward
-- only: pending -> proven -> anchored, or not_provable from the start (an
-- empty period, a numeric threshold, data that disagree with the result).
CREATE TABLE attestations (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    version integer NOT NULL,
    objective text NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    -- The revision of the period result this proves.
    revision integer NOT NULL,
    status text NOT NULL CONSTRAINT attestations_status_known
        CHECK (status IN ('pending', 'proven', 'anchored', 'not_provable')),
    -- Why it is not provable; or the last failed attempt's error while it
    -- is pending or proven.
    reason text,
    -- The domain's PeriodVector: field, unit, operator, threshold, the
    -- committed values, the proven fraction and the days' counts. With the
    -- salt (derived from the platform's attestation secret and the context)
    -- it is the commitment's opening.
    vector jsonb,
    CONSTRAINT attestations_vector_when_provable CHECK ((status = 'not_provable') = (vector IS NULL)),
    -- Set when proven.
    slots integer,
    context text,
    commitment text,
    quota_ppm integer,
    vk_sha256 text,
    proof bytea,
    proof_sha256 text,
    -- keccak-256 of the ABI-encoded anchored statement, 0x-hex.
    statement_id text,
    proven_at timestamptz,
    CONSTRAINT attestations_proof_when_proven CHECK (
        (status IN ('proven', 'anchored')) = (proof IS NOT NULL AND statement_id IS NOT NULL)),
    -- The chain block from which a retry looks for an attestation of this
    -- statement already made (so a send whose answer was lost is not sent
    -- again), noted before the first send.
    anchor_from_block bigint,
    -- hash-only, verified or batched; chain id, EAS address, UID, transaction, block.
    anchor jsonb,
    anchored_at timestamptz,
    -- What an auditor is handed, written with the anchor: snarkjs's
    -- verification_key.json, proof.json and public.json, and statement.json
    -- (file name -> content).
    bundle jsonb,
    CONSTRAINT attestations_anchor_when_anchored CHECK (
        (status = 'anchored') = (anchor IS NOT NULL AND bundle IS NOT NULL)),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT attestations_once UNIQUE (tenant_id, sla_id, objective, period_start, revision),
    FOREIGN KEY (tenant_id, sla_id, objective, period_start, revision)
        REFERENCES period_results (tenant_id, sla_id, objective, period_start, revision)
);
CREATE INDEX attestations_by_period ON attestations (tenant_id, sla_id, period_start DESC);
COMMENT ON TABLE attestations IS
    'Each frozen period result''s proof and anchor: the vector proven, the Groth16 proof, the statement id and where it is anchored.';

ALTER TABLE attestations ENABLE ROW LEVEL SECURITY;
ALTER TABLE attestations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON attestations USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON attestations TO slaproof_service;


-- Anchoring paths (issue #16): each attestation is anchored on the path its
-- SLA version asks for (spec.attestation.anchor), recorded when the
-- evaluator requests it so that a later version does not move it. The
-- batched path gathers a tenant's proven statements of one epoch under a
-- Merkle root, attested once when the epoch ends.
ALTER TABLE attestations
    ADD COLUMN anchor_path text NOT NULL DEFAULT 'hash-only'
        CONSTRAINT attestations_anchor_path_known CHECK (anchor_path IN ('hash-only', 'verified', 'batched'));

-- A tenant's batch of one epoch: open while statements join it; sealed
-- (members and root fixed, in one transaction with its last look at them)
-- once the epoch has ended; anchored when the root's attestation is made.
CREATE TABLE attestation_batches (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    epoch_start timestamptz NOT NULL,
    epoch_end timestamptz NOT NULL,
    status text NOT NULL CONSTRAINT attestation_batches_status_known
        CHECK (status IN ('open', 'sealed', 'anchored')),
    -- Set when sealed: the members' statement ids in leaf order, and the
    -- root of OpenZeppelin's standard Merkle tree over them (0x-hex).
    statement_ids jsonb,
    root text,
    CONSTRAINT attestation_batches_root_when_sealed CHECK (
        (status = 'open') = (root IS NULL AND statement_ids IS NULL)),
    -- As for attestations: the block a retry looks for an earlier anchor from.
    anchor_from_block bigint,
    anchor jsonb,
    anchored_at timestamptz,
    CONSTRAINT attestation_batches_anchor_when_anchored CHECK ((status = 'anchored') = (anchor IS NOT NULL)),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT attestation_batches_once UNIQUE (tenant_id, epoch_start),
    CONSTRAINT attestation_batches_epoch CHECK (epoch_end > epoch_start)
);
COMMENT ON TABLE attestation_batches IS
    'A tenant''s proven statements of one epoch under one Merkle root, anchored once on the batched path.';

ALTER TABLE attestation_batches ENABLE ROW LEVEL SECURITY;
ALTER TABLE attestation_batches FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON attestation_batches USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON attestation_batches TO slaproof_service;

ALTER TABLE attestations ADD COLUMN batch_id uuid,
    ADD CONSTRAINT attestations_batch FOREIGN KEY (tenant_id, batch_id)
        REFERENCES attestation_batches (tenant_id, id),
    ADD CONSTRAINT attestations_batch_only_batched CHECK (batch_id IS NULL OR anchor_path = 'batched');
CREATE INDEX attestations_by_batch ON attestations (tenant_id, batch_id) WHERE batch_id IS NOT NULL;

-- Who set up the key each attestation was proven with (issue #33):
-- 'development' (a single-party setup: whoever ran it can forge) or
-- 'ceremony' (a multi-party snarkjs ceremony). Shown on the dashboard and
-- in the API beside each proof; the auditor's bundle carries the whole
-- record (statement.json's key_setup). Proofs made before this column were
-- all made with development keys.
ALTER TABLE attestations ADD COLUMN key_setup text NOT NULL DEFAULT 'development'
    CHECK (key_setup IN ('development', 'ceremony'));

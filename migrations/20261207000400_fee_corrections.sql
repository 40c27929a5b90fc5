-- A fee correction (issue #30, "fees with history"): the provider states
-- again the fee one credited period of one SLA is computed on, with a
-- reason. A fee recorded later never reaches back into a credited period
-- (the fees route refuses it), so this is the one way a wrong fee gets
-- corrected, and it is an act of its own: who, when, why, and what the
-- period had been credited on before. The period's credit is then
-- computed again on it (a correcting ledger entry naming the correction).
CREATE TABLE fee_corrections (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    -- The customer the period was credited to (the judged version's).
    customer_id uuid NOT NULL,
    period_start timestamptz NOT NULL,
    currency text NOT NULL CONSTRAINT fee_corrections_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    minor_units smallint NOT NULL CONSTRAINT fee_corrections_minor_units_range CHECK (minor_units BETWEEN 0 AND 4),
    amount_minor bigint NOT NULL CONSTRAINT fee_corrections_amount_nonnegative CHECK (amount_minor >= 0),
    -- The fee the period had been credited on when it was corrected.
    was_currency text NOT NULL,
    was_minor_units smallint NOT NULL,
    was_amount_minor bigint NOT NULL,
    reason text NOT NULL CONSTRAINT fee_corrections_reason_given CHECK (length(btrim(reason)) BETWEEN 1 AND 1000),
    created_at timestamptz NOT NULL DEFAULT statement_timestamp(),
    created_by text NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
CREATE INDEX fee_corrections_period ON fee_corrections (tenant_id, sla_id, customer_id, period_start, created_at);
COMMENT ON TABLE fee_corrections IS
    'The fee a credited period of an SLA is computed on, stated again by the provider with a reason; the latest counts. Added, never changed.';

ALTER TABLE fee_corrections ENABLE ROW LEVEL SECURITY;
ALTER TABLE fee_corrections FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fee_corrections USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT ON fee_corrections TO slaproof_service;

-- A customer's own alert lines on its SLA's objectives: "tell me when
-- compliance falls below 99.95%", "when under a quarter of the error budget
-- is left", "when the budget burns faster than 2x". They never change the
-- contract (its targets are the provider's, in sla_versions); the evaluator
-- checks them against each evaluation and tells each crossing once.

CREATE TABLE customer_thresholds (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    -- The SLA's customer, whose line this is (a provider admin may set it
    -- on the customer's behalf).
    customer_id uuid NOT NULL,
    objective text NOT NULL,
    -- Parts per million of good events (999500 = 99.95%).
    compliance_below_ppm integer
        CONSTRAINT customer_thresholds_compliance_range CHECK (compliance_below_ppm BETWEEN 1 AND 1000000),
    -- Parts per million of the period's allowed error budget (250000 = 25%).
    budget_remaining_below_ppm integer
        CONSTRAINT customer_thresholds_budget_range CHECK (budget_remaining_below_ppm BETWEEN 1 AND 1000000),
    -- Thousandths of the sustainable burn rate over the last hour (2000 = 2x).
    burn_rate_above_milli bigint
        CONSTRAINT customer_thresholds_burn_positive CHECK (burn_rate_above_milli > 0),
    -- Which lines the latest evaluation was past, so a crossing and its
    -- recovery are each told once, not at every round. A changed line
    -- starts uncrossed.
    compliance_crossed boolean NOT NULL DEFAULT false,
    budget_crossed boolean NOT NULL DEFAULT false,
    burn_crossed boolean NOT NULL DEFAULT false,
    evaluated_at timestamptz,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, customer_id, objective),
    CONSTRAINT customer_thresholds_some_line CHECK (
        compliance_below_ppm IS NOT NULL OR budget_remaining_below_ppm IS NOT NULL
        OR burn_rate_above_milli IS NOT NULL),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
COMMENT ON TABLE customer_thresholds IS
    'A customer''s own alert lines per SLA objective and whether the latest evaluation was past each: alerting only, never the contract credits are paid on.';

ALTER TABLE customer_thresholds ENABLE ROW LEVEL SECURITY;
ALTER TABLE customer_thresholds FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON customer_thresholds USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());

-- Customers set, change and delete their lines; the evaluator updates the
-- crossing state.
GRANT SELECT, INSERT, UPDATE, DELETE ON customer_thresholds TO slaproof_service;

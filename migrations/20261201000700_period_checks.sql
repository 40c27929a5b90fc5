-- When a closed period was last judged again because maintenance over it
-- changed. A re-judgement that changes no number writes no new result, so
-- without this the period would be judged again every round.
CREATE TABLE period_checks (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    sla_id uuid NOT NULL,
    period_start timestamptz NOT NULL,
    checked_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, sla_id, period_start),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE period_checks IS
    'When each closed period was last judged again after a maintenance change over it (whether or not its numbers changed).';

ALTER TABLE period_checks ENABLE ROW LEVEL SECURITY;
ALTER TABLE period_checks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON period_checks USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
GRANT SELECT, INSERT, UPDATE ON period_checks TO slaproof_service;

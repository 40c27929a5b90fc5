-- Planned maintenance is agreed ahead, and whatever changes a verdict leaves
-- a record the customer can read (issue #12, item 7).
--
-- Before: a maintenance window was excluded from every SLA it covered the
-- moment it was written, whenever that was: a provider could declare one
-- over last month's outage and turn a breached month into a met one, with
-- no notice, no cap and no record of who did it.
--
-- Now (the rules are slaproof_domain::maintenance::judge):
--   * every window records who announced it (created_by) and who cancelled
--     it (cancelled_by), beside when (created_at, cancelled_at);
--   * a window announced at least the SLA's notice (spec.policy.maintenance
--     .notice, 72h by default) before it starts is planned, and planned
--     windows exclude at most the SLA's cap per period (maxPerPeriod), in
--     order of announcement; a window announced later, or once it had
--     started, is an emergency window and counts against the provider;
--   * the customer of an SLA may accept an emergency (or beyond-cap)
--     window for that SLA (maintenance_acceptances): it is then excluded
--     whole;
--   * creating, cancelling and accepting windows, and applying SLA
--     versions, write verdict_audit records the SLA's customer can read.

-- ---------------------------------------------------------------------------
-- Maintenance windows: author and the latest acceptance
-- ---------------------------------------------------------------------------
-- Windows written before this migration have no recorded author.
ALTER TABLE maintenance_windows ADD COLUMN created_by text NOT NULL DEFAULT 'unrecorded';
ALTER TABLE maintenance_windows ALTER COLUMN created_by DROP DEFAULT;
COMMENT ON COLUMN maintenance_windows.created_by IS
    'Who announced the window: the subject of the caller (a provider''s user or key). created_at is when, and decides whether the notice was met.';
ALTER TABLE maintenance_windows ADD COLUMN cancelled_by text,
    ADD CONSTRAINT maintenance_windows_cancelled_by CHECK (cancelled_by IS NULL OR cancelled_at IS NOT NULL);
COMMENT ON COLUMN maintenance_windows.cancelled_by IS 'Who cancelled the window (NULL for windows cancelled before it was recorded).';
-- The evaluator supersedes a closed period's result when a window over it
-- changed after the close; an acceptance is such a change.
ALTER TABLE maintenance_windows ADD COLUMN accepted_at timestamptz;
COMMENT ON COLUMN maintenance_windows.accepted_at IS
    'The latest acceptance of the window for any SLA (maintenance_acceptances holds each): when the evaluator must judge the periods it covers again.';
COMMENT ON TABLE maintenance_windows IS
    'Maintenance windows announced by providers: excluded from an SLA''s measurement when announced with the SLA''s notice and within its cap per period, or accepted by its customer; otherwise counted against the provider.';

-- ---------------------------------------------------------------------------
-- Acceptances: a customer agrees to an emergency window for its SLA
-- ---------------------------------------------------------------------------
CREATE TABLE maintenance_acceptances (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    window_id uuid NOT NULL,
    -- Per SLA: a tenant-wide window covers SLAs of several customers, and
    -- each customer accepts it for its own.
    sla_id uuid NOT NULL,
    accepted_at timestamptz NOT NULL DEFAULT now(),
    -- The subject of the customer's user who accepted.
    accepted_by text NOT NULL,
    PRIMARY KEY (tenant_id, window_id, sla_id),
    FOREIGN KEY (tenant_id, window_id) REFERENCES maintenance_windows (tenant_id, id),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
COMMENT ON TABLE maintenance_acceptances IS
    'Emergency (or beyond-cap) maintenance windows accepted by the customer of an SLA: excluded whole from that SLA''s measurement. Append-only.';

ALTER TABLE maintenance_acceptances ENABLE ROW LEVEL SECURITY;
ALTER TABLE maintenance_acceptances FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON maintenance_acceptances USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
-- An acceptance is a fact: never changed, never withdrawn.
GRANT SELECT, INSERT ON maintenance_acceptances TO slaproof_service;

-- ---------------------------------------------------------------------------
-- The verdict audit trail
-- ---------------------------------------------------------------------------
CREATE TABLE verdict_audit (
    tenant_id uuid NOT NULL REFERENCES tenants (id),
    id uuid NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    -- The SLA whose verdict the action can change; an action over several
    -- SLAs (a tenant-wide window) writes one record for each, so that a
    -- customer reads its own SLA's and nothing of another's.
    sla_id uuid NOT NULL,
    -- maintenance.created, maintenance.cancelled, maintenance.accepted,
    -- sla.applied.
    action text NOT NULL CONSTRAINT verdict_audit_action_format CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
    -- The subject of the caller who acted.
    actor text NOT NULL,
    -- Set when the actor is a customer's user, acting for this customer.
    actor_customer_id uuid,
    -- What was done: the window and its standing, the version applied, …
    details jsonb NOT NULL DEFAULT '{}'::jsonb,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id)
);
CREATE INDEX verdict_audit_sla ON verdict_audit (tenant_id, sla_id, id);
COMMENT ON TABLE verdict_audit IS
    'Every action that can change an SLA''s verdict, who did it and when; readable by the SLA''s customer. Append-only.';

ALTER TABLE verdict_audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE verdict_audit FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON verdict_audit USING (tenant_id = slaproof_current_tenant())
    WITH CHECK (tenant_id = slaproof_current_tenant());
-- Append-only: what was done is never rewritten.
GRANT SELECT, INSERT ON verdict_audit TO slaproof_service;

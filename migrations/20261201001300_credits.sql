-- Service credits (issue #13): the fee a customer pays per period, and an
-- append-only ledger of what each closed period's result owes it.
--
-- A credit is computed in the transaction that freezes the period's result
-- (the evaluator's close), so a worker dying between computing and recording
-- leaves neither, and the unique key below leaves one credit per SLA,
-- customer, period, SLA version and revision however many workers close the
-- period. A corrected period (late data, an accepted maintenance window)
-- adds a correcting entry that references the one it corrects: rows are
-- never updated nor deleted.

-- ---------------------------------------------------------------------------
-- The fee: part of the customer's contract data
-- ---------------------------------------------------------------------------
CREATE TABLE customer_fees (
    tenant_id uuid NOT NULL,
    customer_id uuid NOT NULL,
    -- The fee applies to the periods that start at or after this instant,
    -- until a later row takes over: a price change never rewrites the fee
    -- of a period already credited.
    effective_from timestamptz NOT NULL,
    -- ISO 4217 and its minor-unit exponent (EUR 2, JPY 0).
    currency text NOT NULL CONSTRAINT customer_fees_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    minor_units smallint NOT NULL CONSTRAINT customer_fees_minor_units_range CHECK (minor_units BETWEEN 0 AND 4),
    -- The fee per SLA period, in minor units.
    amount_minor bigint NOT NULL CONSTRAINT customer_fees_amount_nonnegative CHECK (amount_minor >= 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    created_by text NOT NULL,
    PRIMARY KEY (tenant_id, customer_id, effective_from),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id)
);
COMMENT ON TABLE customer_fees IS
    'What a customer pays per SLA period, from an instant on: the base of tiered credits and of caps as a share of the fee.';

-- ---------------------------------------------------------------------------
-- The ledger
-- ---------------------------------------------------------------------------
CREATE TABLE credit_entries (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL,
    sla_id uuid NOT NULL,
    customer_id uuid NOT NULL,
    period_start timestamptz NOT NULL,
    period_end timestamptz NOT NULL,
    -- The SLA version whose credit policy was applied (the one that judged
    -- the period).
    version integer NOT NULL,
    -- 1 for the first entry of (SLA, customer, period, version); each
    -- correction the next.
    revision integer NOT NULL CONSTRAINT credit_entries_revision_positive CHECK (revision > 0),
    kind text NOT NULL CONSTRAINT credit_entries_kind_known CHECK (kind IN ('issued', 'corrected')),
    -- The entry this one corrects (the period's previous entry).
    corrects uuid,
    CONSTRAINT credit_entries_correction_linked CHECK ((kind = 'corrected') = (corrects IS NOT NULL)),
    currency text NOT NULL CONSTRAINT credit_entries_currency_format CHECK (currency ~ '^[A-Z]{3}$'),
    minor_units smallint NOT NULL,
    -- What this entry adds to the period's credit (negative when a
    -- correction lowers it), and the period's credit after it.
    amount_minor bigint NOT NULL,
    total_minor bigint NOT NULL CONSTRAINT credit_entries_total_nonnegative CHECK (total_minor >= 0),
    -- Every input and step of the computation (the domain's
    -- CreditComputation), and the inputs as read.
    computation jsonb NOT NULL,
    -- The frozen results it was computed from: period_results ids (and the
    -- composite's), each with its revision.
    results jsonb NOT NULL,
    -- Reserved for the attestation that proves the period (issue #16).
    attestation_id uuid,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT credit_entries_once UNIQUE (tenant_id, sla_id, customer_id, period_start, version, revision),
    CONSTRAINT credit_entries_period_ordered CHECK (period_end > period_start),
    FOREIGN KEY (tenant_id, sla_id) REFERENCES slas (tenant_id, id),
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id),
    FOREIGN KEY (tenant_id, corrects) REFERENCES credit_entries (tenant_id, id)
);
CREATE INDEX credit_entries_customer ON credit_entries (tenant_id, customer_id, period_start);
COMMENT ON TABLE credit_entries IS
    'Append-only ledger of service credits: one entry per SLA, customer, period, version and revision; corrections are new entries referencing the one they correct.';

-- Append-only even for a role that could update: an entry once written is
-- what the provider's billing read.
CREATE FUNCTION slaproof_refuse_credit_change() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
    BEGIN
        RAISE EXCEPTION 'credit entries are append-only: add a correcting entry instead';
    END
    $$;
CREATE TRIGGER credit_entries_append_only BEFORE UPDATE OR DELETE ON credit_entries
    FOR EACH ROW EXECUTE FUNCTION slaproof_refuse_credit_change();

DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['customer_fees', 'credit_entries'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format('CREATE POLICY tenant_isolation ON %I USING (tenant_id = slaproof_current_tenant()) '
                       'WITH CHECK (tenant_id = slaproof_current_tenant())', t);
    END LOOP;
END
$$;

-- A fee row is contract history: added, never changed (a new price is a
-- new row from its instant on).
GRANT SELECT, INSERT ON customer_fees TO slaproof_service;
GRANT SELECT, INSERT ON credit_entries TO slaproof_service;

-- A fee from a date, read in each SLA's time zone (contract terms, #30):
-- "from 1 January" is each SLA's January, from its own local midnight.
-- Before, a fee started at an instant only, so a fee from midnight UTC
-- reached a Berlin month only from the next one. A fee with a date keeps
-- that date's midnight UTC in effective_from (its key and its place among
-- the customer's fees); fees recorded as instants have no date.
ALTER TABLE customer_fees ADD COLUMN effective_on date;
ALTER TABLE customer_fees ADD CONSTRAINT customer_fees_effective_on_at_midnight
    CHECK (effective_on IS NULL OR effective_from = effective_on::timestamp AT TIME ZONE 'UTC');
COMMENT ON COLUMN customer_fees.effective_on IS
    'When set, the fee applies to the SLA periods that start on or after this date in the SLA''s time zone; else to those starting at or after effective_from.';

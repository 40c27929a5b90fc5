-- A maintenance acceptance is the agreement of one customer (hardening II,
-- re-assigned SLAs; contract terms, maintenance by agreement). Before, an
-- acceptance was per window and SLA: after an SLA moved from customer A to
-- customer B, the windows A had accepted were excluded from B's periods
-- too, and B could not accept a window A had accepted. Now each acceptance
-- names the customer that gave it, and counts only for the periods judged
-- under a version of that customer.
--
-- Rows recorded before name the SLA's customer as it is now: the best
-- record there is (an SLA that moved since is then attributed to its new
-- customer, as it was judged before this change). A row whose SLA has no
-- customer now keeps a NULL customer and counts for no version.
ALTER TABLE maintenance_acceptances ADD COLUMN customer_id uuid;
UPDATE maintenance_acceptances a SET customer_id = s.customer_id
    FROM slas s WHERE s.tenant_id = a.tenant_id AND s.id = a.sla_id;
ALTER TABLE maintenance_acceptances DROP CONSTRAINT maintenance_acceptances_pkey;
ALTER TABLE maintenance_acceptances ADD CONSTRAINT maintenance_acceptances_once
    UNIQUE NULLS NOT DISTINCT (tenant_id, window_id, sla_id, customer_id);
ALTER TABLE maintenance_acceptances ADD CONSTRAINT maintenance_acceptances_customer_fkey
    FOREIGN KEY (tenant_id, customer_id) REFERENCES customers (tenant_id, id);
COMMENT ON COLUMN maintenance_acceptances.customer_id IS
    'The customer that accepted: the acceptance counts only for periods judged under a version of the SLA for this customer.';

-- The OTLP attribute that names the customer a span served, per tenant:
-- `slaproof.customer` unless the provider's instrumentation already names
-- it another way (`enduser.id`, `user.id`, or an attribute of its own).
ALTER TABLE tenants ADD COLUMN otlp_customer_attribute text NOT NULL DEFAULT 'slaproof.customer'
    CONSTRAINT tenants_otlp_customer_attribute_format
    CHECK (otlp_customer_attribute ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$');

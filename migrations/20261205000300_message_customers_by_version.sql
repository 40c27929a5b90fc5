-- Which of the tenant's customers a fact concerns, as of the fact (hardening
-- II, re-assigned SLAs). Before, a fact's SLA was resolved to the SLA's
-- customer at fan-out, and a fact naming a customer went to the SLA's
-- customer as well: after an SLA moved from one customer to another, the
-- new customer's filtered endpoints received the old customer's facts, and a
-- recovery replayed its history to them. Now:
--   * a fact naming a customer (`customer`: an alert line, a credit)
--     concerns that customer only;
--   * else a fact naming an SLA's version (`sla` and `version`) concerns
--     the customer that version's document names (`spec.customer`);
--   * else the customers of the SLAs it names (`sla`, or each of
--     `slas[].sla` for a maintenance window), as they are now.
-- Runs with the caller's rights: row-level security keeps it to the
-- caller's tenant. PL/pgSQL, not SQL: Citus cannot plan an SQL function
-- with parameters over distributed tables (tests/tests/e2e/citus_rules.rs).
CREATE OR REPLACE FUNCTION slaproof_message_customers(p_tenant uuid, p_payload jsonb) RETURNS uuid[]
    LANGUAGE plpgsql STABLE
    AS $$
    DECLARE
        v_customer uuid := slaproof_prefixed_uuid(p_payload ->> 'customer', 'cus');
        v_sla uuid := slaproof_prefixed_uuid(p_payload ->> 'sla', 'sla');
        v_out uuid[];
    BEGIN
        IF v_customer IS NOT NULL THEN
            RETURN ARRAY[v_customer];
        END IF;
        IF v_sla IS NOT NULL AND coalesce(p_payload ->> 'version', '') ~ '^[0-9]{1,9}$' THEN
            SELECT coalesce(array_agg(c.id), '{}') INTO v_out
            FROM sla_versions v
            JOIN customers c ON c.tenant_id = v.tenant_id
                            AND c.external_ref = v.definition #>> '{spec,customer}'
            WHERE v.tenant_id = p_tenant AND v.sla_id = v_sla
              AND v.version = (p_payload ->> 'version')::integer;
            RETURN v_out;
        END IF;
        SELECT coalesce(array_agg(DISTINCT s.customer_id), '{}') INTO v_out
        FROM slas s
        WHERE s.tenant_id = p_tenant AND s.customer_id IS NOT NULL
          AND s.id IN (
              SELECT v_sla
              UNION ALL
              SELECT slaproof_prefixed_uuid(x ->> 'sla', 'sla')
              FROM jsonb_array_elements(CASE WHEN jsonb_typeof(p_payload -> 'slas') = 'array'
                                             THEN p_payload -> 'slas' ELSE '[]'::jsonb END) AS x);
        RETURN v_out;
    END
    $$;

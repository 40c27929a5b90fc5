//! GraphQL parity with REST, checked: every REST operation of the OpenAPI document names the GraphQL field that does the same, and that field is in the schema (or says why it has none).

use std::collections::{BTreeMap, BTreeSet};

use async_graphql::{EmptySubscription, Schema};
use utoipa::OpenApi;

use crate::graphql::{Mutation, Query};
use crate::rest::ApiDoc;

/// Each REST operation and its GraphQL counterpart, `Type.field`; or why
/// it has none (`Err`).
const COUNTERPARTS: &[(&str, Result<&str, &str>)] = &[
    ("attestations_bundle", Ok("Query.attestationBundle")),
    ("attestations_show", Ok("Query.attestation")),
    ("credits_correct_fee", Ok("Mutation.correctCreditedFee")),
    (
        "credits_export",
        Err(
            "a file for a billing system (CSV or a JSON array, unpaged); `credits` pages the same entries",
        ),
    ),
    ("credits_list", Ok("Query.credits")),
    ("credits_recompute", Ok("Mutation.recomputeCredit")),
    ("credits_show", Ok("Query.credit")),
    ("credits_statement", Ok("Query.creditStatement")),
    ("customer_fees_list", Ok("Query.customerFees")),
    ("customer_fees_set", Ok("Mutation.setCustomerFee")),
    ("customers_create", Ok("Mutation.createCustomer")),
    ("customers_list", Ok("Query.customers")),
    ("customers_ranking", Ok("Query.customerRanking")),
    ("customers_show", Ok("Query.customer")),
    ("embed_origins_get", Ok("Query.embedOrigins")),
    ("embed_origins_set", Ok("Mutation.setEmbedOrigins")),
    ("embed_tokens_create", Ok("Mutation.createEmbedToken")),
    ("evaluation_status_show", Ok("Query.evaluationStatus")),
    ("ingest_keys_create", Ok("Mutation.createIngestKey")),
    ("ingest_keys_list", Ok("Query.ingestKeys")),
    ("ingest_keys_revoke", Ok("Mutation.revokeIngestKey")),
    ("ingest_settings_set", Ok("Mutation.setIngestSettings")),
    ("ingest_settings_show", Ok("Query.ingestSettings")),
    (
        "maintenance_windows_accept",
        Ok("Mutation.acceptMaintenanceWindow"),
    ),
    (
        "maintenance_windows_cancel",
        Ok("Mutation.cancelMaintenanceWindow"),
    ),
    (
        "maintenance_windows_create",
        Ok("Mutation.createMaintenanceWindow"),
    ),
    ("maintenance_windows_list", Ok("Sla.maintenanceWindows")),
    ("probes_create", Ok("Mutation.createProbe")),
    ("probes_delete", Ok("Mutation.deleteProbe")),
    ("probes_list", Ok("Query.probes")),
    ("probes_run", Ok("Mutation.runProbe")),
    ("probes_runs", Ok("Query.probeRuns")),
    ("probes_show", Ok("Query.probe")),
    ("probes_update", Ok("Mutation.updateProbe")),
    ("slas_alerts", Ok("Sla.alerts")),
    ("slas_apply", Ok("Mutation.applySla")),
    ("slas_attestations", Ok("Query.attestations")),
    ("slas_attribution", Ok("Query.attribution")),
    ("slas_audit", Ok("Sla.audit")),
    ("slas_breaches", Ok("Sla.breaches")),
    ("slas_budget_status", Ok("Sla.budgetStatus")),
    ("slas_change_target", Ok("Mutation.changeTarget")),
    ("slas_compliance", Ok("Sla.compliance")),
    ("slas_compliance_series", Ok("Sla.series")),
    ("slas_dashboard", Ok("Query.dashboard")),
    ("slas_export", Ok("Sla.export")),
    ("slas_list", Ok("Query.slas")),
    ("slas_periods", Ok("Sla.periods")),
    ("slas_show", Ok("Query.sla")),
    ("slas_thresholds_delete", Ok("Mutation.deleteThreshold")),
    ("slas_thresholds_list", Ok("Query.thresholds")),
    ("slas_thresholds_set", Ok("Mutation.setThreshold")),
    ("slas_versions", Ok("Sla.versions")),
    ("tenants_create", Ok("Mutation.createTenant")),
    ("tenants_list", Ok("Query.tenants")),
    ("transparency_check", Ok("Mutation.checkRequests")),
    ("transparency_consistency", Ok("Query.treeConsistency")),
    ("transparency_heads", Ok("Query.treeHeads")),
    ("transparency_latest_check", Ok("Query.lastRequestCheck")),
    ("transparency_request_proof", Ok("Query.requestProof")),
    ("transparency_show_check", Ok("Query.requestCheck")),
    ("webhook_endpoints_attempts", Ok("Query.webhookAttempts")),
    (
        "webhook_endpoints_create",
        Ok("Mutation.createWebhookEndpoint"),
    ),
    (
        "webhook_endpoints_delete",
        Ok("Mutation.deleteWebhookEndpoint"),
    ),
    (
        "webhook_endpoints_disable",
        Ok("Mutation.setWebhookEndpointEnabled"),
    ),
    (
        "webhook_endpoints_enable",
        Ok("Mutation.setWebhookEndpointEnabled"),
    ),
    ("webhook_endpoints_list", Ok("Query.webhookEndpoints")),
    (
        "webhook_endpoints_recover",
        Ok("Mutation.recoverWebhookMessages"),
    ),
    (
        "webhook_endpoints_resend",
        Ok("Mutation.resendWebhookMessage"),
    ),
    (
        "webhook_endpoints_rotate_secret",
        Ok("Mutation.rotateWebhookSecret"),
    ),
    ("webhook_endpoints_show", Ok("Query.webhookEndpoint")),
    ("webhook_endpoints_test", Ok("Mutation.testWebhookEndpoint")),
    (
        "webhook_endpoints_update",
        Ok("Mutation.updateWebhookEndpoint"),
    ),
    ("webhook_event_types_list", Ok("Query.webhookEventTypes")),
    (
        "webhook_event_types_schema",
        Ok("Query.webhookEventTypeSchema"),
    ),
];

/// The fields of every object type in `sdl`, as `Type.field`.
fn fields(sdl: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut current: Option<&str> = None;
    let mut in_description = false;
    for line in sdl.lines().map(str::trim) {
        if line.starts_with("\"\"\"") {
            // A description opens and closes on one line, or spans lines.
            if !(line.len() > 3 && line.ends_with("\"\"\"")) {
                in_description = !in_description;
            }
            continue;
        }
        if in_description || line.starts_with('"') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("type ") {
            current = rest.split([' ', '{']).next();
        } else if line.starts_with('}') {
            current = None;
        } else if let Some(ty) = current {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                found.insert(format!("{ty}.{name}"));
            }
        }
    }
    found
}

#[test]
fn every_rest_operation_has_its_graphql_counterpart() {
    let doc = ApiDoc::openapi();
    let operations: BTreeSet<String> = doc
        .paths
        .paths
        .values()
        .flat_map(|item| {
            [&item.get, &item.put, &item.post, &item.delete, &item.patch]
                .into_iter()
                .flatten()
                .filter_map(|op| op.operation_id.clone())
                .collect::<Vec<_>>()
        })
        .collect();
    let table: BTreeMap<&str, Result<&str, &str>> = COUNTERPARTS.iter().copied().collect();
    let unlisted: Vec<&String> = operations
        .iter()
        .filter(|op| !table.contains_key(op.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "REST operations without a GraphQL counterpart named in COUNTERPARTS: {unlisted:?}"
    );
    let stale: Vec<&&str> = table
        .keys()
        .filter(|op| !operations.contains(**op))
        .collect();
    assert!(
        stale.is_empty(),
        "COUNTERPARTS names no such REST operation: {stale:?}"
    );

    let sdl = Schema::build(Query::default(), Mutation::default(), EmptySubscription)
        .finish()
        .sdl();
    let schema = fields(&sdl);
    assert!(
        schema.contains("Query.sla") && schema.contains("Mutation.applySla"),
        "the SDL was not read: {schema:?}"
    );
    let missing: Vec<(&str, &str)> = COUNTERPARTS
        .iter()
        .filter_map(|(op, field)| match field {
            Ok(field) if !schema.contains(*field) => Some((*op, *field)),
            _ => None,
        })
        .collect();
    assert!(missing.is_empty(), "not in the GraphQL schema: {missing:?}");
}

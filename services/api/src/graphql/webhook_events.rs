//! The webhook event catalogue over GraphQL: the same reads as `/v1/webhook-event-types[/{type}]`, answered as their REST bodies.

use async_graphql::{Json, Object};
use slaproof_app::webhook_events;

use super::refuse;

#[derive(Debug, Default)]
pub(super) struct WebhookEventQuery;

#[Object]
impl WebhookEventQuery {
    /// The webhook event catalogue: every type with its payload version,
    /// description, whether it is reserved and an example, as
    /// `GET /v1/webhook-event-types` answers `data`.
    async fn webhook_event_types(&self) -> async_graphql::Result<Json<serde_json::Value>> {
        Ok(Json(serde_json::to_value(webhook_events::catalogue())?))
    }

    /// The JSON Schema (draft 2020-12) of one event type's `data`, as
    /// `GET /v1/webhook-event-types/{type}`.
    async fn webhook_event_type_schema(
        &self,
        #[graphql(name = "type")] event_type: String,
    ) -> async_graphql::Result<Json<serde_json::Value>> {
        let found = webhook_events::event_type(&event_type).map_err(refuse)?;
        Ok(Json(found.schema.clone()))
    }
}

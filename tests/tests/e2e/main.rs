//! The end-to-end tests, one test binary: each module is one area, run
//! against a real Postgres, HTTP server and, for the chain, anvil. One binary
//! rather than one per file: each links the whole platform, and forty links
//! cost minutes of build and gigabytes of disk.

mod api;
mod attestation;
mod attestation_paths;
mod chain_artifacts;
mod chain_batch;
mod chain_client;
mod chain_eas;
mod chain_resolver;
mod chain_verifier;
mod citus_rules;
mod credits;
mod credits_api;
mod customer_ranking;
mod customer_traffic;
mod customer_traffic_api;
mod definer;
mod demo_story;
mod evaluator;
mod evaluator_backfill;
mod evaluator_close;
mod evaluator_jobs;
mod evaluator_lateness;
mod evaluator_removed;
mod evaluator_signals;
mod evaluator_slices;
mod evaluator_spread;
mod evaluator_timeout;
mod gauges;
mod graphql_limits;
mod health;
mod ingest;
mod ingest_metrics;
mod ingest_restart;
mod isolation;
mod layering;
mod maintenance;
mod metrics_listener;
mod openslo_apply;
mod oracle;
mod pages;
mod pgbouncer;
mod probes;
mod probes_availability;
mod replicas;
mod security;
mod store;
mod transparency;
mod transparency_periods;
mod transparency_recount;
mod webhook_events;
mod webhooks;
mod webhooks_flow;
mod webhooks_options;

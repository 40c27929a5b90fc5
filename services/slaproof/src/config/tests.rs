//! The configuration's defaults, validation and secrecy, read from TOML as an operator writes it.

use super::*;

fn with(toml: &str) -> Result<Config, ConfigError> {
    Config::from_figment(Figment::new().merge(Toml::string(toml)))
}

#[test]
fn defaults_are_valid() {
    let config = with("").unwrap();
    assert_eq!(config.server.listen.port(), 8080);
    assert!(config.database.url.is_none());
    assert_eq!(config.events.retention_days, 400);
    assert!(config.telemetry.otlp_endpoint.is_none());
}

#[test]
fn telemetry_settings_are_checked_and_named() {
    let err = with("[telemetry]\notlp_endpoint = \"collector:4318\"").unwrap_err();
    assert!(err.to_string().contains("telemetry.otlp_endpoint"), "{err}");
    let err = with("[telemetry]\notlp_endpoint = \"ftp://collector\"").unwrap_err();
    assert!(err.to_string().contains("http or https"), "{err}");
    let err = with("[telemetry]\nsample_ratio = 1.5").unwrap_err();
    assert!(err.to_string().contains("telemetry.sample_ratio"), "{err}");
    let err = with("[telemetry]\nexport_interval_secs = 0").unwrap_err();
    assert!(
        err.to_string().contains("telemetry.export_interval_secs"),
        "{err}"
    );
    let config = with("[telemetry]\notlp_endpoint = \"http://127.0.0.1:4318\"").unwrap();
    assert_eq!(
        config.telemetry.otlp_endpoint.as_deref(),
        Some("http://127.0.0.1:4318")
    );
}

#[test]
fn the_shipped_default_file_matches_the_defaults_and_is_valid() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../slaproof.example.toml");
    let config = Config::from_figment(Figment::new().merge(Toml::file_exact(path))).unwrap();
    let defaults = Config::default();
    assert_eq!(config.server.listen, defaults.server.listen);
    assert_eq!(config.events.retention_days, defaults.events.retention_days);
    assert_eq!(
        config.events.partitions_ahead_days,
        defaults.events.partitions_ahead_days
    );
    assert_eq!(config.embedded.data_dir, defaults.embedded.data_dir);
    assert_eq!(config.evaluator, defaults.evaluator);
    assert_eq!(config.probes, defaults.probes);
    assert_eq!(config.webhooks, defaults.webhooks);
    assert_eq!(config.attestation, defaults.attestation);
    assert_eq!(config.transparency, defaults.transparency);
    assert_eq!(config.outbound, defaults.outbound);
    assert_eq!(
        config.database.max_connections,
        defaults.database.max_connections
    );
    assert_eq!(config.ingest.max_body_bytes, defaults.ingest.max_body_bytes);
    assert_eq!(config.ingest.max_in_flight, defaults.ingest.max_in_flight);
    assert_eq!(config.ingest.writers, defaults.ingest.writers);
    assert_eq!(config.telemetry, defaults.telemetry);
    assert_eq!(config.embedded.anvil, defaults.embedded.anvil);
    assert_eq!(config.embedded.anvil_port, defaults.embedded.anvil_port);
    let (chain, default_chain) = (&config.chain, &defaults.chain);
    assert!(chain.rpc_url.is_none() && chain.key.is_none() && chain.key_file.is_none());
    assert_eq!(chain.contracts, default_chain.contracts);
    assert_eq!(chain.confirmations, default_chain.confirmations);
    assert_eq!(chain.final_within_secs, default_chain.final_within_secs);
    assert_eq!(chain.resend_after_secs, default_chain.resend_after_secs);
    assert_eq!(chain.patience_secs, default_chain.patience_secs);
    assert_eq!(
        chain.max_fee_per_gas_gwei,
        default_chain.max_fee_per_gas_gwei
    );
    assert_eq!(
        chain.daily_spend_limit_gwei,
        default_chain.daily_spend_limit_gwei
    );
    assert_eq!(chain.poll_millis, default_chain.poll_millis);
    assert_eq!(config.api.issuer, defaults.api.issuer);
    assert_eq!(config.api.audience, defaults.api.audience);
    assert_eq!(config.api.leeway_secs, defaults.api.leeway_secs);
    assert!(config.api.keys.is_empty());
    assert_eq!(
        config.api.graphql_introspection,
        defaults.api.graphql_introspection
    );
    assert_eq!(config.api.graphql_max_depth, defaults.api.graphql_max_depth);
    assert_eq!(
        config.api.graphql_max_complexity,
        defaults.api.graphql_max_complexity
    );
}

#[test]
fn errors_name_the_key_and_the_rule() {
    let err = with("[events]\nretention_days = 0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("events.retention_days"), "{err}");
    assert!(err.contains("between 1 and 3650"), "{err}");

    let err = with("[database]\nurl = \"mysql://x\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("database.url: must be a postgres:// URL"),
        "{err}"
    );

    let err = with("[server]\nlisten = \"nowhere\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("server.listen"), "{err}");
}

#[test]
fn the_evaluators_connections_must_leave_room_in_the_pool() {
    let err = with("[evaluator]\nconnections = 10")
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "invalid configuration: evaluator.connections: must be below database.max_connections (10), got 10"
    );
    let err = with("[evaluator]\nconnections = 0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("evaluator.connections"), "{err}");
    assert!(with("[database]\nmax_connections = 20\n[evaluator]\nconnections = 12").is_ok());
}

#[test]
fn ingest_limits_are_checked_against_each_other() {
    let err = with("[ingest]\nwriters = 10").unwrap_err().to_string();
    assert!(err.contains("ingest.writers"), "{err}");
    let err = with("[ingest]\nwriters = 4\nmax_in_flight = 2")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ingest.max_in_flight"), "{err}");
    let err = with("[ingest]\nmax_decoded_bytes = 1024")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ingest.max_decoded_bytes"), "{err}");
    let err = with("[ingest]\nmax_in_flight_per_tenant = 17")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ingest.max_in_flight_per_tenant"), "{err}");
    let err = with("[ingest]\nmax_memory_bytes = 1048576")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ingest.max_memory_bytes"), "{err}");
    let err = with("[ingest]\nrate_limit_per_sec = -1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ingest.rate_limit_per_sec"), "{err}");
    let ok =
        with("[ingest]\nmax_in_flight_per_tenant = 16\nrate_limit_per_sec = 0\nkey_cache_secs = 0")
            .unwrap();
    let settings = ok.ingest.settings(&ok.events);
    assert_eq!(settings.max_in_flight_per_tenant, Some(16));
    assert_eq!(settings.rate_limit_per_sec, 0.0);
}

#[test]
fn api_keys_are_pinned_and_checked() {
    let err = with("[[api.keys]]\nid = \"k\"\nalgorithm = \"HS256\"\nsecret = \"short\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("api.keys.secret"), "{err}");
    let err = with("[[api.keys]]\nid = \"k\"\nalgorithm = \"RS256\"\npublic_key_pem = \"nope\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("api.keys.public_key_pem"), "{err}");
    let err = with("[[api.keys]]\nid = \"k\"\nalgorithm = \"none\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("algorithm"), "{err}");
    let config = with("[[api.keys]]\nid = \"k\"\nalgorithm = \"HS256\"\nsecret = \"0123456789abcdef0123456789abcdef\"").unwrap();
    assert!(!format!("{config:?}").contains("0123456789abcdef"));
}

#[test]
fn outbound_networks_and_probe_limits_are_checked() {
    let config = with("[outbound]\nallowed_networks = [\"10.20.0.0/16\", \"fd00::/8\"]").unwrap();
    assert_eq!(config.outbound.allowed_networks.len(), 2);
    assert!(!config.outbound.allow_private_targets);
    let err = with("[outbound]\nallowed_networks = [\"10.20.0.0/33\"]")
        .unwrap_err()
        .to_string();
    assert!(err.contains("allowed_networks"), "{err}");
    let err = with("[probes]\npoll_interval_ms = 1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("probes.poll_interval_ms"), "{err}");
}

#[test]
fn unknown_keys_are_refused() {
    let err = with("[database]\nulr = \"postgres://x\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("ulr"), "{err}");
}

#[test]
fn secrets_never_reach_debug_output() {
    let config = with("[database]\nurl = \"postgres://app:hunter2@db:5432/slaproof\"").unwrap();
    let shown = format!("{config:?}");
    assert!(!shown.contains("hunter2"), "{shown}");
    let options = config.service_connection().unwrap();
    assert_eq!(describe(&options), "app@db:5432/slaproof");
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    let config = with(&format!("[webhooks]\nsecret_key = \"{key}\"")).unwrap();
    assert!(!format!("{config:?}").contains(key));
    let err = with("[webhooks]\nsecret_key = \"c2hvcnQ=\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("webhooks.secret_key") && !err.contains("c2hvcnQ"),
        "{err}"
    );
}

#[test]
fn bad_url_error_does_not_echo_it() {
    let err = with("[database]\nurl = \"postgres://app:hunter2@db:notaport/x\"")
        .unwrap_err()
        .to_string();
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn migrate_url_needs_url() {
    let err = with("[database]\nmigrate_url = \"postgres://owner@db/x\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("database.migrate_url"), "{err}");
}

#[test]
fn a_metrics_listener_other_machines_reach_needs_a_token() {
    // #31 item 6: /metrics/slo named every tenant to anyone who could
    // reach 0.0.0.0:9464.
    let err = with("[telemetry]\nmetrics_listen = \"0.0.0.0:9464\"")
        .unwrap_err()
        .to_string();
    assert!(err.contains("telemetry.metrics_token"), "{err}");
    // This machine only: no token needed.
    let config = with("[telemetry]\nmetrics_listen = \"127.0.0.1:9464\"").unwrap();
    assert_eq!(config.telemetry.metrics_token().unwrap(), None);
    let err = with("[telemetry]\nmetrics_listen = \"0.0.0.0:9464\"\nmetrics_token = \"short\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("at least 16") && !err.contains("short\""),
        "{err}"
    );
    let config = with(
        "[telemetry]\nmetrics_listen = \"0.0.0.0:9464\"\nmetrics_token = \"prometheus-scrapes-here\"",
    )
    .unwrap();
    assert!(!format!("{config:?}").contains("prometheus-scrapes-here"));
    assert_eq!(
        config.telemetry.metrics_token().unwrap().as_deref(),
        Some("prometheus-scrapes-here")
    );
    let err = with(
        "[telemetry]\nmetrics_listen = \"0.0.0.0:9464\"\nmetrics_token = \"prometheus-scrapes-here\"\nmetrics_token_file = \"/x\"",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not both"), "{err}");
    let err = with("[telemetry]\nslo_series_per_tenant = 0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("telemetry.slo_series_per_tenant"), "{err}");
}

#[test]
fn settings_are_read_from_a_secrets_directory_as_kubernetes_mounts_it() {
    // #31 (deploy): the Kubernetes manifests passed the database URL, the
    // webhook sealing key, the embed secret and the metrics token as
    // environment variables. A Secret mounted as a directory is one file
    // per key, the files links into a hidden `..data` directory.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("..2026_12_07_04_00_00.000000001");
    std::fs::create_dir(&data).unwrap();
    let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
    std::fs::write(
        data.join("database.url"),
        "postgres://app:hunter2@db.internal:5432/slaproof\n",
    )
    .unwrap();
    std::fs::write(data.join("webhooks.secret_key"), format!("{key}\r\n")).unwrap();
    std::os::unix::fs::symlink(&data, dir.path().join("..data")).unwrap();
    for name in ["database.url", "webhooks.secret_key"] {
        std::os::unix::fs::symlink(Path::new("..data").join(name), dir.path().join(name)).unwrap();
    }
    let config = Config::load_with(None, Some(dir.path())).unwrap();
    assert_eq!(
        describe(&config.service_connection().unwrap()),
        "app@db.internal:5432/slaproof"
    );
    assert!(config.webhooks.key().unwrap().is_some());
    assert!(!format!("{config:?}").contains("hunter2"));

    // A file named after no setting is refused, naming it and the variable.
    std::fs::write(dir.path().join("database-url"), "x").unwrap();
    let err = Config::load_with(None, Some(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("database-url") && err.contains("SLAPROOF_SECRETS_DIR"),
        "{err}"
    );
    std::fs::remove_file(dir.path().join("database-url")).unwrap();
    // A key its section does not have is refused by name, as in a file.
    std::fs::write(dir.path().join("database.pasword"), "x").unwrap();
    let err = Config::load_with(None, Some(dir.path()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("pasword"), "{err}");
    // And a directory that is not there says so.
    let err = Config::load_with(None, Some(&dir.path().join("missing")))
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing"), "{err}");
}

//! The SECURITY DEFINER functions cannot be made to run the service role's
//! code as the owner of the schema (issue #11).
//!
//! They used to run with `search_path = pg_catalog, public, pg_temp`, and
//! several calls in their bodies matched a built-in only through an implicit
//! cast (to_char of a date, substr of a name, ...): a function or operator in
//! public with the exact argument types won overload resolution, and ran as
//! the owner. Migration 20261201000100 takes CREATE on public away from
//! everyone but its owner and pins their path to `pg_catalog, pg_temp`, with
//! every name in their bodies qualified.
//!
//! On the migrations before it:
//! * `every_definer_function_searches_only_pg_catalog_and_pg_temp` fails,
//!   listing all nine functions (their path names public);
//! * `overloads_planted_in_public_never_run_inside_definer_functions` fails:
//!   eight of the planted overloads (to_char, substr, pg_advisory_xact_lock,
//!   hashtextextended, both formats, the `%` and `*` operators) ran as the
//!   owner;
//! * `the_service_role_cannot_create_in_public` fails on PostgreSQL 13 and
//!   14 only: 15 and later no longer let PUBLIC create in public.

use std::collections::BTreeSet;

use slaproof_tests::TestDatabase;
use sqlx::{Connection, PgConnection, Row};

/// Every SECURITY DEFINER function of the schema, with a call the service
/// role makes and what it answers over the rows `seed` puts in (a count, so
/// the bodies run over rows, not an empty table). A definer function added
/// later fails `every_definer_function_is_attacked_here` until it has a line
/// here.
const DEFINER_CALLS: &[(&str, &str, i64)] = &[
    (
        "slaproof_authenticate_ingest_key",
        "SELECT count(*) FROM slaproof_authenticate_ingest_key('spk_definer0000', sha256('secret'))",
        1,
    ),
    (
        "slaproof_tenant_id_by_name",
        "SELECT count(slaproof_tenant_id_by_name('definer'))",
        1,
    ),
    (
        "slaproof_list_tenants",
        "SELECT count(*) FROM slaproof_list_tenants()",
        1,
    ),
    (
        "slaproof_claim_jobs",
        "SELECT count(*) FROM slaproof_claim_jobs('definer', 'definer-test', 10, '1 minute')",
        1,
    ),
    (
        "slaproof_claim_outbox",
        "SELECT count(*) FROM slaproof_claim_outbox('definer-test', 10, '1 minute')",
        1,
    ),
    (
        "slaproof_claim_probes",
        "SELECT count(*) FROM slaproof_claim_probes(10, 10, '{}', '{}')",
        1,
    ),
    (
        "slaproof_claim_webhook_deliveries",
        "SELECT count(*) FROM slaproof_claim_webhook_deliveries('definer-test', 10, '1 minute', 8, 8)",
        1,
    ),
    (
        "slaproof_platform_secret",
        "SELECT octet_length(slaproof_platform_secret('definer_test', sha256('a') || sha256('b')))::bigint",
        64,
    ),
    (
        "slaproof_ensure_event_partitions",
        "SELECT slaproof_ensure_event_partitions('2000-01-01', '2000-01-02')::bigint",
        2,
    ),
    (
        "slaproof_event_partition_days",
        "SELECT count(*) FROM slaproof_event_partition_days() d WHERE d < '2000-01-03'",
        2,
    ),
    (
        "slaproof_drop_event_partitions",
        "SELECT count(*) FROM slaproof_drop_event_partitions('2000-01-03')",
        2,
    ),
];

/// What the service role plants in public: overloads of what the definer
/// bodies call, each recording who ran it and then doing the real work (so
/// a hijacked call still succeeds, as a real attacker's would). Each comes
/// with an expression of the old bodies that picks it under their old path
/// `pg_catalog, public, pg_temp`: the control that the plant is live.
/// (Plants that lose to the built-in anyway, like hashtext(varchar) against
/// hashtext(text) for a literal, would prove nothing.)
const PLANTS: &[(&str, &str, &str)] = &[
    (
        "to_char(date, text)",
        "CREATE FUNCTION public.to_char(date, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('to_char(date, text)', current_user); \
           RETURN pg_catalog.to_char($1::timestamp, $2); END $$",
        "SELECT to_char(DATE '2000-01-01', 'YYYYMMDD')",
    ),
    (
        "substr(name, integer)",
        "CREATE FUNCTION public.substr(name, integer) RETURNS text LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('substr(name, integer)', current_user); \
           RETURN pg_catalog.substr($1::text, $2); END $$",
        "SELECT substr(c.relname, 9) FROM pg_class c WHERE c.relname = 'pg_class'",
    ),
    (
        "pg_advisory_xact_lock(integer)",
        "CREATE FUNCTION public.pg_advisory_xact_lock(integer) RETURNS void LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('pg_advisory_xact_lock(integer)', current_user); \
           PERFORM pg_catalog.pg_advisory_xact_lock($1::bigint); END $$",
        "SELECT pg_advisory_xact_lock(hashtext('slaproof_event_partitions'))",
    ),
    (
        "hashtextextended(text, integer)",
        "CREATE FUNCTION public.hashtextextended(text, integer) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('hashtextextended(text, integer)', current_user); \
           RETURN pg_catalog.hashtextextended($1, $2::bigint); END $$",
        "SELECT hashtextextended(gen_random_uuid()::text, 0)",
    ),
    // format with an unknown-typed format string: these hand the DDL the
    // partition functions execute to the service role.
    (
        "format(text, text)",
        "CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('format(text, text)', current_user); \
           RETURN pg_catalog.format($1, $2); END $$",
        "SELECT format('DROP TABLE public.%I', 'events_p20000101'::text)",
    ),
    (
        "format(text, text, text, text)",
        "CREATE FUNCTION public.format(text, text, text, text) RETURNS text LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('format(text, text, text, text)', current_user); \
           RETURN pg_catalog.format($1, $2, $3, $4); END $$",
        "SELECT format('%I %L %L', 'a'::text, 'b'::text, 'c'::text)",
    ),
    (
        "%(bigint, integer)",
        "CREATE FUNCTION public.definer_mod(bigint, integer) RETURNS bigint LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('%(bigint, integer)', current_user); \
           RETURN $1 OPERATOR(pg_catalog.%) $2::bigint; END $$; \
         CREATE OPERATOR public.% (LEFTARG = bigint, RIGHTARG = integer, FUNCTION = public.definer_mod)",
        "SELECT 7::bigint % 60",
    ),
    (
        "*(integer, numeric)",
        "CREATE FUNCTION public.definer_mul(integer, numeric) RETURNS numeric LANGUAGE plpgsql AS $$ BEGIN \
           INSERT INTO public.definer_hijacks VALUES ('*(integer, numeric)', current_user); \
           RETURN $1::numeric OPERATOR(pg_catalog.*) $2; END $$; \
         CREATE OPERATOR public.* (LEFTARG = integer, RIGHTARG = numeric, FUNCTION = public.definer_mul)",
        "SELECT 60 * 1.5",
    ),
];

const TENANT: &str = "00000000-0000-0000-0000-00000000def1";
const WEBHOOK_ENDPOINT: &str = "00000000-0000-4000-8000-00000000e001";
const WEBHOOK_MESSAGE: &str = "00000000-0000-4000-8000-00000000e002";

/// As the owner: one row for each definer function to find, and the table
/// the plants record into.
async fn seed(owner: &mut PgConnection) {
    for statement in [
        "CREATE TABLE public.definer_hijacks (function text NOT NULL, invoked_as text NOT NULL)"
            .to_owned(),
        "GRANT SELECT, INSERT ON public.definer_hijacks TO PUBLIC".to_owned(),
        format!(
            "INSERT INTO tenants (id, name, display_name) VALUES ('{TENANT}', 'definer', 'Definer')"
        ),
        format!(
            "INSERT INTO ingest_keys (tenant_id, id, prefix, secret_sha256, name) \
             VALUES ('{TENANT}', gen_random_uuid(), 'spk_definer0000', sha256('secret'), 'definer')"
        ),
        format!(
            "INSERT INTO jobs (tenant_id, id, kind, run_at) \
             VALUES ('{TENANT}', gen_random_uuid(), 'definer', now() - interval '1 minute')"
        ),
        format!(
            "INSERT INTO outbox (tenant_id, id, event_type, payload) \
             VALUES ('{TENANT}', gen_random_uuid(), 'definer.test', '{{}}')"
        ),
        // A webhook endpoint with a due delivery of an already relayed message.
        format!(
            "INSERT INTO webhook_endpoints (tenant_id, id, url, event_types, secret_sealed) \
             VALUES ('{TENANT}', '{WEBHOOK_ENDPOINT}', 'http://127.0.0.1:9/', '{{*}}', \
                     decode(repeat('00', 52), 'hex'))"
        ),
        format!(
            "INSERT INTO outbox (tenant_id, id, event_type, payload, dispatched_at) \
             VALUES ('{TENANT}', '{WEBHOOK_MESSAGE}', 'definer.webhook', '{{}}', now())"
        ),
        format!(
            "INSERT INTO webhook_deliveries (tenant_id, id, endpoint_id, message_id) \
             VALUES ('{TENANT}', gen_random_uuid(), '{WEBHOOK_ENDPOINT}', '{WEBHOOK_MESSAGE}')"
        ),
        format!(
            "INSERT INTO probes (tenant_id, id, name, service, kind, method, url, expected_status, \
                                 interval_secs, timeout_ms, next_run_at) \
             VALUES ('{TENANT}', gen_random_uuid(), 'definer', 'definer', 'http', 'GET', \
                     'http://127.0.0.1:9/', 200, 60, 1000, now() - interval '1 minute')"
        ),
    ] {
        sqlx::query(&statement)
            .execute(&mut *owner)
            .await
            .unwrap_or_else(|e| panic!("{statement}: {e}"));
    }
}

/// The planted calls recorded since the last look, as (function, role).
async fn hijacks(owner: &mut PgConnection) -> Vec<(String, String)> {
    sqlx::query_as("DELETE FROM public.definer_hijacks RETURNING function, invoked_as")
        .fetch_all(&mut *owner)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_service_role_cannot_create_in_public() {
    let database = TestDatabase::create().await;
    let mut service = PgConnection::connect_with(&database.service).await.unwrap();
    for statement in [
        "CREATE FUNCTION public.definer_planted() RETURNS integer LANGUAGE sql AS 'SELECT 1'",
        "CREATE TABLE public.definer_planted (a integer)",
    ] {
        let err = sqlx::query(statement)
            .execute(&mut service)
            .await
            .expect_err(statement);
        assert_eq!(
            err.as_database_error().and_then(|e| e.code()).as_deref(),
            Some("42501"),
            "{statement}: {err}"
        );
        assert!(
            err.to_string()
                .contains("permission denied for schema public"),
            "{statement}: {err}"
        );
    }

    // Nor does anyone else but the owner: not PUBLIC, not the group role.
    let mut owner = database.owner_connection().await;
    let public_creates: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM pg_namespace n, \
                        aclexplode(coalesce(n.nspacl, acldefault('n', n.nspowner))) a \
                        WHERE n.nspname = 'public' AND a.grantee = 0 AND a.privilege_type = 'CREATE')",
    )
    .fetch_one(&mut owner)
    .await
    .unwrap();
    assert!(!public_creates, "PUBLIC may create in schema public");
    let service_creates: bool =
        sqlx::query_scalar("SELECT has_schema_privilege('slaproof_service', 'public', 'CREATE')")
            .fetch_one(&mut owner)
            .await
            .unwrap();
    assert!(
        !service_creates,
        "slaproof_service may create in schema public"
    );
}

#[tokio::test]
async fn every_definer_function_searches_only_pg_catalog_and_pg_temp() {
    let database = TestDatabase::create().await;
    let mut owner = database.owner_connection().await;
    let rows = sqlx::query(
        "SELECT p.oid::regprocedure::text AS function, \
                (SELECT c FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%') AS search_path \
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema') \
         ORDER BY 1",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    assert!(!rows.is_empty(), "no SECURITY DEFINER function found");

    let mut wrong = Vec::new();
    for row in &rows {
        let function: String = row.get("function");
        let setting: Option<String> = row.get("search_path");
        // `pg_catalog, pg_temp`: nothing anyone else may create in, and
        // pg_temp named last (unnamed, it would be searched first for
        // relations).
        let schemas: Option<Vec<String>> = setting.as_deref().map(|s| {
            s.trim_start_matches("search_path=")
                .split(',')
                .map(|schema| schema.trim().trim_matches('"').to_owned())
                .collect()
        });
        if schemas.as_deref() != Some(&["pg_catalog".to_owned(), "pg_temp".to_owned()][..]) {
            wrong.push(format!(
                "{function}: {}",
                setting.as_deref().unwrap_or("no search_path")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "SECURITY DEFINER functions must SET search_path = pg_catalog, pg_temp:\n{}",
        wrong.join("\n")
    );
}

#[tokio::test]
async fn every_definer_function_is_attacked_here() {
    let database = TestDatabase::create().await;
    let mut owner = database.owner_connection().await;
    let in_schema: BTreeSet<String> = sqlx::query_scalar(
        "SELECT p.proname::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
         WHERE p.prosecdef AND n.nspname NOT IN ('pg_catalog', 'information_schema')",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap()
    .into_iter()
    .collect();
    let attacked: BTreeSet<String> = DEFINER_CALLS
        .iter()
        .map(|(name, _, _)| (*name).to_owned())
        .collect();
    assert_eq!(
        in_schema, attacked,
        "add a call of each SECURITY DEFINER function to DEFINER_CALLS"
    );
}

#[tokio::test]
async fn overloads_planted_in_public_never_run_inside_definer_functions() {
    let database = TestDatabase::create().await;
    let mut owner = database.owner_connection().await;
    seed(&mut owner).await;
    // The attack model: a service role that may create in public, as every
    // role could on PostgreSQL 13 and 14 before the migration.
    let service_role = database.service.get_username().to_owned();
    sqlx::query(&format!(
        "GRANT CREATE ON SCHEMA public TO \"{service_role}\""
    ))
    .execute(&mut owner)
    .await
    .unwrap();

    let mut service = PgConnection::connect_with(&database.service).await.unwrap();
    for (plant, create, _) in PLANTS {
        sqlx::raw_sql(create)
            .execute(&mut service)
            .await
            .unwrap_or_else(|e| panic!("planting {plant}: {e}"));
    }

    // Control: under the definer functions' old path, each plant wins.
    sqlx::query("SET search_path = pg_catalog, public, pg_temp")
        .execute(&mut service)
        .await
        .unwrap();
    for (plant, _, control) in PLANTS {
        sqlx::query(control)
            .execute(&mut service)
            .await
            .unwrap_or_else(|e| panic!("{control}: {e}"));
        let recorded = hijacks(&mut owner).await;
        assert!(
            recorded.contains(&((*plant).to_owned(), service_role.clone())),
            "{plant} is not picked by `{control}` under the old path: {recorded:?}"
        );
    }
    sqlx::query("RESET search_path")
        .execute(&mut service)
        .await
        .unwrap();

    // The attack: the service role calls every definer function.
    for (function, call, expected) in DEFINER_CALLS {
        let answer: i64 = sqlx::query_scalar(call)
            .fetch_one(&mut service)
            .await
            .unwrap_or_else(|e| panic!("{function}: {e}"));
        assert_eq!(answer, *expected, "{function}: {call}");
    }
    let recorded: BTreeSet<_> = hijacks(&mut owner).await.into_iter().collect();
    assert!(
        recorded.is_empty(),
        "definer functions ran overloads the service role planted in public \
         (function, as role): {recorded:?}"
    );
}

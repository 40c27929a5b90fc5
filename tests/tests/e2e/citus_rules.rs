//! The rules that keep slaproof runnable on Citus (`tenants` a reference
//! table, every other tenant table distributed by `tenant_id`), checked on
//! the migrated schema and on the SQL in the sources, so that a new table
//! or query that breaks them fails here rather than on a cluster:
//!
//! - every primary key and unique index of a table with `tenant_id` leads
//!   with it (Citus enforces uniqueness per shard only);
//! - every foreign key between tenant tables leads with `tenant_id` on both
//!   sides (colocated), and one to `tenants` is on `tenant_id`;
//! - no `INSERT … ON CONFLICT DO UPDATE` calls a non-immutable function
//!   (`now()` and its kin) after `DO UPDATE`: Citus refuses those on
//!   distributed tables; the value goes in the inserted row and the update
//!   takes it from `EXCLUDED`;
//! - no `UPDATE` calls one inside `CASE` or `COALESCE` (Citus refuses
//!   those on distributed and reference tables alike): the time is bound;
//! - no `LANGUAGE sql` function with parameters reads a distributed table
//!   (Citus cannot plan a SQL function's parameters against one): such
//!   functions are PL/pgSQL.
//!
//! What a real cluster showed beyond these, and how it was run, is in
//! docs/OPERATIONS.md ("Citus") and deploy/citus/.

use std::path::Path;

use slaproof_tests::TestDatabase;

/// A foreign key: its name, its table, the table it refers to, and the
/// columns on each side in order.
type ForeignKey = (String, String, String, Vec<String>, Vec<String>);

#[tokio::test]
async fn every_key_of_a_tenant_table_leads_with_tenant_id_and_foreign_keys_stay_within_a_tenant() {
    let database = TestDatabase::create().await;
    let mut owner = database.owner_connection().await;
    // Unique indexes (primary keys among them) of tables that have a
    // tenant_id column, whose first column is not tenant_id.
    let keys: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, i.relname::text \
         FROM pg_index x \
         JOIN pg_class i ON i.oid = x.indexrelid \
         JOIN pg_class c ON c.oid = x.indrelid \
         WHERE c.relnamespace = 'public'::regnamespace AND x.indisunique \
           AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid \
                       AND a.attname = 'tenant_id' AND NOT a.attisdropped) \
           AND (SELECT a.attname FROM pg_attribute a \
                WHERE a.attrelid = c.oid AND a.attnum = x.indkey[0]) IS DISTINCT FROM 'tenant_id' \
           AND NOT c.relispartition \
         ORDER BY 1, 2",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    // Known, and why. An ingest key is found by its prefix before its
    // tenant is known (the sender names no tenant), so the prefix is unique
    // across tenants: on Citus, `ingest_keys` must be a reference table or
    // the prefix lookup must move to one (docs/OPERATIONS.md, Citus).
    let known = [("ingest_keys", "ingest_keys_prefix_unique")];
    let keys: Vec<_> = keys
        .into_iter()
        .filter(|(t, i)| !known.contains(&(t.as_str(), i.as_str())))
        .collect();
    assert!(
        keys.is_empty(),
        "unique keys not led by tenant_id (Citus checks uniqueness per shard): {keys:?}"
    );

    // Foreign keys from a tenant table: to `tenants` on tenant_id, or to
    // another tenant table with tenant_id first on both sides.
    let foreign: Vec<ForeignKey> = sqlx::query_as(
        "SELECT c.conname::text, src.relname::text, dst.relname::text, \
                ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, o) \
                      JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n ORDER BY k.o), \
                ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, o) \
                      JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n ORDER BY k.o) \
         FROM pg_constraint c \
         JOIN pg_class src ON src.oid = c.conrelid \
         JOIN pg_class dst ON dst.oid = c.confrelid \
         WHERE c.contype = 'f' AND src.relnamespace = 'public'::regnamespace \
           AND NOT src.relispartition AND c.conparentid = 0 \
         ORDER BY 1",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    assert!(
        foreign.len() > 20,
        "the query found the foreign keys: {foreign:?}"
    );
    let wrong: Vec<_> = foreign
        .iter()
        .filter(|(_, _, to, from_cols, to_cols)| {
            if to == "tenants" {
                from_cols.as_slice() != ["tenant_id"] || to_cols.as_slice() != ["id"]
            } else {
                from_cols.first().map(String::as_str) != Some("tenant_id")
                    || to_cols.first().map(String::as_str) != Some("tenant_id")
            }
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "foreign keys that could cross tenants (not colocated on Citus): {wrong:?}"
    );
}

/// The SQL after each `DO UPDATE` in the sources, with its file and line.
fn upserts() -> Vec<(String, usize, String)> {
    statements_from("DO UPDATE")
}

/// The SQL from each `needle` in the Rust sources to the end of the string
/// literal it is in, with its file and line.
fn statements_from(needle: &str) -> Vec<(String, usize, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../services");
    let mut found = Vec::new();
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices(needle) {
                    // To the end of the string literal it is in.
                    let rest = &text[at..];
                    let mut end = 0;
                    while let Some(q) = rest[end..].find('"') {
                        end += q;
                        if !rest[..end].ends_with('\\') {
                            break;
                        }
                        end += 1;
                    }
                    let line = text[..at].lines().count();
                    found.push((path.display().to_string(), line, rest[..end].to_owned()));
                }
            }
        }
    }
    found
}

/// Functions Citus will not evaluate inside CASE or COALESCE of an UPDATE,
/// nor after an upsert's DO UPDATE.
const VOLATILE: &[&str] = &[
    "now()",
    "clock_timestamp(",
    "statement_timestamp(",
    "transaction_timestamp(",
    "random(",
    "gen_random_uuid(",
    "current_timestamp",
    "localtimestamp",
    "timeofday(",
    // Not functions, but not immutable either: timestamptz arithmetic
    // depends on the time zone setting.
    "make_interval(",
    "interval '",
];

/// The `CASE … END` and `coalesce(…)` expressions of `sql`, lower-cased.
fn conditionals(sql: &str) -> Vec<String> {
    let sql = sql.to_lowercase();
    let mut found = Vec::new();
    for (at, _) in sql.match_indices("case ") {
        let end = sql[at..].find(" end").map_or(sql.len(), |e| at + e);
        found.push(sql[at..end].to_owned());
    }
    for (at, _) in sql.match_indices("coalesce(") {
        let mut depth = 0;
        let mut end = sql.len();
        for (i, c) in sql[at..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = at + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        found.push(sql[at..end].to_owned());
    }
    found
}

#[test]
fn no_update_calls_a_non_immutable_function_inside_case_or_coalesce() {
    let updates: Vec<_> = statements_from("UPDATE ")
        .into_iter()
        .filter(|(_, _, sql)| sql.contains(" SET "))
        .collect();
    assert!(
        updates.len() >= 20,
        "the scan found the updates: {}",
        updates.len()
    );
    // The check itself, on what a cluster refused.
    assert!(
        conditionals("UPDATE jobs SET run_at = CASE WHEN requeued THEN now() END")
            .iter()
            .any(|c| c.contains("now()"))
    );
    assert!(
        conditionals("UPDATE k SET revoked_at = coalesce(revoked_at, now()) WHERE x")
            .iter()
            .any(|c| c.contains("now()"))
    );
    let wrong: Vec<_> = updates
        .iter()
        .filter(|(_, _, sql)| {
            conditionals(sql)
                .iter()
                .any(|c| VOLATILE.iter().any(|f| c.contains(f)))
        })
        .map(|(file, line, _)| format!("{file}:{line}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "updates calling now() or another non-immutable function inside CASE or COALESCE \
         (Citus refuses them; bind the value): {wrong:?}"
    );
}

#[tokio::test]
async fn no_sql_function_with_parameters_reads_a_distributed_table() {
    let database = TestDatabase::create().await;
    let mut owner = database.owner_connection().await;
    // Tables distributed on Citus: those with tenant_id, but the reference
    // tables (docs/OPERATIONS.md, "Citus").
    let distributed: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c \
         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') \
           AND NOT c.relispartition \
           AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid \
                       AND a.attname = 'tenant_id' AND NOT a.attisdropped) \
           AND c.relname NOT IN ('ingest_keys')",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    assert!(distributed.len() >= 20, "{distributed:?}");
    let functions: Vec<(String, String)> = sqlx::query_as(
        "SELECT p.proname::text, lower(p.prosrc) FROM pg_proc p \
         JOIN pg_language l ON l.oid = p.prolang \
         WHERE p.pronamespace = 'public'::regnamespace AND l.lanname = 'sql' AND p.pronargs > 0",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    let wrong: Vec<String> = functions
        .iter()
        .filter_map(|(name, body)| {
            let words: std::collections::HashSet<&str> = body
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .collect();
            let read: Vec<&String> = distributed
                .iter()
                .filter(|t| words.contains(t.as_str()))
                .collect();
            (!read.is_empty()).then(|| format!("{name} reads {read:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "SQL functions with parameters over distributed tables (Citus cannot plan them; write \
         them in PL/pgSQL): {wrong:?}"
    );
}

#[test]
fn no_upsert_calls_a_non_immutable_function_after_do_update() {
    let upserts = upserts();
    assert!(
        upserts.len() >= 10,
        "the scan found the upserts: {upserts:?}"
    );
    let wrong: Vec<_> = upserts
        .iter()
        .filter(|(_, _, sql)| {
            let sql = sql.to_lowercase();
            VOLATILE.iter().any(|f| sql.contains(f))
        })
        .map(|(file, line, _)| format!("{file}:{line}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "upserts calling now() or another non-immutable function after DO UPDATE (Citus refuses \
         them on distributed tables; put the value in the inserted row and take EXCLUDED.<column>): {wrong:?}"
    );
}

//! The house rules, checked rather than remembered: which crate may depend
//! on which (read from `cargo metadata`), no import circle between the
//! modules of a crate, and no source file outside `tests/` over 800 lines.
//! `docs/ARCHITECTURE.md` draws the same graph.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// Where each workspace crate sits. A crate may depend on the crates of the
/// layers its entry names and on nothing else of ours.
fn allowed(krate: &str) -> Option<&'static [&'static str]> {
    Some(match krate {
        // Pure model and math: nothing of ours.
        "slaproof-domain" => &[],
        "slaproof-circuits" => &[],
        // Shared HTTP plumbing and Postgres access sit on the domain only.
        "slaproof-http" => &["slaproof-domain"],
        "slaproof-store" => &["slaproof-domain"],
        // The application layer: every rule, over the store.
        "slaproof-app" => &["slaproof-domain", "slaproof-store", "slaproof-http"],
        // Transport only: the application layer, never the store or a worker.
        "slaproof-api" => &["slaproof-domain", "slaproof-app", "slaproof-http"],
        // Workers and intakes: the store and the application layer, never
        // another worker nor the API.
        "slaproof-ingest"
        | "slaproof-evaluator"
        | "slaproof-compensation"
        | "slaproof-webhooks"
        | "slaproof-attestation" => &[
            "slaproof-domain",
            "slaproof-store",
            "slaproof-http",
            "slaproof-app",
            "slaproof-chain",
            "slaproof-circuits",
        ],
        // The chain client talks to an EVM node, nothing of ours but the model.
        "slaproof-chain" => &["slaproof-domain"],
        // The binary and the end-to-end harness assemble everything.
        "slaproof" | "slaproof-tests" => return None,
        _ => &[],
    })
}

/// Crates that do I/O: the domain must not reach them, even indirectly
/// through a dependency of its own.
const IO_CRATES: &[&str] = &["sqlx", "tokio", "reqwest", "axum", "hyper", "mio", "alloy"];

fn metadata() -> Value {
    let root = workspace_root();
    // This machine's target only: the lock file names crates of other
    // platforms that a build here never downloads.
    let rustc = Command::new("rustc")
        .arg("-vV")
        .output()
        .expect("rustc runs");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_owned))
        .expect("rustc -vV names the host");
    let out = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(&root)
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata answers JSON")
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace")
        .to_path_buf()
}

/// Each workspace crate's normal (non-dev) dependencies on other workspace
/// crates, and every package's normal dependencies by name.
fn graph(meta: &Value) -> (BTreeSet<String>, BTreeMap<String, BTreeSet<String>>) {
    let ids: BTreeMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let members: BTreeSet<String> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| ids[id.as_str().unwrap()].to_owned())
        .collect();
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let name = ids[node["id"].as_str().unwrap()].to_owned();
        let normal: BTreeSet<String> = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                d["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kind"].is_null())
            })
            .map(|d| ids[d["pkg"].as_str().unwrap()].to_owned())
            .collect();
        deps.entry(name).or_default().extend(normal);
    }
    (members, deps)
}

/// Every violation of the layering in `deps`, as sentences.
fn violations(
    members: &BTreeSet<String>,
    deps: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut found = Vec::new();
    for krate in members {
        let Some(allowed) = allowed(krate) else {
            continue;
        };
        for dep in deps.get(krate).into_iter().flatten() {
            if members.contains(dep) && !allowed.contains(&dep.as_str()) {
                found.push(format!(
                    "{krate} depends on {dep}, which its layer must not"
                ));
            }
        }
    }
    // The domain is pure: no I/O crate anywhere below it.
    let mut seen = BTreeSet::new();
    let mut stack = vec!["slaproof-domain".to_owned()];
    while let Some(krate) = stack.pop() {
        for dep in deps.get(&krate).into_iter().flatten() {
            if IO_CRATES.contains(&dep.as_str()) {
                found.push(format!(
                    "slaproof-domain reaches the I/O crate {dep} (through {krate})"
                ));
            }
            if seen.insert(dep.clone()) {
                stack.push(dep.clone());
            }
        }
    }
    found
}

#[test]
fn every_crate_depends_only_on_the_layers_below_it() {
    let (members, deps) = graph(&metadata());
    for krate in [
        "slaproof-domain",
        "slaproof-store",
        "slaproof-app",
        "slaproof-api",
    ] {
        assert!(members.contains(krate), "{krate} is a workspace member");
    }
    let found = violations(&members, &deps);
    assert!(found.is_empty(), "layering broken:\n{}", found.join("\n"));
}

#[test]
fn the_check_catches_a_crate_reaching_a_layer_it_must_not() {
    // The rule itself, against made-up graphs: the API on the evaluator,
    // a worker on another worker, the domain on tokio through a dependency.
    let (members, mut deps) = graph(&metadata());
    for (from, to) in [
        ("slaproof-api", "slaproof-evaluator"),
        ("slaproof-evaluator", "slaproof-ingest"),
        ("slaproof-domain", "slaproof-store"),
    ] {
        let mut broken = deps.clone();
        broken.get_mut(from).unwrap().insert(to.to_owned());
        let found = violations(&members, &broken);
        assert!(
            found.iter().any(|v| v.contains(from) && v.contains(to)),
            "{from} -> {to} not caught: {found:?}"
        );
    }
    deps.get_mut("slaproof-domain")
        .unwrap()
        .insert("tokio".to_owned());
    assert!(
        violations(&members, &deps)
            .iter()
            .any(|v| v.contains("tokio"))
    );
}

/// The source folders of the workspace's crates (not the test harness).
fn crate_sources() -> Vec<(String, PathBuf)> {
    let root = workspace_root();
    let mut crates = Vec::new();
    for entry in std::fs::read_dir(root.join("services")).unwrap() {
        let dir = entry.unwrap().path();
        if dir.join("src").is_dir() {
            crates.push((
                dir.file_name().unwrap().to_string_lossy().into_owned(),
                dir.join("src"),
            ));
        }
    }
    crates.push(("circuits".to_owned(), root.join("circuits/src")));
    crates
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn no_source_file_outside_tests_is_over_800_lines() {
    let mut long = Vec::new();
    for (_, src) in crate_sources() {
        for file in rust_files(&src) {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > 800 {
                long.push(format!("{} has {lines} lines", file.display()));
            }
        }
    }
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}

/// The crate's top-level module a file belongs to (`None`: the crate root
/// or a binary).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_string_lossy();
    let name = first.trim_end_matches(".rs").to_owned();
    (!matches!(name.as_str(), "lib" | "main" | "bin")).then_some(name)
}

/// Top-level modules each module names through `crate::…`.
fn module_edges(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| top_module(src, f)).collect();
    for file in &files {
        let Some(from) = top_module(src, file) else {
            continue;
        };
        let targets = named_after(&code_of(file), "crate::", &modules, &from);
        edges.entry(from).or_default().extend(targets);
    }
    edges
}

/// A file's code: a test module may reach anything, and a doc link is not
/// an import.
fn code_of(file: &Path) -> String {
    std::fs::read_to_string(file)
        .unwrap()
        .split("#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The modules of `modules` other than `from` that `code` names right after
/// `prefix` (`crate::a::…`, and each first segment of `crate::{a, b::C}`).
fn named_after(
    code: &str,
    prefix: &str,
    modules: &BTreeSet<String>,
    from: &str,
) -> BTreeSet<String> {
    let mut targets = BTreeSet::new();
    for (i, _) in code.match_indices(prefix) {
        let rest = &code[i + prefix.len()..];
        let names: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group[..group.find('}').unwrap_or(group.len())]
                .split(',')
                .map(str::trim)
                .collect(),
            None => vec![rest],
        };
        for name in names {
            let module: String = name
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if modules.contains(&module) && module != from {
                targets.insert(module);
            }
        }
    }
    targets
}

/// A cycle in `edges`, if there is one.
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == node) {
            let mut found = path[at..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in edges.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, edges, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_an_import_circle_between_its_modules() {
    let mut circles = Vec::new();
    for (name, src) in crate_sources() {
        if let Some(found) = cycle(&module_edges(&src)) {
            circles.push(format!("{name}: {}", found.join(" -> ")));
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

#[test]
fn the_circle_check_finds_a_circle() {
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", vec!["b"]),
        ("b", vec!["c"]),
        ("c", vec!["a"]),
        ("d", vec![]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.into_iter().map(str::to_owned).collect()))
    .collect();
    assert_eq!(cycle(&edges).unwrap(), ["a", "b", "c", "a"]);
    let mut acyclic = edges.clone();
    acyclic.get_mut("c").unwrap().clear();
    assert_eq!(cycle(&acyclic), None);
}

#[test]
fn architecture_names_every_crate_and_top_level_folder() {
    // #34: docs/ARCHITECTURE.md's crate table left out compensation, chain
    // and attestation; a newcomer reads the tree from it.
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).unwrap();
    let meta = metadata();
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut missing = Vec::new();
    for package in meta["packages"].as_array().unwrap() {
        if !members.contains(package["id"].as_str().unwrap()) {
            continue;
        }
        let name = package["name"].as_str().unwrap();
        let manifest = Path::new(package["manifest_path"].as_str().unwrap());
        let dir = manifest
            .parent()
            .unwrap()
            .strip_prefix(&root)
            .unwrap()
            .display()
            .to_string();
        if !doc.contains(&format!("| `{name}` | `{dir}")) {
            missing.push(format!(
                "the crate {name} (`{dir}`) has no row in the crate table"
            ));
        }
    }
    for entry in std::fs::read_dir(&root).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if !entry.file_type().unwrap().is_dir() || name.starts_with('.') || name == "target" {
            continue;
        }
        if !doc.contains(&format!("`{name}/")) && !doc.contains(&format!("`{name}`")) {
            missing.push(format!("the folder {name}/ is not named"));
        }
    }
    assert!(missing.is_empty(), "docs/ARCHITECTURE.md: {missing:#?}");
}

/// The modules directly inside the directory module at `dir` (under the
/// crate's `src`) each name through `super::…` (from a file directly in
/// `dir`) or `crate::<path of dir>::…` (from anywhere below it).
fn nested_edges(src: &Path, dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let child_of = |file: &Path| -> Option<String> {
        let rel = file.strip_prefix(dir).ok()?;
        let first = rel.components().next()?.as_os_str().to_string_lossy();
        let name = first.trim_end_matches(".rs").to_owned();
        (name != "mod").then_some(name)
    };
    let files = rust_files(dir);
    let children: BTreeSet<String> = files.iter().filter_map(|f| child_of(f)).collect();
    let path: Vec<String> = dir
        .strip_prefix(src)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let absolute = format!("crate::{}::", path.join("::"));
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let Some(from) = child_of(file) else { continue };
        let code = code_of(file);
        let mut targets = named_after(&code, &absolute, &children, &from);
        if file.parent() == Some(dir) {
            targets.extend(named_after(&code, "super::", &children, &from));
        }
        edges.entry(from).or_default().extend(targets);
    }
    edges
}

/// Every directory below `dir`.
fn directories(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.push(path.clone());
            out.extend(directories(&path));
        }
    }
    out
}

#[test]
fn no_module_has_an_import_circle_between_its_submodules() {
    // #34: the circle test looked at top-level modules only, and
    // `domain/src/document` had two circles (`native` ↔ `credit`,
    // `native` ↔ `policy`).
    let mut circles = Vec::new();
    for (name, src) in crate_sources() {
        for dir in directories(&src) {
            if let Some(found) = cycle(&nested_edges(&src, &dir)) {
                let at = dir.strip_prefix(&src).unwrap().display().to_string();
                circles.push(format!("{name}::{at}: {}", found.join(" -> ")));
            }
        }
    }
    assert!(
        circles.is_empty(),
        "import circles:\n{}",
        circles.join("\n")
    );
}

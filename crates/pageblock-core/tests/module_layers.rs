//! The core's modules import each other one way only, along a declared order of layers: a
//! module may name (`crate::m`, `$crate::m`, or a root re-export of `m`) only modules
//! listed before it. So there is no import circle, and none can come back unnoticed: a new
//! back-edge, or a new module not placed in a layer, fails here.
//!
//! Test code (`#[cfg(test)] mod … { … }` at a file's end, `tests.rs`, `*_tests.rs`) and
//! comments are not imports and are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top. Within a layer the order counts too: each module comes after what it uses.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "vocabulary: types, configuration, policy, the memmap, events",
        &[
            "types",
            "config",
            "policy",
            "named_policy",
            "migratetype",
            "pageblock",
            "vmemmap",
            "memmap",
            "list",
            "pfn_table",
            "gfp",
            "stats",
            "vmstat_items",
            "trace",
            "invariant",
            "mover",
            "scan_control",
        ],
    ),
    (
        "the zone (its children: free lists, buddy, watermarks, fallback) and the CPUs' lists",
        &["zone", "pcp"],
    ),
    ("the node", &["node"]),
    ("the driver interface (primitives only)", &["locks"]),
    ("the free path, under everything that frees", &["free_pages"]),
    ("compaction, then reclaim (which may wake kcompactd)", &["compaction", "vmscan"]),
    ("the allocation path", &["fastpath", "slowpath", "page_alloc", "thp", "memory_hotplug"]),
    ("reports and the checker", &["verify", "show"]),
    ("the simulator driver", &["sim_node"]),
    ("the simulator's zone operations outside the allocation path (a feature)", &["unstable"]),
];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src`'s code without comments and without a trailing inline test module.
fn code_of(src: &str) -> String {
    let code: String = src.lines().map(|l| l.split("//").next().unwrap()).collect::<Vec<_>>().join("\n");
    let mut cut = code.len();
    for (at, _) in code.match_indices("#[cfg(test)]") {
        let rest = code[at + "#[cfg(test)]".len()..].trim_start();
        let inline_mod =
            rest.starts_with("mod ") && rest.find(['{', ';']).is_some_and(|j| &rest[j..=j] == "{");
        if inline_mod {
            cut = at;
            break;
        }
    }
    code[..cut].to_string()
}

fn ident_at(s: &str) -> &str {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    &s[..end]
}

/// The first path segments `code` names after `crate::`, including each entry of a
/// `crate::{a::…, b, …}` group.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let (mut depth, mut start) = (0, 0);
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident_at(group[start..].trim_start()).to_string());
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident_at(group[start..].trim_start()).to_string());
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident_at(rest).to_string());
        }
    }
    out.remove("");
    out
}

/// The root's re-exports (`pub use m::…::{A, B};` in lib.rs): each name to its module `m`.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in code_of(lib).split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else { continue };
        let module = ident_at(path).to_string();
        for name in path.split(|c: char| !(c.is_alphanumeric() || c == '_')).skip(1) {
            if name.starts_with(char::is_uppercase) {
                out.insert(name.to_string(), module.clone());
            }
        }
    }
    out
}

/// Every top-level module's references to other top-level modules.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let reexports = root_reexports(&fs::read_to_string(src.join("lib.rs")).unwrap());
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(src).unwrap();
        let top = rel.components().next().unwrap().as_os_str().to_str().unwrap();
        let top = top.strip_suffix(".rs").unwrap_or(top).to_string();
        let name = file.file_stem().unwrap().to_str().unwrap();
        if top == "lib" || name == "tests" || name.ends_with("_tests") {
            continue;
        }
        let refs = graph.entry(top.clone()).or_default();
        for r in crate_refs(&code_of(&fs::read_to_string(&file).unwrap())) {
            let target = reexports.get(&r).cloned().unwrap_or(r);
            if target != top {
                refs.insert(target);
            }
        }
    }
    graph
}

/// What is wrong with `graph` against [`LAYERS`]: modules in no layer, edges that go up.
fn violations(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let order: Vec<(&str, &str)> =
        LAYERS.iter().flat_map(|(layer, mods)| mods.iter().map(move |m| (*m, *layer))).collect();
    let pos = |m: &str| order.iter().position(|(n, _)| *n == m);
    let mut bad = Vec::new();
    for (module, refs) in graph {
        let Some(at) = pos(module) else {
            bad.push(format!("module `{module}` is in no layer"));
            continue;
        };
        for r in refs {
            match pos(r) {
                Some(to) if to < at => {}
                Some(to) => bad.push(format!(
                    "`{module}` ({}) imports `{r}` ({}), which comes after it",
                    order[at].1, order[to].1
                )),
                None => bad.push(format!("`{module}` imports `{r}`, which is in no layer")),
            }
        }
    }
    bad
}

#[test]
fn core_modules_import_one_way_along_the_layers() {
    let graph = module_graph(&src_dir());
    assert!(graph.contains_key("zone") && graph.contains_key("page_alloc"), "read the core's sources");
    let bad = violations(&graph);
    assert!(bad.is_empty(), "the core's import order is broken:\n{}", bad.join("\n"));
}

#[test]
fn every_declared_module_exists() {
    let graph = module_graph(&src_dir());
    let missing: Vec<_> =
        LAYERS.iter().flat_map(|(_, mods)| mods.iter()).filter(|m| !graph.contains_key(**m)).collect();
    assert!(missing.is_empty(), "layers name modules that do not exist: {missing:?}");
}

/// The scanner itself: a back-edge hidden in a group import, a root re-export or a macro is
/// found; comments and a trailing test module are not imports.
#[test]
fn the_scanner_finds_what_it_must() {
    let src = "use crate::{zone::Zone, Gfp};\n// crate::sim_node\nfn f() { $crate::locks::x(); }\n\
               #[cfg(test)]\nmod tests {\n    use crate::show;\n}\n";
    let refs = crate_refs(&code_of(src));
    assert_eq!(refs, ["Gfp", "locks", "zone"].map(String::from).into());
    let reexports = root_reexports("pub mod gfp;\npub use gfp::{AllocFlags, Gfp};\n");
    assert_eq!(reexports.get("Gfp").map(String::as_str), Some("gfp"));
    let graph = BTreeMap::from([
        ("zone".to_string(), BTreeSet::from(["locks".to_string()])),
        ("locks".to_string(), BTreeSet::new()),
    ]);
    assert_eq!(violations(&graph).len(), 1, "zone may not import locks");
}

//! The host crates' dependency rule, checked: crates point one way (wire ← machine ←
//! package ← host ← sim, from `cargo metadata`), nothing links the GPL TCG plugin
//! (`qemu/plugin`), and no crate's modules (the plugin's included) import each other in
//! a circle (parsed with `syn`), nor do the Python package's. qemu/README.md states the
//! rule; `.ci/run` runs this test first. Needs no QEMU. Beside it, the host side's
//! size rule: no function over [`MAX_FUNCTION_LINES`] lines.

use proc_macro2::{TokenStream, TokenTree};
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use syn::visit::Visit;

/// The host crates, lowest first: each may depend only on those before it.
const LAYERS: [(&str, &str); 9] = [
    ("neuroncustomop-wire", "qemu/wire"),
    ("neuroncustomop-ucode-lib", "qemu/ucode-lib"),
    ("neuroncustomop-array", "qemu/array"),
    ("neuroncustomop-machine", "qemu/machine"),
    ("neuroncustomop-profile", "qemu/profile"),
    ("neuroncustomop-package", "qemu/package"),
    ("neuroncustomop-hosttier", "qemu/hosttier"),
    ("neuroncustomop-host", "qemu/host"),
    ("neuroncustomop-sim", "qemu"),
];

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("qemu/ has a parent").to_path_buf()
}

#[test]
fn crates_depend_only_on_the_layers_below() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = std::process::Command::new(cargo)
        .current_dir(repo())
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    for (layer, (name, _)) in LAYERS.iter().enumerate() {
        let package = packages.iter().find(|p| p["name"] == *name).unwrap_or_else(|| panic!("{name} is a member"));
        let above: Vec<&str> = package["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter_map(|dependency| dependency["name"].as_str())
            .filter(|dependency| LAYERS[layer..].iter().any(|(upper, _)| upper == dependency))
            .collect();
        assert!(above.is_empty(), "{name} depends on {above:?}, which are not below it (qemu/README.md)");
    }
    // The TCG plugin is GPL-2.0-or-later: QEMU loads it as a file, and no crate may link
    // it (README.md, "What is here").
    let linking: Vec<&str> = packages
        .iter()
        .filter(|p| {
            p["dependencies"].as_array().is_some_and(|d| d.iter().any(|d| d["name"] == "neuroncustomop-plugin"))
        })
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(linking.is_empty(), "{linking:?} depend on neuroncustomop-plugin, which only QEMU may load");
    assert!(packages.iter().any(|p| p["name"] == "neuroncustomop-plugin"), "the plugin is a member");
}

/// Crates whose modules are checked for circles beside [`LAYERS`]: the TCG plugin,
/// which no crate depends on.
const OTHERS: [(&str, &str); 1] = [("neuroncustomop-plugin", "qemu/plugin")];

/// Crates with no module importing another (one module, or modules that share nothing):
/// their graph is the root's alone, which for any other crate means the parse failed.
const FLAT: [&str; 2] = ["neuroncustomop-wire", "neuroncustomop-ucode-lib"];

#[test]
fn no_crate_has_a_module_circle() {
    for (name, dir) in LAYERS.into_iter().chain(OTHERS) {
        let graph = module_graph(&repo().join(dir).join("src"));
        assert!(graph.len() > 1 || FLAT.contains(&name), "{name}: only {graph:?} found");
        if let Some(circle) = find_circle(&graph) {
            panic!("{name}: the modules {} import each other in a circle", circle.join(" -> "));
        }
    }
}

/// The modules of the crate whose sources are in `src` (`a::b` for `src/a/b.rs`), each
/// with the modules its code names through `crate::` or `super::`. A `mod` item is
/// not an edge (a parent declares its children), nor is a doc comment's link.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    collect(src, &mut files);
    let module = |file: &Path| -> String {
        let relative = file.strip_prefix(src).expect("under src").with_extension("");
        let parts: Vec<String> = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
        match parts.as_slice() {
            [only] if only == "lib" || only == "main" => String::new(),
            [parents @ .., last] if last == "mod" => parents.join("::"),
            _ => parts.join("::"),
        }
    };
    // `src/bin/*.rs` and `main.rs` are crates of their own, not modules of the library.
    let files: Vec<PathBuf> =
        files.into_iter().filter(|f| !f.starts_with(src.join("bin")) && !f.ends_with("main.rs")).collect();
    let modules: BTreeSet<String> = files.iter().map(|f| module(f)).collect();
    let mut graph = BTreeMap::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("a source file");
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let here = module(file);
        let mut paths = Paths { scope: split(&here), named: Vec::new() };
        paths.visit_file(&ast);
        let edges: BTreeSet<String> = paths
            .named
            .iter()
            .filter_map(|path| (0..=path.len()).rev().map(|n| path[..n].join("::")).find(|m| modules.contains(m)))
            .filter(|target| *target != here)
            .collect();
        graph.insert(here, edges);
    }
    graph
}

fn split(module: &str) -> Vec<String> {
    module.split("::").filter(|part| !part.is_empty()).map(str::to_owned).collect()
}

/// The `.rs` files under `dir`, build output (a `target/` folder, as `qemu/fuzz` has)
/// left out.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("a source folder").map(|e| e.expect("a folder entry").path()) {
        if entry.is_dir() {
            if !entry.ends_with("target") {
                collect(&entry, files);
            }
        } else if entry.extension().is_some_and(|ext| ext == "rs") {
            files.push(entry);
        }
    }
}

/// The crate-absolute module paths a file names: `crate::a::b` as `[a, b]`, `super::c`
/// resolved from the (inline) module it is written in.
struct Paths {
    scope: Vec<String>,
    named: Vec<Vec<String>>,
}

impl Paths {
    /// Resolves a path's leading `crate`/`super`s; `None` for any other path.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        match segments.first().map(String::as_str) {
            Some("crate") => Some(segments[1..].to_vec()),
            Some("super") => {
                let supers = segments.iter().take_while(|s| *s == "super").count();
                let mut path = self.scope[..self.scope.len().checked_sub(supers)?].to_vec();
                path.extend_from_slice(&segments[supers..]);
                Some(path)
            }
            _ => None,
        }
    }

    fn name(&mut self, segments: &[String]) {
        if let Some(path) = self.absolute(segments) {
            self.named.push(path);
        }
    }

    /// `crate::a::b` and `super::c` inside a macro's tokens (`format!`, `matches!`).
    fn tokens(&mut self, tokens: TokenStream) {
        let tokens: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, token) in tokens.iter().enumerate() {
            match token {
                TokenTree::Group(group) => self.tokens(group.stream()),
                TokenTree::Ident(ident) if ident == "crate" || ident == "super" => {
                    let mut segments = vec![ident.to_string()];
                    let mut rest = tokens[i + 1..].iter();
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) =
                        (rest.next(), rest.next(), rest.next())
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        segments.push(next.to_string());
                    }
                    self.name(&segments);
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.name(&segments);
        syn::visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut prefixes = Vec::new();
        use_paths(&item.tree, &mut Vec::new(), &mut prefixes);
        for prefix in prefixes {
            self.name(&prefix);
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.scope.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.scope.pop();
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }

    // Doc comments are `#[doc = "..."]`: their links are not dependencies.
    fn visit_attribute(&mut self, _: &'ast syn::Attribute) {}
}

/// Every path a `use` tree names, e.g. `crate::a::{b, c::d}` as `crate::a::b` and
/// `crate::a::c::d`.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match tree {
        syn::UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            use_paths(&path.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(name) if name.ident == "self" => out.push(prefix.clone()),
        syn::UseTree::Name(name) => out.push([prefix.as_slice(), &[name.ident.to_string()]].concat()),
        syn::UseTree::Rename(rename) => out.push([prefix.as_slice(), &[rename.ident.to_string()]].concat()),
        syn::UseTree::Glob(_) => out.push(prefix.clone()),
        syn::UseTree::Group(group) => group.items.iter().for_each(|tree| use_paths(tree, prefix, out)),
    }
}

/// A circle in `graph` as the modules along it (the first repeated at the end), if any.
fn find_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = stack.iter().position(|on| on == node) {
            return Some([&stack[start..], &[node.to_owned()]].concat());
        }
        if !done.insert(node.to_owned()) {
            return None;
        }
        stack.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, stack, done) {
                return Some(circle);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn a_circle_is_found() {
    let graph: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"][..]), ("c", &["a"][..]), ("d", &["a"][..])]
            .into_iter()
            .map(|(node, edges)| (node.to_owned(), edges.iter().map(|e| (*e).to_owned()).collect()))
            .collect();
    assert_eq!(find_circle(&graph), Some(vec!["a".into(), "b".into(), "c".into(), "a".into()]));
    let mut acyclic = graph;
    acyclic.get_mut("c").expect("c").clear();
    assert_eq!(find_circle(&acyclic), None);
}

/// The Python package (`qemu/python/python/neuroncustomop`).
const PYTHON_PACKAGE: &str = "qemu/python/python/neuroncustomop";

#[test]
fn the_python_package_has_no_module_circle() {
    let graph = python_graph(&repo().join(PYTHON_PACKAGE));
    assert!(graph.contains_key("_library") && graph.contains_key("_torch"), "{graph:?}");
    if let Some(circle) = find_circle(&graph) {
        panic!("the Python modules {} import each other in a circle", circle.join(" -> "));
    }
}

/// The package's modules (`_library` for `_library.py`), each with the package's
/// modules it imports: at the top or inside a function (an import deferred to run
/// time is a dependency all the same), but not under `if TYPE_CHECKING:`, which only
/// annotations see and the interpreter skips.
fn python_graph(package: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files: Vec<PathBuf> = fs::read_dir(package)
        .expect("the Python package")
        .map(|entry| entry.expect("a folder entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "py"))
        .collect();
    files.sort();
    let stem = |path: &Path| path.file_stem().expect("a file name").to_string_lossy().into_owned();
    let modules: BTreeSet<String> = files.iter().map(|path| stem(path)).collect();
    let mut graph = BTreeMap::new();
    for path in &files {
        let text = fs::read_to_string(path).expect("a Python source");
        let here = stem(path);
        let imported: BTreeSet<String> =
            python_imports(&text).into_iter().filter(|module| modules.contains(module) && *module != here).collect();
        graph.insert(here, imported);
    }
    graph
}

/// `module` (a dotted name) inside the package: `neuroncustomop._a` as `_a`, the
/// package itself as empty; `None` outside it.
fn within_package(module: &str) -> Option<&str> {
    module.strip_prefix("neuroncustomop").map(|rest| rest.trim_start_matches('.'))
}

/// The package's modules a Python source imports (see [`python_graph`]): `from . import
/// a, b`, `from .a import x`, `from neuroncustomop.a import x`, `import
/// neuroncustomop.a`, a parenthesized name list over several lines included.
fn python_imports(text: &str) -> BTreeSet<String> {
    let mut imported = BTreeSet::new();
    let mut skipping: Option<usize> = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        let code = line.trim_start();
        let indent = line.len() - code.len();
        if code.is_empty() || code.starts_with('#') {
            continue;
        }
        match skipping {
            Some(block) if indent > block => continue,
            _ => skipping = None,
        }
        if code.starts_with("if TYPE_CHECKING") {
            skipping = Some(indent);
            continue;
        }
        if let Some(rest) = code.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else { continue };
            let module = module.trim();
            let within = module.strip_prefix('.').or_else(|| within_package(module));
            match within {
                // `from . import a, b`: the names are modules.
                Some("") => {
                    let mut names = names.to_string();
                    if names.trim_start().starts_with('(') {
                        while !names.contains(')') {
                            let Some(next) = lines.next() else { break };
                            names.push_str(next);
                        }
                    }
                    let names = names.replace(['(', ')'], "");
                    for name in names.split(',') {
                        if let Some(name) = name.split_whitespace().next() {
                            imported.insert(name.to_string());
                        }
                    }
                }
                Some(module) => _ = imported.insert(module.split('.').next().unwrap_or(module).to_string()),
                None => {}
            }
        } else if let Some(rest) = code.strip_prefix("import ") {
            for module in rest.split(',') {
                let module = module.split_whitespace().next().unwrap_or_default();
                if let Some(within) = within_package(module).filter(|within| !within.is_empty()) {
                    imported.insert(within.split('.').next().unwrap_or(within).to_string());
                }
            }
        }
    }
    imported
}

#[test]
fn python_imports_are_read_deferred_and_multiline_but_not_for_type_checking() {
    let text = "\"\"\"Doc: from .nowhere import x\"\"\"\n\
                from . import _args, _native as native\n\
                from ._errors import (\n    KernelError,\n)\n\
                from . import (\n    _findings,\n    _options,\n)\n\
                import neuroncustomop._build\n\
                if TYPE_CHECKING:\n    from ._library import CallResult\n\
                def f():\n    from ._torch import register\n";
    let imported: Vec<String> = python_imports(text).into_iter().collect();
    assert_eq!(imported, ["_args", "_build", "_errors", "_findings", "_native", "_options", "_torch"]);
}

/// The host side's sources: every crate under qemu/ but the firmware, which runs on the
/// device (the project's rule: no function on the host side over
/// [`MAX_FUNCTION_LINES`] lines). Whole folders, so tests, benchmarks and examples count.
const HOST_SOURCES: [&str; 14] = [
    "qemu/src",
    "qemu/tests",
    "qemu/examples",
    "qemu/wire",
    "qemu/ucode-lib",
    "qemu/array",
    "qemu/machine",
    "qemu/profile",
    "qemu/package",
    "qemu/hosttier",
    "qemu/host",
    "qemu/plugin",
    "qemu/python/src",
    "qemu/fuzz",
];

/// The longest a host-side function may be, from its `fn` to its closing brace.
const MAX_FUNCTION_LINES: usize = 100;

#[test]
fn no_host_function_is_over_100_lines() {
    let mut files = Vec::new();
    for dir in HOST_SOURCES {
        collect(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 100, "only {} host sources found", files.len());
    let mut long = Vec::new();
    for file in &files {
        let text = fs::read_to_string(file).expect("a source file");
        let relative = file.strip_prefix(repo()).expect("under the checkout").display().to_string();
        long.extend(
            function_lengths(&text)
                .into_iter()
                .filter(|function| function.lines > MAX_FUNCTION_LINES)
                .map(|function| format!("{relative}:{} `{}` {} lines", function.line, function.name, function.lines)),
        );
    }
    assert!(long.is_empty(), "functions over {MAX_FUNCTION_LINES} lines (split them):\n{}", long.join("\n"));
}

/// One function of a source: its name, the line of its `fn` and its lines from there
/// to its closing brace.
#[derive(Debug, PartialEq)]
struct Length {
    name: String,
    line: usize,
    lines: usize,
}

/// Every function with a body in `text` (free, in an `impl`, a trait's default, nested
/// in another), parsed with `syn`: so braces in strings and comments do not count as
/// the body's. Functions inside a macro's call (`proptest! { .. }`) are not Rust syntax
/// until the macro runs, and are not seen.
fn function_lengths(text: &str) -> Vec<Length> {
    let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("{e}"));
    let mut functions = Functions(Vec::new());
    functions.visit_file(&ast);
    functions.0
}

/// The functions a [`syn::visit::Visit`] walk meets, as [`Length`]s.
struct Functions(Vec<Length>);

impl Functions {
    fn add(&mut self, signature: &syn::Signature, body: &syn::Block) {
        // Lines come from proc-macro2's `span-locations` (qemu/Cargo.toml).
        let (start, end) = (signature.fn_token.span.start().line, body.brace_token.span.close().end().line);
        self.0.push(Length { name: signature.ident.to_string(), line: start, lines: end - start + 1 });
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item_fn(&mut self, function: &'ast syn::ItemFn) {
        self.add(&function.sig, &function.block);
        syn::visit::visit_item_fn(self, function);
    }

    fn visit_impl_item_fn(&mut self, function: &'ast syn::ImplItemFn) {
        self.add(&function.sig, &function.block);
        syn::visit::visit_impl_item_fn(self, function);
    }

    fn visit_trait_item_fn(&mut self, function: &'ast syn::TraitItemFn) {
        if let Some(body) = &function.default {
            self.add(&function.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, function);
    }
}

#[test]
fn function_lengths_count_lines_from_fn_to_the_closing_brace() {
    let text = "/// Doc.\n\
                #[test]\n\
                fn free() {\n    let braces = \"}}}\";\n    fn nested() {}\n}\n\
                struct S;\n\
                impl S {\n    pub fn method(&self) -> u8 {\n        // }\n        0\n    }\n}\n\
                trait T {\n    fn required(&self);\n    fn provided(&self) {\n    }\n}\n";
    let at = |name: &str, line, lines| Length { name: name.into(), line, lines };
    assert_eq!(
        function_lengths(text),
        [at("free", 3, 4), at("nested", 5, 1), at("method", 9, 4), at("provided", 16, 2)]
    );
}

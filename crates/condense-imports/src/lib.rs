//! The import graph of a crate's source files, and the circles in it (issue 39).
//!
//! Every crate of the workspace has a `tests/circles.rs` that calls [`assert_no_circle`]. It reads
//! the crate's sources from each root (`src/lib.rs`, `src/main.rs`, `src/bin/*.rs`), following the
//! `mod` declarations; finds where each file names another — `use` trees, and paths that start
//! with `crate`, `$crate`, `super`, `self` or a child module, also inside a string such as
//! `serde(with = "crate::x")` — and resolves each name to the file that defines it, through
//! re-exports; then it fails on a circle: files each of which, through the others, uses itself.
//! A circle between two files of one module counts as much as one between modules.
//!
//! Not an import: a `mod` declaration, a visibility (`pub(in crate::x)`), a re-export (`pub use`,
//! a module's facade: a name used through it is the file's that defines it). A test module
//! (`#[cfg(test)] mod …`, inline or a file of its own) is a leaf: nothing imports it, so what it
//! uses closes no circle.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// The keywords after which a name is defined as an item of its module.
const ITEMS: &[&str] = &["fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod"];

/// Words that are never an item's name.
const KEYWORDS: &[&str] = &[
    "fn", "struct", "enum", "trait", "type", "const", "static", "union", "mod", "unsafe", "async", "extern",
    "impl", "for", "where", "pub", "use", "let", "mut", "ref", "move", "dyn", "in", "as",
];

/// One use of another file: where, and the path as written.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Evidence {
    /// The line, from 1.
    pub line: usize,
    /// The path, `::`-joined.
    pub path: String,
}

/// The files of a crate and which uses which.
#[derive(Debug, Default)]
pub struct Graph {
    /// Each file's path, relative to the crate's folder.
    pub files: Vec<PathBuf>,
    /// For each file, the files it uses, each with where.
    pub edges: BTreeMap<usize, BTreeMap<usize, Vec<Evidence>>>,
}

/// A token of the code, with its byte offset.
#[derive(Debug, Clone)]
struct Tok {
    text: String,
    at: usize,
}

/// A module: a file, or an inline `mod x { … }` inside one.
#[derive(Debug, Default)]
struct Module {
    file: usize,
    /// The names defined in it.
    items: BTreeSet<String>,
    /// Names brought in by `use` (a re-export or not): the name, the path it stands for.
    uses: HashMap<String, Vec<String>>,
    /// The paths of its glob uses (`use x::*`), without the `*`.
    globs: Vec<Vec<String>>,
}

/// A reference in a file: the module it is written in, the path, where.
#[derive(Debug)]
struct Reference {
    module: Vec<String>,
    segments: Vec<String>,
    at: usize,
}

/// One source file as read.
#[derive(Debug)]
struct Source {
    path: PathBuf,
    text: String,
}

/// Reads the crate at `dir` (its `src/` folder) and returns its graph.
pub fn crate_graph(dir: &Path) -> Graph {
    let src = dir.join("src");
    let mut roots = Vec::new();
    for root in ["lib.rs", "main.rs"] {
        if src.join(root).is_file() {
            roots.push(PathBuf::from("src").join(root));
        }
    }
    if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = bins
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .map(|p| PathBuf::from("src/bin").join(p.file_name().expect("a file name")))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    let read = |path: &Path| std::fs::read_to_string(dir.join(path)).ok();
    graph_of(&roots, read)
}

/// The graph of the crates rooted at `roots`, reading each file through `read` (a path relative
/// to the crate's folder; `None` when there is no such file).
pub fn graph_of(roots: &[PathBuf], read: impl Fn(&Path) -> Option<String>) -> Graph {
    let mut reader = Reader::default();
    for root in roots {
        reader.root(root, &read);
    }
    reader.graph()
}

/// The circles of a graph: each a set of two or more files that reach one another, as the
/// indices of its files, sorted.
pub fn circles(graph: &Graph) -> Vec<Vec<usize>> {
    let mut tarjan = Tarjan {
        graph,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in 0..graph.files.len() {
        if !tarjan.index.contains_key(&v) {
            tarjan.visit(v);
        }
    }
    let mut found = tarjan.found;
    for c in &mut found {
        c.sort_by(|a, b| graph.files[*a].cmp(&graph.files[*b]));
    }
    found.sort_by(|a, b| graph.files[a[0]].cmp(&graph.files[b[0]]));
    found
}

/// A report of the circles, one paragraph each with the uses that close it; empty when there
/// is none.
pub fn describe(graph: &Graph) -> String {
    let mut out = String::new();
    for circle in circles(graph) {
        let names: Vec<String> = circle.iter().map(|&f| graph.files[f].display().to_string()).collect();
        out.push_str(&format!("a circle of {} files: {}\n", circle.len(), names.join(", ")));
        for &from in &circle {
            for (to, evidence) in graph.edges.get(&from).into_iter().flatten() {
                if !circle.contains(to) {
                    continue;
                }
                let first = &evidence[0];
                let more = if evidence.len() > 1 {
                    format!(" (+{} more)", evidence.len() - 1)
                } else {
                    String::new()
                };
                out.push_str(&format!(
                    "  {}:{} uses {} (`{}`){more}\n",
                    graph.files[from].display(),
                    first.line,
                    graph.files[*to].display(),
                    first.path
                ));
            }
        }
    }
    out
}

/// Fails with the circles of the crate at `dir` (its `CARGO_MANIFEST_DIR`), if it has any.
pub fn assert_no_circle(dir: &str) {
    let graph = crate_graph(Path::new(dir));
    assert!(!graph.files.is_empty(), "no sources read under {dir}/src");
    let report = describe(&graph);
    assert!(
        report.is_empty(),
        "import circles in {dir} (move what both files need to a lower file, or let one side only \
         use the other):\n{report}"
    );
}

struct Tarjan<'a> {
    graph: &'a Graph,
    index: HashMap<usize, usize>,
    low: HashMap<usize, usize>,
    stack: Vec<usize>,
    on_stack: BTreeSet<usize>,
    next: usize,
    found: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index.insert(v, self.next);
        self.low.insert(v, self.next);
        self.next += 1;
        self.stack.push(v);
        self.on_stack.insert(v);
        let graph = self.graph;
        for &w in graph.edges.get(&v).map(|e| e.keys()).into_iter().flatten() {
            if !self.index.contains_key(&w) {
                self.visit(w);
                let low = self.low[&v].min(self.low[&w]);
                self.low.insert(v, low);
            } else if self.on_stack.contains(&w) {
                let low = self.low[&v].min(self.index[&w]);
                self.low.insert(v, low);
            }
        }
        if self.low[&v] == self.index[&v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(&w);
                component.push(w);
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                self.found.push(component);
            }
        }
    }
}

/// What the files of all roots say, gathered before any name is resolved.
#[derive(Debug, Default)]
struct Reader {
    sources: Vec<Source>,
    /// Each file's root (an index into `sources` of the root file) and whether it is a test module.
    file_root: Vec<usize>,
    /// Modules by (root, path).
    modules: BTreeMap<(usize, Vec<String>), Module>,
    /// The references of each file, outside test modules.
    references: Vec<Vec<Reference>>,
    /// The uses (not re-exports) of each file, outside test modules, as references.
    uses: Vec<Vec<Reference>>,
}

impl Reader {
    /// Reads a crate root and every file it declares.
    fn root(&mut self, root: &Path, read: &impl Fn(&Path) -> Option<String>) {
        let root_id = self.sources.len();
        let mut queue = vec![(root.to_path_buf(), Vec::<String>::new(), false, true)];
        while let Some((path, module, test, mod_rs)) = queue.pop() {
            let Some(text) = read(&path) else { continue };
            let id = self.sources.len();
            self.sources.push(Source { path: path.clone(), text });
            self.file_root.push(root_id);
            self.references.push(Vec::new());
            self.uses.push(Vec::new());
            let declared = self.file(id, root_id, &module, test);
            // A child of `a/mod.rs` (or a root) is `a/x.rs`; of `a/b.rs`, `a/b/x.rs`.
            let dir = if mod_rs {
                path.parent().map(Path::to_path_buf).unwrap_or_default()
            } else {
                path.with_extension("")
            };
            for (inline, name, child_test) in declared {
                let mut at = dir.clone();
                for part in &inline {
                    at.push(part);
                }
                let mut child = module.clone();
                child.extend(inline.iter().cloned());
                child.push(name.clone());
                let flat = at.join(format!("{name}.rs"));
                let nested = at.join(&name).join("mod.rs");
                let (file, is_mod_rs) = if read(&flat).is_some() { (flat, false) } else { (nested, true) };
                queue.push((file, child, test || child_test, is_mod_rs));
            }
        }
    }

    /// Reads one file: its modules, items, uses and references. Returns the child files it
    /// declares: the inline modules they sit in, their names, whether they are test modules.
    fn file(
        &mut self,
        id: usize,
        root: usize,
        module: &[String],
        test: bool,
    ) -> Vec<(Vec<String>, String, bool)> {
        let code = blank(&self.sources[id].text);
        let toks = tokens(&code);
        let mut declared = Vec::new();
        self.modules.entry((root, module.to_vec())).or_default().file = id;
        // Braces open that matter: an inline module's name (none for a test item's body), the
        // brace depth inside, whether it is test code.
        let mut scopes: Vec<(Option<String>, usize, bool)> = Vec::new();
        let mut depth = 0usize;
        let mut pending_test = false;
        let mut pending_pub = false;
        let mut i = 0;
        let text = |i: usize| toks.get(i).map_or("", |t: &Tok| t.text.as_str());
        while i < toks.len() {
            let t = text(i);
            let inline: Vec<String> = scopes.iter().filter_map(|(n, _, _)| n.clone()).collect();
            let here: Vec<String> = module.iter().cloned().chain(inline.iter().cloned()).collect();
            let in_test = test || scopes.iter().any(|(_, _, t)| *t);
            let item_depth = scopes.iter().rev().find(|(n, _, _)| n.is_some()).map_or(0, |(_, d, _)| *d);
            match t {
                "#" => {
                    // An attribute: `#[…]` or `#![…]`.
                    let mut j = i + 1;
                    if text(j) == "!" {
                        j += 1;
                    }
                    if text(j) == "[" {
                        let end = matching(&toks, j, "[", "]");
                        let words: Vec<&str> = toks[j + 1..end].iter().map(|t| t.text.as_str()).collect();
                        if words.first() == Some(&"cfg") && words.contains(&"test") && !words.contains(&"not")
                        {
                            pending_test = true;
                        }
                        // Its words are read on: a path in an attribute is a use.
                        i = j + 1;
                        continue;
                    }
                }
                "pub" => {
                    pending_pub = true;
                    // A visibility such as `pub(in crate::x)` names no import.
                    i = if text(i + 1) == "(" { matching(&toks, i + 1, "(", ")") + 1 } else { i + 1 };
                    continue;
                }
                "mod" if is_name(text(i + 1)) => {
                    let name = text(i + 1).to_owned();
                    self.module_mut(root, &here).items.insert(name.clone());
                    if text(i + 2) == ";" {
                        declared.push((inline.clone(), name, pending_test));
                        i += 3;
                    } else if text(i + 2) == "{" {
                        depth += 1;
                        scopes.push((Some(name.clone()), depth, pending_test));
                        let mut inner = here.clone();
                        inner.push(name);
                        self.module_mut(root, &inner).file = id;
                        i += 3;
                    } else {
                        i += 2;
                    }
                    pending_test = false;
                    pending_pub = false;
                    continue;
                }
                "use" => {
                    let end = (i + 1..toks.len()).find(|&j| text(j) == ";").unwrap_or(toks.len());
                    let mut leaves = Vec::new();
                    use_tree(&toks[i + 1..end], &mut Vec::new(), &mut leaves);
                    let reexport = pending_pub && depth == item_depth;
                    for (name, path) in leaves {
                        if depth == item_depth {
                            let m = self.module_mut(root, &here);
                            match name {
                                Some(name) => {
                                    m.uses.insert(name, path.clone());
                                }
                                None => m.globs.push(path.clone()),
                            }
                        }
                        if !reexport && !in_test && !pending_test {
                            self.uses[id].push(Reference {
                                module: here.clone(),
                                segments: path,
                                at: toks[i].at,
                            });
                        }
                    }
                    pending_test = false;
                    pending_pub = false;
                    i = end + 1;
                    continue;
                }
                "macro_rules" if text(i + 1) == "!" && is_name(text(i + 2)) && depth == item_depth => {
                    self.module_mut(root, &here).items.insert(text(i + 2).to_owned());
                }
                "{" => {
                    depth += 1;
                    if pending_test {
                        // The body of a test-only item (`#[cfg(test)] fn …`).
                        scopes.push((None, depth, true));
                    }
                }
                "}" => {
                    if scopes.last().is_some_and(|(_, d, _)| *d == depth) {
                        scopes.pop();
                    }
                    depth = depth.saturating_sub(1);
                }
                _ => {}
            }
            if ITEMS.contains(&t) && is_name(text(i + 1)) && depth == item_depth {
                self.module_mut(root, &here).items.insert(text(i + 1).to_owned());
            }
            if matches!(t, "{" | "}" | ";") || (ITEMS.contains(&t) && t != "const") {
                pending_test = false;
                pending_pub = false;
            }
            // A path: a name followed by `::`, not itself after `::`.
            if (is_name(t) || matches!(t, "$crate" | "crate" | "super" | "self"))
                && text(i + 1) == "::"
                && text(i.wrapping_sub(1)) != "::"
            {
                let mut segments = vec![t.to_owned()];
                let mut j = i + 1;
                while text(j) == "::"
                    && (is_name(text(j + 1)) || matches!(text(j + 1), "super" | "self" | "crate"))
                {
                    segments.push(text(j + 1).to_owned());
                    j += 2;
                }
                if !in_test {
                    self.references[id].push(Reference { module: here, segments, at: toks[i].at });
                }
                i = j;
                continue;
            }
            i += 1;
        }
        declared
    }

    fn module_mut(&mut self, root: usize, path: &[String]) -> &mut Module {
        self.modules.entry((root, path.to_vec())).or_default()
    }

    /// The file a path names from `module` (of `root`), or `None` when it names none of the
    /// crate's (another crate, a type's associated item, a local name).
    fn resolve(&self, root: usize, module: &[String], segments: &[String], hops: usize) -> Option<usize> {
        let (mut base, rest): (Vec<String>, &[String]) = match segments.first()?.as_str() {
            "crate" | "$crate" => (Vec::new(), &segments[1..]),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let keep = module.len().checked_sub(ups)?;
                (module[..keep].to_vec(), &segments[ups..])
            }
            "self" => (module.to_vec(), &segments[1..]),
            first => {
                let mut child = module.to_vec();
                child.push(first.to_owned());
                if !self.modules.contains_key(&(root, child)) {
                    return None;
                }
                (module.to_vec(), segments)
            }
        };
        let mut rest = rest;
        while let Some(next) = rest.first() {
            let mut child = base.clone();
            child.push(next.clone());
            if !self.modules.contains_key(&(root, child.clone())) {
                break;
            }
            base = child;
            rest = &rest[1..];
        }
        let m = self.modules.get(&(root, base.clone()))?;
        let Some(name) = rest.first() else { return Some(m.file) };
        if m.items.contains(name) || hops > 8 {
            return Some(m.file);
        }
        if let Some(path) = m.uses.get(name) {
            let mut path = path.clone();
            path.extend(rest[1..].iter().cloned());
            return self.resolve(root, &base, &path, hops + 1).or(Some(m.file));
        }
        for glob in &m.globs {
            let mut path = glob.clone();
            path.extend(rest.iter().cloned());
            if let Some(file) = self.resolve(root, &base, &path, hops + 1)
                && self.defines(file, name)
            {
                return Some(file);
            }
        }
        Some(m.file)
    }

    /// Whether a module of `file` defines `name`.
    fn defines(&self, file: usize, name: &str) -> bool {
        self.modules.values().any(|m| m.file == file && m.items.contains(name))
    }

    fn graph(self) -> Graph {
        let mut edges: BTreeMap<usize, BTreeMap<usize, Vec<Evidence>>> = BTreeMap::new();
        for id in 0..self.sources.len() {
            let root = self.file_root[id];
            let text = &self.sources[id].text;
            for r in self.references[id].iter().chain(&self.uses[id]) {
                let Some(to) = self.resolve(root, &r.module, &r.segments, 0) else { continue };
                if to == id {
                    continue;
                }
                let line = text[..r.at.min(text.len())].matches('\n').count() + 1;
                edges
                    .entry(id)
                    .or_default()
                    .entry(to)
                    .or_default()
                    .push(Evidence { line, path: r.segments.join("::") });
            }
        }
        for targets in edges.values_mut() {
            for evidence in targets.values_mut() {
                evidence.sort();
                evidence.dedup();
            }
        }
        Graph { files: self.sources.into_iter().map(|s| s.path).collect(), edges }
    }
}

/// Whether a token is a name (an identifier that is no keyword).
fn is_name(t: &str) -> bool {
    t.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && !KEYWORDS.contains(&t)
        && !matches!(t, "crate" | "super" | "self" | "Self")
}

/// The index of the token closing the bracket opened at `open`.
fn matching(toks: &[Tok], open: usize, left: &str, right: &str) -> usize {
    let mut depth = 0;
    for (j, t) in toks.iter().enumerate().skip(open) {
        if t.text == left {
            depth += 1;
        } else if t.text == right {
            depth -= 1;
            if depth == 0 {
                return j;
            }
        }
    }
    toks.len().saturating_sub(1)
}

/// The leaves of a use tree: the name each brings in (`None` for a glob) and its path.
fn use_tree(toks: &[Tok], prefix: &mut Vec<String>, out: &mut Vec<(Option<String>, Vec<String>)>) {
    let mut i = 0;
    if toks.first().is_some_and(|t| t.text == "::") {
        i = 1;
    }
    let start = prefix.len();
    while i < toks.len() {
        let t = toks[i].text.as_str();
        match t {
            "*" => {
                out.push((None, prefix.clone()));
                break;
            }
            "{" => {
                let end = matching(toks, i, "{", "}");
                let mut from = i + 1;
                let mut depth = 0;
                for j in i + 1..=end {
                    let tj = toks[j].text.as_str();
                    if tj == "{" {
                        depth += 1;
                    } else if tj == "}" && depth > 0 {
                        depth -= 1;
                    } else if (tj == "," && depth == 0) || j == end {
                        let mut p = prefix.clone();
                        if from < j {
                            if toks[from].text == "self" && j == from + 1 {
                                if let Some(last) = p.last().cloned() {
                                    out.push((Some(last), p));
                                }
                            } else {
                                use_tree(&toks[from..j], &mut p, out);
                            }
                        }
                        from = j + 1;
                    }
                }
                break;
            }
            "::" => {}
            "as" => {
                // `path as name`: the leaf was pushed; rename it.
                if let (Some(last), Some(alias)) = (out.last_mut(), toks.get(i + 1)) {
                    last.0 = Some(alias.text.clone());
                }
                break;
            }
            _ => {
                prefix.push(t.to_owned());
                if toks.get(i + 1).is_none_or(|n| n.text != "::") {
                    out.push((Some(t.to_owned()), prefix.clone()));
                    if toks.get(i + 1).is_some_and(|n| n.text == "as") {
                        i += 1;
                        continue;
                    }
                    break;
                }
            }
        }
        i += 1;
    }
    prefix.truncate(start);
}

/// The code with comments and literals blanked (their bytes become spaces, lines kept), so that
/// nothing in them reads as code. A string that is a path (`"crate::x::f"`, as `serde(with = …)`
/// takes one) is kept, unquoted: it is a use.
fn blank(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let wipe = |out: &mut Vec<u8>, from: usize, to: usize| {
        for byte in &mut out[from..to.min(b.len())] {
            if *byte != b'\n' {
                *byte = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    while i < b.len() {
        let c = b[i];
        let prev = if i > 0 { b[i - 1] } else { b' ' };
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p);
            wipe(&mut out, i, end);
            i = end;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                    depth += 1;
                    j += 2;
                } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            wipe(&mut out, i, j);
            i = j;
        } else if c == b'r' && !ident(prev) && matches!(b.get(i + 1), Some(b'#') | Some(b'"')) {
            // A raw string `r#"…"#` (or a raw identifier `r#name`, left alone).
            let hashes = b[i + 1..].iter().take_while(|&&x| x == b'#').count();
            if b.get(i + 1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let body = i + 2 + hashes;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            wipe(&mut out, i, end);
            i = end;
        } else if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let content = &text[i + 1..j.min(b.len())];
            wipe(&mut out, i, j + 1);
            if is_path_text(content) {
                out[i + 1..j].copy_from_slice(content.as_bytes());
            }
            i = j + 1;
        } else if c == b'\'' {
            // A char literal, or a lifetime (`'a`), which is left alone.
            if b.get(i + 1) == Some(&b'\\') {
                let end = b[i + 3..].iter().position(|&x| x == b'\'').map_or(b.len(), |p| i + 3 + p + 1);
                wipe(&mut out, i, end);
                i = end;
            } else {
                let width = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + width) == Some(&b'\'') {
                    wipe(&mut out, i, i + 2 + width);
                    i += 2 + width;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_default()
}

/// Whether a string's text is a path into the crate.
fn is_path_text(s: &str) -> bool {
    let mut parts = s.split("::");
    matches!(parts.next(), Some("crate" | "super" | "self"))
        && s.contains("::")
        && parts.all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// The tokens of blanked code: names (with `$crate`), `::`, and single characters.
fn tokens(code: &str) -> Vec<Tok> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = code.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let (at, c) = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric()
            || c == '_'
            || (c == '$' && chars.get(i + 1).is_some_and(|(_, n)| n.is_alphabetic()))
        {
            let mut j = i + 1;
            while j < chars.len() && (chars[j].1.is_alphanumeric() || chars[j].1 == '_') {
                j += 1;
            }
            let end = chars.get(j).map_or(code.len(), |(a, _)| *a);
            out.push(Tok { text: code[at..end].to_owned(), at });
            i = j;
        } else if c == ':' && chars.get(i + 1).is_some_and(|(_, n)| *n == ':') {
            out.push(Tok { text: "::".into(), at });
            i += 2;
        } else {
            out.push(Tok { text: c.to_string(), at });
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph of files given as (path, text), the first the crate's root.
    fn graph(files: &[(&str, &str)]) -> Graph {
        let map: HashMap<PathBuf, String> =
            files.iter().map(|(p, t)| (PathBuf::from(p), (*t).to_owned())).collect();
        graph_of(&[PathBuf::from(files[0].0)], |p| map.get(p).cloned())
    }

    fn names(g: &Graph) -> Vec<Vec<String>> {
        circles(g)
            .into_iter()
            .map(|c| c.into_iter().map(|f| g.files[f].display().to_string()).collect())
            .collect()
    }

    #[test]
    fn two_siblings_that_use_each_other_are_a_circle() {
        let g = graph(&[
            ("src/lib.rs", "mod a;\nmod b;\n"),
            ("src/a.rs", "use crate::b::B;\npub struct A;\n"),
            ("src/b.rs", "pub struct B;\nfn f() -> super::a::A { todo!() }\n"),
        ]);
        assert_eq!(names(&g), [["src/a.rs", "src/b.rs"]]);
        let report = describe(&g);
        assert!(report.contains("src/a.rs:1 uses src/b.rs (`crate::b::B`)"), "{report}");
        assert!(report.contains("src/b.rs:2 uses src/a.rs (`super::a::A`)"), "{report}");
    }

    #[test]
    fn a_parent_and_its_child_are_a_circle_when_both_use_the_other() {
        let g = graph(&[
            ("src/lib.rs", "mod m;\n"),
            ("src/m/mod.rs", "mod c;\npub(crate) fn helper() {}\npub fn run() { c::go() }\n"),
            ("src/m/c.rs", "use super::helper;\npub(super) fn go() { helper() }\n"),
        ]);
        assert_eq!(names(&g), [["src/m/c.rs", "src/m/mod.rs"]]);
    }

    #[test]
    fn re_exports_declarations_visibilities_tests_and_comments_are_no_uses() {
        let g = graph(&[
            (
                "src/lib.rs",
                "//! crate::b is used in prose only.\nmod a;\nmod b;\npub use b::B;\n\
                 pub(in crate::a) struct R;\n#[cfg(test)]\nmod tests { use crate::a::A; }\n",
            ),
            ("src/a.rs", "use crate::B;\npub struct A;\nconst S: &str = \"see crate::lib\";\n"),
            ("src/b.rs", "pub struct B;\n#[cfg(test)]\nmod tests {\n    use crate::a::A;\n}\n"),
        ]);
        assert!(circles(&g).is_empty(), "{}", describe(&g));
        // `crate::B` is the re-export of b.rs's `B`: a.rs uses b.rs, not lib.rs.
        let a = g.files.iter().position(|f| f.ends_with("a.rs")).unwrap();
        let b = g.files.iter().position(|f| f.ends_with("b.rs")).unwrap();
        assert_eq!(g.edges[&a].keys().copied().collect::<Vec<_>>(), [b]);
    }

    #[test]
    fn a_circle_through_three_files_and_a_string_path_is_found() {
        let g = graph(&[
            ("src/main.rs", "mod a;\nmod b;\nmod c;\n"),
            ("src/a.rs", "#[serde(with = \"crate::b::form\")]\nstruct A;\n"),
            ("src/b.rs", "pub mod form { pub fn f() {} }\nfn g() { crate::c::h() }\n"),
            ("src/c.rs", "pub fn h() { let _ = '\"'; let _: &'static str = \"}\"; crate::a::A; }\n"),
        ]);
        assert_eq!(names(&g), [["src/a.rs", "src/b.rs", "src/c.rs"]]);
    }

    #[test]
    fn use_trees_read_groups_self_renames_and_globs() {
        let toks = tokens("super::x::{self, Y as Z, w::{V, *}}");
        let mut leaves = Vec::new();
        use_tree(&toks, &mut Vec::new(), &mut leaves);
        let want: Vec<(Option<String>, Vec<String>)> = vec![
            (Some("x".into()), vec!["super".into(), "x".into()]),
            (Some("Z".into()), vec!["super".into(), "x".into(), "Y".into()]),
            (Some("V".into()), vec!["super".into(), "x".into(), "w".into(), "V".into()]),
            (None, vec!["super".into(), "x".into(), "w".into()]),
        ];
        assert_eq!(leaves, want);
    }
}

//! The TypeScript generator: the JSON Schema that schemars derives from the Rust types, turned
//! into one TypeScript module of zod validators with their inferred types. Deterministic (sorted
//! definitions, no timestamps), so a test can compare it with the committed file.
//!
//! Why schemars → zod rather than ts-rs or tsify: the schema is already derived for the published
//! conversation format, it carries the doc comments and the serde attributes (renames, tags,
//! defaults, `deny_unknown_fields`), and from one schema we get both the types and the runtime
//! validators that the webview and the extension run on every message. ts-rs and tsify give types
//! only, and a second generator for validators could drift from them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use serde_json::{Map, Value};

/// The generated module for these definitions (name → JSON Schema), in dependency order.
pub fn module(definitions: &BTreeMap<String, Value>, header: &str) -> Result<String, String> {
    let order = dependency_order(definitions)?;
    let mut out = String::new();
    out.push_str(header);
    out.push_str("\nimport * as z from \"./zod\";\n");
    for name in order {
        let schema = &definitions[&name];
        out.push('\n');
        doc(&mut out, schema, "");
        // Built on first use (`z.deferred`), not when the module loads.
        let _ = writeln!(out, "export const {name} = z.deferred(() => {});", expr(schema, ""));
        let _ = writeln!(out, "export type {name} = z.output<typeof {name}>;");
        let _ = writeln!(out, "export type {name}Input = z.input<typeof {name}>;");
    }
    Ok(out)
}

/// The names a schema refers to.
fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            if let Some(Value::String(r)) = o.get("$ref") {
                out.insert(ref_name(r).to_owned());
            }
            o.values().for_each(|x| refs(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

fn ref_name(r: &str) -> &str {
    r.rsplit('/').next().unwrap_or(r)
}

/// The definitions, each after the ones it uses; a cycle is an error (the protocol has none, and
/// a recursive type would need `z.lazy` and a hand-written type).
fn dependency_order(definitions: &BTreeMap<String, Value>) -> Result<Vec<String>, String> {
    fn visit(
        name: &str,
        definitions: &BTreeMap<String, Value>,
        state: &mut BTreeMap<String, bool>,
        out: &mut Vec<String>,
    ) -> Result<(), String> {
        match state.get(name) {
            Some(true) => return Ok(()),
            Some(false) => return Err(format!("the protocol's types form a cycle through {name}")),
            None => {}
        }
        let schema = definitions.get(name).ok_or_else(|| format!("no definition for {name}"))?;
        state.insert(name.to_owned(), false);
        let mut used = BTreeSet::new();
        refs(schema, &mut used);
        for dep in used.iter().filter(|d| *d != name) {
            visit(dep, definitions, state, out)?;
        }
        state.insert(name.to_owned(), true);
        out.push(name.to_owned());
        Ok(())
    }
    let mut state = BTreeMap::new();
    let mut out = Vec::new();
    for name in definitions.keys() {
        visit(name, definitions, &mut state, &mut out)?;
    }
    Ok(out)
}

/// A `/** … */` comment from a schema's description.
fn doc(out: &mut String, schema: &Value, indent: &str) {
    let Some(text) = schema.get("description").and_then(Value::as_str) else { return };
    let text = text.replace("*/", "*\\/");
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() == 1 {
        let _ = writeln!(out, "{indent}/** {} */", lines[0]);
    } else {
        let _ = writeln!(out, "{indent}/**");
        for line in lines {
            let _ = writeln!(out, "{indent} * {line}").map(|_| ());
        }
        let _ = writeln!(out, "{indent} */");
    }
}

/// The single string value of a one-value string enum (`{"type": "string", "enum": ["x"]}`).
fn single_string(v: &Value) -> Option<&str> {
    match v.get("enum").and_then(Value::as_array).map(Vec::as_slice) {
        Some([Value::String(s)]) => Some(s),
        _ => v.get("const").and_then(Value::as_str),
    }
}

/// The property every variant tags itself with, if there is one.
fn discriminator(variants: &[Value]) -> Option<String> {
    let first = variants.first()?.get("properties")?.as_object()?;
    first
        .keys()
        .find(|key| {
            variants.iter().all(|v| {
                v.get("properties").and_then(|p| p.get(key.as_str())).and_then(single_string).is_some()
                    && v.get("required")
                        .and_then(Value::as_array)
                        .is_some_and(|r| r.iter().any(|k| k.as_str() == Some(key.as_str())))
            })
        })
        .cloned()
}

fn literal(v: &Value) -> String {
    format!("z.literal({v})")
}

/// The zod expression of a schema.
fn expr(v: &Value, indent: &str) -> String {
    let o = match v {
        Value::Bool(true) => return "z.unknown()".into(),
        Value::Bool(false) => return "z.never()".into(),
        Value::Object(o) => o,
        _ => return "z.unknown()".into(),
    };
    if let Some(Value::String(r)) = o.get("$ref") {
        return ref_name(r).to_owned();
    }
    if let Some(Value::Array(all)) = o.get("allOf")
        && all.len() == 1
    {
        return expr(&all[0], indent);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(variants)) = o.get(key) {
            return union(variants, indent);
        }
    }
    if let Some(c) = o.get("const") {
        return literal(c);
    }
    if let Some(Value::Array(values)) = o.get("enum") {
        let nullable = values.iter().any(Value::is_null);
        let strings: Vec<&Value> = values.iter().filter(|x| !x.is_null()).collect();
        let base = match strings.as_slice() {
            [one] => literal(one),
            many => {
                format!("z.enum([{}])", many.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", "))
            }
        };
        return if nullable { format!("{base}.nullable()") } else { base };
    }
    let types: Vec<&str> = match o.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        None if o.contains_key("properties") => vec!["object"],
        None => return "z.unknown()".into(),
        Some(_) => return "z.unknown()".into(),
    };
    let nullable = types.contains(&"null");
    let non_null: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
    let base = match non_null.as_slice() {
        [] => "z.null()".to_owned(),
        [t] => typed(t, o, indent),
        many => {
            format!("z.union([{}])", many.iter().map(|t| typed(t, o, indent)).collect::<Vec<_>>().join(", "))
        }
    };
    if nullable && !non_null.is_empty() { format!("{base}.nullable()") } else { base }
}

fn number_bounds(o: &Map<String, Value>) -> String {
    let mut s = String::new();
    if let Some(min) = o.get("minimum").and_then(Value::as_f64) {
        let _ = write!(s, ".gte({})", trim_float(min));
    }
    if let Some(max) = o.get("maximum").and_then(Value::as_f64) {
        let _ = write!(s, ".lte({})", trim_float(max));
    }
    s
}

fn trim_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 { format!("{}", x as i64) } else { format!("{x}") }
}

fn typed(t: &str, o: &Map<String, Value>, indent: &str) -> String {
    match t {
        "string" => {
            let mut s = "z.string()".to_owned();
            if let Some(n) = o.get("minLength").and_then(Value::as_u64) {
                let _ = write!(s, ".min({n})");
            }
            if let Some(n) = o.get("maxLength").and_then(Value::as_u64) {
                let _ = write!(s, ".max({n})");
            }
            s
        }
        "integer" => format!("z.number().int(){}", number_bounds(o)),
        "number" => format!("z.number(){}", number_bounds(o)),
        "boolean" => "z.boolean()".into(),
        "array" => match o.get("items") {
            Some(Value::Array(items)) => {
                format!("z.tuple([{}])", items.iter().map(|i| expr(i, indent)).collect::<Vec<_>>().join(", "))
            }
            Some(items) => format!("z.array({})", expr(items, indent)),
            None => "z.array(z.unknown())".into(),
        },
        "object" => object(o, indent),
        _ => "z.unknown()".into(),
    }
}

fn object(o: &Map<String, Value>, indent: &str) -> String {
    let empty = Map::new();
    let properties = o.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let additional = o.get("additionalProperties");
    if properties.is_empty() {
        let values = match additional {
            Some(Value::Bool(false)) => return "z.strictObject({})".into(),
            Some(schema) => expr(schema, indent),
            None => "z.unknown()".into(),
        };
        return format!("z.record(z.string(), {values})");
    }
    let required: BTreeSet<&str> = o
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let inner = format!("{indent}  ");
    let mut body = String::from("{\n");
    for (key, schema) in properties {
        doc(&mut body, schema, &inner);
        // A serde default makes the field optional on the way in and present on the way out; a
        // `null` default (an absent `Option`) stays absent, as serde leaves it. (schemars omits a
        // default that `skip_serializing_if` would skip, so an `Option` that is always written
        // and one that may be left out look the same: both are optional here.)
        let optional = match schema.get("default") {
            _ if required.contains(key.as_str()) => String::new(),
            None | Some(Value::Null) => ".optional()".to_owned(),
            Some(d @ (Value::Object(_) | Value::Array(_))) => format!(".default(() => ({d}))"),
            Some(d) => format!(".default({d})"),
        };
        let name = if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !key.starts_with(char::is_numeric)
        {
            key.clone()
        } else {
            Value::String(key.clone()).to_string()
        };
        let _ = writeln!(body, "{inner}{name}: {}{optional},", expr(schema, &inner));
    }
    let _ = write!(body, "{indent}}}");
    match additional {
        Some(Value::Bool(false)) => format!("z.strictObject({body})"),
        Some(schema) => format!("z.object({body}).catchall({})", expr(schema, indent)),
        None => format!("z.object({body})"),
    }
}

fn union(variants: &[Value], indent: &str) -> String {
    // `Option<T>` where T is not a plain type: anyOf [T, null].
    let non_null: Vec<&Value> =
        variants.iter().filter(|v| v.get("type").and_then(Value::as_str) != Some("null")).collect();
    if non_null.len() == 1 && variants.len() == 2 {
        return format!("{}.nullable()", expr(non_null[0], indent));
    }
    if variants.iter().all(|v| single_string(v).is_some() && v.get("properties").is_none()) {
        let names: Vec<String> = variants
            .iter()
            .filter_map(single_string)
            .map(|s| Value::String(s.to_owned()).to_string())
            .collect();
        return format!("z.enum([{}])", names.join(", "));
    }
    let inner = format!("{indent}  ");
    let items: Vec<String> = variants
        .iter()
        .map(|v| {
            let mut s = String::new();
            doc(&mut s, v, &inner);
            format!("{s}{inner}{}", expr(v, &inner))
        })
        .collect();
    let list = format!("[\n{},\n{indent}]", items.join(",\n"));
    match discriminator(variants) {
        Some(tag) => format!("z.discriminatedUnion({}, {list})", Value::String(tag)),
        None => format!("z.union({list})"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn defs(pairs: &[(&str, Value)]) -> BTreeMap<String, Value> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    #[test]
    fn objects_enums_unions_and_nullables_become_zod() {
        let d = defs(&[
            (
                "Kind",
                json!({"oneOf": [{"type": "string", "enum": ["a"], "description": "A."}, {"type": "string", "enum": ["b"]}]}),
            ),
            (
                "Msg",
                json!({"oneOf": [
                    {"type": "object", "required": ["type", "n"], "properties": {"type": {"type": "string", "enum": ["x"]}, "n": {"type": "integer", "minimum": 0.0, "maximum": 100.0}}},
                    {"type": "object", "required": ["type"], "properties": {"type": {"type": "string", "enum": ["y"]}, "k": {"anyOf": [{"$ref": "#/definitions/Kind"}, {"type": "null"}]}}, "additionalProperties": false}
                ]}),
            ),
            (
                "Open",
                json!({"type": "object", "properties": {"s": {"type": ["string", "null"], "minLength": 1, "default": null}, "d": {"type": "array", "default": []}, "n": {"type": "integer", "default": 0}, "o": {"type": ["string", "null"], "default": null}}, "additionalProperties": true}),
            ),
        ]);
        let ts = module(&d, "// header\n").unwrap();
        assert!(ts.contains("export const Kind = z.deferred(() => z.enum([\"a\", \"b\"]));"), "{ts}");
        assert!(
            ts.find("export const Kind").unwrap() < ts.find("export const Msg").unwrap(),
            "dependencies first"
        );
        assert!(ts.contains("z.discriminatedUnion(\"type\", ["), "{ts}");
        assert!(ts.contains("n: z.number().int().gte(0).lte(100),"), "{ts}");
        assert!(ts.contains("k: Kind.nullable().optional(),"), "{ts}");
        assert!(ts.contains("z.strictObject({"), "{ts}");
        assert!(ts.contains("s: z.string().min(1).nullable().optional(),"), "{ts}");
        assert!(ts.contains(".catchall(z.unknown())"), "{ts}");
        assert!(ts.contains("d: z.array(z.unknown()).default(() => ([])),"), "{ts}");
        assert!(ts.contains("n: z.number().int().default(0),"), "{ts}");
        assert!(ts.contains("o: z.string().nullable().optional(),"), "{ts}");
        assert!(ts.contains("export type Msg = z.output<typeof Msg>;"), "{ts}");
        assert!(ts.contains("export type MsgInput = z.input<typeof Msg>;"), "{ts}");
    }

    #[test]
    fn a_cycle_is_refused() {
        let d = defs(&[
            ("A", json!({"type": "object", "properties": {"b": {"$ref": "#/definitions/B"}}})),
            ("B", json!({"type": "object", "properties": {"a": {"$ref": "#/definitions/A"}}})),
        ]);
        assert!(module(&d, "").unwrap_err().contains("cycle"));
    }
}

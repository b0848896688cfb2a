//! The engine's surface, described once: each file of methods lists them in [`engine_api!`] with
//! their Rust types, and that one description produces both the `#[wasm_bindgen]` method (its
//! arguments read from JS, its result written back) and its TypeScript declaration. The
//! declarations are gathered by [`declaration`] into `engine.d.ts` beside this file, which the
//! `.d.ts` wasm-bindgen writes takes in (`types.rs`) and a test keeps current; no method carries a
//! hand-written type string.
//!
//! A method's TypeScript names come from its Rust types: a protocol type is declared under its own
//! name (its `…Input` form for an argument, which may leave out fields with a default), `String`
//! is `string`, numbers `number`, `Option<T>` an optional argument or `T | undefined`, `Vec<T>`
//! `T[]`, [`Callback<T>`] an optional function of a `T`.

use js_sys::Function;
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

use crate::convert::{call_back, error, from_js, to_js};
use condense_core::ErrorKind;

/// An argument read from JS, and its TypeScript type.
pub(crate) trait FromJs: Sized {
    /// Whether the argument may be left out.
    const OPTIONAL: bool = false;
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue>;
    fn ts() -> String;
}

/// A result written to JS, and its TypeScript type.
pub(crate) trait IntoJs {
    fn into_js(self) -> Result<JsValue, JsValue>;
    fn ts() -> String;
}

/// What a bad argument is called in its error: `onEvent` for `on_event`.
pub(crate) fn js_name(rust: &str) -> String {
    let mut out = String::with_capacity(rust.len());
    let mut upper = false;
    for c in rust.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// A protocol type: read through its JSON (`from_js`), written as JSON-compatible values.
macro_rules! data {
    ($($t:ty),* $(,)?) => {$(
        impl $crate::surface::FromJs for $t {
            fn from_js(value: ::wasm_bindgen::JsValue, name: &str) -> Result<Self, ::wasm_bindgen::JsValue> {
                $crate::convert::from_js(&value, &$crate::surface::js_name(name))
            }
            fn ts() -> String {
                format!("{}Input", stringify!($t))
            }
        }
        impl $crate::surface::IntoJs for $t {
            fn into_js(self) -> Result<::wasm_bindgen::JsValue, ::wasm_bindgen::JsValue> {
                $crate::convert::to_js(&self)
            }
            fn ts() -> String {
                stringify!($t).to_owned()
            }
        }
    )*};
}
pub(crate) use data;

impl FromJs for String {
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        value
            .as_string()
            .ok_or_else(|| error(ErrorKind::InvalidInput, &format!("{} must be a string", js_name(name))))
    }
    fn ts() -> String {
        "string".into()
    }
}

impl FromJs for f64 {
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        value
            .as_f64()
            .ok_or_else(|| error(ErrorKind::InvalidInput, &format!("{} must be a number", js_name(name))))
    }
    fn ts() -> String {
        "number".into()
    }
}

impl FromJs for bool {
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        value.as_bool().ok_or_else(|| {
            error(ErrorKind::InvalidInput, &format!("{} must be true or false", js_name(name)))
        })
    }
    fn ts() -> String {
        "boolean".into()
    }
}

impl<T: FromJs> FromJs for Option<T> {
    const OPTIONAL: bool = true;
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        if value.is_undefined() || value.is_null() { Ok(None) } else { T::from_js(value, name).map(Some) }
    }
    fn ts() -> String {
        T::ts()
    }
}

impl<T: DeserializeOwned + FromJs> FromJs for Vec<T> {
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        from_js(&value, &js_name(name))
    }
    fn ts() -> String {
        format!("{}[]", T::ts())
    }
}

/// Bytes, a `Uint8Array` (a Node `Buffer` is one) each way, copied once.
pub(crate) struct Bytes(pub(crate) Vec<u8>);

impl FromJs for Bytes {
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        value
            .dyn_ref::<js_sys::Uint8Array>()
            .map(|a| Bytes(a.to_vec()))
            .ok_or_else(|| error(ErrorKind::InvalidInput, &format!("{} must be a Uint8Array", js_name(name))))
    }
    fn ts() -> String {
        "Uint8Array".into()
    }
}

/// A function the engine calls with each `T` as it happens (an event, an estimate); it may be
/// left out. A callback that throws is the host's bug and does not end the call.
pub(crate) struct Callback<T>(Option<Function>, std::marker::PhantomData<T>);

impl<T: Serialize> Callback<T> {
    pub(crate) fn call(&self, value: &T) {
        call_back(self.0.as_ref(), value);
    }
}

impl<T: IntoJs> FromJs for Callback<T> {
    const OPTIONAL: bool = true;
    fn from_js(value: JsValue, name: &str) -> Result<Self, JsValue> {
        if value.is_undefined() || value.is_null() {
            return Ok(Callback(None, std::marker::PhantomData));
        }
        let f = value
            .dyn_into::<Function>()
            .map_err(|_| error(ErrorKind::InvalidInput, &format!("{} must be a function", js_name(name))))?;
        Ok(Callback(Some(f), std::marker::PhantomData))
    }
    fn ts() -> String {
        format!("((value: {}) => void)", T::ts())
    }
}

macro_rules! plain_out {
    ($($t:ty => $ts:literal),* $(,)?) => {$(
        impl IntoJs for $t {
            fn into_js(self) -> Result<JsValue, JsValue> {
                to_js(&self)
            }
            fn ts() -> String {
                $ts.into()
            }
        }
    )*};
}
plain_out!(String => "string", usize => "number", u32 => "number", bool => "boolean");

impl IntoJs for () {
    fn into_js(self) -> Result<JsValue, JsValue> {
        Ok(JsValue::UNDEFINED)
    }
    fn ts() -> String {
        "void".into()
    }
}

impl<T: IntoJs> IntoJs for Option<T> {
    fn into_js(self) -> Result<JsValue, JsValue> {
        self.map_or(Ok(JsValue::UNDEFINED), T::into_js)
    }
    fn ts() -> String {
        format!("{} | undefined", T::ts())
    }
}

impl<T: IntoJs + Serialize> IntoJs for Vec<T> {
    fn into_js(self) -> Result<JsValue, JsValue> {
        to_js(&self)
    }
    fn ts() -> String {
        format!("{}[]", T::ts())
    }
}

/// One method as TypeScript declares it.
#[derive(Debug)]
pub(crate) struct Method {
    /// The class it belongs to (`CondenseEngine`, `Gateway`).
    pub(crate) class: &'static str,
    /// Its JS name.
    pub(crate) name: &'static str,
    /// Its doc comment's lines.
    pub(crate) doc: &'static [&'static str],
    /// Its arguments: name (Rust), TypeScript type, whether it may be left out.
    pub(crate) params: Vec<(&'static str, String, bool)>,
    /// What it returns (a promise of it when `promise`).
    pub(crate) returns: String,
    pub(crate) promise: bool,
}

/// Lists methods of a class (`impl CondenseEngine;` or `impl Gateway;` first): each
/// `sync fn js_name = rust_fn(args) -> T;` becomes a method that reads its arguments, calls
/// `rust_fn(&self.inner, args…) -> Result<T, JsValue>` and writes its result; `async fn …` the
/// same with `rust_fn(Rc::clone(&self.inner), args…)` awaited and a promise returned. Also
/// `methods()`, their declarations.
macro_rules! engine_api {
    (
        impl $class:ident;
        $(
            $(#[doc = $doc:literal])*
            $mode:ident fn $js:ident = $rust:ident ( $($p:ident : $t:ty),* $(,)? ) -> $ret:ty;
        )*
    ) => {
        // One `impl` block each: `#[wasm_bindgen]` reads an impl's items before macros expand.
        $( $crate::surface::engine_api!(@method $class $mode [$(#[doc = $doc])*] $js $rust ($($p : $t),*) -> $ret); )*

        /// The declarations of the methods of this file.
        pub(crate) fn methods() -> Vec<$crate::surface::Method> {
            vec![$(
                $crate::surface::Method {
                    class: stringify!($class),
                    name: stringify!($js),
                    doc: &[$($doc),*],
                    params: vec![$((
                        stringify!($p),
                        <$t as $crate::surface::FromJs>::ts(),
                        <$t as $crate::surface::FromJs>::OPTIONAL,
                    )),*],
                    returns: <$ret as $crate::surface::IntoJs>::ts(),
                    promise: $crate::surface::engine_api!(@promise $mode),
                }
            ),*]
        }
    };
    (@promise sync) => { false };
    (@promise async) => { true };
    (@method $class:ident sync [$($doc:tt)*] $js:ident $rust:ident ($($p:ident : $t:ty),*) -> $ret:ty) => {
        #[::wasm_bindgen::prelude::wasm_bindgen]
        impl $class {
            $($doc)*
            #[wasm_bindgen(js_name = $js, skip_typescript)]
            pub fn $rust(&self, $($p: ::wasm_bindgen::JsValue),*) -> Result<::wasm_bindgen::JsValue, ::wasm_bindgen::JsValue> {
                $(let $p = <$t as $crate::surface::FromJs>::from_js($p, stringify!($p))?;)*
                let out: $ret = $rust(&self.inner, $($p),*)?;
                $crate::surface::IntoJs::into_js(out)
            }
        }
    };
    (@method $class:ident async [$($doc:tt)*] $js:ident $rust:ident ($($p:ident : $t:ty),*) -> $ret:ty) => {
        #[::wasm_bindgen::prelude::wasm_bindgen]
        impl $class {
            $($doc)*
            #[wasm_bindgen(js_name = $js, skip_typescript)]
            pub fn $rust(&self, $($p: ::wasm_bindgen::JsValue),*) -> ::js_sys::Promise {
                let inner = ::std::rc::Rc::clone(&self.inner);
                ::wasm_bindgen_futures::future_to_promise(async move {
                    $(let $p = <$t as $crate::surface::FromJs>::from_js($p, stringify!($p))?;)*
                    let out: $ret = $rust(inner, $($p),*).await?;
                    $crate::surface::IntoJs::into_js(out)
                })
            }
        }
    };
}
pub(crate) use engine_api;

/// The TypeScript declaration of the classes' methods: for each class, an interface merged into
/// the class wasm-bindgen declares.
pub(crate) fn declaration(methods: &[Method]) -> String {
    // The classes, in the order of their first method; a class is not a protocol type.
    let mut classes: Vec<&str> = Vec::new();
    for m in methods {
        if !classes.contains(&m.class) {
            classes.push(m.class);
        }
    }
    // The protocol's types the methods name, imported once.
    let mut names = std::collections::BTreeSet::new();
    let types = methods
        .iter()
        .flat_map(|m| m.params.iter().map(|(_, ts, _)| ts.as_str()).chain([m.returns.as_str()]));
    for ts in types {
        for word in ts.split(|c: char| !c.is_ascii_alphanumeric()) {
            // JavaScript's own types and the classes are not the protocol's.
            if word.starts_with(|c: char| c.is_ascii_uppercase())
                && !["Uint8Array", "Promise"].contains(&word)
                && !classes.contains(&word)
            {
                names.insert(word);
            }
        }
    }
    let mut out = String::from(
        "// Generated from the classes' methods (crates/condense-wasm/src/surface.rs): do not edit.\n\
         // `cargo test -p condense-wasm` checks it; CONDENSE_WRITE_SURFACE=1 writes it.\n\n",
    );
    out.push_str("import type {\n");
    for name in names {
        out.push_str(&format!("  {name},\n"));
    }
    out.push_str("} from \"@context-condenser/protocol\";\n");
    for class in classes {
        out.push_str(&format!(
            "\n/** The methods of `{class}`, declared from their Rust description. */\nexport interface {class} {{\n"
        ));
        for m in methods.iter().filter(|m| m.class == class) {
            declare(&mut out, m);
        }
        out.push_str("}\n");
    }
    out
}

/// One method's declaration, with its doc comment.
fn declare(out: &mut String, m: &Method) {
    out.push_str("  /**\n");
    for line in m.doc {
        let line = line.strip_prefix(' ').unwrap_or(line);
        out.push_str(&format!(
            "   *{}{}\n",
            if line.is_empty() { "" } else { " " },
            line.replace("*/", "*\\/")
        ));
    }
    out.push_str("   */\n");
    // An argument may be left out only when every one after it may: before a required one,
    // an optional argument is `T | undefined`.
    let required_after: Vec<bool> =
        (0..m.params.len()).map(|i| m.params[i + 1..].iter().any(|(_, _, optional)| !optional)).collect();
    let params: Vec<String> = m
        .params
        .iter()
        .zip(required_after)
        .map(|((name, ts, optional), required_after)| match (optional, required_after) {
            (true, false) => format!("{}?: {ts}", js_name(name)),
            (true, true) => format!("{}: {ts} | undefined", js_name(name)),
            _ => format!("{}: {ts}", js_name(name)),
        })
        .collect();
    let returns = if m.promise { format!("Promise<{}>", m.returns) } else { m.returns.clone() };
    out.push_str(&format!("  {}({}): {};\n", m.name, params.join(", "), returns));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_camel_case() {
        assert_eq!(js_name("on_event"), "onEvent");
        assert_eq!(js_name("now_ms"), "nowMs");
        assert_eq!(js_name("model"), "model");
    }
}

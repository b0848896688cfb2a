//! Values across the boundary: one serializer configuration out, one parse path in, and errors as
//! `Error` objects carrying `{kind, message}`.

use condense_core::{CondenseError, ErrorInfo, ErrorKind, LlmError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

/// Rust → JS. JSON-compatible: maps become plain objects, 64-bit integers numbers, `None` `null`.
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    value
        .serialize(&serializer)
        .map_err(|e| error(ErrorKind::Internal, &format!("cannot convert a result to JS: {e}")))
}

/// Calls the host's callback with a value, if it gave one; a throwing callback is the host's bug
/// and must not end the call.
pub(crate) fn call_back<T: Serialize + ?Sized>(f: Option<&js_sys::Function>, value: &T) {
    if let (Some(f), Ok(value)) = (f, to_js(value)) {
        let _ = f.call1(&JsValue::NULL, &value);
    }
}

/// JS → JSON text, through `JSON.stringify`, so that every input is read by the same serde_json
/// code as the CLI's files (with the same error paths).
pub(crate) fn json_text(value: &JsValue, what: &str) -> Result<String, JsValue> {
    json_string(value, what).map(String::from)
}

/// `JSON.stringify(value)`, still a JS string (see [`json_text`]).
pub(crate) fn json_string(value: &JsValue, what: &str) -> Result<js_sys::JsString, JsValue> {
    if value.is_undefined() {
        return Err(error(ErrorKind::InvalidInput, &format!("{what} is missing")));
    }
    let text = js_sys::JSON::stringify(value).map_err(|_| {
        error(ErrorKind::InvalidInput, &format!("{what} cannot be turned into JSON (a cycle, or a BigInt)"))
    })?;
    Ok(text)
}

/// JS → a core type, reporting the path of a bad field.
pub(crate) fn from_js<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T, JsValue> {
    let text = json_text(value, what)?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." { String::new() } else { format!(" at {path}") };
        error(ErrorKind::InvalidInput, &format!("{what}{at}: {}", e.inner()))
    })
}

/// A JS `Error` with a `kind` property: what every failure of the bindings throws or rejects with.
pub(crate) fn error(kind: ErrorKind, message: &str) -> JsValue {
    let e = js_sys::Error::new(message);
    e.set_name("CondenseError");
    // Setting a property on a fresh Error cannot fail.
    let _ = js_sys::Reflect::set(&e, &"kind".into(), &kind.as_str().into());
    e.into()
}

/// A core error, thrown.
pub(crate) fn core_error(e: &CondenseError) -> JsValue {
    info_error(&e.to_info())
}

/// A boundary error, thrown.
pub(crate) fn info_error(info: &ErrorInfo) -> JsValue {
    error(info.kind, &info.message)
}

/// An LLM error, thrown: `kind` and message, with `partial`, `attempts`, `status` and
/// `retryAfterMs` where known.
pub(crate) fn llm_error(e: &LlmError) -> JsValue {
    let js = error(e.kind, &e.message);
    let set = |k: &str, v: JsValue| {
        let _ = js_sys::Reflect::set(&js, &k.into(), &v);
    };
    set("partial", e.partial.as_str().into());
    set("attempts", e.attempts.into());
    if let Some(status) = e.status {
        set("status", status.into());
    }
    if let Some(ms) = e.retry_after_ms {
        set("retryAfterMs", (ms as f64).into());
    }
    js
}

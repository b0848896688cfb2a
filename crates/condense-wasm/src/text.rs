//! Text in, without an allocation per call: a JS string is written by the host's `TextEncoder`
//! straight into a buffer kept for the purpose (`encodeInto` on a view of it), where
//! wasm-bindgen's `&str` (or `String::from(JsString)`) would allocate, copy character by
//! character, and free on every call. For `countText` on strings of 40–60 characters this took a
//! call from 0.39 to 0.33 µs; a conversation's JSON text (`conversation_api::conversation`) is
//! read the same way.

use std::cell::RefCell;

use js_sys::Uint8Array;
use wasm_bindgen::prelude::*;

// CommonJS, not the ES module syntax snippets are documented with: the package is built for Node
// (`--target nodejs`), whose glue `require`s this file, and the extension host's Node may be older
// than `require(esm)`.
#[wasm_bindgen(inline_js = "
const encoder = new TextEncoder();
exports.encode_into = function (text, view) {
    return typeof text === 'string' ? encoder.encodeInto(text, view).written : -1;
};
exports.utf16_length = function (text) { return text.length; };
")]
extern "C" {
    /// Writes `text` as UTF-8 into `view`, as far as it fits: the bytes written; -1 when `text` is
    /// not a string.
    fn encode_into(text: &JsValue, view: &Uint8Array) -> i32;
    /// A string's length in UTF-16 units.
    fn utf16_length(text: &JsValue) -> u32;
}

thread_local! {
    /// The one buffer (a wasm instance has one thread).
    static TEXT_IN: RefCell<TextIn> = RefCell::new(TextIn::default());
}

/// Calls `f` with the string `value` as UTF-8 (a lone surrogate as U+FFFD, as `TextEncoder`
/// writes it); `None` when `value` is not a string. `f` must not call into JS (it runs while the
/// buffer is lent; a nested call would get a buffer of its own).
pub(crate) fn with_text<R>(value: &JsValue, f: impl FnOnce(&str) -> R) -> Option<R> {
    TEXT_IN.with(|cell| match cell.try_borrow_mut() {
        Ok(mut text_in) => text_in.read(value).map(f),
        Err(_) => TextIn::default().read(value).map(f),
    })
}

/// The buffer strings are written into, and a view of it for the encoder.
#[derive(Default)]
struct TextIn {
    buffer: Vec<u8>,
    /// The view of `buffer`, and the wasm memory's size in pages when it was made (a grown memory
    /// is a new `ArrayBuffer`, so the view must be made again).
    view: Option<(Uint8Array, usize)>,
}

/// Room for a string's first attempt: any string of up to a third of this many UTF-16 units fits.
const FIRST_ROOM: usize = 1 << 16;
/// A buffer grown past this for a long text is replaced by a small one on the next call.
const KEPT_ROOM: usize = 4 << 20;

impl TextIn {
    /// The string `text` as UTF-8 (a lone surrogate as U+FFFD, as `TextEncoder` writes it), or
    /// `None` when it is not a string.
    fn read(&mut self, text: &JsValue) -> Option<&str> {
        if self.buffer.is_empty() || self.buffer.len() > KEPT_ROOM {
            self.buffer = vec![0; FIRST_ROOM];
            self.view = None;
        }
        let mut written = encode_into(text, self.view());
        if written < 0 {
            return None;
        }
        // A character takes at most 4 bytes: when fewer than 4 were left, it may not all be in.
        if written as usize + 4 > self.buffer.len() {
            let units = utf16_length(text) as usize;
            self.buffer = vec![0; units * 3 + 4];
            self.view = None;
            written = encode_into(text, self.view());
        }
        std::str::from_utf8(&self.buffer[..written as usize]).ok()
    }

    fn view(&mut self) -> &Uint8Array {
        let pages = memory_pages();
        if self.view.as_ref().is_none_or(|(_, p)| *p != pages) {
            let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
            let view = Uint8Array::new_with_byte_offset_and_length(
                &memory.buffer(),
                self.buffer.as_ptr() as u32,
                self.buffer.len() as u32,
            );
            self.view = Some((view, pages));
        }
        &self.view.as_ref().expect("just made").0
    }
}

/// The wasm memory's size in pages (0 off wasm, where the bindings are only type-checked).
fn memory_pages() -> usize {
    #[cfg(target_arch = "wasm32")]
    return core::arch::wasm32::memory_size(0);
    #[cfg(not(target_arch = "wasm32"))]
    0
}

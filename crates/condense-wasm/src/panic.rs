//! Panics: the hook that tells the host before a panic traps the instance (`onPanic`), and a test
//! build's panic on purpose ([`test_panic`]), which the method files call on their inputs.

/// The input that makes a test build of the engine panic (feature `test-panic`): a chat message, a
/// conversation text or a gateway request's body equal to it. The shipped package has no such trigger.
#[cfg(feature = "test-panic")]
pub const TEST_PANIC_MARKER: &str = "__context_condenser_test_panic__";

/// Panics on [`TEST_PANIC_MARKER`] in a test build; nothing otherwise.
#[inline]
pub(crate) fn test_panic(_input: &str) {
    #[cfg(feature = "test-panic")]
    if _input == TEST_PANIC_MARKER {
        panic!("the test build panics on purpose on its marker input");
    }
}

thread_local! {
    /// The host's function told of a panic (see [`on_panic`]).
    static PANIC_LISTENER: std::cell::RefCell<Option<js_sys::Function>> = const { std::cell::RefCell::new(None) };
}

/// Registers the function called with a panic's message just before the panic traps this
/// WebAssembly instance. A trap inside a promise's task leaves that promise pending forever and
/// the instance unusable (a borrow never released, the task queue stopped): the host learns of it
/// here, fails the calls in flight and builds a fresh instance. The function must not call into
/// the engine.
#[wasm_bindgen::prelude::wasm_bindgen(js_name = onPanic)]
pub fn on_panic(listener: js_sys::Function) {
    PANIC_LISTENER.with(|l| *l.borrow_mut() = Some(listener));
}

fn panic_hook(info: &std::panic::PanicHookInfo<'_>) {
    console_error_panic_hook::hook(info);
    let message = wasm_bindgen::JsValue::from(info.to_string());
    PANIC_LISTENER.with(|l| {
        if let Some(f) = l.try_borrow().ok().as_deref().and_then(Option::as_ref) {
            let _ = f.call1(&wasm_bindgen::JsValue::NULL, &message);
        }
    });
}

#[wasm_bindgen::prelude::wasm_bindgen(start)]
fn start() {
    std::panic::set_hook(Box::new(panic_hook));
}

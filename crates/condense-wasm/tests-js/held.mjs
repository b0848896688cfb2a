// Helpers of the held calls for the tests: a saved chat held by its text, and a conversation
// condensed whole as the extension's API condenses one.

/** A saved chat's text held in `engine` under the chat's own id. */
export const holdChat = (engine, text) => engine.hold("chat", JSON.parse(text).id, text);

let wholes = 0;

/** A conversation condensed as the extension's API condenses one (extension/src/api.ts): held
 *  under an id of its own, condensed in the engine, read back with its system prompt and tools,
 *  let go. */
export async function condenseWhole(engine, conversation, options) {
  const id = `whole:${++wholes}`;
  const handle = engine.hold("conversation", id, conversation);
  try {
    const { handle: after, ...outcome } = await engine.condense(handle, options);
    const { messages, system, tools } = engine.parseConversation(engine.heldText(after));
    return { ...outcome, messages, ...(system === undefined ? {} : { system }), ...(tools?.length ? { tools } : {}) };
  } finally {
    engine.release(id);
  }
}

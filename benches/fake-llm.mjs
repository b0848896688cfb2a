// An OpenAI-compatible server answered in-process, for benches that run real chat turns without
// a network: a host `fetch` whose answer streams a chat completion as Server-Sent Events (a
// ReadableStream of `data:` lines, usage in the last chunk, then `data: [DONE]`). Imported by
// benches/run.mjs and benches/boundary.mjs; not a bench itself.

const encoder = new TextEncoder();

/** The profile the fake answers for (any base URL would do: `fetch` never leaves the process). */
export const fakeProfile = {
  id: "bench",
  kind: "openai-compatible",
  base_url: "http://127.0.0.1:9/v1",
  model: "gpt-4o",
  context_window: 400000,
  max_output: 16000,
};

/** A host `fetch` answering every request with `answer` in chunks of `wordsPerChunk` words.
 *  `seen(request, sseText)` is told of each request and of the stream sent back. No usage is
 *  reported unless `usage` is set: then the engine counts the context itself (the costlier check). */
export function sseFetch({ answer = "The parser drops nested groups because parse_group returns early on a closing parenthesis.", wordsPerChunk = 3, usage = false, seen } = {}) {
  const words = answer.split(/(?<= )/);
  const deltas = [];
  for (let i = 0; i < words.length; i += wordsPerChunk) deltas.push(words.slice(i, i + wordsPerChunk).join(""));
  const chunk = (delta, finish = null, extra = {}) =>
    `data: ${JSON.stringify({ id: "chatcmpl-bench", object: "chat.completion.chunk", model: fakeProfile.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra })}\n\n`;
  return async (request) => {
    const lines = [
      chunk({ role: "assistant", content: "" }),
      ...deltas.map((content) => chunk({ content })),
      chunk({}, "stop", usage ? { usage: { prompt_tokens: Math.round(request.body.length / 4), completion_tokens: words.length } } : {}),
      "data: [DONE]\n\n",
    ];
    seen?.(request, lines.join(""));
    const body = new ReadableStream({
      start(controller) {
        for (const line of lines) controller.enqueue(encoder.encode(line));
        controller.close();
      },
    });
    return { status: 200, headers: { "content-type": "text/event-stream" }, body };
  };
}

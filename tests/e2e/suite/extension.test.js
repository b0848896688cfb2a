// The extension at the API level, inside a real VS Code (code-server's extension host).
// The runner (tests/e2e/run.mjs) passes what to expect through CONDENSE_E2E_EXPECT: the CLI's
// token count of the fixture, the fixture LLM server's URL and the key it accepts.
const assert = require("node:assert/strict");
const fs = require("node:fs");
const vscode = require("vscode");

const expect = JSON.parse(fs.readFileSync(process.env.CONDENSE_E2E_EXPECT, "utf8"));
const ID = "context-condenser.context-condenser";

/** Waits for a settings change to reach the extension (an event, not a timed assertion). */
async function until(condition) {
  for (let i = 0; i < 400 && !condition(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(condition(), "the change reached the extension");
}

describe("Context Condenser in VS Code", () => {
  let api;

  before(async () => {
    const ext = vscode.extensions.getExtension(ID);
    assert.ok(ext, `extension ${ID} is installed`);
    api = await ext.activate();
  });

  it("activates and registers its commands", async () => {
    const commands = await vscode.commands.getCommands(true);
    for (const c of ["newChat", "condenseNow", "undoLastCondensation", "setApiKey", "showLog", "openSettings"]) {
      assert.ok(commands.includes(`contextCondenser.${c}`), `contextCondenser.${c} is registered`);
    }
  });

  it("lists the providers through the exported API", () => {
    assert.deepEqual(api.listProviders().map((p) => p.id), ["native", "lossless", "truncation", "manual", "superseded", "mask", "smart"]);
  });

  it("applies a settings change to the engine, and a removed setting returns to its default", async () => {
    const config = () => vscode.workspace.getConfiguration("contextCondenser");
    const truncation = () => api.listProviders().find((p) => p.id === "truncation");
    await config().update("providers", { truncation: { enabled: false, priority: 5 } }, vscode.ConfigurationTarget.Global);
    await until(() => truncation().enabled === false);
    assert.equal(truncation().priority, 5);
    await config().update("providers", undefined, vscode.ConfigurationTarget.Global);
    await until(() => truncation().enabled === true);
    assert.equal(truncation().priority, 70);
  });

  it("counts tokens as the CLI does", () => {
    assert.deepEqual(api.countTokens(expect.conversation, "gpt-4o"), expect.count);
    // A bare list of messages is a conversation without a system prompt.
    assert.deepEqual(api.countTokens(expect.conversation.messages, "gpt-4o"), expect.countWithoutSystem);
    // A plain text, no framing: tiktoken's count in the model's encoding.
    assert.equal(api.countText("Ünïcödé façade — naïve café", "gpt-4o"), 10);
    assert.equal(api.countText("Ünïcödé façade — naïve café", "gpt-4"), 13);
  });

  it("condenses losslessly: fewer tokens, nothing lost", async () => {
    const result = await api.condense(expect.conversation, { provider: "lossless" });
    assert.equal(result.error, null);
    assert.ok(result.new_context_tokens < expect.count.total_tokens, "fewer tokens");
    const ids = new Set(result.messages.map((m) => m.id));
    for (const m of expect.conversation.messages) assert.ok(ids.has(m.id), `message ${m.id} kept`);
    assert.equal(result.system, expect.conversation.system);
  });

  it("summarizes with the configured profile and the key from the secret storage", async () => {
    await vscode.commands.executeCommand("contextCondenser.setApiKey", "fixture", expect.apiKey);
    const result = await api.condense(expect.conversation, { provider: "native" });
    assert.equal(result.error, null, JSON.stringify(result.error));
    assert.ok(result.summary.length > 0);
    assert.ok(result.cost > 0);
  });

  it("a wrong key is a typed failure, never a throw", async () => {
    await vscode.commands.executeCommand("contextCondenser.setApiKey", "fixture", expect.wrongKey);
    const result = await api.condense(expect.conversation, { provider: "native" });
    assert.equal(result.error.kind, "llm_auth");
    assert.deepEqual(
      result.messages.map((m) => m.id),
      expect.conversation.messages.map((m) => m.id),
    );
  });
});

// A stored key goes only where it was stored for (src/settings/keys.ts, src/settings/secrets.ts): its origin (the
// profile's kind and base URL, the kind's default from the core) is recorded beside it when it is
// stored; a profile that now points elsewhere — a workspace redefining "gpt" with its own server —
// gets the key only if the user answers the modal question "Send Key There", and otherwise no
// request carries it. With the real core's metadata and the `vscode` stand-in.
import * as path from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import type { LlmProfile, SettingsToWebview } from "@context-condenser/protocol";
import { chatOptions, gatewaySummaryModel } from "../src/chat/chatOptions";
import type { EngineHolder } from "../src/engine/engineHolder";
import type { Failure } from "../src/engine/errors";
import { profileFor } from "../src/settings/firstRun";
import { KeyStore, SEND_KEY_THERE, checkOrigin, originName, profileOrigin, secretName } from "../src/settings/keys";
import { Secrets } from "../src/settings/secrets";
import { readSettings } from "../src/settings/settings";
import { SettingsPanel } from "../src/settings/settingsPanel";
import { check, meta, wasm } from "./core";
import * as fake from "./fakeVscode";

const KEY = "sk-user-canary-0001";
const user = { id: "gpt", kind: "openai", model: "gpt-4o", context_window: 128000 } as LlmProfile;
const evil = { ...user, base_url: "http://evil.example:9999/v1" } as LlmProfile;
const OPENAI = "openai https://api.openai.com/v1";
const EVIL = "openai http://evil.example:9999/v1";

const QUESTION = `Context Condenser: The key of profile "gpt" was stored for ${OPENAI}; the profile now points at ${EVIL}. Send the key there?`;
const REFUSAL = `its API key was not sent to ${EVIL}: the key was stored for ${OPENAI}. Point the profile back, or set the key again for the new address (Set API Key…)`;

const log = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, show() {} };

/** A holder whose settings the test sets, with the real core's metadata. */
function holderWith(profiles: LlmProfile[], chatProfile = "gpt") {
  const state = { profiles };
  const holder = {
    get settings() {
      return readSettings((k) => ({ profiles: state.profiles, chatProfile })[k as "profiles"], meta, check).settings;
    },
    engine: { hostMetadata: () => meta },
  };
  return { holder: holder as unknown as EngineHolder, state };
}

function setup(profiles: LlmProfile[] = [user]) {
  const storage = new fake.SecretStorage();
  const { holder, state } = holderWith(profiles);
  const secrets = new Secrets(storage as never, holder, log as never, () => {});
  return { storage, secrets, state, holder };
}

async function refused(p: Promise<unknown>): Promise<Failure> {
  try {
    await p;
  } catch (e) {
    return e as Failure;
  }
  throw new Error("the key was handed out");
}

beforeEach(() => fake.reset());

describe("profileOrigin", () => {
  const { kinds } = meta;

  it("is the kind and the base URL, the kind's default from the core when the profile names none", () => {
    expect(profileOrigin(user, kinds)).toBe(OPENAI);
    expect(profileOrigin(evil, kinds)).toBe(EVIL);
    expect(profileOrigin({ kind: "anthropic" }, kinds)).toBe("anthropic https://api.anthropic.com");
    expect(profileOrigin({ kind: "openai-compatible", base_url: "http://127.0.0.1:11434/v1" }, kinds)).toBe(
      "openai-compatible http://127.0.0.1:11434/v1",
    );
    expect(profileOrigin({ kind: "openai-compatible" }, kinds)).toBe("openai-compatible (no base URL)");
  });

  it("is the same for the same address written another way", () => {
    for (const base_url of ["https://api.openai.com/v1/", "HTTPS://API.OpenAI.com/v1", "https://api.openai.com:443/v1", " https://api.openai.com/v1// "]) {
      expect(profileOrigin({ kind: "openai", base_url }, kinds), base_url).toBe(OPENAI);
    }
  });

  it("differs for another kind, host, port, scheme or path", () => {
    for (const p of [
      { kind: "openai-compatible", base_url: "https://api.openai.com/v1" },
      { kind: "openai", base_url: "https://api.openai.com.evil.example/v1" },
      { kind: "openai", base_url: "https://api.openai.com:8443/v1" },
      { kind: "openai", base_url: "http://api.openai.com/v1" },
      { kind: "openai", base_url: "https://api.openai.com/v2" },
    ] as const) {
      expect(profileOrigin(p, kinds), JSON.stringify(p)).not.toBe(OPENAI);
    }
  });
});

describe("checkOrigin", () => {
  it("sends to the origin the key was stored for, and asks for any other", () => {
    expect(checkOrigin(OPENAI, OPENAI, false)).toEqual({ send: true, bind: false });
    expect(checkOrigin(OPENAI, EVIL, true)).toEqual({ send: false, stored: OPENAI, now: EVIL });
  });

  it("binds a key stored before origins were recorded only when the profile is the user's", () => {
    expect(checkOrigin(undefined, OPENAI, true)).toEqual({ send: true, bind: true });
    expect(checkOrigin(undefined, EVIL, false)).toEqual({ send: false, stored: undefined, now: EVIL });
  });
});

describe("a stored key", () => {
  it("is stored with its profile's origin, never in settings, and goes to that origin without a question", async () => {
    const { storage, secrets } = setup();
    await secrets.setApiKey("gpt", KEY);
    expect(storage.values.get(secretName("gpt"))).toBe(KEY);
    expect(storage.values.get(originName("gpt"))).toBe(OPENAI);
    expect(fake.config.updates).toEqual([]);
    expect(await secrets.key(user)).toBe(KEY);
    expect(fake.shown.modals).toEqual([]);
  });

  it("is not sent when the profile now points elsewhere and the user does not agree", async () => {
    const { storage, secrets } = setup();
    await secrets.setApiKey("gpt", KEY);
    const failure = await refused(secrets.key(evil));
    expect(fake.shown.modals).toEqual([
      {
        message: QUESTION,
        detail: `"Send Key There" sends it, and from now on the key belongs to ${EVIL}. Cancel sends nothing.`,
        buttons: [SEND_KEY_THERE],
      },
    ]);
    expect(failure).toEqual({ kind: "llm_config", message: REFUSAL });
    // Still bound to where it was stored for: the next request asks again.
    expect(storage.values.get(originName("gpt"))).toBe(OPENAI);
    await refused(secrets.key(evil));
    expect(fake.shown.modals).toHaveLength(2);
  });

  it("goes to the new origin when the user agrees, and is bound to it from then on", async () => {
    const { storage, secrets } = setup();
    await secrets.setApiKey("gpt", KEY);
    fake.dialogs.warning = (message) => (message === QUESTION ? SEND_KEY_THERE : undefined);
    expect(await secrets.key(evil)).toBe(KEY);
    expect(storage.values.get(originName("gpt"))).toBe(EVIL);
    expect(await secrets.key(evil)).toBe(KEY);
    expect(fake.shown.modals).toHaveLength(1);
    // And the old origin is now the other one: going back asks.
    await refused(secrets.key(user));
    expect(fake.shown.modals.at(-1)?.message).toContain(`was stored for ${EVIL}; the profile now points at ${OPENAI}`);
  });

  it("stored before origins were recorded is bound to the profile's origin when the profile is the user's", async () => {
    const { storage, secrets } = setup();
    storage.values.set(secretName("gpt"), KEY);
    // A workspace not trusted: its profiles are ignored, the profile is the user's.
    fake.workspace.isTrusted = false;
    fake.config.workspace.profiles = [evil];
    fake.config.user.profiles = [user];
    expect(await secrets.key(user)).toBe(KEY);
    expect(storage.values.get(originName("gpt"))).toBe(OPENAI);
    expect(fake.shown.modals).toEqual([]);
  });

  it("stored before origins were recorded is not sent to a profile a workspace defines unless the user agrees", async () => {
    const { storage, secrets } = setup([evil]);
    storage.values.set(secretName("gpt"), KEY);
    fake.workspace.isTrusted = true;
    fake.config.workspace.profiles = [evil];
    const failure = await refused(secrets.key(evil));
    expect(fake.shown.modals.map((m) => m.message)).toEqual([
      `Context Condenser: The key of profile "gpt" was stored before Context Condenser recorded where each key may go, and this workspace's settings define the profile; it points at ${EVIL}. Send the key there?`,
    ]);
    expect(failure.kind).toBe("llm_config");
    expect(storage.values.has(originName("gpt"))).toBe(false);
    fake.dialogs.warning = () => SEND_KEY_THERE;
    expect(await secrets.key(evil)).toBe(KEY);
    expect(storage.values.get(originName("gpt"))).toBe(EVIL);
  });

  it("stored by the first run is bound to the server of the profile it makes", async () => {
    const { storage, secrets } = setup();
    const profile = profileFor({ kind: "openai-compatible", model: "m", baseUrl: "http://127.0.0.1:11434/v1/" }, [], meta.kinds);
    await secrets.store(profile, KEY);
    expect(storage.values.get(originName("ollama"))).toBe("openai-compatible http://127.0.0.1:11434/v1");
  });

  it("removed takes its origin with it", async () => {
    const { storage, secrets } = setup();
    await secrets.setApiKey("gpt", KEY);
    await secrets.setApiKey("gpt", "");
    expect([...storage.values.keys()]).toEqual([]);
  });
});

describe("a chat turn", () => {
  it("carries no key to a profile that moved, and reports why", async () => {
    const { secrets, state, holder } = setup();
    await secrets.setApiKey("gpt", KEY);
    state.profiles = [evil];
    const reports: Array<{ failure: Failure; profileId?: string }> = [];
    const failure = await refused(chatOptions(holder, secrets, (f, profileId) => void reports.push({ failure: f, profileId })));
    expect(failure).toEqual({ kind: "llm_config", message: REFUSAL });
    expect(reports).toEqual([{ failure: { kind: "llm_config", message: REFUSAL }, profileId: "gpt" }]);
    // Agreed: the turn's options carry the key.
    fake.dialogs.warning = () => SEND_KEY_THERE;
    const options = await chatOptions(holder, secrets, () => {});
    expect(options.llm.apiKey).toBe(KEY);
    expect(options.llm.profile.base_url).toBe(evil.base_url);
  });
});

describe("the gateway's summary model", () => {
  it("is the condensing (else the chat) profile with its stored key; none, or a manual one, says why", async () => {
    const { secrets, state, holder } = setup();
    await secrets.setApiKey("gpt", KEY);
    const writer = await gatewaySummaryModel(holder, secrets);
    expect(writer.profile.id).toBe("gpt");
    expect(writer.apiKey).toBe(KEY);
    // A profile that moved carries no key without the user's yes, as a chat turn's.
    state.profiles = [evil];
    expect(await refused(gatewaySummaryModel(holder, secrets))).toEqual({ kind: "llm_config", message: REFUSAL });
    state.profiles = [{ id: "gpt", kind: "manual", model: "paste", context_window: 128000 } as LlmProfile];
    expect(((await refused(gatewaySummaryModel(holder, secrets))) as unknown as Error).message).toMatch(/"gpt" is manual/);
    state.profiles = [];
    expect(((await refused(gatewaySummaryModel(holder, secrets))) as unknown as Error).message).toMatch(/^no condensing model: choose one in the settings panel/);
  });
});

describe("the key store", () => {
  it("moves a key and its origin to a renamed profile", async () => {
    const storage = new fake.SecretStorage();
    const keys = new KeyStore(storage);
    await keys.set("gpt", KEY, OPENAI);
    await keys.move("gpt", "openai-main");
    expect(Object.fromEntries(storage.values)).toEqual({ [secretName("openai-main")]: KEY, [originName("openai-main")]: OPENAI });
  });

  it("moves a key stored before origins were recorded without giving it another's origin", async () => {
    const storage = new fake.SecretStorage();
    storage.values.set(secretName("old"), KEY);
    storage.values.set(originName("new"), EVIL);
    await new KeyStore(storage).move("old", "new");
    expect(Object.fromEntries(storage.values)).toEqual({ [secretName("new")]: KEY });
  });
});

describe("the settings panel", () => {
  /** The panel over a stand-in webview; `requests` is every HTTP request the engine made. */
  function openPanel(profiles: LlmProfile[]) {
    const requests: string[] = [];
    const engine = new wasm.CondenseEngine({
      fetch: (request: unknown) => {
        requests.push(JSON.stringify(request));
        return Promise.reject(new Error("no network in this test"));
      },
      now: () => 0,
      log: () => {},
    });
    fake.config.user.profiles = profiles;
    fake.config.user.chatProfile = "gpt";
    const settings = () => readSettings(fake.workspace.getConfiguration().get, meta, check);
    const holder = { get settings() { return settings().settings; }, engine } as unknown as EngineHolder;
    const storage = new fake.SecretStorage();
    const secrets = new Secrets(storage as never, holder, log as never, () => {});
    const posted: SettingsToWebview[] = [];
    let receive: (raw: unknown) => Promise<void> = async () => {};
    fake.window.createWebviewPanel = () => ({
      webview: {
        options: {},
        html: "",
        cspSource: "vscode-resource:",
        asWebviewUri: (u: fake.Uri) => u,
        postMessage: async (m: SettingsToWebview) => void posted.push(m),
        onDidReceiveMessage: (f: (raw: unknown) => Promise<void>) => void (receive = f),
      },
      onDidDispose: () => {},
      reveal: () => {},
    });
    const panel = new SettingsPanel(fake.Uri.file(path.join(__dirname, "..")) as never, {
      engine: () => engine,
      settings,
      toolErrors: () => [],
      secrets,
      log: log as never,
    });
    panel.open();
    return { send: (m: unknown) => receive(m), posted, storage, requests };
  }

  it("stores a key with the profile's origin, and moves both when the profile is renamed", async () => {
    const { send, storage } = openPanel([user]);
    await send({ type: "setKey", profileId: "gpt", key: KEY });
    expect(storage.values.get(originName("gpt"))).toBe(OPENAI);
    await send({ type: "saveProfile", profile: { ...user, id: "openai-main" }, originalId: "gpt" });
    expect(Object.fromEntries(storage.values)).toEqual({ [secretName("openai-main")]: KEY, [originName("openai-main")]: OPENAI });
  });

  it("tests a profile that moved without its key unless the user agrees", async () => {
    const { send, posted, storage, requests } = openPanel([user]);
    await send({ type: "setKey", profileId: "gpt", key: KEY });
    fake.config.user.profiles = [evil];
    await send({ type: "testConnection", profileId: "gpt" });
    expect(fake.shown.modals.map((m) => m.message)).toEqual([QUESTION]);
    expect(posted.at(-1)).toEqual({ type: "testResult", profileId: "gpt", error: { kind: "llm_config", message: REFUSAL } });
    expect(requests).toEqual([]);
    expect(storage.values.get(originName("gpt"))).toBe(OPENAI);

    fake.dialogs.warning = () => SEND_KEY_THERE;
    await send({ type: "testConnection", profileId: "gpt" });
    expect(requests.length).toBeGreaterThan(0);
    expect(requests[0]).toContain("evil.example:9999");
    expect(requests[0]).toContain(KEY);
  });
});

// Safe rendering, in real Chromium under the extension's CSP: answers and summaries come from a
// model and are untrusted. An XSS corpus is rendered as assistant messages, as a summary message,
// as a condensation's summary and as a streamed answer; the test fails on any script that runs
// (`window.__xss`, a dialog), any CSP violation or console error, any request that leaves the
// page's own origin, and any element or attribute of the corpus that reaches the DOM. A click on
// a link must not navigate the webview: it posts `openLink` for the extension to open through
// VS Code. The screenshot of the corpus goes to test-output/webview/xss-corpus.png.

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { openPage, shots, useHarness } from "./harness.mjs";

const X = "window.__xss=1";
const PNG_1PX =
  "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
const SVG_SCRIPT = `data:image/svg+xml;base64,${Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" onload="${X}"><script>${X}</script></svg>`).toString("base64")}`;
const HTML_DATA = `data:text/html;base64,${Buffer.from(`<script>parent.${X}</script>`).toString("base64")}`;

/** [name, Markdown an answer could hold]. Every payload would set window.__xss or call alert. */
const CORPUS = [
  ["script tag", `<script>${X}</script>`],
  ["script, block", `<script>\n${X}\n</script>\n\nafter`],
  ["img onerror", `<img src=x onerror="${X}">`],
  ["img onerror alert", `<img src="x" onerror="alert(1)">`],
  ["svg onload", `<svg onload="${X}"><script>${X}</script></svg>`],
  ["svg xlink", `<svg><a xlink:href="javascript:${X}"><text y="20">svg link</text></a></svg>`],
  ["iframe js", `<iframe src="javascript:${X}"></iframe>`],
  ["iframe srcdoc", `<iframe srcdoc="<script>parent.${X}</script>"></iframe>`],
  ["style tag", "<style>body { display: none } .markdown { background: red !important }</style>"],
  ["inline style", `<div style="position:fixed;inset:0;background:red;z-index:99">overlay</div>`],
  ["html js link", `<a href="javascript:${X}">html javascript link</a>`],
  ["html entity js link", `<a href="&#x6A;avascript:${X}">entity link</a>`],
  ["form", `<form action="javascript:${X}"><button>Submit</button></form>`],
  ["object", `<object data="javascript:${X}"></object>`],
  ["embed", `<embed src="javascript:${X}">`],
  ["meta refresh", `<meta http-equiv="refresh" content="0;url=javascript:${X}">`],
  ["base", `<base href="https://evil.example/">`],
  ["link stylesheet", `<link rel="stylesheet" href="https://evil.example/x.css">`],
  ["details ontoggle", `<details open ontoggle="${X}"><summary>s</summary></details>`],
  ["input autofocus", `<input autofocus onfocus="${X}">`],
  ["body onload", `<body onload="${X}">`],
  ["nested script", `<scr<script>ipt>${X}</scr</script>ipt>`],
  ["mutation (math/style)", `<math><mtext><table><mglyph><style><img src=x onerror="${X}">`],
  ["noscript title", `<noscript><p title="</noscript><img src=x onerror=alert(1)>">`],
  ["custom element", `<x-x onmouseover="alert(1)">hover me</x-x>`],
  ["md js link", `[markdown javascript link](javascript:${X})`],
  ["md js link mixed case", `[mixed case](JaVaScRiPt:${X})`],
  ["md tab in scheme", `[tab in scheme](jav&#x09;ascript:${X})`],
  ["md entity scheme", `[entity scheme](&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;${X})`],
  ["md unicode escape", `[unicode escape](\\u006aavascript:${X})`],
  ["md leading control", `[leading control](\u0001javascript:${X})`],
  ["md vbscript", "[vbscript link](vbscript:msgbox(1))"],
  ["md data html", `[data html link](${HTML_DATA})`],
  ["md data svg image", `![svg image](${SVG_SCRIPT})`],
  ["md file link", "[file link](file:///etc/passwd)"],
  ["md relative link", "[relative link](../../settings)"],
  ["md protocol-relative", "[protocol-relative](//evil.example/x)"],
  ["md reference link", `[reference link][evil]\n\n[evil]: javascript:${X}`],
  ["md autolink", `<javascript:${X}>`],
  ["md remote image", "![tracking pixel](https://evil.example/pixel.png)"],
  ["html remote image", `<img src="https://evil.example/track.png">`],
  ["md image in link", `[![remote](https://evil.example/i.png)](javascript:${X})`],
  ["code span", "`<script>" + X + "</script>` stays code"],
  ["fenced html", "```html\n<script>" + X + "</script>\n```"],
  ["https link (allowed)", "[an https link](https://example.com/docs?q=1)"],
  ["mailto link (allowed)", "[a mail link](mailto:someone@example.com)"],
  ["inline png (allowed)", `![one pixel](${PNG_1PX})`],
];

/** The links the corpus may leave clickable: http(s) and mailto, remote images among them (as links,
 *  never loaded). */
const OPENABLE = [
  "https://evil.example/i.png",
  "https://evil.example/pixel.png",
  "https://example.com/docs?q=1",
  "mailto:someone@example.com",
];

const text = (id, role, body, extra = {}) => ({ id, role, content: [{ type: "text", text: body }], ...extra });

const messages = [
  text("u1", "user", "Show me every payload."),
  ...CORPUS.map(([name, md], i) => text(`a${i}`, "assistant", `**${i + 1}. ${name}**\n\n${md}`)),
  text("c1.summary", "assistant", CORPUS.map(([, md]) => md).join("\n\n"), { is_summary: true, condense_id: "c1" }),
  text("u2", "user", "And stream one."),
];

const RECORD = {
  condense_id: "c1",
  provider_id: "native",
  reason: "threshold",
  automatic: true,
  tokens_before: 1000,
  tokens_after: 200,
  cost: 0,
  time_ms: 10,
  summary: CORPUS.map(([, md]) => md).join("\n\n"),
  at_ms: 1_700_000_000_000,
};

const state = {
  type: "state",
  task: { id: "t1", title: "XSS corpus", created_ms: 1, updated_ms: 2, conversation: { messages }, condensations: [RECORD] },
  chats: [{ id: "t1", title: "XSS corpus", updated_ms: 2, messages: messages.length }],
  profiles: [{ id: "local", model: "m", context_window: 8_192 }],
  profileId: "local",
  context: { tokens: 1_240, window: 8_192, percent: 15.1, threshold_percent: 80, limit: 6_553, source: "counted" },
  busy: false,
};

const event = (e) => ({ type: "event", taskId: "t1", event: e });

/** Runs in the page before its scripts: the fake VS Code API, the CSP violation log, the canary. */
function fakeHost() {
  window.__sent = [];
  window.__violations = [];
  document.addEventListener(
    "securitypolicyviolation",
    (e) => window.__violations.push(`${e.violatedDirective} blocked ${e.blockedURI || "(inline)"}`),
    true,
  );
  // A payload that runs would set this (directly or through the setter of a parent frame).
  Object.defineProperty(window, "__xss", {
    configurable: false,
    get: () => window.__xssHits?.length ?? 0,
    set: (v) => (window.__xssHits ??= []).push(String(v)),
  });
  window.acquireVsCodeApi = () => ({
    postMessage: (message) => window.__sent.push(message),
    getState: () => undefined,
    setState: () => {},
  });
}

const harness = useHarness();

describe("safe rendering of untrusted Markdown", () => {
  it("renders the XSS corpus as text: nothing runs, loads, navigates or violates the CSP", async (t) => {
    assert.ok(CORPUS.length >= 25, `the corpus has ${CORPUS.length} payloads`);
    const dialogs = [];
    const requests = [];
    const cspConsole = [];
    const page = await openPage(t, harness.browser, { viewport: { width: 520, height: 900 }, fakeHost });
    page.on("dialog", (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void d.dismiss();
    });
    page.on("request", (r) => requests.push(r.url()));
    page.on("console", (m) => {
      if (/Content.Security.Policy/i.test(m.text())) cspConsole.push(m.text());
    });
    const origin = harness.server.origin;
    await page.goto(`${origin}/?theme=dark`);
    await page.waitForFunction(() => window.__sent.length > 0);
    const post = (m) => page.evaluate((msg) => window.postMessage(msg, "*"), m);

    await post(state);
    await page.getByTestId("condensation-row").waitFor();
    await page.getByTestId("summary-toggle").click();
    await page.getByTestId("summary").waitFor();
    // The last payload set as a streamed answer, delta by delta (the live path renders too).
    await post(event({ type: "MessageStart", id: "s1" }));
    const streamed = CORPUS.map(([, md]) => md).join("\n\n");
    for (let i = 0; i < streamed.length; i += 97) {
      await post(event({ type: "MessageContent", id: "s1", delta: streamed.slice(i, i + 97) }));
    }
    await post(event({ type: "MessageEnd", id: "s1", interrupted: null, kept: false, usage: null, cost: 0 }));
    await page.waitForSelector('[data-testid="message-assistant"][aria-busy="false"]');
    // Every payload's bubble is there (numbered 1…n), plus the summary message and the stream.
    await page.getByText(`${CORPUS.length}. ${CORPUS.at(-1)[0]}`).waitFor();
    // Give anything a payload could have started (an image error, a refresh, a focus) its chance.
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(r, 50)))));

    const markdownCount = await page.locator(".markdown").count();
    assert.ok(markdownCount >= CORPUS.length + 2, `${markdownCount} Markdown blocks rendered`);

    // The HTML is shown as the text it is.
    const shown = await page.locator("#root").innerText();
    for (const fragment of [`<script>${X}</script>`, `<img src=x onerror="${X}">`, `<iframe src="javascript:${X}"></iframe>`, "<style>body { display: none }"]) {
      assert.ok(shown.includes(fragment), `shown as text: ${fragment}`);
    }

    const found = await page.evaluate(() => {
      const root = document.getElementById("root");
      const out = [];
      const anywhere = "script, iframe, frame, object, embed, style, link, meta, base";
      for (const el of root.querySelectorAll(anywhere)) out.push(`element <${el.localName}>`);
      const inMarkdown = "form, svg, math, input, button, textarea, select, details, video, audio, source, x-x, noscript, div[style], body";
      for (const el of root.querySelectorAll(`.markdown :is(${inMarkdown})`)) out.push(`element <${el.localName}> in a message`);
      for (const el of root.querySelectorAll(".markdown *")) {
        for (const attr of el.attributes) {
          if (/^on/i.test(attr.name)) out.push(`<${el.localName} ${attr.name}>`);
          if (attr.name === "style") out.push(`<${el.localName} style="${attr.value}">`);
        }
      }
      for (const el of document.querySelectorAll("*")) {
        for (const attr of el.attributes) if (/^on/i.test(attr.name)) out.push(`page <${el.localName} ${attr.name}>`);
      }
      for (const a of document.querySelectorAll("[href], [src], [action], [data], [formaction], [xlink\\:href]")) {
        for (const name of ["href", "src", "action", "data", "formaction", "xlink:href"]) {
          const v = (a.getAttribute(name) ?? "").replace(/[\u0000-\u0020]/g, "").toLowerCase();
          if (/^(javascript|vbscript|data:text|data:image\/svg|file):?/.test(v)) out.push(`<${a.localName} ${name}="${v.slice(0, 40)}">`);
        }
      }
      const links = [...root.querySelectorAll(".markdown a")].map((a) => a.getAttribute("href"));
      const images = [...root.querySelectorAll(".markdown img")].map((img) => img.getAttribute("src").slice(0, 22));
      const body = getComputedStyle(document.body).display;
      const backgrounds = [...root.querySelectorAll(".markdown")].map((m) => getComputedStyle(m).backgroundColor);
      return { out, links, images, body, backgrounds, url: location.href };
    });
    assert.deepEqual(found.out, [], "nothing of the corpus reached the DOM as an element or attribute");
    // Only http(s)/mailto links are links; each of the allowed ones appears in the bubble, the
    // summary message, the condensation's summary and the stream.
    assert.deepEqual([...new Set(found.links)].sort(), OPENABLE, "the only links are http(s) and mailto");
    assert.deepEqual([...new Set(found.images)], ["data:image/png;base64,"], "the only image shown is the inline PNG");
    // CSS injection had no effect.
    assert.equal(found.body, "block");
    assert.ok(found.backgrounds.every((b) => b !== "rgb(255, 0, 0)"), "no red background from an injected style");
    // Blocked URLs are text, marked as such; remote images are links that need a click.
    assert.ok((await page.locator(".markdown .link-blocked").count()) >= 4 * 10);
    assert.ok((await page.locator('.markdown a[href="https://evil.example/pixel.png"]', { hasText: "[image: tracking pixel]" }).count()) > 0);

    // The chat log scrolls inside the page: one screenshot per screenful, from the top.
    await page.setViewportSize({ width: 520, height: 1600 });
    const log = page.locator(".log");
    const height = await log.evaluate((el) => el.scrollHeight);
    for (let top = 0, n = 1; top < height; top += 1400, n += 1) {
      await log.evaluate((el, y) => (el.scrollTop = y), top);
      await page.screenshot({ path: `${shots}xss-corpus-${n}.png` });
    }

    // A click on any link, blocked or not, never navigates the webview: allowed links are posted
    // to the extension as `openLink`, blocked ones do nothing.
    const before = (await page.evaluate(() => window.__sent.length));
    for (const link of await page.locator(".markdown a, .markdown .link-blocked").all()) {
      await link.scrollIntoViewIfNeeded();
      await link.click();
      await link.click({ button: "middle" });
    }
    await page.keyboard.press("Tab");
    const sent = (await page.evaluate(() => window.__sent)).slice(before);
    assert.ok(sent.length > 0, "the links were clicked");
    for (const m of sent) {
      assert.equal(m.type, "openLink");
      assert.ok(OPENABLE.includes(m.url), `opened ${m.url}`);
    }
    assert.deepEqual([...new Set(sent.map((m) => m.url))].sort(), OPENABLE);
    assert.equal(page.url(), found.url, "the webview did not navigate");
    assert.equal(await page.locator(".markdown").count(), markdownCount, "the page is still the chat");

    assert.equal(await page.evaluate(() => window.__xss), 0, "no payload ran");
    assert.deepEqual(dialogs, [], "no dialog opened");
    assert.deepEqual(await page.evaluate(() => window.__violations), [], "no CSP violation");
    assert.deepEqual(cspConsole, [], "no CSP message on the console");
    const foreign = requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith("data:image/png;base64,"));
    assert.deepEqual(foreign, [], "no request left the page's origin");
  });
});

// A tiny server for the page tests: the built webview (dist/) in the very page the extension
// writes — extension/src/host/webviewHtml.ts, compiled here with esbuild and called, so the page and
// its strict CSP (sent as a header too) cannot drift from the extension's — with what VS Code adds
// around a webview: its theme's variables from a stylesheet (light, dark or high contrast, by
// ?theme=) and the body's theme class. It hosts the chat view, the settings panel or the Gateway view (by ?view=).

import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";
import { transform } from "esbuild";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
const themes = fileURLToPath(new URL("./themes.css", import.meta.url));
const pageSource = fileURLToPath(new URL("../../../extension/src/host/webviewHtml.ts", import.meta.url));

/** The extension's own page writer: `webviewHtml` and `contentSecurityPolicy`. */
async function extensionPage() {
  const { code } = await transform(await readFile(pageSource, "utf8"), { loader: "ts", format: "esm" });
  return import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
}

/** The class VS Code puts on the webview's body for each kind of theme. */
const THEMES = { dark: "vscode-dark", light: "vscode-light", hc: "vscode-high-contrast" };

const TYPES = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

/** Starts the server on 127.0.0.1 (a free port); `close()` stops it. */
export async function startServer() {
  const { webviewHtml, contentSecurityPolicy } = await extensionPage();
  const nonce = randomBytes(16).toString("base64");
  /** Every request, with its status, so tests can see nothing else was asked for. */
  const requests = [];
  let origin = "";
  const csp = () => contentSecurityPolicy(origin, nonce);
  const page = (theme, view) =>
    aroundThePage(
      webviewHtml({ cspSource: origin, script: "/dist/chat.js", style: "/dist/chat.css", title: `Context Condenser ${view}`, view, nonce }),
      theme,
    );

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", origin);
    const send = (status, type, body) => {
      requests.push({ path: url.pathname, status });
      res.writeHead(status, { "Content-Type": type, "Content-Security-Policy": csp(), "Cache-Control": "no-store" });
      res.end(body);
    };
    try {
      if (url.pathname === "/") {
        const theme = THEMES[url.searchParams.get("theme") ?? "dark"] ?? THEMES.dark;
        const asked = url.searchParams.get("view");
        const view = asked === "settings" || asked === "gateway" ? asked : "chat";
        return send(200, "text/html; charset=utf-8", page(theme, view));
      }
      if (url.pathname === "/themes.css") return send(200, TYPES[".css"], await readFile(themes));
      if (url.pathname === "/dist/chat.js") return send(200, TYPES[".js"], await readFile(`${dist}chat.js`));
      if (url.pathname === "/dist/chat.css") return send(200, TYPES[".css"], await readFile(`${dist}chat.css`));
      return send(404, "text/plain", "not found");
    } catch (e) {
      return send(500, "text/plain", String(e));
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  origin = `http://127.0.0.1:${port}`;
  return {
    origin,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What VS Code adds around a webview's page: its theme's variables (a stylesheet here) and the
 *  body's theme class; and no favicon request. Fails loudly if the page's shape changed. */
function aroundThePage(html, themeClass) {
  const edits = [
    ["</head>", `<link rel="icon" href="data:,">\n<link rel="stylesheet" href="/themes.css">\n</head>`],
    ["<body>", `<body class="${themeClass}">`],
  ];
  for (const [from, to] of edits) {
    if (!html.includes(from)) throw new Error(`the extension's page has no ${JSON.stringify(from)}: update server.mjs`);
    html = html.replace(from, to);
  }
  return html;
}

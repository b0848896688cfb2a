// A tiny server for the page tests: the built webview (dist/) in a page like the one the extension
// writes, under the same strict CSP (as a header and as a meta tag), with VS Code's theme
// variables from a stylesheet (light, dark or high contrast, by ?theme=), hosting the chat view or
// the settings panel (by ?view=).

import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { fileURLToPath } from "node:url";

const dist = fileURLToPath(new URL("../../dist/", import.meta.url));
const themes = fileURLToPath(new URL("./themes.css", import.meta.url));

/** The class VS Code puts on the webview's body for each kind of theme. */
const THEMES = { dark: "vscode-dark", light: "vscode-light", hc: "vscode-high-contrast" };

const TYPES = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

/** Starts the server on 127.0.0.1 (a free port); `close()` stops it. */
export async function startServer() {
  const nonce = randomBytes(16).toString("base64");
  /** Every request, with its status, so tests can see nothing else was asked for. */
  const requests = [];
  let origin = "";
  const csp = () =>
    `default-src 'none'; img-src ${origin} data:; font-src ${origin}; style-src ${origin}; script-src 'nonce-${nonce}';`;

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
        const view = url.searchParams.get("view") === "settings" ? "settings" : "chat";
        return send(200, "text/html; charset=utf-8", page(theme, view, csp(), nonce));
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

function page(themeClass, view, csp, nonce) {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/themes.css">
<link rel="stylesheet" href="/dist/chat.css">
<title>Context Condenser ${view}</title>
</head>
<body class="${themeClass}">
<div id="root" data-view="${view}"></div>
<script type="module" nonce="${nonce}" src="/dist/chat.js"></script>
</body>
</html>`;
}

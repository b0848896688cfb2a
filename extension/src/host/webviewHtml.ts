// The page that hosts a React webview: a strict Content-Security-Policy with a fresh nonce, no
// remote content, the bundle and its stylesheet from the extension's own folder. Pure: vitest runs
// it, and the webview's page tests (webview-ui/test/page/server.mjs) serve the page it writes,
// under the policy it writes, so the two cannot drift.

import { randomBytes } from "node:crypto";

export interface PageInput {
  /** The webview's `cspSource`. */
  cspSource: string;
  /** Webview URIs of the bundle and its stylesheet. */
  script: string;
  style: string;
  title: string;
  /** Which app the bundle renders: the chat view or the settings panel. */
  view: "chat" | "settings" | "gateway";
  /** A fixed nonce, for tests; a fresh random one otherwise. */
  nonce?: string;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page's Content-Security-Policy: nothing by default; images, fonts and styles only from the
 *  webview's own resources (images also as data URLs); scripts only with the page's nonce. */
export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `font-src ${cspSource}`,
    `style-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
}

export function webviewHtml(input: PageInput): string {
  const nonce = input.nonce ?? randomBytes(18).toString("base64");
  const csp = contentSecurityPolicy(input.cspSource, nonce);
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${escape(input.style)}">
<title>${escape(input.title)}</title>
</head>
<body>
<div id="root" data-view="${input.view}"></div>
<script type="module" nonce="${nonce}" src="${escape(input.script)}"></script>
</body>
</html>
`;
}

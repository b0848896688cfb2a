// The page that hosts a React webview: a strict Content-Security-Policy with a fresh nonce, no
// remote content, the bundle and its stylesheet from the extension's own folder. Pure: vitest runs it.

import { randomBytes } from "node:crypto";

export interface PageInput {
  /** The webview's `cspSource`. */
  cspSource: string;
  /** Webview URIs of the bundle and its stylesheet. */
  script: string;
  style: string;
  title: string;
  /** Which app the bundle renders: the chat view or the settings panel. */
  view: "chat" | "settings";
  /** A fixed nonce, for tests; a fresh random one otherwise. */
  nonce?: string;
}

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function webviewHtml(input: PageInput): string {
  const nonce = input.nonce ?? randomBytes(18).toString("base64");
  const csp = [
    "default-src 'none'",
    `img-src ${input.cspSource} data:`,
    `font-src ${input.cspSource}`,
    `style-src ${input.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join("; ");
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

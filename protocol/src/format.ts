// How both sides write a token count in little room (the status-bar meter, the chat's header and
// meter, the settings panel). Pure; here because the extension and the webview share this package.

/** 86123 → "86k", 1234 → "1.2k", 999 → "999", 1_500_000 → "1.5M". */
export function compact(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 10_000) return `${trimZero((n / 1000).toFixed(1))}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${trimZero((n / 1_000_000).toFixed(1))}M`;
}

const trimZero = (s: string) => s.replace(/\.0$/, "");

// How both sides write a token count in little room (the status-bar meter, the chat's header and
// meter, the settings panel) and the gateway's money (its view and the status bar). Pure; here
// because the extension and the webview share this package.

/** 86123 → "86k", 1234 → "1.2k", 999 → "999", 1_500_000 → "1.5M". */
export function compact(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 10_000) return `${trimZero((n / 1000).toFixed(1))}k`;
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${trimZero((n / 1_000_000).toFixed(1))}M`;
}

const trimZero = (s: string) => s.replace(/\.0$/, "");

/** US dollars with their sign, never hidden: 0.0123 → "$0.0123", -0.24 → "−$0.24" (the minus
 *  sign joined to its amount), 0 → "$0". */
export function usd(n: number): string {
  if (n === 0 || !Number.isFinite(n)) return "$0";
  const a = Math.abs(n);
  // A word joiner keeps the minus sign on the line of its amount.
  return `${n < 0 ? "\u2212\u2060" : ""}$${a.toFixed(a < 1 ? 4 : 2)}`;
}

/** What a gateway's figures say of money (a session's or the totals): "saved $0.37",
 *  "−$0.24 so far; pays back after ~30 more requests", "price unknown" for a model whose price
 *  is not known, "" before any answer was priced. */
export function moneySaved(s: { cost_saved_usd: number; cost_usd: number; unpriced_requests: number; payback_requests?: number | null }): string {
  if (s.cost_saved_usd < 0) {
    const back = s.payback_requests ? `pays back after ~${s.payback_requests} more request${s.payback_requests === 1 ? "" : "s"}` : "not paying back at the latest request's rate";
    return `${usd(s.cost_saved_usd)} so far; ${back}`;
  }
  if (s.cost_saved_usd > 0) return `saved ${usd(s.cost_saved_usd)}`;
  if (s.unpriced_requests > 0 && s.cost_usd === 0) return "price unknown";
  return "";
}

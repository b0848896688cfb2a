// Number and time formats of the view. Pure.

/** A token count in little room (the one `compact`, shared with the extension). */
export { compact, moneySaved, usd } from "@context-condenser/protocol";

const trimZero = (s: string) => s.replace(/\.0$/, "");

const grouped = new Intl.NumberFormat("en-US");

/** 12345 → "12,345". */
export const tokens = (n: number): string => grouped.format(Math.round(n));

/** US dollars with 4 decimals: 0.01234 → "$0.0123". */
export const dollars = (n: number): string => `$${n.toFixed(4)}`;

/** The cache-aware policy's weighing: "costs $0.0123 now · saves ≈$0.0456 over the next 12 turns". */
export const costEstimate = (e: { cost_now: number; saving: number; turns: number }): string =>
  `costs ${dollars(Math.max(0, e.cost_now))} now · saves ≈${dollars(e.saving)} over the next ${e.turns} ${e.turns === 1 ? "turn" : "turns"}`;

/** 0.87 → "87% of the summary's input from the cache". */
export const cachedShare = (share: number): string => `${Math.round(share * 100)}% of the summary's input from the cache`;

/** 850 → "850 ms", 1234 → "1.2 s", 65000 → "65 s". */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  return s < 10 ? `${trimZero(s.toFixed(1))} s` : `${Math.round(s)} s`;
}

/** The share of the context a condensation saved, in whole percent. */
export function savedPercent(before: number, after: number): number {
  if (before <= 0) return 0;
  return Math.round(((before - after) / before) * 100);
}

const relative = new Intl.RelativeTimeFormat("en", { numeric: "auto" });

const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 24 * 3600_000],
  ["month", 30 * 24 * 3600_000],
  ["week", 7 * 24 * 3600_000],
  ["day", 24 * 3600_000],
  ["hour", 3600_000],
  ["minute", 60_000],
];

/** "just now", "5 minutes ago", "yesterday", … for a time in the past. */
export function ago(thenMs: number, nowMs: number): string {
  const elapsed = nowMs - thenMs;
  for (const [unit, size] of UNITS) {
    if (Math.abs(elapsed) >= size) return relative.format(-Math.round(elapsed / size), unit);
  }
  return "just now";
}

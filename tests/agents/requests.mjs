// Reading the requests the fixture server received from an agent through `condense gateway`, and
// the gateway's /stats, for gateway.test.mjs. Not a test file (no `.test.` in the name).
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import path from "node:path";

/** How the gateway's own condensation messages begin (condense-core `gateway::MARKER`). */
export const GATEWAY_MARKER = "[Context Condenser";

/** The raw text of each element of the top-level array `key` of the JSON object `raw`, exactly
 *  as sent (a JSON scanner: strings, nesting; no reformatting). */
export function rawArray(raw, key) {
  let i = 0;
  const ws = () => {
    while (i < raw.length && " \t\r\n".includes(raw[i])) i++;
  };
  const skipString = () => {
    i++;
    while (i < raw.length && raw[i] !== '"') i += raw[i] === "\\" ? 2 : 1;
    i++;
  };
  const skipValue = () => {
    ws();
    if (raw[i] === '"') return skipString();
    if (raw[i] === "{" || raw[i] === "[") {
      let depth = 0;
      while (i < raw.length) {
        const c = raw[i];
        if (c === '"') {
          skipString();
          continue;
        }
        if (c === "{" || c === "[") depth++;
        else if (c === "}" || c === "]") {
          depth--;
          if (depth === 0) {
            i++;
            return;
          }
        }
        i++;
      }
      return;
    }
    while (i < raw.length && !",}] \t\r\n".includes(raw[i])) i++;
  };
  ws();
  if (raw[i] !== "{") return null;
  i++;
  for (;;) {
    ws();
    if (raw[i] !== '"') return null;
    const start = i;
    skipString();
    const name = JSON.parse(raw.slice(start, i));
    ws();
    i++; // ':'
    ws();
    if (name === key) {
      if (raw[i] !== "[") return null;
      i++;
      const out = [];
      for (;;) {
        ws();
        if (raw[i] === "]") return out;
        const s = i;
        skipValue();
        out.push(raw.slice(s, i));
        ws();
        if (raw[i] === ",") i++;
      }
    }
    skipValue();
    ws();
    if (raw[i] === ",") i++;
    else return null;
  }
}

/**
 * A message as JSON without what Claude Code changes in a message it sent before: its
 * `cache_control` keys (Claude Code puts its one breakpoint on the last message of each request,
 * so the previous request's last message loses it), and a `content` of one text block, which
 * becomes the plain string (Claude Code sends its environment message — a `system` role message
 * inside `messages` — as `[{type: "text", text, cache_control}]` while it is the last message and
 * as the string afterwards).
 */
export function withoutCacheControl(text) {
  const strip = (v) => {
    if (Array.isArray(v)) return v.map(strip);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([k]) => k !== "cache_control").map(([k, x]) => [k, strip(x)]));
    return v;
  };
  const m = strip(JSON.parse(text));
  const c = m?.content;
  if (Array.isArray(c) && c.length === 1 && c[0]?.type === "text" && Object.keys(c[0]).length === 2) m.content = c[0].text;
  return JSON.stringify(m);
}

/** The elements carrying the gateway's condensation marker, as sent. */
export const markerItems = (req) => req.items.filter((m) => m.includes(GATEWAY_MARKER));

/**
 * Checks that each request extends the previous one between condensations: its message array
 * starts with the previous request's, compared element by element — as raw bytes when `exact`,
 * else as JSON without `cache_control` keys. A request whose condensation messages differ from
 * the previous request's starts a new stretch (a condensation was made for it). Returns the
 * indices (into `turns`) where stretches start.
 */
export function checkExtends(turns, { exact }) {
  const starts = [0];
  const norm = exact ? (m) => m : withoutCacheControl;
  for (let i = 1; i < turns.length; i++) {
    const prev = turns[i - 1];
    const cur = turns[i];
    if (JSON.stringify(markerItems(prev)) !== JSON.stringify(markerItems(cur))) {
      starts.push(i);
      continue;
    }
    assert.ok(cur.items.length >= prev.items.length, `request ${i} has ${cur.items.length} messages, fewer than the ${prev.items.length} before it, with no new condensation`);
    for (let j = 0; j < prev.items.length; j++) {
      const a = norm(prev.items[j]);
      const b = norm(cur.items[j]);
      assert.ok(a === b, `request ${i} (fixture #${cur.index}) does not extend request ${i - 1} (fixture #${prev.index}): message ${j} differs${exact ? " byte-wise" : " (cache_control aside)"}\n--- before\n${a.slice(0, 1500)}\n--- after\n${b.slice(0, 1500)}`);
    }
  }
  return starts;
}

/** The first request's message holding the prompt must be in every request (as JSON without
 *  cache_control, which Claude Code moves). */
export function checkTaskEverywhere(turns, prompt) {
  const quoted = JSON.stringify(prompt).slice(1, -1);
  const first = turns[0].items.find((m) => m.includes(quoted));
  assert.ok(first, "the first request carries the prompt");
  const want = withoutCacheControl(first);
  for (const [i, r] of turns.entries()) {
    assert.ok(
      r.items.some((m) => withoutCacheControl(m) === want),
      `request ${i} (fixture #${r.index}) lacks the user's task message as the client first sent it`,
    );
  }
}

/** The gateway's totals: `totals` (the core's GatewayStats) or `total` (today's host). */
export const totalsOf = (stats) => stats.totals ?? stats.total ?? {};

/**
 * The gateway's figure `field`, wherever /stats keeps it: the core's GatewayStats has per-session
 * figures under `sessions` and their sum under `totals` (today's host: `total`), and the host may
 * nest the core's report under a key of its own. A value on a path through a key naming a total
 * wins; else the values found are summed. Undefined when /stats has no such field.
 */
export function statField(stats, field) {
  const found = [];
  const walk = (v, trail) => {
    if (Array.isArray(v)) v.forEach((x, i) => walk(x, [...trail, String(i)]));
    else if (v && typeof v === "object")
      for (const [k, x] of Object.entries(v)) {
        if (k === field && typeof x === "number") found.push({ trail, value: x });
        else walk(x, [...trail, k]);
      }
  };
  walk(stats, []);
  if (!found.length) return undefined;
  const total = found.find((f) => f.trail.some((k) => /^totals?$/.test(k)));
  return total ? total.value : found.reduce((sum, f) => sum + f.value, 0);
}

/** Whether /stats says the gateway observes (`observe: true`, at the top or in its policy). */
export function observing(stats) {
  return stats.observe === true || stats.policy?.observe === true || Object.values(stats).some((v) => v && typeof v === "object" && v.observe === true);
}

/** Files under `dir`, recursively. */
export function filesUnder(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? filesUnder(p) : [p];
  });
}

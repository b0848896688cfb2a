// No import circle in the TypeScript packages (issue 39), as the crates' tests/circles.rs for
// Rust: each package's files (the extension host's, the webview's, the protocol's), read with
// every relative import and re-export (`import type` too: a circle of types is a circle of
// concepts), form no circle. A failure names the files of each circle and the imports closing it.

import { readdirSync, readFileSync, statSync } from "node:fs";
import * as path from "node:path";
import { describe, expect, test } from "vitest";

const ROOT = path.resolve(__dirname, "..", "..");
const PACKAGES = ["extension/src", "webview-ui/src", "protocol/src"];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) return files(full);
    return /\.(ts|tsx)$/.test(name) && !/\.test\.tsx?$/.test(name) ? [full] : [];
  });
}

/** The files of the package that `file` imports. */
function imports(file: string, known: Set<string>): string[] {
  const text = readFileSync(file, "utf8");
  const out = new Set<string>();
  const specifier = /(?:^|[^\w.])(?:import|export)\s[^;]*?from\s*["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)|^\s*import\s*["']([^"']+)["']/gm;
  for (const m of text.matchAll(specifier)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec || !spec.startsWith(".")) continue;
    const base = path.resolve(path.dirname(file), spec);
    const candidates = [base, `${base}.ts`, `${base}.tsx`, path.join(base, "index.ts"), path.join(base, "index.tsx")];
    const hit = candidates.find((c) => known.has(c));
    if (hit) out.add(hit);
  }
  return [...out];
}

/** The circles of a graph: its strongly connected components of more than one file (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const order = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    order.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!order.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, order.get(w)!));
      }
    }
    if (low.get(v) === order.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!order.has(v)) visit(v);
  return out;
}

describe("no import circle", () => {
  for (const pkg of PACKAGES) {
    test(pkg, () => {
      const all = files(path.join(ROOT, pkg));
      const known = new Set(all);
      const graph = new Map(all.map((f) => [f, imports(f, known)]));
      // The reader found the package's imports (a package of one file has none to find).
      if (all.length > 1) expect([...graph.values()].flat().length).toBeGreaterThan(0);
      const found = circles(graph).map((c) => {
        const inCircle = new Set(c);
        const edges = c.flatMap((f) => graph.get(f)!.filter((g) => inCircle.has(g)).map((g) => `${path.relative(ROOT, f)} imports ${path.relative(ROOT, g)}`));
        return `a circle of ${c.length} files:\n  ${edges.join("\n  ")}`;
      });
      expect(found, "move what both files need to a lower file, or let one side only use the other").toEqual([]);
    });
  }

  test("the reader finds imports (a circle made on purpose fails)", () => {
    const graph = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(circles(graph)).toEqual([["a", "b", "c"]]);
  });
});

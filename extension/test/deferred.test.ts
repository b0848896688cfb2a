import { describe, expect, it } from "vitest";
import * as z from "../../protocol/src/zod";

describe("deferred schemas", () => {
  it("build on first use, once, and stand for the schema everywhere", () => {
    let built = 0;
    const Point = z.deferred(() => {
      built += 1;
      return z.object({ x: z.number().int(), label: z.string().optional() });
    });
    const Shape = z.deferred(() => z.object({ points: z.array(Point), kind: z.enum(["open", "closed"]) }));
    expect(built).toBe(0);
    // Used inside another schema, it is built when that one is.
    expect(Shape.parse({ points: [{ x: 1 }, { x: 2, label: "b" }], kind: "open" })).toEqual({
      points: [{ x: 1 }, { x: 2, label: "b" }],
      kind: "open",
    });
    expect(built).toBe(1);
    const bad = Shape.safeParse({ points: [{ x: 1.5 }], kind: "open" });
    expect(bad.success).toBe(false);
    expect(!bad.success && bad.error.issues[0]?.path).toEqual(["points", 0, "x"]);
    // Its properties, methods and class are the schema's.
    expect(Object.keys(Point.shape)).toEqual(["x", "label"]);
    expect(Point.shape.label.parse(undefined)).toBeUndefined();
    expect(Point.optional().parse(undefined)).toBeUndefined();
    expect("parse" in Point).toBe(true);
    expect(built).toBe(1);
  });
});

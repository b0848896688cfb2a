// zod for the protocol: its JIT off, only the builders the protocol uses, and schemas built on
// first use.
//
// zod compiles object parsers with `new Function` unless told not to, and decides so when a schema
// is built; the webview's CSP has no 'unsafe-eval' (even zod's guarded probe for eval is reported
// as a violation). The generated schemas import zod from here, so this runs before any of them is
// built, on both sides.
//
// The builders are re-exported by name (the modules import `* as z` from here), so a bundler keeps
// only what they reach of zod: not its locales, JSON Schema conversion or other APIs (the
// extension's bundle went from 0.93 MB to 0.37 MB).

import { config } from "zod";

config({ jitless: true });

export {
  array,
  boolean,
  discriminatedUnion,
  enum,
  literal,
  number,
  object,
  record,
  strictObject,
  string,
  tuple,
  union,
  unknown,
} from "zod";
export type { input, output, ZodType } from "zod";

/**
 * A schema built on its first use rather than when its module loads: the protocol has about a
 * hundred schemas, and building them all took most of the extension's load time while a session
 * uses a few. The value stands for the schema in every way (properties, methods, `instanceof`,
 * use inside other schemas, which build it when they are built or run).
 */
export function deferred<T extends object>(build: () => T): T {
  let schema: T | undefined;
  const real = (): T => (schema ??= build());
  return new Proxy({} as T, {
    get: (_, key) => {
      const s = real();
      return Reflect.get(s, key, s);
    },
    set: (_, key, value) => Reflect.set(real(), key, value),
    has: (_, key) => Reflect.has(real(), key),
    ownKeys: () => Reflect.ownKeys(real()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(real(), key);
      // The proxy's own target is empty: a descriptor it reports must be configurable.
      return d && { ...d, configurable: true };
    },
    defineProperty: (_, key, d) => Reflect.defineProperty(real(), key, d),
    deleteProperty: (_, key) => Reflect.deleteProperty(real(), key),
    getPrototypeOf: () => Reflect.getPrototypeOf(real()),
  });
}

// zod for the protocol, with its JIT off. zod compiles object parsers with `new Function` unless
// told not to, and decides so when a schema is built; the webview's CSP has no 'unsafe-eval' (even
// zod's guarded probe for eval is reported as a violation). The generated schemas import zod from
// here, so this runs before any of them is built, on both sides.

import { z } from "zod";

z.config({ jitless: true });

export { z };

// zod compiles object parsers with `new Function` unless told not to, and decides so when a schema
// is built. The webview's CSP has no 'unsafe-eval' (even zod's guarded probe for eval is reported
// as a violation), so this runs before the contract's schemas are built: import it first.

import { z } from "zod";

z.config({ jitless: true });

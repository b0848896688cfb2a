#!/usr/bin/env python3
"""Writes two long agent sessions shaped like real ones, under tests/fixtures/real/.

No public Cline / Roo Code task history and no realistic Codex CLI rollout with a licence that
allows redistribution could be found, so these two files are generated. They copy the shape of
what the clients write (the record layout, the wrappers, the way results come back), not any
real session's content:

  cline-shaped-phased-refactor.json
      A Cline `tasks/<id>/api_conversation_history.json`: a JSON array of Anthropic-style
      messages with Cline's own `ts` (and, on assistant turns, `modelInfo` / `metrics`). The first
      user message is a `<task>` holding the user's instructions in the middle of a long pasted
      spec, followed by `<environment_details>` with a listing of a few hundred paths. Assistant
      turns are `<thinking>` plus one Cline XML tool call (`read_file`, `replace_in_file` with
      SEARCH / REPLACE blocks, `execute_command`, `ask_followup_question`, `attempt_completion`).
      User turns carry the results as text (`[read_file for 'x'] Result:` and the file,
      `[execute_command for 'npm test'] Result:` with `Command executed.\\nOutput:`, the whole file
      echoed back after `replace_in_file`, `<answer>` after a question whose text spans two lines,
      `<feedback>` after `attempt_completion` or a denied edit) and end with
      `<environment_details>`. A billing module is moved to a new payments API in three phases,
      the user approving each phase; `npm test` and `npm run lint` fail, then pass.

  codex-shaped-cli-port.jsonl
      A Codex CLI rollout (`~/.codex/sessions/.../rollout-*.jsonl`) as versions 0.4x-0.7x write
      it: `session_meta`, the `<environment_context>` user message, the request, then
      `response_item`s (`reasoning` with a summary and a long `encrypted_content`,
      `function_call` `shell` with `{"command": ["bash", "-lc", ...]}` or
      `["apply_patch", "*** Begin Patch ..."]`, `function_call_output` with
      `{"output", "metadata": {"exit_code", "duration_seconds"}}`, assistant `message`s with
      `output_text`), `event_msg` (`user_message`, `agent_message`, `token_count`) and
      `turn_context` lines. A Python CLI is ported to Rust; `cargo test` runs again and again
      with changing output; a later user message restricts the work.

The record layouts follow the small hand-written fixtures in tests/fixtures/sessions/
(cline-api_conversation_history.json, codex-rollout.jsonl) and the importer in
crates/condense-core/src/formats/ (cline.rs, codex.rs). Deterministic: one seeded generator per
file, fixed start times, no clock. Python 3 standard library only. Run it again to regenerate the
files byte for byte:

    python3 scripts/make-real-shaped-fixtures.py

Sizes (`condense count`, o200k_base): the Cline file about 120k-160k tokens in 150-250
messages, the Codex file 60k-100k tokens.
"""
import base64
import datetime as dt
import json
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "real")
SEED_CLINE = 20251118
SEED_CODEX = 20251119

# =============================================================================================
# Cline: a phased refactor of a billing module.

CLINE_T0 = 1763477520000  # 2025-11-18 14:52:00 UTC
CWD = "/home/dev/app"
TZ = dt.timezone(dt.timedelta(hours=-5))

USER_INSTRUCTIONS = (
    "Refactor the billing module to the new payments API in three phases. Do one phase at a "
    "time; do not proceed until I approve each phase. Never modify the database migrations. "
    "每个阶段完成后请等我确认再继续。"
)

SPEC_HEAD = """# Payments API v2 — integration requirements (billing)

Owner: payments-platform. Status: approved for rollout. Audience: every service that charges,
refunds or bills customers through the legacy `/v1/charges` gateway.

## 1. Why we are moving

The v1 gateway was built for one-off card charges. It has no idempotency, retries on the client
side produce duplicate charges about twice a week, and refunds are a separate service with its
own credentials. v2 replaces it with **payment intents**: a charge is created as an intent,
confirmed, and captured, and every state change is reported by a signed webhook. Refunds, disputes
and subscription renewals all hang off the same intent object.

## 2. Terminology

- **Payment intent** — the record of one attempt to collect money. States: `requires_confirmation`,
  `processing`, `requires_capture`, `succeeded`, `canceled`, `failed`.
- **Capture** — moving an authorised amount into the merchant balance. Partial captures are
  allowed once; the rest of the authorisation is released.
- **Idempotency key** — a client-chosen string (UUID v4) sent in the `Idempotency-Key` header. A
  repeated request with the same key and the same body returns the first response; a repeated key
  with a different body is rejected with `409 idempotency_conflict`.
- **Minor units** — all amounts are integers in the currency's smallest unit (cents for USD, yen
  for JPY). v1 accepted decimal strings; v2 rejects them with `422 invalid_amount`.

## 3. Authentication

Every request carries `Authorization: Bearer <service token>` issued by the internal token
service (audience `payments-v2`). Tokens live for 15 minutes; clients must refresh them before
expiry and must not log them. mTLS is required inside the cluster; the client library handles it
when `PAYMENTS_MTLS=1`.

## 4. Endpoints
"""

SPEC_ENDPOINTS = [
    ("POST", "/v2/payment_intents", "Create an intent. Body: `amount`, `currency`, `customer_id`, `description`, `metadata` (string map, ≤ 20 keys), `capture_method` (`automatic` | `manual`). Returns the intent in `requires_confirmation`."),
    ("POST", "/v2/payment_intents/{id}/confirm", "Confirm with a `payment_method_id`. Returns `processing`, then a webhook reports `requires_capture` or `succeeded`."),
    ("POST", "/v2/payment_intents/{id}/capture", "Capture `amount_to_capture` (≤ authorised). Only for `capture_method=manual`."),
    ("POST", "/v2/payment_intents/{id}/cancel", "Cancel before capture. `cancellation_reason` is one of `duplicate`, `fraudulent`, `requested_by_customer`, `abandoned`."),
    ("GET", "/v2/payment_intents/{id}", "Read one intent. Cached for 2 seconds at the edge; read after a webhook, not in a polling loop."),
    ("POST", "/v2/refunds", "Refund a captured intent: `payment_intent_id`, `amount` (optional; the rest of the captured amount by default), `reason`. Several partial refunds may exist; their sum never exceeds the captured amount."),
    ("GET", "/v2/refunds/{id}", "Read one refund. States `pending`, `succeeded`, `failed`, `canceled`."),
    ("POST", "/v2/customers/{id}/payment_methods", "Attach a tokenised payment method. Card data never reaches our services."),
    ("POST", "/v2/subscriptions/{id}/renewals", "Create the renewal intent of a subscription period; the subscription service calls this, billing only reads the result."),
]

SPEC_ERRORS = [
    ("400", "bad_request", "Malformed JSON or a missing field.", "Fix the request; do not retry."),
    ("401", "unauthenticated", "Missing or expired token.", "Refresh the token once, then retry."),
    ("403", "forbidden", "The token's service may not call this endpoint.", "Do not retry; page the owner."),
    ("404", "not_found", "Unknown intent, refund or customer.", "Do not retry."),
    ("409", "idempotency_conflict", "Same key, different body.", "Generate a new key only if the body really changed."),
    ("409", "invalid_state", "The intent is not in a state that allows this call.", "Read the intent and reconcile."),
    ("422", "invalid_amount", "Amount not an integer in minor units, or above the limit.", "Fix the amount."),
    ("422", "currency_not_supported", "Currency not enabled for the merchant.", "Fall back to the account currency."),
    ("429", "rate_limited", "More than 50 requests per second per service.", "Retry after `Retry-After` seconds."),
    ("502", "upstream_error", "The acquirer did not answer.", "Retry with the same idempotency key, backoff 1s, 2s, 4s."),
    ("503", "unavailable", "Maintenance or overload.", "Retry with the same idempotency key."),
]

SPEC_TAIL = """
## 6. Webhooks

v2 posts events to `/webhooks/payments` with an `X-Payments-Signature` header:
`t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">` signed with the endpoint secret. Reject
events older than 5 minutes and any event whose signature does not match. Events arrive at least
once and not in order: handlers must be idempotent on `event.id` and must compare the intent's
`updated_at` before overwriting local state.

Event types billing must handle: `payment_intent.succeeded`, `payment_intent.payment_failed`,
`payment_intent.canceled`, `charge.refunded`, `refund.failed`, `charge.dispute.created`.

## 7. Migration plan (for consumers)

1. Add the v2 client beside the v1 gateway. Keep writing the same invoice and charge rows; the
   `legacy_charge_id` column stays filled for v1 charges and empty for v2 ones.
2. Move refunds and webhooks to v2. Refunds of charges made through v1 must keep working through
   the v1 refund path until every v1 charge is older than the 120-day refund window.
3. Remove the v1 gateway, its retry wrapper and its configuration. The v1 `/billing/charge`
   endpoint of each service stays available (returning the same JSON) until the last phase and is
   removed only then.

Database: no schema change is needed for the migration. The `payment_intent_id` column was added
to `charges` and `refunds` by the platform team already; consumers must not add or edit
migrations for this work.

## 8. Money handling

- Convert decimal amounts with `toMinorUnits(amount, currency)` from `@acme/money`; never with
  `Math.round(x * 100)` (JPY and KWD have 0 and 3 decimals).
- Store amounts as integers; format only at the edge.
- Currency codes are upper-case ISO 4217.

## 9. Observability

Log `payment_intent_id`, `idempotency_key` and the HTTP status of every call at info level; log
the error code at warn level; never log tokens, card fingerprints or the full webhook body.
Emit `payments_v2_requests_total{endpoint,status}` and `payments_v2_latency_seconds` from the
client wrapper.

## 10. Subscriptions, renewals and disputes

Renewal intents are created by the subscription service, not by billing. Billing receives
`payment_intent.succeeded` with `metadata.subscription_id` and `metadata.period_start`, marks the
invoice of that period paid, and must not create a second intent for the same period even when the
webhook arrives twice. A failed renewal (`payment_intent.payment_failed`) moves the invoice to
`past_due`; the dunning schedule (day 1, 3, 7, 14) stays in billing and now calls
`POST /v2/payment_intents/{id}/confirm` again with the customer's default payment method instead of
creating a new v1 charge.

Proration keeps its current rules: upgrades are charged immediately for the rest of the period,
downgrades become a credit on the next invoice. The only change is that the immediate charge is a
v2 intent with `metadata.reason = "proration"`.

Disputes (`charge.dispute.created`) freeze the invoice: no refund may be created while a dispute
is open, and the refund endpoint must answer `409 invalid_state` with the dispute id in the
message. Evidence submission stays manual in the payments dashboard for now.

## 11. Intent fields billing reads

| field | type | notes |
|---|---|---|
| `id` | string | `pi_` prefix, 27 characters |
| `amount` | integer | minor units |
| `amount_captured` | integer | 0 until captured |
| `amount_refunded` | integer | sum of succeeded refunds |
| `currency` | string | upper-case ISO 4217 |
| `status` | string | see section 2 |
| `customer_id` | string | `cus_` prefix |
| `payment_method_id` | string or null | set after confirm |
| `capture_method` | string | `automatic` or `manual` |
| `last_error` | object or null | `{code, message}` of the last failure |
| `metadata` | map | string values only; billing writes `invoice_id` and `reason` |
| `created_at` / `updated_at` | string | RFC 3339, UTC |

## 12. Rollout

Each phase ships behind a flag read at request time, so that a phase can be switched off without a
deploy. Staging runs a phase for at least three working days before production. Production goes
1 % → 10 % → 50 % → 100 % of customers, one step per day, watching the error rate of
`payments_v2_requests_total` and the count of `idempotency_conflict` errors (which should be zero:
a non-zero count means a key is reused for different bodies). Rollback is flipping the flag; no
data migration is ever needed to roll back.

## 13. FAQ

**Can we keep using decimal strings internally?** Yes, as long as the conversion happens once,
in the client wrapper, with `toMinorUnits`.

**Do we need a new table for intents?** No. Store the intent id in the existing
`payment_intent_id` columns. Do not add migrations for this work; the platform team owns the
schema of `charges` and `refunds` until the migration is finished.

**What about the v1 refund window?** v1 charges can be refunded through v1 for 120 days after
their capture. After that the v1 credentials are revoked.

## 14. v1 → v2 mapping

| v1 (gateway) | v2 (payments API) | notes |
|---|---|---|
| `POST /v1/charges` | `POST /v2/payment_intents` + `confirm` | automatic capture reproduces v1 |
| `POST /v1/charges/{id}/capture` | `POST /v2/payment_intents/{id}/capture` | manual capture only |
| `POST /v1/charges/{id}/void` | `POST /v2/payment_intents/{id}/cancel` | reason is now required |
| `GET /v1/charges/{id}` | `GET /v2/payment_intents/{id}` | status names differ, see section 2 |
| `POST /v1/refunds` (refund service) | `POST /v2/refunds` | same token as every other call |
| `charge.amount` ("12.50") | `amount` (1250) | minor units |
| `charge.state = "settled"` | `status = "succeeded"` | |
| `charge.state = "declined"` | `status = "failed"`, `last_error.code` | |
| `charge.gateway_ref` | `id` | store in `payment_intent_id` |
| `X-Retry-Token` | `Idempotency-Key` | v1 ignored duplicates only for 60 s |
| callback `/billing/gateway-callback` | webhook `/webhooks/payments` | signed, at least once |

The v1 callback endpoint keeps receiving events for charges created through v1 until the last of
them is older than the refund window; do not remove its handler in phase 2.

## 15. Testing

The sandbox base URL is `https://payments-sandbox.internal/v2`. Test payment methods:
`pm_card_ok`, `pm_card_declined`, `pm_card_requires_capture`. The contract tests in
`@acme/payments-contract` must pass in CI before a service switches a phase on in production.
"""


def spec_text():
    out = [SPEC_HEAD]
    for method, path, text in SPEC_ENDPOINTS:
        out.append(f"\n### `{method} {path}`\n\n{text}\n")
    out.append("\n## 5. Errors\n\nEvery error body is `{\"error\": {\"code\", \"message\", \"request_id\"}}`.\n\n")
    out.append("| HTTP | code | meaning | client action |\n|---|---|---|---|\n")
    for row in SPEC_ERRORS:
        out.append("| " + " | ".join(row) + " |\n")
    out.append(SPEC_TAIL)
    return "".join(out)


BILLING_FILES = {
    "src/billing/gateway.ts": ["createCharge", "captureCharge", "voidCharge", "chargeStatus", "retryCharge"],
    "src/billing/charges.ts": ["chargeInvoice", "chargeLineItems", "markChargePaid", "recordChargeFailure", "loadCharge", "listChargesForInvoice"],
    "src/billing/refunds.ts": ["refundCharge", "refundPartial", "refundStatus", "listRefunds", "reconcileRefund"],
    "src/billing/webhooks.ts": ["handleWebhook", "verifySignature", "onPaymentSucceeded", "onPaymentFailed", "onChargeRefunded"],
    "src/billing/subscriptions.ts": ["renewSubscription", "prorateChange", "cancelSubscription", "nextBillingDate", "applyCoupon"],
    "src/billing/routes.ts": ["postCharge", "postRefund", "getChargeStatus", "postWebhook"],
    "src/payments/client.ts": ["createIntent", "confirmIntent", "captureIntent", "cancelIntent", "createRefund", "getIntent"],
}

VARS = ["invoice", "customer", "charge", "amount", "currency", "result", "record", "items", "total", "response", "attempt", "payload"]
ERRCODES = ["charge_failed", "invalid_state", "not_found", "refund_exceeds_capture", "gateway_timeout", "currency_mismatch"]


def ts_function(rng, name, style):
    a, b, c = rng.sample(VARS, 3)
    code = rng.choice(ERRCODES)
    if style == "legacy":
        call = f"legacyGateway.{rng.choice(['charge', 'refund', 'status', 'void'])}"
        extra = [f"  const {c} = await withRetry(() => {call}({{ amount: toDecimal({a}.amount), currency: {a}.currency }}), 3);"]
    elif style == "v2":
        call = f"payments.{rng.choice(['paymentIntents.create', 'paymentIntents.capture', 'refunds.create', 'paymentIntents.retrieve'])}"
        extra = [f"  const idempotencyKey = keyFor('{name}', {a}.id);",
                 f"  const {c} = await {call}({{ amount: toMinorUnits({a}.amount, {a}.currency), currency: {a}.currency }}, {{ idempotencyKey }});",
                 f"  logger.info({{ paymentIntentId: {c}.id, idempotencyKey, status: {c}.status }}, '{name}');"]
    else:
        call = f"db.{rng.choice(['charges', 'refunds', 'invoices'])}.{rng.choice(['findOne', 'update', 'insert'])}"
        extra = [f"  const {c} = await {call}({{ id: {a}.id }});"]
    lines = [f"export async function {name}({a}: {a.capitalize()}Input, {b}?: Options): Promise<{name[0].upper() + name[1:]}Result> {{",
             f"  if (!{a}) {{",
             f"    throw new BillingError('{code}', '{name}: missing {a}');",
             "  }"]
    lines += extra
    for _ in range(rng.randint(2, 6)):
        v = rng.choice(VARS)
        lines.append(rng.choice([
            f"  if ({c}.status === '{rng.choice(['failed', 'canceled', 'requires_capture', 'pending'])}') {{\n    await recordEvent('{name}.{v}', {{ id: {c}.id }});\n  }}",
            f"  const {v}Total = {a}.items?.reduce((sum, item) => sum + item.amount, 0) ?? 0;",
            f"  metrics.increment('billing.{name}', {{ status: String({c}.status) }});",
            f"  await db.audit.insert({{ kind: '{name}', ref: {c}.id, at: new Date() }});",
            f"  // {rng.choice(['TODO: remove after phase 3', 'keep in sync with routes.ts', 'amounts are minor units from here on', 'see BILL-' + str(rng.randint(100, 999))])}",
        ]))
    lines.append(f"  return {{ id: {c}.id, status: {c}.status, {b}: {b} ?? null }};")
    lines.append("}")
    return "\n".join(lines)


def ts_file(rng, path, names, style):
    header = [f"// {path}", "import { BillingError } from './errors';", "import { db } from '../db';",
              "import { logger, metrics } from '../observability';"]
    if style == "legacy":
        header += ["import { legacyGateway, withRetry, toDecimal } from '../legacy/gateway-v1';"]
    else:
        header += ["import { payments, keyFor } from '../payments/client';", "import { toMinorUnits } from '@acme/money';"]
    chunks = ["\n".join(header)]
    types = [f"export interface {n[0].upper() + n[1:]}Result {{\n  id: string;\n  status: string;\n  [key: string]: unknown;\n}}" for n in names]
    chunks.append("\n\n".join(types))
    chunks += [ts_function(rng, n, style) for n in names]
    return chunks


def render(chunks):
    return "\n\n".join(chunks) + "\n"


def listing(rng):
    paths = [".eslintrc.cjs", ".gitignore", ".nvmrc", "README.md", "jest.config.ts", "package.json", "package-lock.json", "tsconfig.json", "docker-compose.yml"]
    for i in range(48):
        y, m, d = 2022 + i // 16, 1 + (i % 12), 1 + (i * 7) % 28
        paths.append(f"db/migrations/{y}{m:02d}{d:02d}{i:04d}_{rng.choice(['create', 'alter', 'add_index', 'backfill'])}_{rng.choice(['invoices', 'charges', 'refunds', 'customers', 'subscriptions', 'coupons', 'audit'])}.sql")
    for f in BILLING_FILES:
        paths.append(f)
    for area in ["api", "auth", "customers", "invoices", "notifications", "reports", "scheduler", "tax", "legacy", "observability", "db", "utils"]:
        for _ in range(rng.randint(8, 16)):
            base = rng.choice(["index", "service", "repository", "mapper", "types", "validators", "handlers", "errors", "constants", "helpers", "queue", "cache", "format"])
            paths.append(f"src/{area}/{base}{rng.choice(['', 'V2', 'Legacy', 'Utils'])}.ts")
            if rng.random() < 0.5:
                paths.append(f"src/{area}/__tests__/{base}.test.ts")
    for _ in range(60):
        paths.append(f"src/components/{rng.choice(['Invoice', 'Charge', 'Refund', 'Customer', 'Plan', 'Coupon', 'Table', 'Modal', 'Form'])}{rng.choice(['List', 'Row', 'Detail', 'Editor', 'Badge', 'Summary', 'Header'])}.tsx")
    for _ in range(25):
        paths.append(f"docs/{rng.choice(['adr', 'runbooks', 'api'])}/{rng.randint(1, 99):03d}-{rng.choice(['billing', 'refunds', 'webhooks', 'retries', 'currencies', 'tax'])}.md")
    paths += [f"scripts/{n}.ts" for n in ["seed", "backfill-intents", "reconcile", "export-ledger"]]
    return sorted(set(paths))


def cline_time(ms):
    t = dt.datetime.fromtimestamp(ms / 1000, TZ)
    hour = t.hour % 12 or 12
    return f"{t.month}/{t.day}/{t.year}, {hour}:{t.minute:02d}:{t.second:02d} {'AM' if t.hour < 12 else 'PM'} (America/New_York, UTC-5:00)"


def jest_output(rng, failing):
    suites = ["src/billing/__tests__/charges.test.ts", "src/billing/__tests__/refunds.test.ts", "src/billing/__tests__/webhooks.test.ts",
              "src/billing/__tests__/subscriptions.test.ts", "src/billing/__tests__/routes.test.ts", "src/payments/__tests__/client.test.ts",
              "src/invoices/__tests__/service.test.ts", "src/tax/__tests__/service.test.ts"]
    lines = ["", "> app@3.14.0 test", "> jest --runInBand", ""]
    total = 0
    for s in suites:
        n = rng.randint(4, 12)
        total += n
        bad = [f for f in failing if f[0] == s]
        lines.append(f"{'FAIL' if bad else 'PASS'} {s} ({rng.uniform(0.4, 3.9):.3f} s)")
        for _, test, exp, got in bad:
            lines += [f"  ● {test}", "", "    expect(received).toEqual(expected) // deep equality", "",
                      "    - Expected  - 1", "    + Received  + 1", "", "      Object {",
                      f"    -   \"status\": \"{exp}\",", f"    +   \"status\": \"{got}\",", "      }", "",
                      f"      {rng.randint(20, 140)} |     const result = await subject(input);",
                      f"    > {rng.randint(141, 160)} |     expect(result).toEqual(expected);",
                      "        |                    ^", "",
                      f"      at Object.<anonymous> ({s}:{rng.randint(141, 160)}:20)", ""]
    nf = len(failing)
    fs = len({f[0] for f in failing})
    lines += ["", f"Test Suites: {str(fs) + ' failed, ' if fs else ''}{len(suites) - fs} passed, {len(suites)} total",
              f"Tests:       {str(nf) + ' failed, ' if nf else ''}{total - nf} passed, {total} total",
              "Snapshots:   0 total", f"Time:        {rng.uniform(8, 30):.3f} s", "Ran all test suites."]
    return "\n".join(lines)


def lint_output(problems):
    lines = ["", "> app@3.14.0 lint", "> eslint 'src/**/*.{ts,tsx}'", ""]
    if not problems:
        return "\n".join(lines)
    by = {}
    for f, ln, col, msg, rule in problems:
        by.setdefault(f, []).append(f"  {ln}:{col}  error  {msg}  {rule}")
    for f, ps in by.items():
        lines += [f"{CWD}/{f}"] + ps + [""]
    lines.append(f"✖ {len(problems)} problems ({len(problems)} errors, 0 warnings)")
    return "\n".join(lines)


class Cline:
    def __init__(self):
        self.rng = random.Random(SEED_CLINE)
        self.msgs = []
        self.ts = CLINE_T0
        self.tabs = []
        self.visible = "src/billing/gateway.ts"
        self.ctx = 18000
        self.files = {}
        for i, (path, names) in enumerate(BILLING_FILES.items()):
            style = "v2" if path.startswith("src/payments") else "legacy"
            self.files[path] = ts_file(random.Random(SEED_CLINE + i), path, names, style)

    def tick(self, lo, hi):
        self.ts += self.rng.randint(lo, hi) * 1000

    def env(self, first=False):
        tabs = "\n".join(self.tabs[-6:]) or self.visible
        parts = ["<environment_details>", "# VSCode Visible Files", self.visible, "", "# VSCode Open Tabs", tabs, "",
                 "# Current Time", cline_time(self.ts), "", "# Context Window Usage",
                 f"{self.ctx:,} / 200K tokens used ({self.ctx * 100 // 200000}%)", "", "# Current Mode", "ACT MODE"]
        if first:
            parts += ["", f"# Current Working Directory ({CWD}) Files"] + listing(self.rng)
        parts.append("</environment_details>")
        return "\n".join(parts)

    def user(self, blocks):
        self.tick(1, 4)
        self.msgs.append({"role": "user", "content": [{"type": "text", "text": b} for b in blocks] + [{"type": "text", "text": self.env()}], "ts": self.ts})
        self.ctx += sum(len(b) for b in blocks) // 4 + 120

    def assistant(self, thinking, call):
        self.tick(4, 25)
        text = f"<thinking>\n{thinking}\n</thinking>\n\n{call}"
        out = self.rng.randint(80, 900)
        self.msgs.append({"role": "assistant", "content": [{"type": "text", "text": text}], "ts": self.ts,
                          "modelInfo": {"modelId": "claude-sonnet-4-5-20250929", "providerId": "anthropic", "mode": "act"},
                          "metrics": {"tokens": {"prompt": self.ctx, "completion": out, "cached": max(0, self.ctx - 3000)}, "cost": round(self.ctx * 3e-7 + out * 1.5e-5, 4)}})

    def open(self, path):
        self.visible = path
        if path in self.tabs:
            self.tabs.remove(path)
        self.tabs.append(path)

    # --- tools -------------------------------------------------------------------------------
    def read(self, path, why):
        self.assistant(why, f"<read_file>\n<path>{path}</path>\n</read_file>")
        self.open(path)
        self.user([f"[read_file for '{path}'] Result:", render(self.files[path])])

    def edit(self, path, idx, why, new_style="v2", names=None):
        chunks = self.files[path]
        old = chunks[idx]
        name = old.split("function ", 1)[1].split("(", 1)[0] if "function " in old else "header"
        if idx == 0:
            new = "\n".join(l for l in old.split("\n") if "legacy" not in l) + "\nimport { payments, keyFor } from '../payments/client';\nimport { toMinorUnits } from '@acme/money';"
        else:
            new = ts_function(self.rng, name, new_style)
        self.assistant(why, f"<replace_in_file>\n<path>{path}</path>\n<diff>\n------- SEARCH\n{old}\n=======\n{new}\n+++++++ REPLACE\n</diff>\n</replace_in_file>")
        chunks[idx] = new
        self.open(path)
        body = render(chunks)
        self.user([f"[replace_in_file for '{path}'] Result:",
                   f"The content was successfully saved to {path}.\n\nHere is the full, updated content of the file that was saved:\n\n"
                   f"<final_file_content path=\"{path}\">\n{body}</final_file_content>\n\n"
                   "IMPORTANT: For any future changes to this file, use the final_file_content shown above as your reference. "
                   "This content reflects the current state of the file, including any auto-formatting (e.g., if you used single quotes but the formatter converted them to double quotes). "
                   "Always base your SEARCH/REPLACE operations on this final version to ensure accuracy."])

    def command(self, cmd, why, output, feedback=None):
        self.assistant(why, f"<execute_command>\n<command>{cmd}</command>\n<requires_approval>false</requires_approval>\n</execute_command>")
        blocks = [f"[execute_command for '{cmd}'] Result:", f"Command executed.\nOutput:\n{output}"]
        if feedback:
            blocks.append(f"The user provided the following feedback:\n<feedback>\n{feedback}\n</feedback>")
        self.user(blocks)

    def ask(self, why, q1, q2, options, answer):
        q = f"{q1}\n{q2}"
        self.assistant(why, f"<ask_followup_question>\n<question>{q}</question>\n<options>{json.dumps(options, ensure_ascii=False)}</options>\n</ask_followup_question>")
        self.user([f"[ask_followup_question for '{q}'] Result:", f"<answer>\n{answer}\n</answer>"])

    def complete(self, why, result, feedback):
        self.assistant(why, f"<attempt_completion>\n<result>\n{result}\n</result>\n</attempt_completion>")
        self.user(["[attempt_completion] Result:",
                   f"The user has provided feedback on the results. Consider their input to continue the task, and then attempt completion again.\n<feedback>\n{feedback}\n</feedback>"])

    def denied(self, path, idx, why, feedback):
        old = self.files[path][idx]
        self.assistant(why, f"<replace_in_file>\n<path>{path}</path>\n<diff>\n------- SEARCH\n{old}\n=======\n{old}\n-- payment_intent_id index for the v2 lookups\nCREATE INDEX IF NOT EXISTS charges_payment_intent_id_idx ON charges (payment_intent_id);\n+++++++ REPLACE\n</diff>\n</replace_in_file>")
        self.user([f"[replace_in_file for '{path}'] Result:",
                   f"The user denied this operation and provided the following feedback:\n<feedback>\n{feedback}\n</feedback>"])

    # --- the session -------------------------------------------------------------------------
    def build(self):
        spec = spec_text()
        cut = spec.index("## 5. Errors")
        task = ("Hi! We're finally switching billing off the old v1 gateway. The payments team sent the spec below; "
                "I pasted all of it because the refund and webhook parts matter for phase 2.\n\n"
                + spec[:cut] + "\n---\n\nWhat I need from you:\n\n" + USER_INSTRUCTIONS + "\n\n"
                "Phase 1: the client wrapper and new charges. Phase 2: refunds and webhooks. Phase 3: delete the v1 gateway and the old endpoint. "
                "Run `npm test` and `npm run lint` before you tell me a phase is done. The rest of the spec:\n\n---\n\n" + spec[cut:])
        self.msgs.append({"role": "user", "content": [{"type": "text", "text": f"<task>\n{task}\n</task>"}, {"type": "text", "text": self.env(first=True)}], "ts": self.ts})
        rng = self.rng
        fail_sets = [
            [("src/billing/__tests__/charges.test.ts", "chargeInvoice › charges the invoice total in minor units", "succeeded", "requires_confirmation"),
             ("src/billing/__tests__/charges.test.ts", "chargeInvoice › sends an idempotency key", "succeeded", "failed"),
             ("src/payments/__tests__/client.test.ts", "createIntent › retries 502 with the same key", "succeeded", "upstream_error")],
            [("src/billing/__tests__/charges.test.ts", "chargeInvoice › sends an idempotency key", "succeeded", "failed")],
            [("src/billing/__tests__/refunds.test.ts", "refundCharge › refunds a v1 charge through the v1 path", "succeeded", "not_found"),
             ("src/billing/__tests__/webhooks.test.ts", "handleWebhook › ignores an event older than 5 minutes", "ignored", "processed")],
            [("src/billing/__tests__/webhooks.test.ts", "handleWebhook › is idempotent on event.id", "ignored", "processed")],
            [("src/billing/__tests__/routes.test.ts", "POST /billing/charge › still answers with the v1 JSON", "succeeded", "not_found")],
        ]
        lint_sets = [
            [("src/billing/charges.ts", 4, 10, "'legacyGateway' is defined but never used", "@typescript-eslint/no-unused-vars"),
             ("src/billing/charges.ts", 5, 1, "Import \"toDecimal\" is deprecated", "import/no-deprecated"),
             ("src/payments/client.ts", 61, 7, "Unexpected any. Specify a different type", "@typescript-eslint/no-explicit-any")],
            [("src/billing/webhooks.ts", 3, 10, "'withRetry' is defined but never used", "@typescript-eslint/no-unused-vars")],
        ]

        # Phase 1 -------------------------------------------------------------------------------
        self.read("src/billing/gateway.ts", "The task is a phased move of billing to the v2 payments API. I should not start editing before I understand the current gateway. Let me read it first.")
        self.read("src/payments/client.ts", "There is already a src/payments/client.ts. It might be a partial v2 client; let me check what it exposes before writing a new wrapper.")
        self.read("src/billing/charges.ts", "charges.ts is the main caller of legacyGateway. Phase 1 covers the client wrapper and new charges, so this is the file to change.")
        self.ask("The spec says the v1 endpoint stays until phase 3, but it is unclear whether new charges should go to v2 immediately or behind a flag.",
                 "Should new charges go through v2 for every customer as soon as phase 1 lands,",
                 "or only behind the PAYMENTS_V2 feature flag (off by default)?",
                 ["All customers immediately", "Behind PAYMENTS_V2, off by default", "Behind PAYMENTS_V2, on in staging only"],
                 "Behind PAYMENTS_V2, off by default. We'll turn it on per environment ourselves.")
        for idx in range(2, 6):
            self.edit("src/payments/client.ts", idx, f"Updating {self.files['src/payments/client.ts'][idx].split('function ')[1].split('(')[0]} in the client wrapper so every call sends an idempotency key and uses minor units, as section 2 of the spec requires.")
        self.edit("src/billing/charges.ts", 0, "Switch charges.ts imports to the v2 client. The flag check goes in chargeInvoice.")
        for idx in range(2, 6):
            self.edit("src/billing/charges.ts", idx, "Moving this function to payment intents, keeping the returned shape so routes.ts does not change.")
        self.command("npm test", "Phase 1 edits are in. Running the test suite before anything else.", jest_output(rng, fail_sets[0]))
        self.read("src/billing/charges.ts", "Three failures: amounts and the idempotency key. Let me re-read charges.ts to see what the final content looks like after the edits.")
        self.edit("src/billing/charges.ts", 2, "chargeInvoice must convert with toMinorUnits and pass the key; the test expects `succeeded` after confirm.")
        self.edit("src/payments/client.ts", 2, "createIntent must retry 502 with the same idempotency key (spec section 5).")
        self.command("npm test", "Re-running the tests after fixing amounts and retries.", jest_output(rng, fail_sets[1]))
        self.edit("src/billing/charges.ts", 3, "One failure left: chargeLineItems generates a new key per retry. Reuse keyFor(name, id).")
        self.command("npm test", "Running the tests again.", jest_output(rng, []))
        self.command("npm run lint", "Tests pass. Lint next, as the task asks.", lint_output(lint_sets[0]))
        self.edit("src/billing/charges.ts", 0, "Removing the unused legacy imports from charges.ts.")
        self.edit("src/payments/client.ts", 6, "Typing the response instead of any.")
        self.command("npm run lint", "Re-running lint.", lint_output([]))
        self.complete("Phase 1 is done and checked. The user asked me to stop after each phase and wait for approval, so I present it now and do not start phase 2.",
                      "Phase 1 is complete:\n- src/payments/client.ts: every call sends an Idempotency-Key, uses minor units, retries 502/503 with the same key.\n- src/billing/charges.ts: new charges create and confirm payment intents behind PAYMENTS_V2 (off by default); v1 stays the default path.\n- `npm test` and `npm run lint` pass.\n\nI have not touched refunds, webhooks or the v1 endpoint. Waiting for your approval before phase 2.",
                      "Approved, go on to phase 2. Keep the old endpoint working until phase 3.")

        # Phase 2 -------------------------------------------------------------------------------
        self.read("src/billing/refunds.ts", "Approved. Phase 2: refunds and webhooks. The old endpoint must keep working until phase 3. Reading refunds.ts first.")
        self.read("src/billing/webhooks.ts", "Now the webhook handler; the spec wants signature checks, a 5-minute window and idempotency on event.id.")
        self.ask("Refunds of v1 charges must keep using the v1 path for 120 days. I need to know how to tell them apart.",
                 "For refunds, can I treat every charge row with a non-empty legacy_charge_id as a v1 charge,",
                 "or are there v1 charges without that column filled (imported before 2023)?",
                 ["legacy_charge_id is always set for v1 charges", "Some old v1 charges have it empty", "I don't know — check the data"],
                 "legacy_charge_id is always set for v1 charges; the 2022 import backfilled it.")
        mig = "db/migrations/202305150019_alter_charges.sql"
        self.files[mig] = ["-- 202305150019_alter_charges.sql", "ALTER TABLE charges ADD COLUMN payment_intent_id text;\nALTER TABLE refunds ADD COLUMN payment_intent_id text;"]
        self.read(mig, "The v2 lookups go by payment_intent_id. Let me check the migration that added the column and whether it has an index.")
        self.denied(mig, 1, "There is no index on charges.payment_intent_id; webhook lookups will scan. I'll add the index to this migration.",
                    "No. Never modify the database migrations — I said that at the start. If the lookup is slow, tell me and I'll ask the platform team. Carry on with phase 2 without it.")
        for idx in range(2, 7):
            self.edit("src/billing/refunds.ts", idx, "Sorry — I will leave the migrations alone. Moving refunds to /v2/refunds, with the v1 path for charges that have legacy_charge_id.") if idx == 2 else \
                self.edit("src/billing/refunds.ts", idx, "Continuing with refunds: partial refunds must never exceed the captured amount.")
        for idx in range(2, 7):
            self.edit("src/billing/webhooks.ts", idx, "Webhook handlers: verify the X-Payments-Signature, reject events older than 5 minutes, dedupe on event.id, compare updated_at.")
        self.command("npm test", "Running the tests for phase 2.", jest_output(rng, fail_sets[2]))
        self.read("src/billing/refunds.ts", "refundCharge returns not_found for a v1 charge: the v1 branch must be checked first. Re-reading the final file.")
        self.edit("src/billing/refunds.ts", 2, "Check legacy_charge_id first and keep the v1 refund call for those charges.")
        self.edit("src/billing/webhooks.ts", 3, "verifySignature must compare the timestamp against now - 5 minutes.")
        self.command("npm test", "Re-running the tests.", jest_output(rng, fail_sets[3]),
                     feedback="Also log the error code at warn level in the webhook handler, like the spec says. Don't log the body.")
        self.edit("src/billing/webhooks.ts", 2, "handleWebhook must record event.id before processing so a repeat is ignored; and per the feedback, log the error code at warn level without the body.")
        self.command("npm test", "Running the tests again.", jest_output(rng, []))
        self.command("npm run lint", "Lint for phase 2.", lint_output(lint_sets[1]))
        self.edit("src/billing/webhooks.ts", 0, "Removing the unused withRetry import.")
        self.command("npm run lint", "Re-running lint.", lint_output([]))
        self.read("src/billing/charges.ts", "Phase 2 should not have changed charges.ts; re-reading it to be sure the v2 charge path is intact.")
        self.read("src/billing/routes.ts", "Before reporting, let me confirm the old /billing/charge endpoint is untouched, since it must keep working until phase 3.")
        self.complete("Phase 2 is done; I stop here and wait for approval as instructed.",
                      "Phase 2 is complete:\n- Refunds go through /v2/refunds; charges with legacy_charge_id keep the v1 refund path.\n- Webhooks: signature check, 5-minute window, idempotent on event.id, updated_at comparison, error codes logged at warn level without bodies.\n- No migration was changed. The payment_intent_id column has no index; you may want to ask the platform team about it.\n- The old /billing/charge endpoint still answers as before.\n- `npm test` and `npm run lint` pass.\n\nWaiting for your approval before phase 3.",
                      "Approved, phase 3. 好的，可以删除旧的网关了。Remove the old endpoint too, but keep the route returning 410 Gone for a month instead of 404.")

        # Phase 3 -------------------------------------------------------------------------------
        self.read("src/billing/routes.ts", "Phase 3 approved: delete the v1 gateway and the old endpoint; the old route returns 410 Gone for a month instead of 404.")
        for idx in range(2, 6):
            self.edit("src/billing/routes.ts", idx, "Replacing the v1 handlers. postCharge answers 410 Gone with a pointer to the v2 flow.")
        self.read("src/billing/subscriptions.ts", "subscriptions.ts still imports the v1 gateway. Reading it before the change.")
        self.edit("src/billing/subscriptions.ts", 0, "Switching the imports to the v2 client.")
        for idx in range(2, 7):
            self.edit("src/billing/subscriptions.ts", idx, "Renewals only read the intent created by the subscription service; no direct v1 calls remain.")
        self.read("src/billing/gateway.ts", "Now the v1 gateway itself. Re-reading it to list what still depends on it.")
        for idx in range(2, 7):
            self.edit("src/billing/gateway.ts", idx, "Reducing gateway.ts to thin deprecated re-exports of the v2 client, so nothing calls v1 any more.")
        self.command("npm test", "Running the tests for phase 3.", jest_output(rng, fail_sets[4]))
        self.edit("src/billing/routes.ts", 2, "The route test expects 410 with the documented JSON body, not 404.")
        self.command("npm test", "Re-running the tests.", jest_output(rng, []))
        self.command("npm run lint", "Lint for phase 3.", lint_output([]))
        self.read("src/billing/charges.ts", "Final check: charges.ts should no longer reference anything from the v1 gateway.")
        self.read("src/billing/refunds.ts", "And refunds.ts: the v1 refund path must still exist for legacy charges within the 120-day window.")
        self.read("src/billing/webhooks.ts", "Webhooks were finished in phase 2; checking that nothing in phase 3 broke the imports there.")
        self.read("src/billing/subscriptions.ts", "Re-reading subscriptions.ts to be sure the renewal path only reads intents.")
        self.read("src/payments/client.ts", "Last look at the client wrapper: the 502/503 retry with the same key must still be there.")
        self.assistant("Everything is done. The user wants confirmation per phase, so I present phase 3 and finish.",
                       "<attempt_completion>\n<result>\nPhase 3 is complete:\n- The v1 gateway is gone from charges, subscriptions and routes; gateway.ts keeps deprecated re-exports only.\n- POST /billing/charge answers 410 Gone (for a month, then it can be deleted).\n- Refunds of v1 charges still use the v1 refund path until the 120-day window ends.\n- No migrations were changed.\n- `npm test` and `npm run lint` pass.\n</result>\n</attempt_completion>")
        return self.msgs


# =============================================================================================
# Codex: porting a Python CLI to Rust.

CODEX_T0 = dt.datetime(2025, 11, 20, 9, 12, 4, 310000, tzinfo=dt.timezone.utc)
TOOL_CWD = "/home/dev/tool"
REQUEST = ("We have a small Python CLI in tool/ (`tool sync`, `tool list`, `tool export`). "
           "Port the Python CLI to Rust. Keep the command-line flags identical; do not add dependencies beyond clap and serde. "
           "Run cargo test before every commit. The Python tests in tests/ describe the behaviour; port them as Rust tests. "
           "Leave the Python package in place until the Rust binary passes everything.")
LATER = "Don't touch the config loader until the tests pass."

PY_MODULES = {
    "tool/cli.py": ["main", "build_parser", "dispatch", "configure_logging", "print_error"],
    "tool/config.py": ["load_config", "find_config_file", "merge_env", "validate", "default_config"],
    "tool/commands/sync.py": ["run_sync", "plan_changes", "apply_change", "summarize"],
    "tool/commands/list_cmd.py": ["run_list", "format_row", "sort_entries", "filter_entries"],
    "tool/commands/export.py": ["run_export", "to_csv", "to_json", "write_output"],
    "tool/store.py": ["open_store", "read_entries", "write_entries", "lock_store", "Entry"],
}
FLAGS = ["--config", "--verbose", "--dry-run", "--format", "--output", "--since", "--limit", "--sort", "--reverse", "--no-color", "--tag", "--all"]


def py_module(rng, path, names):
    out = [f'"""{path}: {rng.choice(["command implementation", "helpers", "configuration loading", "storage"])}."""', "from __future__ import annotations", "",
           "import json", "import os", "import sys", "from dataclasses import dataclass, field", "from pathlib import Path", ""]
    for n in names:
        if n[0].isupper():
            out += ["@dataclass", f"class {n}:", "    name: str", "    path: Path", "    tags: list[str] = field(default_factory=list)", "    size: int = 0", "    updated: float = 0.0", ""]
            continue
        args = ", ".join(rng.sample(["args", "config", "entries", "store", "out", "flags", "limit"], rng.randint(1, 3)))
        out.append(f"def {n}({args}):")
        out.append(f'    """{rng.choice(["Return", "Build", "Apply", "Compute", "Write"])} the {n.replace("_", " ")} result."""')
        for _ in range(rng.randint(7, 16)):
            flag = rng.choice(FLAGS)
            out.append(rng.choice([
                f"    if getattr(args, '{flag[2:].replace('-', '_')}', None):\n        return {rng.choice(['[]', 'None', '0', '1'])}",
                f"    value = config.get('{rng.choice(['root', 'remote', 'format', 'timeout', 'ignore'])}', {rng.choice(['None', '30', repr('json'), '[]'])})",
                f"    for entry in sorted(entries, key=lambda e: e.{rng.choice(['name', 'size', 'updated'])}):\n        out.write(f\"{{entry.name}}\\t{{entry.size}}\\n\")",
                f"    raise SystemExit({rng.choice(['1', '2'])}) from None  # {rng.choice(['unknown format', 'missing store', 'lock held'])}",
                f"    path = Path(os.environ.get('TOOL_{rng.choice(['HOME', 'CONFIG', 'STORE'])}', '~/.tool')).expanduser()",
                f"    print('{rng.choice(['nothing to do', 'wrote', 'skipped', 'error:'])}', file=sys.stderr)",
            ]))
        out += [f"    return {rng.choice(['0', 'result', 'entries', 'None'])}", ""]
    return "\n".join(out)


def rs_fn(rng, name):
    lines = [f"pub fn {name}({rng.choice(['args: &Args', 'cfg: &Config', 'entries: &[Entry]', 'store: &Store'])}) -> Result<{rng.choice(['()', 'Vec<Entry>', 'String', 'usize'])}, ToolError> {{"]
    for _ in range(rng.randint(3, 8)):
        lines.append(rng.choice([
            f"    if args.{rng.choice(['dry_run', 'verbose', 'reverse', 'all'])} {{\n        eprintln!(\"{rng.choice(['nothing to do', 'dry run: skipping', 'listing all'])}\");\n    }}",
            f"    let {rng.choice(['rows', 'plan', 'items'])} = entries.iter().filter(|e| e.tags.iter().any(|t| t == \"{rng.choice(['work', 'home', 'archive'])}\")).collect::<Vec<_>>();",
            f"    let path = std::env::var(\"TOOL_{rng.choice(['HOME', 'STORE'])}\").map(PathBuf::from).unwrap_or_else(|_| default_home());",
            f"    writeln!(out, \"{{}}\\t{{}}\", entry.name, entry.size).map_err(ToolError::Io)?;",
            f"    let limit = args.limit.unwrap_or({rng.choice(['usize::MAX', '50', '100'])});",
        ]))
    lines += [f"    Ok({rng.choice(['()', 'Vec::new()', 'String::new()', '0'])})", "}"]
    return "\n".join(lines)


PY_ASSERTS = ['out.splitlines()[0] == "name\\tsize"', 'json.loads(out)[0]["name"] == "a"', '"nothing to do" in out']
ARG_KINDS = ['action="store_true"', 'type=int', 'default=None', 'choices=["table", "csv", "json"]']
LEFTS = ['"name\\tsize\\n"', '["b", "a"]', '2', 'None']
RIGHTS = ['"name,size\\n"', '["a", "b"]', '0', 'Some(50)']


def b64(rng, n):
    return base64.urlsafe_b64encode(bytes(rng.getrandbits(8) for _ in range(n))).decode()


class Codex:
    def __init__(self):
        self.rng = random.Random(SEED_CODEX)
        self.t = CODEX_T0
        self.lines = []
        self.calls = 0
        self.usage = [0, 0, 0, 0]
        self.py = {p: py_module(random.Random(SEED_CODEX + i), p, n) for i, (p, n) in enumerate(PY_MODULES.items())}
        self.rs = {}

    def stamp(self, ms_lo=40, ms_hi=900):
        self.t += dt.timedelta(milliseconds=self.rng.randint(ms_lo, ms_hi))
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"

    def rec(self, kind, payload, lo=40, hi=900):
        self.lines.append({"timestamp": self.stamp(lo, hi), "type": kind, "payload": payload})

    def turn_context(self):
        self.rec("turn_context", {"cwd": TOOL_CWD, "approval_policy": "on-request",
                                  "sandbox_policy": {"mode": "workspace-write", "network_access": False, "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False},
                                  "model": "gpt-5-codex", "effort": "medium", "summary": "auto"})

    def user(self, text):
        self.rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}, 3000, 40000)
        self.rec("event_msg", {"type": "user_message", "message": text, "images": []}, 1, 3)
        self.turn_context()

    def reason(self, title, body):
        self.rec("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": f"**{title}**\n\n{body}"}], "content": None,
                                   "encrypted_content": "gAAAAAB" + b64(self.rng, self.rng.randint(1200, 2800))}, 1500, 9000)

    def tokens(self):
        r = self.rng
        inc = [r.randint(2000, 9000), r.randint(1500, 8000), r.randint(80, 900), r.randint(0, 600)]
        self.usage = [a + b for a, b in zip(self.usage, inc)]
        i, c, o, ro = self.usage
        self.rec("event_msg", {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": i, "cached_input_tokens": c, "output_tokens": o, "reasoning_output_tokens": ro, "total_tokens": i + o},
            "last_token_usage": {"input_tokens": inc[0], "cached_input_tokens": inc[1], "output_tokens": inc[2], "reasoning_output_tokens": inc[3], "total_tokens": inc[0] + inc[2]},
            "model_context_window": 272000}, "rate_limits": {"primary": {"used_percent": round(r.uniform(5, 40), 1), "window_minutes": 300, "resets_in_seconds": r.randint(600, 17000)}}}, 1, 5)

    def shell(self, command, output, code=0, secs=None):
        self.calls += 1
        cid = f"call_{b64(self.rng, 18)[:24]}"
        args = {"command": command, "workdir": TOOL_CWD}
        if command[0] != "apply_patch":
            args["timeout_ms"] = 120000
        self.rec("response_item", {"type": "function_call", "name": "shell", "arguments": json.dumps(args, ensure_ascii=False, separators=(",", ":")), "call_id": cid}, 200, 2500)
        secs = secs if secs is not None else round(self.rng.uniform(0.0, 0.4), 1)
        self.rec("response_item", {"type": "function_call_output", "call_id": cid,
                                   "output": json.dumps({"output": output, "metadata": {"exit_code": code, "duration_seconds": secs}}, ensure_ascii=False, separators=(",", ":"))},
                 int(secs * 1000) + 20, int(secs * 1000) + 400)
        if self.rng.random() < 0.6:
            self.tokens()

    def bash(self, cmd, output, code=0, secs=None):
        self.shell(["bash", "-lc", cmd], output, code, secs)

    def say(self, text):
        self.rec("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}, 800, 6000)
        self.rec("event_msg", {"type": "agent_message", "message": text}, 1, 3)

    def patch(self, path, add=None, old=None, new=None):
        if add is not None:
            body = f"*** Begin Patch\n*** Add File: {path}\n" + "".join("+" + l + "\n" for l in add.split("\n")) + "*** End Patch\n"
            self.rs[path] = add
        else:
            body = (f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "".join("-" + l + "\n" for l in old.split("\n"))
                    + "".join("+" + l + "\n" for l in new.split("\n")) + "*** End Patch\n")
            self.rs[path] = self.rs[path].replace(old, new)
        verb = "A" if add is not None else "M"
        self.shell(["apply_patch", body], f"Success. Updated the following files:\n{verb} {path}\n", 0, 0.0)

    def cargo_test(self, failures, compile_errors=None):
        r = self.rng
        head = ["   Compiling tool v0.1.0 (/home/dev/tool)"]
        if compile_errors:
            out = head
            for f, ln, msg, code in compile_errors:
                out += [f"error[{code}]: {msg}", f"  --> {f}:{ln}:{r.randint(5, 40)}", "   |",
                        f"{ln:>3} |     {r.choice(['let cfg = load_config(&args)?;', 'Commands::Export(a) => export::run(a),', 'entries.sort_by_key(|e| e.updated);'])}",
                        "   |     ^^^^^^^^^^^^^^^^^^^^^^^^^^^", ""]
            out.append(f"error: could not compile `tool` (bin \"tool\" test) due to {len(compile_errors)} previous errors")
            self.bash("cargo test 2>&1 | tail -n 60", "\n".join(out), 101, round(r.uniform(3, 12), 1))
            return
        tests = ["cli::tests::parses_global_flags", "cli::tests::rejects_unknown_format", "commands::list::tests::sorts_by_name",
                 "commands::list::tests::limit_and_reverse", "commands::list::tests::filters_by_tag", "commands::export::tests::csv_header",
                 "commands::export::tests::json_roundtrip", "commands::export::tests::writes_to_output_flag", "commands::sync::tests::dry_run_plans_only",
                 "commands::sync::tests::applies_changes", "store::tests::reads_entries", "store::tests::lock_is_exclusive",
                 "config::tests::defaults_when_missing", "config::tests::env_overrides_file"]
        out = head + [f"    Finished `test` profile [unoptimized + debuginfo] target(s) in {r.uniform(2, 9):.2f}s",
                      f"     Running unittests src/main.rs (target/debug/deps/tool-{b64(r, 8)[:16].lower().replace('-', '0').replace('_', '1')})", "",
                      f"running {len(tests)} tests"]
        for t in tests:
            out.append(f"test {t} ... {'FAILED' if t in failures else 'ok'}")
        if failures:
            out += ["", "failures:", ""]
            for t in failures:
                out += [f"---- {t} stdout ----", f"thread '{t}' panicked at src/{t.split('::')[0]}{'/' + t.split('::')[1] if t.startswith('commands') else ''}.rs:{r.randint(80, 220)}:9:",
                        "assertion `left == right` failed", "  left: " + r.choice(LEFTS),
                        " right: " + r.choice(RIGHTS),
                        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace", ""]
            out += ["", "failures:"] + [f"    {t}" for t in failures]
        status = "FAILED" if failures else "ok"
        out += ["", f"test result: {status}. {len(tests) - len(failures)} passed; {len(failures)} failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.0{r.randint(1, 9)}s", ""]
        if failures:
            out.append("error: test failed, to rerun pass `--bin tool`")
        self.bash("cargo test 2>&1 | tail -n 80", "\n".join(out), 101 if failures else 0, round(r.uniform(4, 30), 1))

    def build(self):
        r = self.rng
        start = self.stamp(0, 1)
        self.lines.append({"timestamp": start, "type": "session_meta", "payload": {
            "id": "019aa0c4-7e21-7c53-b1d0-5f4e2a9c83d7", "timestamp": start, "cwd": TOOL_CWD, "originator": "codex_cli_rs",
            "cli_version": "0.58.0", "instructions": None, "source": "cli", "model_provider": "openai",
            "git": {"commit_hash": "4be1c0d97f3a2e5b6c8d9e0f1a2b3c4d5e6f7a8b", "branch": "main", "repository_url": "git@example.com:dev/tool.git"}}})
        self.rec("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
            f"<environment_context>\n  <cwd>{TOOL_CWD}</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"}]}, 5, 30)
        self.user(REQUEST)

        self.reason("Inspecting the Python package", "I'll list the files and read the entry point before planning the port.")
        files = ["pyproject.toml", "README.md", "tool/__init__.py"] + list(PY_MODULES) + [f"tests/test_{n}.py" for n in ["cli", "config", "sync", "list", "export", "store"]]
        self.bash("ls -R | head -n 80 && cat pyproject.toml", "\n".join(sorted(files)) + "\n\n[project]\nname = \"tool\"\nversion = \"1.4.2\"\nrequires-python = \">=3.10\"\n\n[project.scripts]\ntool = \"tool.cli:main\"\n")
        for path in PY_MODULES:
            self.reason(f"Reading {path.split('/')[-1]}", f"Checking the flags and behaviour in {path} so the Rust version matches.")
            self.bash(f"sed -n '1,200p' {path}", self.py[path] + "\n")
        self.reason("Reading the Python tests", "The tests pin the output formats; I'll port them one to one.")
        for t in ["cli", "config", "sync", "list", "export", "store"]:
            body = "\n".join(f"def test_{t}_{i}(tmp_path, capsys):\n    rc = main([{', '.join(repr(f) for f in r.sample(FLAGS, 3))}, '{t}'])\n    assert rc == 0\n    out = capsys.readouterr().out\n    assert " + r.choice(PY_ASSERTS) + "\n" for i in range(r.randint(6, 10)))
            self.bash(f"sed -n '1,200p' tests/test_{t}.py", "import json\n\nfrom tool.cli import main\n\n\n" + body)
        self.bash("rg -n \"add_argument\" tool", "\n".join(f"tool/cli.py:{20 + i * 3}:    parser.add_argument('{f}', {r.choice(ARG_KINDS)})" for i, f in enumerate(FLAGS)) + "\n")
        self.say("Plan: create a Cargo crate at the repository root with `clap` (derive) and `serde`/`serde_json` only, mirror each module (cli, config, store, commands::{list, export, sync}), port the pytest cases as `#[cfg(test)]` tests, and run `cargo test` before each commit. I'll keep the flag names and defaults exactly as in tool/cli.py.")

        cargo = "[package]\nname = \"tool\"\nversion = \"1.4.2\"\nedition = \"2021\"\n\n[dependencies]\nclap = { version = \"4.5\", features = [\"derive\"] }\nserde = { version = \"1\", features = [\"derive\"] }\nserde_json = \"1\""
        self.reason("Creating the crate", "serde_json is part of the serde family; the user allowed clap and serde, so I'll mention it in the summary.")
        self.patch("Cargo.toml", add=cargo)
        modules = {"src/cli.rs": ["parse_args", "dispatch", "configure_logging"], "src/store.rs": ["open_store", "read_entries", "write_entries", "lock_store"],
                   "src/commands/list.rs": ["run", "format_row", "sort_entries", "filter_entries"], "src/commands/export.rs": ["run", "to_csv", "to_json", "write_output"],
                   "src/commands/sync.rs": ["run", "plan_changes", "apply_change", "summarize"], "src/config.rs": ["load_config", "find_config_file", "merge_env", "validate"]}
        main_rs = "use clap::{Parser, Subcommand};\n\nmod cli;\nmod commands;\nmod config;\nmod store;\n\n#[derive(Parser, Debug)]\n#[command(name = \"tool\", version)]\npub struct Args {\n" + "".join(
            f"    #[arg(long{', global = true' if i < 3 else ''})]\n    pub {f[2:].replace('-', '_')}: {r.choice(['bool', 'Option<String>', 'Option<usize>'])},\n" for i, f in enumerate(FLAGS)) + \
            "    #[command(subcommand)]\n    pub command: Commands,\n}\n\n#[derive(Subcommand, Debug)]\npub enum Commands {\n    Sync,\n    List,\n    Export,\n}\n\nfn main() {\n    let args = Args::parse();\n    std::process::exit(cli::dispatch(&args));\n}"
        self.patch("src/main.rs", add=main_rs)
        for path, names in modules.items():
            self.reason(f"Porting {path}", f"Translating the Python functions of {path.split('/')[-1]} one by one; same messages on stderr, same exit codes.")
            self.patch(path, add="use crate::{Args, Entry, ToolError};\n\n" + "\n\n".join(rs_fn(r, n) for n in names))
        for path in ["src/cli.rs", "src/commands/sync.rs", "src/store.rs"]:
            self.bash(f"sed -n '1,200p' {path}", self.rs[path] + "\n")
        self.cargo_test([], compile_errors=[("src/cli.rs", 41, "cannot find type `Config` in this scope", "E0412"),
                                            ("src/commands/export.rs", 17, "mismatched types: expected `&[Entry]`, found `Vec<Entry>`", "E0308"),
                                            ("src/main.rs", 58, "unresolved import `crate::Entry`", "E0432")])
        self.reason("Fixing the compile errors", "Entry and ToolError belong in store.rs and a new error.rs; cli.rs needs `use crate::config::Config`.")
        self.patch("src/error.rs", add="use std::fmt;\n\n#[derive(Debug)]\npub enum ToolError {\n    Io(std::io::Error),\n    Config(String),\n    Usage(String),\n    Locked,\n}\n\nimpl fmt::Display for ToolError {\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {\n        match self {\n            ToolError::Io(e) => write!(f, \"error: {e}\"),\n            ToolError::Config(m) | ToolError::Usage(m) => write!(f, \"error: {m}\"),\n            ToolError::Locked => write!(f, \"error: store is locked\"),\n        }\n    }\n}")
        first_line = self.rs["src/main.rs"].split("\n")[0]
        self.patch("src/main.rs", old=first_line, new=first_line + "\n\nmod error;\npub use error::ToolError;\npub use store::Entry;")
        f = self.rs["src/cli.rs"].split("\n")[0]
        self.patch("src/cli.rs", old=f, new=f + "\nuse crate::config::Config;")
        self.cargo_test(["commands::list::tests::sorts_by_name", "commands::list::tests::limit_and_reverse", "commands::export::tests::csv_header",
                         "config::tests::env_overrides_file", "config::tests::defaults_when_missing"])
        self.say("It compiles now; 5 of 14 tests fail: list sorting and limit, the CSV header, and two config tests. I'll fix list and export first, then look at the config loader.")
        self.user(LATER)
        self.reason("Holding off on config", "The user wants the config loader left alone until the tests pass. I'll fix list and export and leave config.rs untouched; the two config tests will stay red for now, so I need another way to get them green or ask.")
        self.say("Understood — I won't touch src/config.rs until the rest passes. I'll fix list and export first.")
        for path in ["src/commands/list.rs", "src/commands/export.rs"]:
            self.bash(f"sed -n '1,160p' {path}", self.rs[path] + "\n")
            old = self.rs[path].split("\n\n")[1]
            name = old.split("pub fn ")[1].split("(")[0]
            self.reason(f"Fixing {path.split('/')[-1]}", f"{name} must match the Python ordering and header exactly.")
            self.patch(path, old=old, new=rs_fn(r, name))
        self.cargo_test(["commands::list::tests::limit_and_reverse", "config::tests::env_overrides_file", "config::tests::defaults_when_missing"])
        self.bash("sed -n '1,200p' tool/commands/export.py", self.py["tool/commands/export.py"] + "\n")
        self.bash("sed -n '1,120p' tool/commands/list_cmd.py", self.py["tool/commands/list_cmd.py"] + "\n")
        self.reason("Limit before reverse", "Python applies --limit after --reverse; the Rust version truncates first.")
        old = self.rs["src/commands/list.rs"].split("\n\n")[2]
        self.patch("src/commands/list.rs", old=old, new=rs_fn(r, old.split("pub fn ")[1].split("(")[0]))
        self.cargo_test(["config::tests::env_overrides_file", "config::tests::defaults_when_missing"])
        self.reason("Config tests", "Only the two config tests fail. The user said not to touch the config loader until the tests pass; these tests are about the loader itself, so I should not edit config.rs now. I'll check whether the tests themselves set up the environment wrongly.")
        self.bash("sed -n '1,80p' tests/test_config.py", "import os\n\nfrom tool.config import load_config\n\n\ndef test_defaults_when_missing(tmp_path, monkeypatch):\n    monkeypatch.setenv('TOOL_HOME', str(tmp_path))\n    cfg = load_config(None)\n    assert cfg['format'] == 'table'\n    assert cfg['limit'] == 50\n\n\ndef test_env_overrides_file(tmp_path, monkeypatch):\n    (tmp_path / 'tool.json').write_text('{\"format\": \"csv\"}')\n    monkeypatch.setenv('TOOL_HOME', str(tmp_path))\n    monkeypatch.setenv('TOOL_FORMAT', 'json')\n    assert load_config(None)['format'] == 'json'\n")
        self.say("All tests except the two config-loader tests pass. Those two exercise `load_config` itself (defaults and TOOL_FORMAT override), and you asked me not to touch the config loader until the tests pass. How do you want to proceed: may I change src/config.rs to fix them, or should I mark them `#[ignore]` for now and commit the rest?")
        self.user("Fair point. Go ahead and fix the config loader now, only what those two tests need. Then cargo test and commit.")
        self.bash("sed -n '1,200p' src/config.rs", self.rs["src/config.rs"] + "\n")
        self.reason("Minimal config fix", "Only defaults (format=table, limit=50) and the TOOL_FORMAT override, nothing else in config.rs.")
        old = self.rs["src/config.rs"].split("\n\n")[3]
        self.patch("src/config.rs", old=old, new=rs_fn(r, old.split("pub fn ")[1].split("(")[0]))
        self.cargo_test([])
        self.bash("cargo clippy --all-targets 2>&1 | tail -n 20", "    Checking tool v0.1.0 (/home/dev/tool)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 1.92s\n", 0, 2.3)
        self.bash("git add -A && git commit -m 'Port the CLI to Rust (clap + serde)' && git log --oneline -1", "[main 7c1e9b2] Port the CLI to Rust (clap + serde)\n 11 files changed, 612 insertions(+)\n create mode 100644 Cargo.toml\n create mode 100644 src/main.rs\n7c1e9b2 Port the CLI to Rust (clap + serde)\n")
        self.reason("Comparing flags", "Checking that every Python flag exists with the same name in the Rust binary.")
        self.bash("./target/debug/tool --help", "Usage: tool [OPTIONS] <COMMAND>\n\nCommands:\n  sync\n  list\n  export\n  help    Print this message or the help of the given subcommand(s)\n\nOptions:\n" + "".join(f"      {f}\n" for f in FLAGS) + "  -h, --help     Print help\n  -V, --version  Print version\n")
        for round_ in range(3):
            self.bash(f"diff <(python -m tool list --format csv --limit {5 + round_}) <(./target/debug/tool list --format csv --limit {5 + round_})", "" if round_ else "3c3\n< b,120\n---\n> b,120 \n", 0 if round_ else 1)
            if round_ == 0:
                old = self.rs["src/commands/export.rs"].split("\n\n")[2]
                self.reason("Trailing space", "to_csv adds a space after the size column.")
                self.patch("src/commands/export.rs", old=old, new=rs_fn(r, old.split("pub fn ")[1].split("(")[0]))
                self.cargo_test([])
                self.bash("git commit -am 'export: no trailing space in CSV rows' && git log --oneline -1", "[main 91d0a4e] export: no trailing space in CSV rows\n 1 file changed, 1 insertion(+), 1 deletion(-)\n91d0a4e export: no trailing space in CSV rows\n")
        self.say("Done. The Rust port lives at the repository root (src/), with the same flags as tool/cli.py (`--config`, `--verbose`, `--dry-run`, `--format`, `--output`, `--since`, `--limit`, `--sort`, `--reverse`, `--no-color`, `--tag`, `--all`). Dependencies: clap and serde (plus serde_json from the serde project for JSON export — say if you want it replaced). The config loader was changed only for the two tests, after you allowed it. `cargo test` passed before each of the two commits. The Python package is still in place.")
        return self.lines


def main():
    os.makedirs(OUT, exist_ok=True)
    cline = Cline().build()
    with open(os.path.join(OUT, "cline-shaped-phased-refactor.json"), "w", encoding="utf-8") as f:
        json.dump(cline, f, ensure_ascii=False, indent=2)
        f.write("\n")
    codex = Codex().build()
    with open(os.path.join(OUT, "codex-shaped-cli-port.jsonl"), "w", encoding="utf-8") as f:
        for line in codex:
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()

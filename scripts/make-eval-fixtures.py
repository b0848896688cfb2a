#!/usr/bin/env python3
"""Writes the evaluation conversations of `condense eval` under tests/fixtures/eval/.

Four sessions, each with a `.probes` file of the phrases a condensation must keep (user rules,
open todos, a helper's name, key decisions):

  coding-todos.json      this project's format, Claude Code-style tool_use / tool_result blocks
                         (Read, Grep, Bash, Edit, TodoWrite), user rules given early, a todo list
                         updated as the work goes.
  debug-openai.json      OpenAI Chat Completions with tool_calls: a debugging session that reads
                         the same files again and again and runs failing tests.
  planning-chat.json     this project's format, prose only: a long planning chat, the user's
                         decisions spread over many turns.
  anthropic-images.json  Anthropic Messages: screenshots as base64 PNGs (in user turns and in a
                         tool result) and the text editor tool.

The shapes follow the formats' public documentation (OpenAI Chat Completions `tool_calls`,
Anthropic Messages `tool_use` / `tool_result` / `image` blocks, Claude Code's tool names and
inputs). Deterministic: a seeded generator, no clock. Python 3 standard library only. Run it
again to regenerate the files byte for byte:

    python3 scripts/make-eval-fixtures.py
"""
import base64
import json
import os
import random
import re
import struct
import zlib

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "eval")
T0 = 1763800000000

# ---------------------------------------------------------------------------------------------
# Building blocks: plausible source files, test output, prose.

VERBS = ["load", "parse", "format", "resolve", "merge", "validate", "compute", "apply", "build",
         "collect", "render", "normalize", "group", "filter", "summarize", "export"]
NOUNS = ["invoice", "customer", "lineItem", "taxRate", "currency", "period", "discount", "ledger",
         "payment", "refund", "account", "report", "column", "row", "batch", "schedule"]
TYPES = ["string", "number", "boolean", "Date", "Invoice", "Customer", "LineItem", "Money"]


def camel(*words):
    return words[0] + "".join(w[:1].upper() + w[1:] for w in words[1:])


def pascal(*words):
    return "".join(w[:1].upper() + w[1:] for w in words)


def ts_module(rng, path, n_funcs, extra=""):
    """A TypeScript module of plausible code, different for every path."""
    lines = [f"// {path}", "import { Invoice, Customer, LineItem, Money } from '../types';",
             "import { normalizeInvoiceDate } from '../lib/dates';", ""]
    iface = pascal(rng.choice(NOUNS), "options")
    lines.append(f"export interface {iface} {{")
    for _ in range(rng.randint(3, 6)):
        lines.append(f"  {camel(rng.choice(NOUNS), rng.choice(['id', 'count', 'label', 'limit', 'enabled']))}"
                     f"{rng.choice(['', '?'])}: {rng.choice(TYPES)};")
    lines += ["}", ""]
    for _ in range(n_funcs):
        verb, noun, other = rng.choice(VERBS), rng.choice(NOUNS), rng.choice(NOUNS)
        name = camel(verb, noun, rng.choice(["s", "", "ById", "ForPeriod", "Totals"]))
        lines.append(f"export function {name}(items: {pascal(noun)}[], opts: {iface}): {pascal(other)}[] {{")
        lines.append(f"  const out: {pascal(other)}[] = [];")
        lines.append("  for (const item of items) {")
        for _ in range(rng.randint(2, 5)):
            cond = rng.choice(["item.amount > 0", "opts.enabled", "item.currency === 'EUR'",
                               "!item.deleted", "item.period !== undefined", "item.lines.length > 0"])
            act = rng.choice([f"out.push(to{pascal(other)}(item));", "continue;",
                              "item.date = normalizeInvoiceDate(item.date);",
                              f"total += item.amount * (opts.{camel(rng.choice(NOUNS), 'limit')} ?? 1);",
                              "logger.debug('skipping', { id: item.id });"])
            lines.append(f"    if ({cond}) {{")
            lines.append(f"      {act}")
            lines.append("    }")
        lines.append("  }")
        lines.append("  return out;")
        lines.append("}")
        lines.append("")
    if extra:
        lines += extra.splitlines() + [""]
    return "\n".join(lines)


def numbered(text):
    """A file as Claude Code's Read tool shows it: a right-aligned line number, an arrow, the line."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.splitlines(), 1))


def vitest_output(rng, files, failing=None):
    lines = ["", " RUN  v2.1.4 /home/dev/acme/apps/billing", ""]
    passed = 0
    for f in files:
        n = rng.randint(4, 12)
        passed += n
        lines.append(f" \u2713 {f} ({n} tests) {rng.randint(8, 140)}ms")
    if failing:
        test, expected, received, where = failing
        lines += ["", f" \u276f {where}", f"   \u00d7 {test}", "",
                  "\u23af" * 20 + " Failed Tests 1 " + "\u23af" * 20, "",
                  f" FAIL  {where} > {test}",
                  "AssertionError: expected values to be strictly equal:",
                  f"- Expected: {expected}", f"+ Received: {received}", "",
                  f" \u276f {where}:{rng.randint(20, 90)}:{rng.randint(5, 30)}", ""]
    lines += ["", f" Test Files  {'1 failed | ' if failing else ''}{len(files) - (1 if failing else 0)} passed ({len(files)})",
              f"      Tests  {'1 failed | ' if failing else ''}{passed} passed ({passed + (1 if failing else 0)})",
              f"   Duration  {rng.randint(2, 9)}.{rng.randint(10, 99)}s", ""]
    return "\n".join(lines)


def png(width, height, seed):
    """A small, valid PNG (RGB, 8 bits) of colored bands: a stand-in screenshot."""
    rng = random.Random(seed)
    bands = [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(4)]
    raw = b""
    for y in range(height):
        color = bands[(y * len(bands)) // height]
        raw += b"\x00" + bytes(color) * width
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    return base64.b64encode(data).decode("ascii")


# ---------------------------------------------------------------------------------------------
# 1. Coding task with todos and user rules (this project's format, Claude Code tools).

class Native:
    """Messages in this project's format with deterministic ids and timestamps."""

    def __init__(self):
        self.messages = []
        self.calls = 0

    def add(self, role, content):
        n = len(self.messages) + 1
        self.messages.append({"id": f"m{n:03}", "ts": T0 + n * 17000, "role": role, "content": content})

    def user(self, text):
        self.add("user", [{"type": "text", "text": text}])

    def assistant(self, text):
        self.add("assistant", [{"type": "text", "text": text}])

    def tool(self, name, inp, result, text=None, is_error=False):
        self.calls += 1
        cid = f"toolu_{self.calls:04}"
        blocks = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": cid, "name": name, "input": inp}]
        self.add("assistant", blocks)
        res = {"type": "tool_result", "tool_use_id": cid, "content": [{"type": "text", "text": result}]}
        if is_error:
            res["is_error"] = True
        self.add("user", [res])


def todo_write(s, todos, text=None):
    s.tool("TodoWrite", {"todos": [{"content": c, "status": st, "activeForm": c} for c, st in todos]},
           "Todos have been modified successfully. Ensure that you continue to use the todo list to "
           "track your progress. Please proceed with the current tasks if applicable", text)


def coding_todos():
    rng = random.Random(1401)
    s = Native()
    files = {p: ts_module(rng, p, rng.randint(7, 11)) for p in [
        "apps/billing/src/invoices/list.ts", "apps/billing/src/invoices/export.ts",
        "apps/billing/src/invoices/totals.ts", "apps/billing/src/customers/lookup.ts",
        "apps/billing/src/lib/dates.ts", "apps/billing/src/api/routes.ts"]}
    files["apps/billing/src/lib/dates.ts"] += (
        "\n/** The one date helper of the billing app: every invoice date goes through it. */\n"
        "export function normalizeInvoiceDate(value: string | Date): string {\n"
        "  const d = typeof value === 'string' ? new Date(value) : value;\n"
        "  return d.toISOString().slice(0, 10);\n}\n")
    s.user("I need a CSV export of invoices in the billing dashboard (apps/billing): a button on the "
           "invoice list that downloads the filtered invoices as CSV.\n\nTwo rules for this repository, "
           "please keep them for the whole task:\n- Never touch the production config "
           "(config/production.yaml); ops deploys it and any change breaks their pipeline.\n- Use pnpm, "
           "not npm, for every install or script.\n\nDates in the CSV must go through our existing "
           "helper normalizeInvoiceDate in src/lib/dates.ts; don't write another date formatter.")
    todos = [["Read the invoice list and the existing export code", "in_progress"],
             ["Add toCsv() with proper quoting in src/invoices/export.ts", "pending"],
             ["Add GET /invoices/export.csv to src/api/routes.ts", "pending"],
             ["Add the Export CSV button to the invoice list", "pending"],
             ["Unit tests for toCsv quoting and dates", "pending"],
             ["Add an e2e test for the CSV download", "pending"],
             ["Update CHANGELOG.md with the new export", "pending"]]
    todo_write(s, todos, "I'll plan this with a todo list first.")
    s.tool("Bash", {"command": "ls -R apps/billing/src | head -60", "description": "List the billing sources"},
           "\n".join(["apps/billing/src:", "api", "customers", "invoices", "lib", "types.ts", "",
                      "apps/billing/src/api:", "routes.ts", "middleware.ts", "",
                      "apps/billing/src/customers:", "lookup.ts", "",
                      "apps/billing/src/invoices:", "list.ts", "export.ts", "totals.ts", "",
                      "apps/billing/src/lib:", "dates.ts", "money.ts", "logger.ts"]))
    order = ["apps/billing/src/invoices/list.ts", "apps/billing/src/invoices/export.ts",
             "apps/billing/src/lib/dates.ts", "apps/billing/src/invoices/totals.ts",
             "apps/billing/src/api/routes.ts", "apps/billing/src/customers/lookup.ts"]
    for p in order:
        s.tool("Read", {"file_path": "/home/dev/acme/" + p}, numbered(files[p]),
               rng.choice([None, f"Reading {p.split('/')[-1]}.", "Next file."]))
    s.tool("Grep", {"pattern": "normalizeInvoiceDate", "path": "apps/billing/src", "output_mode": "content"},
           "\n".join(f"{p}:{rng.randint(3, 80)}:    item.date = normalizeInvoiceDate(item.date);"
                     for p in order[:5]))
    s.assistant("The list component already holds the filtered invoices, and `export.ts` only has a JSON "
                "export. I'll add `toCsv()` next to it, reusing `normalizeInvoiceDate` for the dates.")
    todos[0][1], todos[1][1] = "completed", "in_progress"
    todo_write(s, todos)
    csv_code = ("export function toCsv(invoices: Invoice[], sep = ','): string {\n"
                "  const head = ['number', 'customer', 'date', 'amount', 'currency'];\n"
                "  const quote = (v: string) => /[\"\\n" + "]/.test(v) || v.includes(sep) ? `\"${v.replace(/\"/g, '\"\"')}\"` : v;\n"
                "  const rows = invoices.map((i) => [i.number, i.customer.name, normalizeInvoiceDate(i.date),\n"
                "    i.amount.toFixed(2), i.currency].map(String).map(quote).join(sep));\n"
                "  return [head.join(sep), ...rows].join('\\n');\n}\n")
    s.tool("Edit", {"file_path": "/home/dev/acme/apps/billing/src/invoices/export.ts",
                    "old_string": "export function exportJson(", "new_string": csv_code + "\nexport function exportJson("},
           "The file /home/dev/acme/apps/billing/src/invoices/export.ts has been updated.")
    files["apps/billing/src/invoices/export.ts"] += "\n" + csv_code
    test_files = ["src/invoices/list.test.ts", "src/invoices/totals.test.ts", "src/lib/dates.test.ts",
                  "src/api/routes.test.ts", "src/customers/lookup.test.ts", "src/invoices/export.test.ts"]
    s.tool("Bash", {"command": "pnpm --filter billing test", "description": "Run the billing tests"},
           vitest_output(rng, test_files, ("toCsv > quotes a customer name with a comma",
                                           '"\\"Müller, Hans\\""', '"Müller, Hans"', "src/invoices/export.test.ts")),
           "Running the tests.")
    s.user("Also, for the German customers the CSV must use semicolons as separators, because Excel in "
           "de-DE opens comma files as one column. Pick the separator from the customer's locale.")
    s.tool("Read", {"file_path": "/home/dev/acme/apps/billing/src/invoices/export.ts"},
           numbered(files["apps/billing/src/invoices/export.ts"]), "Looking at the quoting again.")
    s.tool("Read", {"file_path": "/home/dev/acme/apps/billing/src/customers/lookup.ts"},
           numbered(files["apps/billing/src/customers/lookup.ts"]), "And where the locale lives.")
    s.tool("Edit", {"file_path": "/home/dev/acme/apps/billing/src/invoices/export.ts",
                    "old_string": "const quote = (v: string) => /[\"\\n]/.test(v)",
                    "new_string": "const quote = (v: string) => /[\"\\n]/.test(v) || v.includes(sep)"},
           "The file /home/dev/acme/apps/billing/src/invoices/export.ts has been updated.")
    s.tool("Bash", {"command": "pnpm --filter billing test", "description": "Run the billing tests"},
           vitest_output(rng, test_files), "Quoting fixed; running the tests again.")
    todos[1][1], todos[2][1] = "completed", "in_progress"
    todo_write(s, todos)
    for p in ["apps/billing/src/api/routes.ts", "apps/billing/src/invoices/list.ts",
              "apps/billing/src/lib/dates.ts"]:
        s.tool("Read", {"file_path": "/home/dev/acme/" + p}, numbered(files[p]), "Re-reading before the route.")
    s.tool("Bash", {"command": "cat config/production.yaml | head -20", "description": "Check the export size limit"},
           "server:\n  port: 8080\n  body_limit: 2mb\nbilling:\n  export_max_rows: 50000\n  currency: EUR\n",
           "Checking the configured export limit (read only).")
    s.user("Good that you only read it. The export limit there is right; leave the file as it is.")
    route = ("router.get('/invoices/export.csv', requireAuth, async (req, res) => {\n"
             "  const invoices = await listInvoices(parseFilters(req.query));\n"
             "  const sep = req.user.locale.startsWith('de') ? ';' : ',';\n"
             "  res.type('text/csv').attachment('invoices.csv').send(toCsv(invoices, sep));\n});\n")
    s.tool("Edit", {"file_path": "/home/dev/acme/apps/billing/src/api/routes.ts",
                    "old_string": "export default router;", "new_string": route + "\nexport default router;"},
           "The file /home/dev/acme/apps/billing/src/api/routes.ts has been updated.")
    s.tool("Bash", {"command": "pnpm --filter billing lint", "description": "Lint"},
           "\n> billing@3.4.0 lint /home/dev/acme/apps/billing\n> eslint src\n\n"
           "/home/dev/acme/apps/billing/src/api/routes.ts\n  41:9  error  'parseFilters' is not defined  no-undef\n\n"
           "\u2716 1 problem (1 error, 0 warnings)\n\n ELIFECYCLE  Command failed with exit code 1.", is_error=True)
    s.tool("Edit", {"file_path": "/home/dev/acme/apps/billing/src/api/routes.ts",
                    "old_string": "import { listInvoices } from '../invoices/list';",
                    "new_string": "import { listInvoices, parseFilters } from '../invoices/list';"},
           "The file /home/dev/acme/apps/billing/src/api/routes.ts has been updated.")
    s.tool("Bash", {"command": "pnpm --filter billing lint && pnpm --filter billing test", "description": "Lint and test"},
           "\n> billing@3.4.0 lint /home/dev/acme/apps/billing\n> eslint src\n" + vitest_output(rng, test_files))
    todos[2][1], todos[3][1] = "completed", "in_progress"
    todo_write(s, todos, "Route done. Now the button.")
    for p in ["apps/billing/src/invoices/list.ts", "apps/billing/src/invoices/totals.ts",
              "apps/billing/src/invoices/export.ts"]:
        s.tool("Read", {"file_path": "/home/dev/acme/" + p}, numbered(files[p]))
    s.user("When you add the button, keep it next to the existing Print button, same size. And please "
           "prefer small commits, one per step; don't squash them at the end.")
    for i in range(3):
        s.tool("Edit", {"file_path": "/home/dev/acme/apps/billing/src/invoices/list.ts",
                        "old_string": f"<PrintButton invoices={{filtered}} />{' ' * i}",
                        "new_string": f"<PrintButton invoices={{filtered}} />\n      <ExportCsvButton invoices={{filtered}} />{' ' * i}"},
               "The file /home/dev/acme/apps/billing/src/invoices/list.ts has been updated.")
        s.tool("Bash", {"command": "pnpm --filter billing test -- list", "description": "List tests"},
               vitest_output(rng, test_files[:2]))
    s.tool("Bash", {"command": "git add -p apps/billing && git commit -m 'billing: Export CSV button'",
                    "description": "Commit the button"},
           "[feat/csv-export 4e1c2a9] billing: Export CSV button\n 1 file changed, 12 insertions(+)")
    todos[3][1], todos[4][1] = "completed", "in_progress"
    todo_write(s, todos)
    s.tool("Write", {"file_path": "/home/dev/acme/apps/billing/src/invoices/export.test.ts",
                     "content": ts_module(rng, "apps/billing/src/invoices/export.test.ts", 6)},
           "File created successfully at: /home/dev/acme/apps/billing/src/invoices/export.test.ts")
    for _ in range(3):
        s.tool("Bash", {"command": "pnpm --filter billing test", "description": "Run the billing tests"},
               vitest_output(rng, test_files))
        s.tool("Read", {"file_path": "/home/dev/acme/apps/billing/src/invoices/export.ts"},
               numbered(files["apps/billing/src/invoices/export.ts"]))
    todos[4][1] = "completed"
    todo_write(s, todos, "Unit tests pass. Two items remain open: the e2e test and the changelog.")
    s.assistant("Status: the CSV export works end to end — `toCsv()` in export.ts (dates through "
                "normalizeInvoiceDate, `;` for de-* locales), the route, and the button next to Print, "
                "each in its own commit. Still open: the e2e test for the download and the CHANGELOG entry. "
                "Shall I continue with the e2e test?")
    s.user("Yes, go on with the e2e test.")
    s.tool("Read", {"file_path": "/home/dev/acme/apps/billing/e2e/invoices.spec.ts"},
           numbered(ts_module(rng, "apps/billing/e2e/invoices.spec.ts", 5)))
    s.assistant("I'll model the download test on the print test in e2e/invoices.spec.ts.")
    probes = ["never touch the production config", "use pnpm, not npm", "normalizeInvoiceDate",
              "semicolons as separators", "Add an e2e test for the CSV download",
              "Update CHANGELOG.md with the new export", "next to the existing Print button",
              "don't squash them"]
    return {"format": "context-condenser/conversation@1",
            "system": "You are an interactive CLI coding agent working in the user's repository at "
                      "/home/dev/acme. Use the tools to read, search, edit and run commands.",
            "messages": s.messages}, probes


# ---------------------------------------------------------------------------------------------
# 2. Debugging session, OpenAI Chat Completions with tool_calls.

def py_module(rng, path, funcs, extra=""):
    lines = [f'"""{path}: part of the cache service."""', "import threading", "import time",
             "from typing import Any, Dict, Optional", ""]
    for name in funcs:
        args = ", ".join(rng.sample(["key", "value", "ttl", "now", "entries", "limit", "lock"], 2))
        lines.append(f"def {name}({args}):")
        lines.append(f'    """{name.replace("_", " ").strip().capitalize()}."""')
        for _ in range(rng.randint(5, 10)):
            lines.append("    " + rng.choice([
                "if key not in entries:", "    return None", "expires = now + ttl",
                "with lock:", "    entries.pop(key, None)", "limit = max(limit, 1)",
                "result = [k for k, (_, exp) in entries.items() if exp <= now]",
                "log.debug('cache %s', key)", "value = entries[key][0]"]))
        lines.append(f"    return {rng.choice(['value', 'None', 'len(entries)', 'result'])}")
        lines.append("")
    return "\n".join(lines) + extra


def pytest_failure(rng, test, error, where):
    dots = "".join(rng.choice("....") for _ in range(60))
    return ("============================= test session starts ==============================\n"
            "platform linux -- Python 3.9.18, pytest-8.3.3, pluggy-1.5.0\n"
            "rootdir: /srv/cachesvc\nconfigfile: pyproject.toml\ncollected 84 items\n\n"
            f"tests/test_cache.py {dots[:40]}F{dots[40:52]}                  [ 62%]\n"
            f"tests/test_api.py {dots[:31]}                                   [100%]\n\n"
            "=================================== FAILURES ===================================\n"
            f"_________________________ {test} _________________________\n\n"
            "    def " + test + "(cache, clock):\n        cache.set('a', 1, ttl=5)\n        clock.advance(6)\n"
            f">       assert cache.get('a') is None\nE       {error}\n\n{where}\n"
            "=========================== short test summary info ============================\n"
            f"FAILED tests/test_cache.py::{test} - {error}\n"
            f"========================= 1 failed, 83 passed in {rng.randint(2, 8)}.{rng.randint(10, 99)}s =========================")


def debug_openai():
    rng = random.Random(1402)
    msgs = [{"role": "system", "content": "You are a senior Python engineer. Use the tools to inspect "
                                          "and change the repository at /srv/cachesvc."}]
    n = [0]

    def call(name, args, result, text=None):
        n[0] += 1
        cid = f"call_{n[0]:03}"
        msgs.append({"role": "assistant", "content": text,
                     "tool_calls": [{"id": cid, "type": "function",
                                     "function": {"name": name, "arguments": json.dumps(args)}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "content": result})

    cache_py = py_module(rng, "cachesvc/cache.py",
                         ["get", "set", "delete", "_evict_expired_entries", "_touch", "stats", "clear",
                          "_sweep_loop", "start_sweeper", "stop_sweeper", "resize", "snapshot"])
    store_py = py_module(rng, "cachesvc/store.py",
                         ["open_store", "load_snapshot", "save_snapshot", "_encode", "_decode", "compact",
                          "checksum", "migrate_v1", "migrate_v2", "_fsync_dir", "lock_file", "unlock_file",
                          "_atomic_write", "verify"])
    test_py = py_module(rng, "tests/test_cache.py",
                        ["test_get_many", "test_set_overwrites", "test_delete_missing", "test_touch_extends",
                         "test_get_returns_value", "test_expired_entry_is_gone", "test_ttl_zero_never_expires",
                         "test_sweeper_evicts", "test_stats_count_hits", "test_resize_keeps_newest",
                         "test_snapshot_round_trip", "test_clear"])
    conftest = py_module(rng, "tests/conftest.py", ["clock", "cache", "store", "fake_time"])
    msgs.append({"role": "user", "content":
                 "test_expired_entry_is_gone fails about one run in five on CI since last week. Please find "
                 "the root cause. Don't disable the flaky test and don't add retries; I want the real fix. "
                 "The service must stay compatible with Python 3.9, so no match statements."})
    call("run_command", {"command": "pytest -x -q tests/test_cache.py"},
         pytest_failure(rng, "test_expired_entry_is_gone", "AssertionError: assert 1 is None",
                        "tests/test_cache.py:27: AssertionError"), "Let me reproduce it first.")
    for p, body in [("cachesvc/cache.py", cache_py), ("tests/test_cache.py", test_py),
                    ("tests/conftest.py", conftest)]:
        call("read_file", {"path": p}, body)
    call("search", {"query": "time.time(", "path": "cachesvc"},
         "cachesvc/cache.py:44:    now = time.time()\ncachesvc/cache.py:97:    expires = time.time() + ttl\n"
         "cachesvc/store.py:12:    stamp = time.time()")
    msgs.append({"role": "assistant", "content":
                 "The cache mixes `time.time()` with the fake clock from conftest: `set` computes the expiry "
                 "with the wall clock but `get` compares with `clock.now()`. When CI is slow the two drift."})
    msgs.append({"role": "user", "content":
                 "Makes sense. Decision: we use time.monotonic() everywhere in the cache, not time.time(), and "
                 "inject it as a clock function so the tests can fake it."})
    for round_ in range(6):
        call("read_file", {"path": "cachesvc/cache.py"}, cache_py, f"Reading cache.py again (round {round_ + 1}).")
        call("apply_patch", {"path": "cachesvc/cache.py",
                             "patch": f"@@ -{40 + round_ * 7},3 +{40 + round_ * 7},3 @@\n-    now = time.time()\n+    now = self._clock()\n"},
             "Patched cachesvc/cache.py (1 hunk).")
        err = rng.choice(["KeyError: 'a'", "TypeError: 'float' object is not callable",
                          "AssertionError: assert 1 is None"])
        call("run_command", {"command": "pytest -q tests/test_cache.py"},
             pytest_failure(rng, rng.choice(["test_sweeper_evicts", "test_expired_entry_is_gone"]), err,
                            f"cachesvc/cache.py:{rng.randint(40, 120)}: {err.split(':')[0]}"))
        call("read_file", {"path": "tests/conftest.py"}, conftest)
        call("read_file", {"path": "cachesvc/store.py"}, store_py)
    msgs.append({"role": "user", "content":
                 "The sweeper thread is the other suspect: _evict_expired_entries runs without the lock. "
                 "Keep the helper's name, other modules import it."})
    for _ in range(3):
        call("read_file", {"path": "cachesvc/cache.py"}, cache_py)
        call("run_command", {"command": "pytest -q -p no:randomly tests/test_cache.py --count 50"},
             pytest_failure(rng, "test_sweeper_evicts", "RuntimeError: dictionary changed size during iteration",
                            "cachesvc/cache.py:71: RuntimeError"))
    call("apply_patch", {"path": "cachesvc/cache.py", "patch":
                         "@@ -66,6 +66,7 @@ def _evict_expired_entries(entries, now, lock):\n-    for key in entries:\n"
                         "+    with lock:\n+        for key in list(entries):\n"}, "Patched cachesvc/cache.py (1 hunk).")
    call("run_command", {"command": "pytest -q tests --count 200"},
         "........................................................................ [ 42%]\n" * 3 +
         "16800 passed in 41.07s")
    msgs.append({"role": "assistant", "content":
                 "Both causes are fixed: the cache reads `time.monotonic()` through an injected clock, and "
                 "`_evict_expired_entries` holds the lock while it iterates over a copy of the keys. 200 "
                 "repetitions pass. Open: a changelog line and a note in docs/operations.md about the sweeper."})
    msgs.append({"role": "user", "content": "Write the changelog line; skip the docs note for now."})
    call("read_file", {"path": "CHANGELOG.md"},
         "# Changelog\n\n## 2.7.1\n- Fix: snapshot checksum on big-endian hosts.\n\n## 2.7.0\n- Add resize().\n")
    probes = ["Don't disable the flaky test", "compatible with Python 3.9", "no match statements",
              "time.monotonic() everywhere", "_evict_expired_entries", "Keep the helper's name",
              "skip the docs note"]
    return {"model": "gpt-4o", "messages": msgs}, probes


# ---------------------------------------------------------------------------------------------
# 3. A long planning chat: prose only.

TOPICS = ["onboarding", "billing", "offline sync", "push notifications", "analytics", "accessibility",
          "localization", "release process", "support tooling", "data retention", "performance budget",
          "beta program"]
OPENERS = ["Here is how I would approach {t}.", "Let me lay out the options for {t}.",
           "Good question; {t} touches several teams.", "For {t}, three things matter most."]
SENTENCES = [
    "The main risk is that {t} grows in scope while the launch date stays fixed, so we should cut it into slices that ship on their own.",
    "A first slice could cover the common path only, with the edge cases tracked as follow-ups rather than blocking the release.",
    "On the engineering side, {t} depends on the API contract being frozen two weeks before code freeze.",
    "Design needs about a week of lead time, so the mock-ups should be reviewed in the sprint before implementation starts.",
    "We should define one measurable outcome for {t}, for example the share of new users who complete it within their first session.",
    "Support will want a short runbook: what can go wrong, how to spot it in the dashboards, and who is on call for it.",
    "If we keep the work behind a feature flag, we can roll it out to the beta group first and watch the crash-free rate.",
    "The cost is mostly people's time; the infrastructure part is small compared with what we already run.",
    "Legal review is usually the slowest step, so it is worth sending them the data flows for {t} early.",
    "For QA, a checklist of twenty manual cases plus the automated suite should be enough for the first slice.",
    "I would not build an admin UI for {t} yet; a script the on-call engineer can run is cheaper and good enough for v2.",
    "The dependency on the Android team is the critical path: their sprint starts a week after ours.",
]


def prose(rng, topic, paragraphs):
    out = [rng.choice(OPENERS).format(t=topic)]
    for i in range(paragraphs):
        sents = rng.sample(SENTENCES, 4)
        out.append(f"**{i + 1}. {rng.choice(['Scope', 'Risks', 'Timeline', 'Owners', 'Measures', 'Dependencies'])}.** "
                   + " ".join(s.format(t=topic) for s in sents))
    out.append("- " + "\n- ".join(rng.sample([
        f"Draft the one-pager for {topic} by Friday.", f"Ask design for the {topic} mock-ups.",
        f"List the open questions on {topic} for the steering meeting.", f"Estimate {topic} in story points.",
        f"Check the {topic} analytics events with the data team."], 3)))
    return "\n\n".join(out)


def planning_chat():
    rng = random.Random(1403)
    s = Native()
    decisions = {
        2: "Decision: we go with Postgres, not MongoDB, for the v2 backend. The team knows it and we need the joins.",
        5: "Let's fix the public launch date: March 14. The beta starts February 10.",
        8: "Budget: we cap the external spend at 40,000 euros for the whole launch, agencies included.",
        11: "Maria owns the onboarding flow end to end; Tom takes billing.",
        14: "We drop dark mode from v2. It goes to the v2.1 backlog, not before.",
        17: "Analytics: only first-party events, no third-party SDKs in the app. That is a hard rule from the DPO.",
        20: "Offline sync is read-only in v2; editing offline waits for v2.1.",
    }
    s.user("We are planning the v2 launch of our field-service mobile app (iOS and Android, about 12,000 "
           "active technicians). I want to go through the plan topic by topic with you over the next hour. "
           "Keep a running list of what I decide.")
    for i in range(28):
        topic = TOPICS[i % len(TOPICS)]
        s.assistant(prose(rng, topic, rng.randint(4, 6)))
        if i in decisions:
            s.user(decisions[i] + " " + rng.choice(["Next topic.", "Move on.", "What's next?", "Continue."]))
        else:
            s.user(rng.choice([f"Tell me more about the risks of {topic}.", f"How would you staff {TOPICS[(i + 1) % 12]}?",
                               f"What would you cut from {TOPICS[(i + 1) % 12]} if we are late?",
                               f"Let's talk about {TOPICS[(i + 1) % 12]} now."]))
    s.assistant("Here is the list of your decisions so far, and the open questions for the steering meeting.")
    s.user("Good. Before the meeting, draft the agenda; keep it to one page.")
    probes = ["we go with Postgres, not MongoDB", "public launch date: March 14", "The beta starts February 10",
              "cap the external spend at 40,000 euros", "Maria owns the onboarding flow", "We drop dark mode from v2",
              "no third-party SDKs", "Offline sync is read-only in v2"]
    return {"format": "context-condenser/conversation@1",
            "system": "You are a pragmatic product and engineering planning assistant.",
            "messages": s.messages}, probes


# ---------------------------------------------------------------------------------------------
# 4. Anthropic Messages session with images and tool use.

def tsx_component(rng, name, n):
    lines = ["import React from 'react';", "import { useResponsiveColumns } from '../hooks/useResponsiveColumns';",
             "import styles from './" + name + ".module.css';", ""]
    for i in range(n):
        comp = pascal(rng.choice(NOUNS), rng.choice(["Card", "Row", "Cell", "Header", "Badge"]))
        lines += [f"export function {comp}{i}({{ items, compact }}: {{ items: string[]; compact?: boolean }}) {{",
                  "  const columns = useResponsiveColumns({ min: 1, max: compact ? 2 : 4 });",
                  "  return (",
                  f"    <div className={{styles.{camel(rng.choice(NOUNS), 'grid')}}} style={{{{ gridTemplateColumns: `repeat(${{columns}}, 1fr)` }}}}>",
                  "      {items.map((item) => (",
                  f"        <span key={{item}} className={{styles.{rng.choice(['cell', 'tag', 'label'])}}}>{{item}}</span>",
                  "      ))}", "    </div>", "  );", "}", ""]
    return "\n".join(lines)


def anthropic_images():
    rng = random.Random(1404)
    msgs = []
    n = [0]

    def image(seed, w=48, h=32):
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png(w, h, seed)}}

    def tool(name, inp, result, text=None):
        n[0] += 1
        tid = f"toolu_01{n[0]:04}"
        content = ([{"type": "text", "text": text}] if text else []) + [
            {"type": "tool_use", "id": tid, "name": name, "input": inp}]
        msgs.append({"role": "assistant", "content": content})
        res = result if isinstance(result, list) else [{"type": "text", "text": result}]
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": tid, "content": res}]})

    files = {f"src/components/{c}.tsx": tsx_component(rng, c, rng.randint(8, 12))
             for c in ["InvoiceGrid", "CustomerCard", "Toolbar", "Button"]}
    files["src/hooks/useResponsiveColumns.ts"] = (
        "import { useEffect, useState } from 'react';\n\n"
        "/** Columns for a grid from the window width, between min and max. */\n"
        "export function useResponsiveColumns({ min, max }: { min: number; max: number }) {\n"
        "  const [width, setWidth] = useState(window.innerWidth);\n"
        "  useEffect(() => {\n    const on = () => setWidth(window.innerWidth);\n"
        "    window.addEventListener('resize', on);\n    return () => window.removeEventListener('resize', on);\n  }, []);\n"
        "  return Math.max(min, Math.min(max, Math.floor(width / 320)));\n}\n")
    msgs.append({"role": "user", "content": [
        {"type": "text", "text": "The invoice grid breaks on tablets: the cards overlap the toolbar (screenshot). "
                                 "Fix the layout. Two constraints: the brand color must stay #0B5FFF, and do not "
                                 "change the public props of Button, three other apps import it."},
        image(1)]})
    tool("screenshot", {"url": "http://localhost:5173/invoices", "viewport": {"width": 820, "height": 1180}},
         [image(2), {"type": "text", "text": "Screenshot of http://localhost:5173/invoices at 820x1180."}],
         "Let me reproduce it at a tablet width.")
    for p in ["src/components/InvoiceGrid.tsx", "src/hooks/useResponsiveColumns.ts", "src/components/Toolbar.tsx",
              "src/components/Button.tsx", "src/components/CustomerCard.tsx"]:
        tool("str_replace_based_edit_tool", {"command": "view", "path": p}, files[p])
    msgs.append({"role": "assistant", "content": [{"type": "text", "text":
        "useResponsiveColumns divides the window width by 320 but ignores the sidebar, so at 820px it asks "
        "for two columns that only fit without the sidebar. I'll measure the grid's own width instead."}]})
    msgs.append({"role": "user", "content": [{"type": "text", "text":
        "Agreed, measure the container with a ResizeObserver. Keep the hook's name useResponsiveColumns, "
        "the dashboard uses it too."}]})
    for round_ in range(4):
        tool("str_replace_based_edit_tool", {"command": "str_replace", "path": "src/hooks/useResponsiveColumns.ts",
                                             "old_str": f"Math.floor(width / {320 + round_ * 10})",
                                             "new_str": f"Math.floor(width / {330 + round_ * 10})"},
             "The file src/hooks/useResponsiveColumns.ts has been edited.")
        tool("screenshot", {"url": "http://localhost:5173/invoices", "viewport": {"width": 820, "height": 1180}},
             [image(10 + round_), {"type": "text", "text": f"Screenshot after change {round_ + 1}."}])
        for p in ["src/components/InvoiceGrid.tsx", "src/components/Toolbar.tsx"]:
            tool("str_replace_based_edit_tool", {"command": "view", "path": p}, files[p])
        tool("bash", {"command": "pnpm vitest run src/components"},
             vitest_output(rng, ["src/components/InvoiceGrid.test.tsx", "src/components/Toolbar.test.tsx",
                                 "src/components/Button.test.tsx", "src/hooks/useResponsiveColumns.test.ts"],
                           ("useResponsiveColumns > two columns at 820px", "2", str(rng.randint(1, 3)),
                            "src/hooks/useResponsiveColumns.test.ts") if round_ < 3 else None))
        if round_ == 1:
            msgs.append({"role": "user", "content": [
                {"type": "text", "text": "Here is how it looks on my iPad now; the toolbar is fine, the last card is cut."},
                image(20)]})
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "I see it; the grid's padding is not subtracted. Fixing."}]})
    msgs.append({"role": "assistant", "content": [{"type": "text", "text":
        "Fixed: the hook observes the grid element and the grid subtracts its padding. Button is untouched and "
        "the color tokens are unchanged. Still open: a visual regression test at 820px and one at 1024px."}]})
    msgs.append({"role": "user", "content": [{"type": "text", "text": "Add the 820px visual test now; the 1024px one can wait."}]})
    probes = ["the brand color must stay #0B5FFF", "do not change the public props of Button",
              "useResponsiveColumns", "measure the container with a ResizeObserver",
              "visual regression test at 820px"]
    return {"model": "claude-sonnet-4-5", "max_tokens": 4096,
            "system": "You are a front-end engineer. You can view and edit files, run commands and take screenshots.",
            "messages": msgs}, probes


# ---------------------------------------------------------------------------------------------

def flat_text(value):
    """Every string in a JSON value, for checking that each probe occurs in its fixture."""
    if isinstance(value, str):
        return value + "\n"
    if isinstance(value, list):
        return "".join(flat_text(v) for v in value)
    if isinstance(value, dict):
        return "".join(flat_text(v) for k, v in value.items() if k != "data")
    return ""


def norm(text):
    return re.sub(r"\s+", " ", text).strip().lower()


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, make in [("coding-todos", coding_todos), ("debug-openai", debug_openai),
                       ("planning-chat", planning_chat), ("anthropic-images", anthropic_images)]:
        doc, probes = make()
        haystack = norm(flat_text(doc))
        for p in probes:
            assert norm(p) in haystack, f"{name}: probe {p!r} is not in the conversation"
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
            f.write("\n")
        with open(os.path.join(OUT, name + ".probes"), "w", encoding="utf-8") as f:
            f.write(f"# Phrases a condensation of {name}.json must keep (scripts/make-eval-fixtures.py).\n")
            f.write("\n".join(probes) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fixture LLM HTTP server for integration tests (Python 3 stdlib only).

Speaks the real OpenAI Chat Completions, OpenAI Responses, Anthropic Messages
and Gemini API (generateContent) wire formats, both non-streaming (JSON) and
streaming (Server-Sent Events), and plays a scripted agent (below) that real
agent CLIs (Claude Code, Codex, Cline, Qwen Code, OpenCode, Gemini CLI) run
their tool loops against.

Usage:
    python3 tests/servers/fixture_llm.py [--port 0] [--answer TEXT]
                                         [--answer-file PATH] [--summaries]
                                         [--stall-seconds 30] [--quiet]

Binds 127.0.0.1 only (port 0 = pick a free port). Once listening it prints
exactly one line ``LISTENING <port>`` to stdout. It exits on SIGTERM/SIGINT
and when stdin (if it is a pipe or socket) reaches EOF, so it dies together
with the test process that spawned it. Spawn it with a piped stdin and keep
the write end open for as long as the server is needed.

Endpoints:
    POST   /v1/chat/completions  (also /chat/completions)  OpenAI format
           requires ``Authorization: Bearer <key>`` (any non-empty key, or
           exactly the one given with --api-key), unless --no-auth is given:
           then no key is needed, as with a local server (Ollama, llama.cpp)
    POST   /v1/responses         (also /responses)         OpenAI Responses API
           auth as for chat completions. Stream events: response.created,
           response.in_progress, response.output_item.added,
           response.content_part.added, response.output_text.delta/.done,
           response.function_call_arguments.delta/.done,
           response.content_part.done, response.output_item.done,
           response.completed (usage with input_tokens_details.cached_tokens)
    POST   /v1/messages          (also /messages)          Anthropic format
           requires ``x-api-key`` and ``anthropic-version`` headers
    POST   /v1/messages/count_tokens (also /messages/count_tokens)
           {"input_tokens": N}, N = characters of system+tools+messages / 4
    POST   /v1beta/models/MODEL:generateContent               Gemini API
    POST   /v1beta/models/MODEL:streamGenerateContent?alt=sse (also /v1/, /v1alpha/)
           the model is the path's, not the body's. Key: ``x-goog-api-key``,
           else ``?key=``, else ``Authorization: Bearer``; none is a 403
           PERMISSION_DENIED, a wrong one (with --api-key) a 400
           INVALID_ARGUMENT/API_KEY_INVALID, as Google answers. The stream is
           ``data: {GenerateContentResponse}`` events, text in pieces of a few
           words, the last event with finishReason and usageMetadata
           (promptTokenCount, candidatesTokenCount, totalTokenCount,
           cachedContentTokenCount when not 0)
    POST   /v1beta/models/MODEL:countTokens
           {"totalTokens": N}, N = characters of systemInstruction+tools+
           contents / 4 (also inside a generateContentRequest)
    GET    /v1/models            (also /models) lists the model "fixture"
           (Anthropic shape when x-api-key/anthropic-version is sent,
           OpenAI shape otherwise)
    GET    /health               {"status": "ok"}
    GET    /requests             every LLM request so far:
                                 [{path, url (with the query), bytes,
                                   headers (lower-case), body}]; a Gemini
                                 request's model is in its path only
                                 (/v1beta/models/MODEL:METHOD)
    GET    /requests/<i>/raw     the exact bytes of request i of that list
    DELETE /requests             clears the recorded list
    GET    /hostile              every hostile request so far, in order:
                                 [{mode, wire, closed}], closed true once the
                                 server saw the client close the connection

Prompt caching. An Anthropic request (the scripted agent's too) is billed by Anthropic's
rules (its documentation, "Prompt caching"): the request is a list of blocks in cache order
(each tool, each system block, each message's content blocks), a block's tokens its canonical
JSON's characters (role included, ``cache_control`` left out) over four, counted over the
prefix; a prefix is written only at a ``cache_control`` breakpoint, and only when it has at
least the model's minimum (1,024 tokens for Claude models, 4,096 for Opus 4.5/4.6/4.7 and
Haiku 4.5, 2,048 for Haiku 3/3.5, 512 for Opus 5, Fable 5, Mythos 5; none for the fixture's
own model names); a request reads the longest prefix written before and still alive that ends
at one of its breakpoints or within the 20 blocks before one; writes live 5 minutes, or an
hour with ``"ttl": "1h"``, from their last use. Usage reports cache_read_input_tokens,
cache_creation_input_tokens and cache_creation.ephemeral_5m/1h_input_tokens, input_tokens being
the rest. The clock is the server's, or the request's ``x-fixture-now-ms`` header (for tests
that let time pass). The same rules are the core's ``crates/condense-core/src/billing/cache.rs``,
written apart. A Chat Completions request with ``prompt_cache_key`` reads the prefix shared
with that key's previous prompt (prompt_tokens_details.cached_tokens). Gemini caches
implicitly: a request reads the prefix (of systemInstruction, tools, contents) shared with the
previous request of the same key and model (cachedContentTokenCount). With --summaries, a
request asking for the core's summary is answered with an extractive summary of its own
conversation.

LLM requests are recorded before auth checks and fault handling, so tests
can count attempts (retries included).

Scripted agent mode, selected by the model name, in all four wire formats (for Anthropic and
Gemini also by an ``x-fixture-script: script-agent-N`` header, the model then any name, e.g. a
real one a gateway has a price for):
    script-agent        2 tool rounds, then a final answer
    script-agent-N      N tool rounds, then a final answer
    script-agent-N-recall
                        the same, and once a request carries a gateway's recall
                        line ("The hidden messages are in PATH; read that file
                        ..."), one read of PATH with the client's own tool
                        before the next round (not counted as a round)
On each request the server reads the conversation: while fewer than N tool
results have arrived (and the request declares tools) it answers with one tool
call, chosen by name from the request's own ``tools`` and shaped by their
schemas: even rounds read the k-th slice of 500 lines of the file (Claude Code
``Read`` {file_path, offset, limit}; Cline ``read_files`` {files: [{path,
start_line, end_line}]}; Gemini CLI ``read_file`` {file_path, start_line,
end_line}; without a read tool, a shell tool runs ``sed -n``), odd rounds run
``grep -n MARKER FILE; wc -c FILE`` through the shell tool (``Bash`` {command},
Codex ``exec_command`` {cmd}, ``shell`` {command: [..]}, Cline ``run_commands``
{commands: [..]}, Gemini CLI ``run_shell_command`` {command}, ...). A Gemini
request's tools are its ``functionDeclarations``, its tool results its
``functionResponse`` parts, its user texts each user turn's text parts joined;
a call is answered as a ``functionCall`` part with a ``thoughtSignature``,
after a text part saying what it is for. FILE is the first absolute path
in the user's messages that names an existing file. Then it answers
"Scripted agent done after K tool rounds (C characters of tool results).
Markers seen: M." with every ``MARKER: value`` found in the tool results. A
request without tools that asks for the core's summary ("Write a detailed
summary of the conversation above") gets a sectioned summary naming the
markers its conversation shows. A
request whose tools offer no fitting tool, or with no file named, gets a 400
that says why (Gemini: 400 INVALID_ARGUMENT). Usage: Anthropic requests are
billed by the prompt cache below (Claude Code's own breakpoints decide what is
read and written); Chat and Responses count a prompt cache per session
(``prompt_cache_key``), Gemini per key and model: the prefix shared with the
session's previous request is reported as cached
(prompt_tokens_details.cached_tokens / input_tokens_details.cached_tokens /
cachedContentTokenCount).

Fault modes are selected by the request's ``model`` field (Gemini: the path's
model); every other model name gets a normal answer. Each wire format uses its
own error bodies (Gemini: ``{"error": {code, message, status}}``; fault-529 is
a 503 UNAVAILABLE there).
    fault-401           401 auth error, even when a key is present
    fault-401-link      401 whose message carries a Markdown command link, as a
                        hostile server's would (VS Code renders links in toasts)
    fault-429           429 rate limit, header ``Retry-After: 1``
    fault-429-once      429 for the first request with this model (per path,
                        per server process), normal answers afterwards
    fault-500           500 server error
    fault-500-once      500 once (as above), normal answers afterwards
    fault-529           Anthropic: 529 overloaded_error; OpenAI: 503
    fault-overflow      400 context-length-exceeded error
    fault-overflow-once-condensed
                        fault-overflow for the first request with this model
                        whose messages carry the state ledger of a condensation
                        (a condensed chat's first request), normal afterwards
    fault-overflow-above-N
                        fault-overflow when the request's messages hold more
                        than N characters, normal answers otherwise
    fault-cut           stream: start + deltas "Partial ", "answer", then the
                        connection is closed with no finish/[DONE]/
                        message_stop. Non-stream: Content-Length larger than
                        the body actually written, then close.
    fault-malformed     stream: delta "Partial answer", then an event whose
                        data is not JSON, then the rest of a normal stream.
                        Non-stream: 200 with truncated JSON body.
    fault-stall         stream: start + delta "Partial", then silence for
                        --stall-seconds (default 30), then close.
                        Non-stream: silence before anything is sent.
    fault-stream-error  stream: delta "Partial", then an in-stream error
                        event, then close. Non-stream: OpenAI 500 /
                        Anthropic 529 with the same error body.

Hostile modes, for the reliability tests: a server that is not merely broken
but works against the client. OpenAI wire, unless marked:
    hostile-echo-key    401 whose JSON body and a header echo the request's key
                        (also Anthropic: the key from x-api-key, Anthropic's body)
    hostile-echo-stream stream: the key in an answer delta, then in an error event
    hostile-endless     stream: deltas forever, as fast as the client reads
                        (also Anthropic: content_block_delta events)
    hostile-drip        stream: one byte every 50 ms, forever
    hostile-drip-error  500 whose JSON error body drips one byte every 50 ms
                        (a Content-Length of 1 GB: it would take weeks)
    hostile-stall-headers
                        reads the request, then sends nothing at all (no
                        status, no headers) until the client closes
    hostile-endless-line stream: ``data: `` then a line that never ends
    hostile-malformed   stream: a delta, then an event whose data is not JSON
                        and carries the request's key
    hostile-huge-error  500 with a 200 MB error body
    hostile-html        200 with an HTML page (a login portal, a proxy)
Each hostile request is listed by GET /hostile; endless and stalling modes
mark it closed when the client goes away (a failed write, or EOF while
stalling), which is how tests see that the client really stopped.
"""

import argparse
import base64
import hashlib
import json
import os
import re
import select
import signal
import socket
import stat
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_ANSWER = """\
## 1. Primary request
The user asked to fix a bug in the expression parser where nested \
parentheses were silently dropped.

## 2. Work completed
- Reproduced the failure with a minimal test case.
- Fixed the recursion in `parse_group` and added regression tests.

## 3. Current state
All parser tests pass.

## 4. Next steps
Review edge cases for empty groups and trailing commas."""

OPENAI_PATHS = ("/v1/chat/completions", "/chat/completions")
ANTHROPIC_PATHS = ("/v1/messages", "/messages")
COUNT_TOKENS_PATHS = ("/v1/messages/count_tokens", "/messages/count_tokens")
RESPONSES_PATHS = ("/v1/responses", "/responses")
MODEL_PATHS = ("/v1/models", "/models")
# Gemini API: the model and the method are in the path, e.g.
# /v1beta/models/gemini-2.5-flash:streamGenerateContent (?alt=sse in the query).
GEMINI_PATH_RE = re.compile(
    r"/(?:v1beta|v1alpha|v1)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)")
MODEL_ID = "fixture"
WORDS_PER_DELTA = 3

# --------------------------------------------------------------------------
# Error bodies: (status, body, extra headers) per fault, per wire format.
# --------------------------------------------------------------------------


def openai_error(message, type_, param=None, code=None):
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def anthropic_error(type_, message):
    return {"type": "error", "error": {"type": type_, "message": message}}


def gemini_error(code, status, message, reason=None):
    """A Google API error body; `reason` adds the ErrorInfo detail Google sends with it."""
    error = {"code": code, "message": message, "status": status}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                             "domain": "googleapis.com",
                             "metadata": {"service": "generativelanguage.googleapis.com"}}]
    return {"error": error}


OPENAI_AUTH_ERROR = openai_error(
    "Incorrect API key provided", "invalid_request_error", None, "invalid_api_key")
OPENAI_SERVER_ERROR = openai_error(
    "The server had an error while processing your request.", "server_error")
ANTHROPIC_AUTH_ERROR = anthropic_error("authentication_error", "invalid x-api-key")
ANTHROPIC_OVERLOADED = anthropic_error("overloaded_error", "Overloaded")

RETRY_AFTER = {"Retry-After": "1"}

# A 401 whose message would run a command if a toast rendered it as a link.
LINK_MESSAGE = "Incorrect API key provided. [Fix it here](command:workbench.action.terminal.new)"

OPENAI_FAULTS = {
    "fault-401": (401, OPENAI_AUTH_ERROR, {}),
    "fault-401-link": (401, openai_error(LINK_MESSAGE, "invalid_request_error", None, "invalid_api_key"), {}),
    "fault-429": (429, openai_error(
        "Rate limit reached", "requests", None, "rate_limit_exceeded"), RETRY_AFTER),
    "fault-500": (500, OPENAI_SERVER_ERROR, {}),
    "fault-529": (503, openai_error(
        "The engine is currently overloaded", "server_error"), {}),
    "fault-overflow": (400, openai_error(
        "This model's maximum context length is 128000 tokens. However, your "
        "messages resulted in 130000 tokens.",
        "invalid_request_error", "messages", "context_length_exceeded"), {}),
    # Non-stream variant of fault-stream-error.
    "fault-stream-error": (500, OPENAI_SERVER_ERROR, {}),
}

ANTHROPIC_FAULTS = {
    "fault-401": (401, ANTHROPIC_AUTH_ERROR, {}),
    "fault-429": (429, anthropic_error(
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit"), RETRY_AFTER),
    "fault-500": (500, anthropic_error("api_error", "Internal server error"), {}),
    "fault-529": (529, ANTHROPIC_OVERLOADED, {}),
    "fault-overflow": (400, anthropic_error(
        "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), {}),
    # Non-stream variant of fault-stream-error.
    "fault-stream-error": (529, ANTHROPIC_OVERLOADED, {}),
}

GEMINI_INTERNAL = gemini_error(
    500, "INTERNAL", "An internal error has occurred. Please retry or report in "
    "https://developers.generativeai.google/guide/troubleshooting")

GEMINI_FAULTS = {
    "fault-401": (401, gemini_error(
        401, "UNAUTHENTICATED", "Request had invalid authentication credentials."), {}),
    "fault-401-link": (401, gemini_error(401, "UNAUTHENTICATED", LINK_MESSAGE), {}),
    "fault-429": (429, gemini_error(
        429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."), RETRY_AFTER),
    "fault-500": (500, GEMINI_INTERNAL, {}),
    "fault-529": (503, gemini_error(
        503, "UNAVAILABLE", "The model is overloaded. Please try again later."), {}),
    "fault-overflow": (400, gemini_error(
        400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number "
        "of tokens allowed (1048576)."), {}),
    # Non-stream variant of fault-stream-error.
    "fault-stream-error": (500, GEMINI_INTERNAL, {}),
}

OVERFLOW_ABOVE = "fault-overflow-above-"
OVERFLOW_ONCE_CONDENSED = "fault-overflow-once-condensed"
ONCE_FAULTS = {"fault-429-once": "fault-429", "fault-500-once": "fault-500"}

# --------------------------------------------------------------------------
# Shared server state.
# --------------------------------------------------------------------------


class State:
    def __init__(self, answer, stall_seconds):
        self.answer = answer
        self.stall_seconds = stall_seconds
        self.lock = threading.Lock()
        self.requests = []
        self.raw = []  # the exact request bodies, in the order of self.requests
        self.prompts = {}  # prompt-cache key -> the previous prompt's text (cached_prefix)
        self.breakpoints = {}  # Anthropic: hash of a prefix written -> [expires, ttl seconds]
        self.once_fired = set()  # (path, model) pairs whose one-shot fault fired
        self.hostile = []  # {mode, wire, closed} per hostile request

    def hostile_started(self, mode, wire):
        entry = {"mode": mode, "wire": wire, "closed": False}
        with self.lock:
            self.hostile.append(entry)
        return entry

    def hostile_closed(self, entry):
        with self.lock:
            entry["closed"] = True

    def hostile_snapshot(self):
        with self.lock:
            return [dict(e) for e in self.hostile]

    def record(self, path, headers, body, url=None, raw=b""):
        with self.lock:
            self.requests.append({"path": path, "url": url or path, "bytes": len(raw),
                                  "headers": headers, "body": body})
            self.raw.append(raw)

    def snapshot(self):
        with self.lock:
            return list(self.requests)

    def raw_body(self, index):
        """The exact bytes of request `index` (as listed by GET /requests), or None."""
        with self.lock:
            return self.raw[index] if 0 <= index < len(self.raw) else None

    def clear(self):
        with self.lock:
            self.requests.clear()
            self.raw.clear()
            self.prompts.clear()
            self.breakpoints.clear()

    def breakpoint_cache(self, blocks, minimum, now):
        """Anthropic's prompt cache for a request's blocks, in cache order, each (canonical text,
        characters, breakpoint lifetime in seconds or None), at time `now` (seconds): (read,
        written for 5 minutes, written for an hour, neither) tokens, by the rules in the module's
        documentation. Every prefix is keyed by a hash of the canonical blocks so far."""
        prefixes = []  # (digest, tokens) of the prefix ending with each block
        digest = hashlib.sha256()
        chars = 0
        for canonical, size, _ in blocks:
            digest.update(canonical.encode())
            digest.update(b"\x00")
            chars += size
            prefixes.append((digest.copy().hexdigest(), chars // 4))

        def upto(n):
            return prefixes[n - 1][1] if n else 0

        marks = [i for i, block in enumerate(blocks) if block[2]]
        with self.lock:
            live = {k: v for k, v in self.breakpoints.items() if v[0] >= now}
            self.breakpoints = live
            read_end = 0
            for b in marks:
                for p in range(b, max(0, b - LOOKBACK_BLOCKS) - 1, -1):
                    if prefixes[p][0] in live:
                        read_end = max(read_end, p + 1)
                        break
            if read_end:
                entry = live[prefixes[read_end - 1][0]]
                entry[0] = max(entry[0], now + entry[1])
            written, w5, w1 = read_end, 0, 0
            for b in marks:
                ttl = blocks[b][2]
                if prefixes[b][1] < minimum:
                    continue
                if b + 1 > written:
                    segment = prefixes[b][1] - upto(written)
                    if ttl > 300:
                        w1 += segment
                    else:
                        w5 += segment
                    written = b + 1
                entry = live.setdefault(prefixes[b][0], [now + ttl, ttl])
                entry[1] = max(entry[1], ttl)
                entry[0] = max(entry[0], now + entry[1])
            total = prefixes[-1][1] if prefixes else 0
            return upto(read_end), w5, w1, total - upto(written)

    def cached_prefix(self, key, prompt):
        """Characters of `prompt` shared with the start of the previous prompt under `key`, as a
        provider's prompt cache would find them; remembers `prompt` for the next request."""
        with self.lock:
            previous = self.prompts.get(key, "")
            self.prompts[key] = prompt
        n = 0
        for a, b in zip(previous, prompt):
            if a != b:
                break
            n += 1
        return n

    def take_once(self, path, model):
        """True the first time (path, model) is seen, False afterwards."""
        with self.lock:
            key = (path, model)
            if key in self.once_fired:
                return False
            self.once_fired.add(key)
            return True


STATE = None  # set in main()

# --------------------------------------------------------------------------
# Text helpers.
# --------------------------------------------------------------------------


def content_chars(content):
    """Characters of text in a string, or a list of text parts/blocks."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        return sum(content_chars(part) for part in content)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return len(content["text"])
        if "content" in content:  # e.g. Anthropic tool_result blocks
            return content_chars(content["content"])
    return 0


def messages_chars(messages):
    if not isinstance(messages, list):
        return 0
    return sum(content_chars(m.get("content")) for m in messages if isinstance(m, dict))


def count_words(text):
    return len(text.split())


def split_deltas(text, words_per_delta=WORDS_PER_DELTA):
    """Split text into chunks of a few words; their concatenation == text."""
    pieces = re.findall(r"\S+\s*", text)
    if not pieces:
        return [text] if text else []
    lead = text[: len(text) - len(text.lstrip())]
    pieces[0] = lead + pieces[0]
    return ["".join(pieces[i:i + words_per_delta])
            for i in range(0, len(pieces), words_per_delta)]


def decode_chunked(rfile):
    """Read a chunked transfer-encoded request body."""
    data = b""
    while True:
        size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            while rfile.readline() not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return data
        data += rfile.read(size)
        rfile.readline()  # CRLF after the chunk


# --------------------------------------------------------------------------
# Scripted agent mode: tool calls the client really executes, then an answer.
# --------------------------------------------------------------------------

SCRIPT_AGENT = "script-agent"
SCRIPT_AGENT_ROUNDS = 2
SCRIPT_READ_LINES = 500  # lines per read round (a round k reads the k-th slice of the file)
MARKER_RE = re.compile(r"MARKER[:=]\s*([A-Za-z0-9_.\-]+)")
PATH_RE = re.compile(r"(?<![\w/:.])(/[^\s'\"`<>()\[\]{},;|]+)")

# The tools the scripted agent looks for, by name, in the order it prefers them (Gemini CLI's are
# read_file {file_path, start_line, end_line} and run_shell_command {command}).
READ_TOOLS = ("Read", "read_files", "read_file", "view_file", "read")
SHELL_TOOLS = ("Bash", "shell", "shell_command", "exec_command", "run_commands", "run_shell_command",
               "execute_command", "run_command", "bash", "local_shell")


def script_rounds(model):
    """N for a scripted-agent model (`script-agent` = 2, `script-agent-N`, `-recall` after
    either), else None."""
    model = (model or "").removesuffix(RECALL_SUFFIX)
    if model == SCRIPT_AGENT:
        return SCRIPT_AGENT_ROUNDS
    m = re.fullmatch(re.escape(SCRIPT_AGENT) + r"-(\d+)", model)
    return int(m.group(1)) if m else None


# The recall variant (`script-agent-N-recall`): a gateway that condensed names the file of what it
# hid in this line of the message replacing it; the agent reads the file's first lines once.
RECALL_SUFFIX = "-recall"
RECALL_RE = re.compile(r"The hidden messages are in (.+?); read that file with your file tool")
RECALL_READ_LINES = 40


def text_of(content):
    """The text in a string, a list of parts/blocks, or a block."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(text_of(part) for part in content)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        for key in ("content", "output"):
            if key in content:
                return text_of(content[key])
    return ""


class AgentView:
    """What the scripted agent reads from a request, whatever its wire format: the tools the
    client declares (name -> JSON schema of the arguments), the tool results so far and the
    user's texts."""

    def __init__(self, tools, results, user_texts):
        self.tools = tools
        self.results = results
        self.user_texts = user_texts


def anthropic_view(body):
    tools = {t["name"]: t.get("input_schema") or {}
             for t in body.get("tools") or [] if isinstance(t, dict) and "name" in t}
    results, texts = [], []
    for m in body.get("messages") or []:
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
            continue
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                results.append(text_of(block.get("content")))
            elif block.get("type") == "text":
                texts.append(block.get("text") or "")
    return AgentView(tools, results, texts)


def chat_view(body):
    tools = {}
    for t in body.get("tools") or []:
        fn = t.get("function") if isinstance(t, dict) else None
        if isinstance(fn, dict) and "name" in fn:
            tools[fn["name"]] = fn.get("parameters") or {}
    results, texts = [], []
    for m in body.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "tool":
            results.append(text_of(m.get("content")))
        elif m.get("role") == "user":
            texts.append(text_of(m.get("content")))
    return AgentView(tools, results, texts)


def responses_view(body):
    tools = {}
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if t.get("type") == "local_shell":
            tools["local_shell"] = {}
        elif "name" in t:
            tools[t["name"]] = t.get("parameters") or {}
    results, texts = [], []
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") in ("function_call_output", "custom_tool_call_output",
                                "local_shell_call_output"):
            results.append(text_of(item.get("output")))
        elif item.get("role") == "user":
            texts.append(text_of(item.get("content")))
    return AgentView(tools, results, texts)


def gemini_view(body):
    """The view of a Gemini API request: tools from ``functionDeclarations``, results from
    ``functionResponse`` parts, and each user turn's text parts joined into one text (Gemini CLI's
    first turn is its session context, then the prompt: together, the task)."""
    tools = {}
    for t in body.get("tools") or []:
        for fn in (t.get("functionDeclarations") or []) if isinstance(t, dict) else []:
            if isinstance(fn, dict) and "name" in fn:
                tools[fn["name"]] = fn.get("parametersJsonSchema") or fn.get("parameters") or {}
    results, texts = [], []
    for c in body.get("contents") or []:
        if not isinstance(c, dict) or c.get("role", "user") == "model":
            continue
        said = []
        for part in c.get("parts") or []:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("functionResponse"), dict):
                response = part["functionResponse"].get("response")
                results.append(text_of(response) or json.dumps(response))
            elif isinstance(part.get("text"), str) and not part.get("thought"):
                said.append(part["text"])
        if said:
            texts.append("\n".join(said))
    return AgentView(tools, results, texts)


def find_file(texts):
    """The first absolute path in the user's texts that names an existing file."""
    for text in texts:
        for m in PATH_RE.finditer(text):
            path = m.group(1).rstrip(".:!?")
            if os.path.isfile(path):
                return path
    return None


def shell_quote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def props(schema):
    p = schema.get("properties") if isinstance(schema, dict) else None
    return p if isinstance(p, dict) else {}


def fill_required(schema, args):
    """Adds the required arguments the script does not know, as false/empty values."""
    for name in (schema.get("required") or []) if isinstance(schema, dict) else []:
        if name in args:
            continue
        kind = str(props(schema).get(name, {}).get("type")).lower()  # Gemini spells OBJECT, ...
        args[name] = {"boolean": False, "array": [], "object": {},
                      "integer": 0, "number": 0}.get(kind, "")
    return args


def read_args(schema, path, first, last):
    """Arguments for a read tool: the path and, when the tool takes one, the line range."""
    p = props(schema)
    if "files" in p:  # Cline's read_files: [{path, start_line, end_line}]
        return {"files": [{"path": path, "start_line": first, "end_line": last}]}
    if "paths" in p:
        return {"paths": [path]}
    key = next((k for k in ("file_path", "path", "absolute_path", "filePath", "file")
                if k in p), "path")
    args = {key: path}
    if "offset" in p and "limit" in p:  # Claude Code's Read
        args.update({"offset": first, "limit": last - first + 1})
    elif "start_line" in p and "end_line" in p:
        args.update({"start_line": first, "end_line": last})
    return fill_required(schema, args)


def shell_args(name, schema, command):
    """Arguments for a shell tool, in the shape its schema declares."""
    p = props(schema)
    if name == "local_shell":
        return {"command": ["bash", "-lc", command]}
    if "commands" in p:  # Cline's run_commands
        return {"commands": [command]}
    if "cmd" in p and "command" not in p:  # Codex's exec_command
        return fill_required(schema, {"cmd": command})
    if str(p.get("command", {}).get("type")).lower() == "array":  # Codex's shell
        return fill_required(schema, {"command": ["bash", "-lc", command]})
    return fill_required(schema, {"command": command})


def pick_tool(tools, names):
    return next((n for n in names if n in tools), None)


# The tool rounds the scripted agent has asked for, by task (the first user text): a gateway
# between the client and this server may condense old tool results away, and an agent that
# counted only the results it still sees would repeat its rounds (and their ids) for ever.
SCRIPT_ROUNDS = {}
# The recall file each task's agent read (the recall variant), by task.
SCRIPT_RECALLED = {}
SCRIPT_LOCK = threading.Lock()


# How the core's summary requests ask (its SUMMARY_PROMPT): a gateway writing a summary with the
# agent's own model (`--summarize-with-upstream`) sends one to the scripted model.
SUMMARY_ASK = "Write a detailed summary of the conversation above"


def script_summary(view):
    """The scripted model's summary: the sections the request asks for, naming every marker the
    summarized conversation shows."""
    markers = []
    for text in view.user_texts:
        for m in MARKER_RE.findall(text):
            if m not in markers:
                markers.append(m)
    return ("1. Primary request and intent: the scripted agent's task (fixture summary).\n"
            "3. Files and code: the file was read in slices. Markers seen: %s.\n"
            "8. Current work: reading the file." % (", ".join(markers) or "none"))


PATHISH_RE = re.compile(r"(?:[\w.-]+/)+[\w.-]+\.\w+")


def summary_answer(view):
    """For a request that asks for the core's summary (SUMMARY_ASK) without the scripted agent:
    an extractive summary in the sections asked for, from the request's own user texts (the
    first request, file paths, errors, every user message's opening, the latest one), so that
    its size follows the conversation's. None for any other request."""
    texts = view.user_texts
    if not texts or SUMMARY_ASK not in texts[-1]:
        return None
    said = [t.split("Write a detailed summary")[0].strip() for t in texts]
    said = [t for t in said if t]
    everything = "\n".join(said + view.results)
    paths = []
    for m in PATHISH_RE.findall(everything):
        if m not in paths:
            paths.append(m)
    errors = [line.strip()[:160] for line in everything.splitlines()
              if "error" in line.lower()][:5]
    opening = lambda t, n: " ".join(t.split())[:n]
    lines = ["1. Primary request and intent: %s" % (opening(said[0], 300) if said else "none"),
             "2. Key technical concepts: see the files and messages below.",
             "3. Files and code: %s" % (", ".join(paths[:20]) or "none named"),
             "4. Errors and fixes: %s" % ("; ".join(errors) or "none"),
             "5. Problem solving: in progress.",
             "6. All user messages:"]
    lines += ["   - %s" % opening(t, 160) for t in said[-15:]]
    lines += ["7. Pending tasks: what the latest messages ask.",
              "8. Current work: %s" % (opening(said[-1], 200) if said else "none"),
              "9. Next step: continue with the latest request."]
    return "\n".join(lines)


# Blocks Anthropic looks back over from a breakpoint for a prefix written before.
LOOKBACK_BLOCKS = 20


def min_cacheable(model):
    """The shortest prefix Anthropic writes to its cache for `model`, in tokens (0 for the
    fixture's own model names)."""
    m = (model or "").lower()
    for prefix, tokens in (("claude-opus-4-5", 4096), ("claude-opus-4-6", 4096),
                           ("claude-opus-4-7", 4096), ("claude-haiku-4-5", 4096),
                           ("claude-haiku-5-5", 4096), ("claude-3-5-haiku", 2048),
                           ("claude-3-haiku", 2048), ("claude-opus-5", 512),
                           ("claude-fable-5", 512), ("claude-mythos-5", 512)):
        if m.startswith(prefix):
            return tokens
    return 1024 if m.startswith("claude-") else 0


def anthropic_blocks(body):
    """A Messages request's blocks in cache order (tools, system, messages), each as (canonical
    text: its role and its JSON without cache_control, its characters, the lifetime in seconds
    its breakpoint asks for or None)."""
    def canonical(role, block):
        ttl = None
        if isinstance(block, dict):
            control = block.get("cache_control")
            if control is not None:
                ttl = 3600 if isinstance(control, dict) and control.get("ttl") == "1h" else 300
            block = {k: v for k, v in block.items() if k != "cache_control"}
        text = role + json.dumps(block, sort_keys=True, ensure_ascii=False)
        return text, len(text), ttl

    blocks = [canonical("tools", t) for t in body.get("tools") or []]
    system = body.get("system")
    if isinstance(system, str):
        blocks.append(canonical("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        blocks += [canonical("system", b) for b in system]
    for m in body.get("messages") or []:
        content = m.get("content") if isinstance(m, dict) else None
        role = str(m.get("role")) if isinstance(m, dict) else ""
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for b in content if isinstance(content, list) else []:
            blocks.append(canonical(role, b))
    return blocks


def anthropic_usage(handler, body, model):
    """The prompt's usage as Anthropic reports it, billed by the fixture's cache."""
    now_header = handler.headers.get("x-fixture-now-ms", "").strip()
    now = float(now_header) / 1000.0 if now_header else time.time()
    read, w5, w1, rest = STATE.breakpoint_cache(anthropic_blocks(body), min_cacheable(model), now)
    return {"input_tokens": rest, "cache_creation_input_tokens": w5 + w1,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": w5, "ephemeral_1h_input_tokens": w1}}


def script_step(view, rounds, model=""):
    """The scripted agent's next move: ("tool", name, args, note), ("final", text) or
    ("error", message). Sets ``view.round``: the round this move is (its ids' number)."""
    if not view.tools and any(SUMMARY_ASK in t for t in view.user_texts):
        view.round = 0
        return ("final", script_summary(view))
    task = view.user_texts[0] if view.user_texts else ""
    recall = (model or "").endswith(RECALL_SUFFIX)
    with SCRIPT_LOCK:
        recalled = task in SCRIPT_RECALLED
        k = max(len(view.results) - int(recalled), SCRIPT_ROUNDS.get(task, 0))
        named = next((m.group(1) for t in view.user_texts for m in RECALL_RE.finditer(t)), None)
        if recall and not recalled and named and view.tools and k < rounds:
            step = recall_move(view, named)
            if step[0] == "tool":
                SCRIPT_RECALLED[task] = named
                # Ids of their own: the rounds' ids go on from k.
                view.round = 1000 + k
                return step
        step = script_move(view, rounds, k)
        if step[0] == "tool":
            SCRIPT_ROUNDS[task] = k + 1
    view.round = k
    return step


def recall_move(view, path):
    """A read of the first RECALL_READ_LINES lines of `path` with the client's read tool, else
    with its shell."""
    read = pick_tool(view.tools, READ_TOOLS)
    note = "Reading what the gateway hid, in %s." % path
    if read:
        return ("tool", read, read_args(view.tools[read], path, 1, RECALL_READ_LINES), note)
    shell = pick_tool(view.tools, SHELL_TOOLS)
    if shell is None:
        return ("error", "script-agent: no read or shell tool to read the recall file with")
    command = "sed -n '1,%dp' %s" % (RECALL_READ_LINES, shell_quote(path))
    return ("tool", shell, shell_args(shell, view.tools[shell], command), note)


def script_move(view, rounds, k):
    if k >= rounds or not view.tools:
        markers = []
        for text in view.results:
            for m in MARKER_RE.findall(text):
                if m not in markers:
                    markers.append(m)
        seen = sum(len(t) for t in view.results)
        return ("final", "Scripted agent done after %d tool rounds (%d characters of tool "
                "results). Markers seen: %s." % (k, seen, ", ".join(markers) or "none"))
    path = find_file(view.user_texts)
    if path is None:
        return ("error", "script-agent: no absolute path of an existing file in the user's "
                "messages; name the file to read in the task")
    read = pick_tool(view.tools, READ_TOOLS)
    shell = pick_tool(view.tools, SHELL_TOOLS)
    declared = ", ".join(sorted(view.tools))
    first = (k // 2) * SCRIPT_READ_LINES + 1
    last = first + SCRIPT_READ_LINES - 1
    if k % 2 == 0 and read:
        return ("tool", read, read_args(view.tools[read], path, first, last),
                "Reading lines %d-%d of %s." % (first, last, path))
    if shell is None:
        return ("error", "script-agent: no %s tool among the declared tools (%s)"
                % ("read or shell" if k % 2 == 0 else "shell", declared))
    if k % 2 == 0:
        command = "sed -n '%d,%dp' %s" % (first, last, shell_quote(path))
        note = "Reading lines %d-%d of %s." % (first, last, path)
    else:
        command = "grep -n MARKER %s; wc -c %s" % (shell_quote(path), shell_quote(path))
        note = "Looking for the marker in %s." % path
    return ("tool", shell, shell_args(shell, view.tools[shell], command), note)


# --------------------------------------------------------------------------
# Request handler.
# --------------------------------------------------------------------------


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fixture-llm/1.0"
    quiet = False
    api_key = None
    no_auth = False
    summaries = False  # --summaries: extractive answers to summary requests

    def log_message(self, fmt, *args):
        if not self.quiet:
            sys.stderr.write("fixture_llm: %s - %s\n" % (self.address_string(), fmt % args))

    # ---- low-level response helpers ------------------------------------

    def send_json(self, status, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_raw(status, body, "application/json", headers)

    def send_raw(self, status, body, content_type, headers=None, content_length=None):
        self.send_response(status, "Overloaded" if status == 529 else None)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length",
                         str(len(body) if content_length is None else content_length))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def start_sse(self, headers=None):
        """Begin a streaming response: no Content-Length, Connection: close."""
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

    def write_event(self, data, event=None):
        """Write one SSE event; data is a dict (JSON-encoded) or a raw string."""
        if not isinstance(data, str):
            data = json.dumps(data)
        text = ("event: %s\n" % event if event else "") + "data: %s\n\n" % data
        self.wfile.write(text.encode())
        self.wfile.flush()

    def hang_up(self):
        """Close the connection now, without finishing the response."""
        self.close_connection = True
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def stall(self):
        time.sleep(STATE.stall_seconds)
        self.hang_up()

    def lower_headers(self):
        return {name.lower(): value for name, value in self.headers.items()}

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            return decode_chunked(self.rfile)
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # ---- dispatch ------------------------------------------------------

    def do_GET(self):
        self.guarded(self.route_get)

    def do_POST(self):
        self.guarded(self.route_post)

    def do_DELETE(self):
        self.guarded(self.route_delete)

    def guarded(self, route):
        try:
            route(self.path.split("?", 1)[0])
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError):
            self.close_connection = True

    def not_found(self):
        self.send_json(404, {"error": {"message": "Not found: %s %s" % (self.command, self.path),
                                       "type": "not_found_error"}})

    def route_get(self, path):
        if path == "/health":
            self.send_json(200, {"status": "ok"})
        elif path == "/requests":
            self.send_json(200, STATE.snapshot())
        elif re.fullmatch(r"/requests/\d+/raw", path):
            raw = STATE.raw_body(int(path.split("/")[2]))
            if raw is None:
                self.not_found()
            else:
                self.send_raw(200, raw, "application/octet-stream")
        elif path == "/hostile":
            self.send_json(200, STATE.hostile_snapshot())
        elif path in MODEL_PATHS:
            self.send_json(200, self.models_list())
        else:
            self.not_found()

    def route_delete(self, path):
        if path == "/requests":
            STATE.clear()
            self.send_json(200, {"status": "cleared"})
        else:
            self.not_found()

    def route_post(self, path):
        gemini = GEMINI_PATH_RE.fullmatch(path)
        if gemini:
            kind = "gemini"
        elif path in OPENAI_PATHS:
            kind = "openai"
        elif path in ANTHROPIC_PATHS:
            kind = "anthropic"
        elif path in RESPONSES_PATHS:
            kind = "responses"
        elif path in COUNT_TOKENS_PATHS:
            kind = "count_tokens"
        else:
            self.read_body()
            self.not_found()
            return
        raw = self.read_body()
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError):
            body = None
        STATE.record(path, self.lower_headers(),
                     body if body is not None else raw.decode("utf-8", "replace"),
                     url=self.path, raw=raw)
        if kind == "openai":
            self.handle_openai(path, body)
        elif kind == "responses":
            self.handle_responses(path, body)
        elif kind == "count_tokens":
            self.handle_count_tokens(body)
        elif kind == "gemini":
            self.handle_gemini(path, body, *gemini.groups())
        else:
            self.handle_anthropic(path, body)

    def models_list(self):
        now = int(time.time())
        if self.headers.get("x-api-key") or self.headers.get("anthropic-version"):
            return {"data": [{"type": "model", "id": MODEL_ID, "display_name": "Fixture",
                              "created_at": "2024-01-01T00:00:00Z"}],
                    "has_more": False, "first_id": MODEL_ID, "last_id": MODEL_ID}
        return {"object": "list",
                "data": [{"id": MODEL_ID, "object": "model", "created": now,
                          "owned_by": "fixture"}]}

    def resolve_fault(self, path, model, body):
        """Map the model name to an active fault name, or None."""
        if isinstance(model, str) and model.startswith(OVERFLOW_ABOVE):
            limit = int(model[len(OVERFLOW_ABOVE):])
            return "fault-overflow" if messages_chars(body.get("messages")) > limit else None
        if model == OVERFLOW_ONCE_CONDENSED:
            condensed = "context_condenser_ledger" in json.dumps(body.get("messages"))
            return "fault-overflow" if condensed and STATE.take_once(path, model) else None
        if model in ONCE_FAULTS:
            return ONCE_FAULTS[model] if STATE.take_once(path, model) else None
        if isinstance(model, str) and model.startswith("fault-"):
            return model
        return None

    def status_fault(self, faults, fault, stream, headers):
        """Answers with the fault's error status, if it is one (a stream-error fault is played
        inside the stream instead). Returns whether it answered."""
        if fault not in faults or (stream and fault == "fault-stream-error"):
            return False
        status, err, extra = faults[fault]
        self.send_json(status, err, {**headers, **extra})
        return True

    def key_ok(self, key):
        """Any non-empty key, or exactly the one given with --api-key."""
        return bool(key) and (Handler.api_key is None or key == Handler.api_key)

    def anthropic_key(self):
        """The caller's Anthropic credential: ``x-api-key``, else, as Anthropic takes a Claude
        subscription's sign-in, an OAuth ``Authorization: Bearer`` token sent with the
        ``oauth-2025-04-20`` beta."""
        key = self.headers.get("x-api-key", "").strip()
        if key:
            return key
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Bearer ") and "oauth-2025-04-20" in self.headers.get("anthropic-beta", ""):
            return auth[len("Bearer "):].strip()
        return ""

    # ---- OpenAI --------------------------------------------------------

    def handle_openai(self, path, body):
        headers = {"x-request-id": "req_fixture"}
        auth = self.headers.get("Authorization", "")
        model = body.get("model") if isinstance(body, dict) else None
        if isinstance(model, str) and model.startswith("hostile-"):
            self.hostile(model, auth[len("Bearer "):].strip())
            return
        key_sent = auth.startswith("Bearer ") and self.key_ok(auth[len("Bearer "):].strip())
        if not key_sent and not (Handler.no_auth and not auth):
            self.send_json(401, OPENAI_AUTH_ERROR, headers)
            return
        if not isinstance(body, dict):
            self.send_json(400, openai_error(
                "We could not parse the JSON body of your request.",
                "invalid_request_error"), headers)
            return
        model = body.get("model") or MODEL_ID
        fault = self.resolve_fault(path, model, body)
        stream = body.get("stream") is True
        if self.status_fault(OPENAI_FAULTS, fault, stream, headers):
            return
        rounds = script_rounds(model)
        if rounds is not None:
            self.script_chat(body, model, rounds, stream, headers)
            return
        answer = (Handler.summaries and summary_answer(chat_view(body))) or STATE.answer
        usage = {
            "prompt_tokens": messages_chars(body.get("messages")) // 4 + 1,
            "completion_tokens": count_words(answer),
        }
        if body.get("prompt_cache_key"):
            # OpenAI caches the prefix shared with the key's previous prompt.
            cached = STATE.cached_prefix(("chat", str(body["prompt_cache_key"])),
                                         json.dumps(body.get("messages"))) // 4
            usage["prompt_tokens_details"] = {"cached_tokens": min(cached, usage["prompt_tokens"])}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if stream:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self.openai_stream(model, answer, usage, include_usage, fault, headers)
        else:
            self.openai_complete(model, answer, usage, fault, headers)

    def openai_complete(self, model, answer, usage, fault, headers):
        if fault == "fault-stall":
            self.stall()
            return
        if fault == "fault-malformed":
            self.send_raw(200, b'{"id": "chatcmpl', "application/json", headers)
            return
        body = json.dumps({
            "id": "chatcmpl-fixture",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": answer, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }],
            "usage": usage,
            "system_fingerprint": None,
        }).encode()
        if fault == "fault-cut":
            self.send_raw(200, body[: len(body) // 2], "application/json", headers,
                          content_length=len(body))
            self.hang_up()
            return
        self.send_raw(200, body, "application/json", headers)

    def openai_stream(self, model, answer, usage, include_usage, fault, headers):
        created = int(time.time())

        def chunk(delta, finish_reason=None):
            obj = {
                "id": "chatcmpl-fixture",
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None,
                             "finish_reason": finish_reason}],
            }
            if include_usage:
                obj["usage"] = None
            return obj

        def content(text):
            self.write_event(chunk({"content": text}))

        self.start_sse(headers)
        self.write_event(chunk({"role": "assistant", "content": ""}))
        if self.stream_fault(fault, content,
                             lambda: self.write_event(OPENAI_SERVER_ERROR),
                             lambda: self.write_event('{"choices": [ this is not json')):
            return
        for piece in split_deltas(answer):
            content(piece)
        self.write_event(chunk({}, "stop"))
        if include_usage:
            final = chunk({})
            final["choices"] = []
            final["usage"] = usage
            self.write_event(final)
        self.write_event("[DONE]")
        self.hang_up()

    def wait_for_close(self, seconds=600):
        """Sends nothing; returns True once the client closes the connection (EOF or a reset)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            readable, _, _ = select.select([self.connection], [], [], 0.05)
            if readable:
                try:
                    if self.connection.recv(1, socket.MSG_PEEK) == b"":
                        return True
                except OSError:
                    return True
                time.sleep(0.05)  # the client sent more bytes: not a close
        return False

    def hostile(self, mode, key, wire="openai"):
        """Plays a hostile server; endless modes end when the client goes away, which the entry
        of GET /hostile records."""
        entry = STATE.hostile_started(mode, wire)

        def delta(text):
            if wire == "anthropic":
                self.write_event({"type": "content_block_delta", "index": 0,
                                  "delta": {"type": "text_delta", "text": text}},
                                 event="content_block_delta")
            else:
                self.write_event({"choices": [{"index": 0, "delta": {"content": text},
                                               "finish_reason": None}]})
        try:
            if mode == "hostile-echo-key" and wire == "anthropic":
                self.send_json(401, anthropic_error("authentication_error",
                                                    "invalid x-api-key: %s" % key),
                               {"x-echo-key": key})
            elif mode == "hostile-echo-key":
                self.send_json(401, openai_error("Incorrect API key provided: %s." % key,
                                                 "invalid_request_error"),
                               {"x-echo-key": key})
            elif mode == "hostile-echo-stream":
                self.start_sse()
                delta("You sent the key %s, " % key)
                delta("and nothing else.")
                self.write_event(openai_error("key %s is revoked" % key, "server_error"))
                self.hang_up()
            elif mode == "hostile-endless":
                self.start_sse()
                if wire == "anthropic":
                    self.write_event({"type": "message_start", "message": {
                        "id": "msg_hostile", "type": "message", "role": "assistant",
                        "content": [], "model": mode, "stop_reason": None,
                        "usage": {"input_tokens": 1, "output_tokens": 1}}},
                        event="message_start")
                    self.write_event({"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}},
                                     event="content_block_start")
                i = 0
                while True:
                    delta("word%d " % i)
                    i += 1
            elif mode == "hostile-drip":
                self.start_sse()
                delta("Partial ")
                while True:
                    self.wfile.write(b":")
                    self.wfile.flush()
                    time.sleep(0.05)
            elif mode == "hostile-drip-error":
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(1 << 30))
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "')
                while True:
                    self.wfile.write(b"e")
                    self.wfile.flush()
                    time.sleep(0.05)
            elif mode == "hostile-stall-headers":
                self.close_connection = True
                if self.wait_for_close():
                    STATE.hostile_closed(entry)
            elif mode == "hostile-endless-line":
                self.start_sse()
                self.wfile.write(b'data: {"choices": [')
                block = b"x" * 65536
                while True:
                    self.wfile.write(block)
            elif mode == "hostile-malformed":
                self.start_sse()
                delta("Partial answer")
                self.write_event('{"choices": [ %s is not json' % key)
                self.write_event("[DONE]")
                self.hang_up()
            elif mode == "hostile-huge-error":
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(200 << 20))
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "')
                block = b"e" * 65536
                for _ in range((200 << 20) // 65536):
                    self.wfile.write(block)
            elif mode == "hostile-html":
                self.send_raw(200, b"<html><body><h1>Sign in to continue</h1></body></html>",
                              "text/html")
            else:
                self.send_json(400, openai_error("unknown hostile mode " + mode,
                                                 "invalid_request_error"))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
            STATE.hostile_closed(entry)

    def stream_fault(self, fault, delta, send_error, send_malformed):
        """Plays the part of a streaming fault both wire formats share, with each format's own
        delta, error event and malformed event. True when the stream is over."""
        if fault == "fault-cut":
            delta("Partial ")
            delta("answer")
            self.hang_up()
            return True
        if fault == "fault-stall":
            delta("Partial")
            self.stall()
            return True
        if fault == "fault-stream-error":
            delta("Partial")
            send_error()
            self.hang_up()
            return True
        if fault == "fault-malformed":
            delta("Partial answer")
            send_malformed()
        return False

    # ---- Anthropic -----------------------------------------------------

    def handle_anthropic(self, path, body):
        headers = {"request-id": "req_fixture"}
        model = body.get("model") if isinstance(body, dict) else None
        if isinstance(model, str) and model.startswith("hostile-"):
            self.hostile(model, self.headers.get("x-api-key", "").strip(), wire="anthropic")
            return
        if not self.key_ok(self.anthropic_key()):
            self.send_json(401, ANTHROPIC_AUTH_ERROR, headers)
            return
        if not self.headers.get("anthropic-version", "").strip():
            self.send_json(400, anthropic_error(
                "invalid_request_error", "anthropic-version: header is required"), headers)
            return
        if not isinstance(body, dict):
            self.send_json(400, anthropic_error(
                "invalid_request_error", "There was an issue with your request body: "
                "it is not valid JSON"), headers)
            return
        model = body.get("model") or MODEL_ID
        fault = self.resolve_fault(path, model, body)
        stream = body.get("stream") is True
        if self.status_fault(ANTHROPIC_FAULTS, fault, stream, headers):
            return
        if "max_tokens" not in body:
            self.send_json(400, anthropic_error(
                "invalid_request_error", "max_tokens: Field required"), headers)
            return
        # The scripted agent under a real model's name: the `x-fixture-script` header names the
        # script (`script-agent-N`), the model stays the one asked for (priced by a gateway).
        script = self.headers.get("x-fixture-script", "").strip() or model
        rounds = script_rounds(script)
        if rounds is not None:
            self.script_anthropic(body, model, rounds, stream, headers, script)
            return
        answer = (Handler.summaries and summary_answer(anthropic_view(body))) or STATE.answer
        cache = anthropic_usage(self, body, model)
        input_tokens = cache.pop("input_tokens")
        output_tokens = count_words(answer)
        if stream:
            self.anthropic_stream(model, answer, input_tokens, output_tokens, fault, headers, cache)
        else:
            self.anthropic_complete(model, answer, input_tokens, output_tokens, fault, headers, cache)

    def anthropic_complete(self, model, answer, input_tokens, output_tokens, fault, headers,
                           cache=None):
        if fault == "fault-stall":
            self.stall()
            return
        if fault == "fault-malformed":
            self.send_raw(200, b'{"id": "msg_fix', "application/json", headers)
            return
        body = json.dumps({
            "id": "msg_fixture",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": answer}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                      **(cache or {})},
        }).encode()
        if fault == "fault-cut":
            self.send_raw(200, body[: len(body) // 2], "application/json", headers,
                          content_length=len(body))
            self.hang_up()
            return
        self.send_raw(200, body, "application/json", headers)

    def anthropic_stream(self, model, answer, input_tokens, output_tokens, fault, headers,
                         cache=None):
        def event(name, data):
            self.write_event(data, event=name)

        def delta(text):
            event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                          "delta": {"type": "text_delta", "text": text}})

        self.start_sse(headers)
        event("message_start", {"type": "message_start", "message": {
            "id": "msg_fixture", "type": "message", "role": "assistant", "content": [],
            "model": model, "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1, **(cache or {})}}})
        event("content_block_start", {"type": "content_block_start", "index": 0,
                                      "content_block": {"type": "text", "text": ""}})
        event("ping", {"type": "ping"})
        if self.stream_fault(fault, delta,
                             lambda: event("error", ANTHROPIC_OVERLOADED),
                             lambda: event("content_block_delta", "{not json")):
            return
        for piece in split_deltas(answer):
            delta(piece)
        event("content_block_stop", {"type": "content_block_stop", "index": 0})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                "usage": {"output_tokens": output_tokens}})
        event("message_stop", {"type": "message_stop"})
        self.hang_up()

    # ---- Scripted agent (Anthropic and Chat; Responses and Gemini inline theirs) ----

    def script_usage(self, wire, key, prompt):
        """(total input tokens, of which cached) for a prompt, with a prompt cache per session
        key that holds the prefix shared with the session's previous request."""
        total = len(prompt) // 4 + 1
        cached = min(STATE.cached_prefix((wire, key), prompt) // 4, total)
        return total, cached

    def script_anthropic(self, body, model, rounds, stream, headers, script=None):
        view = anthropic_view(body)
        step = script_step(view, rounds, script or model)
        if step[0] == "error":
            self.send_json(400, anthropic_error("invalid_request_error", step[1]), headers)
            return
        cache = anthropic_usage(self, body, model)
        k = view.round
        if step[0] == "final":
            blocks, stop = [{"type": "text", "text": step[1]}], "end_turn"
        else:
            _, name, args, note = step
            blocks = [{"type": "text", "text": note},
                      {"type": "tool_use", "id": "toolu_script_%d" % k, "name": name,
                       "input": args}]
            stop = "tool_use"
        output_tokens = sum(count_words(b.get("text", "")) for b in blocks) + 5
        usage = {**cache, "output_tokens": output_tokens}
        message = {"id": "msg_script_%d" % k, "type": "message", "role": "assistant",
                   "model": model, "content": blocks, "stop_reason": stop,
                   "stop_sequence": None, "usage": usage}
        if not stream:
            self.send_json(200, message, headers)
            return

        def event(name, data):
            self.write_event(data, event=name)

        self.start_sse(headers)
        event("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}})
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {"type": "text", "text": ""}})
                for piece in split_deltas(block["text"]):
                    event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": "text_delta", "text": piece}})
            else:
                event("content_block_start", {"type": "content_block_start", "index": i,
                                              "content_block": {**block, "input": {}}})
                args = json.dumps(block["input"])
                half = len(args) // 2
                for piece in (args[:half], args[half:]):
                    event("content_block_delta", {"type": "content_block_delta", "index": i,
                                                  "delta": {"type": "input_json_delta",
                                                            "partial_json": piece}})
            event("content_block_stop", {"type": "content_block_stop", "index": i})
        event("message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": stop, "stop_sequence": None},
                                "usage": {"output_tokens": output_tokens}})
        event("message_stop", {"type": "message_stop"})
        self.hang_up()

    def script_chat(self, body, model, rounds, stream, headers):
        view = chat_view(body)
        step = script_step(view, rounds, model)
        if step[0] == "error":
            self.send_json(400, openai_error(step[1], "invalid_request_error"), headers)
            return
        total, cached = self.script_usage(
            "chat", str(body.get("prompt_cache_key") or body.get("user") or ""),
            json.dumps([body.get("tools"), body.get("messages")]))
        k = view.round
        if step[0] == "final":
            text, calls, finish = step[1], [], "stop"
        else:
            _, name, args, text = step
            calls = [{"id": "call_script_%d" % k, "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}}]
            finish = "tool_calls"
        completion = count_words(text) + 5
        usage = {"prompt_tokens": total, "completion_tokens": completion,
                 "total_tokens": total + completion,
                 "prompt_tokens_details": {"cached_tokens": cached}}
        created = int(time.time())
        if not stream:
            message = {"role": "assistant", "content": text, "refusal": None}
            if calls:
                message["tool_calls"] = calls
            self.send_json(200, {
                "id": "chatcmpl-script-%d" % k, "object": "chat.completion", "created": created,
                "model": model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                             "finish_reason": finish}],
                "usage": usage, "system_fingerprint": None}, headers)
            return
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta, finish_reason=None):
            obj = {"id": "chatcmpl-script-%d" % k, "object": "chat.completion.chunk",
                   "created": created, "model": model, "system_fingerprint": None,
                   "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                "finish_reason": finish_reason}]}
            if include_usage:
                obj["usage"] = None
            return obj

        self.start_sse(headers)
        self.write_event(chunk({"role": "assistant", "content": ""}))
        for piece in split_deltas(text):
            self.write_event(chunk({"content": piece}))
        for i, call in enumerate(calls):
            self.write_event(chunk({"tool_calls": [{
                "index": i, "id": call["id"], "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""}}]}))
            args = call["function"]["arguments"]
            half = len(args) // 2
            for piece in (args[:half], args[half:]):
                self.write_event(chunk({"tool_calls": [{"index": i,
                                                        "function": {"arguments": piece}}]}))
        self.write_event(chunk({}, finish))
        if include_usage:
            final = chunk({})
            final["choices"] = []
            final["usage"] = usage
            self.write_event(final)
        self.write_event("[DONE]")
        self.hang_up()

    # ---- OpenAI Responses ----------------------------------------------

    def handle_responses(self, path, body):
        headers = {"x-request-id": "req_fixture"}
        auth = self.headers.get("Authorization", "")
        key_sent = auth.startswith("Bearer ") and self.key_ok(auth[len("Bearer "):].strip())
        if not key_sent and not (Handler.no_auth and not auth):
            self.send_json(401, OPENAI_AUTH_ERROR, headers)
            return
        if not isinstance(body, dict):
            self.send_json(400, openai_error(
                "We could not parse the JSON body of your request.",
                "invalid_request_error"), headers)
            return
        model = body.get("model") or MODEL_ID
        fault = self.resolve_fault(path, model, body)
        stream = body.get("stream") is True
        if self.status_fault(OPENAI_FAULTS, fault, stream, headers):
            return
        prompt = json.dumps([body.get("instructions"), body.get("tools"), body.get("input")])
        rounds = script_rounds(model)
        if rounds is None:
            total = (content_chars(body.get("instructions"))
                     + len(text_of(body.get("input")))) // 4 + 1
            cached = min(STATE.cached_prefix(
                ("responses", str(body.get("prompt_cache_key") or "")), prompt) // 4, total)
            text = STATE.answer
            items = [self.responses_message("msg_fixture", text)]
        else:
            view = responses_view(body)
            step = script_step(view, rounds, model)
            if step[0] == "error":
                self.send_json(400, openai_error(step[1], "invalid_request_error"), headers)
                return
            total, cached = self.script_usage(
                "responses", str(body.get("prompt_cache_key") or ""), prompt)
            k = view.round
            if step[0] == "final":
                text = step[1]
                items = [self.responses_message("msg_script_%d" % k, text)]
            else:
                _, name, args, text = step
                items = [self.responses_message("msg_script_%d" % k, text),
                         self.responses_call(k, name, args)]
            fault = None
        output_tokens = count_words(text) + 5
        usage = {"input_tokens": total, "input_tokens_details": {"cached_tokens": cached},
                 "output_tokens": output_tokens,
                 "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": total + output_tokens}
        response = {
            "id": "resp_fixture", "object": "response", "created_at": int(time.time()),
            "status": "completed", "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "max_output_tokens": None,
            "model": model, "output": items, "parallel_tool_calls": True,
            "previous_response_id": None, "reasoning": {"effort": None, "summary": None},
            "store": bool(body.get("store", False)), "temperature": 1.0,
            "text": {"format": {"type": "text"}}, "tool_choice": "auto", "tools": [],
            "top_p": 1.0, "truncation": "disabled", "usage": usage, "metadata": {}}
        if stream:
            self.responses_stream(response, fault, headers)
        elif fault == "fault-stall":
            self.stall()
        elif fault == "fault-malformed":
            self.send_raw(200, b'{"id": "resp_fix', "application/json", headers)
        elif fault == "fault-cut":
            raw = json.dumps(response).encode()
            self.send_raw(200, raw[: len(raw) // 2], "application/json", headers,
                          content_length=len(raw))
            self.hang_up()
        else:
            self.send_json(200, response, headers)

    @staticmethod
    def responses_message(item_id, text):
        return {"id": item_id, "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}]}

    @staticmethod
    def responses_call(k, name, args):
        if name == "local_shell":
            return {"id": "lsh_script_%d" % k, "type": "local_shell_call",
                    "call_id": "call_script_%d" % k, "status": "completed",
                    "action": {"type": "exec", "command": args["command"], "env": {}}}
        return {"id": "fc_script_%d" % k, "type": "function_call", "status": "completed",
                "call_id": "call_script_%d" % k, "name": name, "arguments": json.dumps(args)}

    def responses_stream(self, response, fault, headers):
        seq = [0]

        def event(data):
            data = {**data, "sequence_number": seq[0]}
            seq[0] += 1
            self.write_event(data, event=data["type"])

        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        self.start_sse(headers)
        event({"type": "response.created", "response": pending})
        event({"type": "response.in_progress", "response": pending})
        for i, item in enumerate(response["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                event({"type": "response.output_item.added", "output_index": i,
                       "item": {**item, "status": "in_progress", "content": []}})
                event({"type": "response.content_part.added", "item_id": item["id"],
                       "output_index": i, "content_index": 0,
                       "part": {"type": "output_text", "text": "", "annotations": []}})

                def delta(piece, item=item, i=i):
                    event({"type": "response.output_text.delta", "item_id": item["id"],
                           "output_index": i, "content_index": 0, "delta": piece,
                           "logprobs": []})

                if i == 0 and self.stream_fault(
                        fault, delta,
                        lambda: event({"type": "error", "code": "server_error",
                                       "message": OPENAI_SERVER_ERROR["error"]["message"],
                                       "param": None}),
                        lambda: self.write_event("{not json", event="response.output_text.delta")):
                    return
                for piece in split_deltas(text):
                    delta(piece)
                event({"type": "response.output_text.done", "item_id": item["id"],
                       "output_index": i, "content_index": 0, "text": text, "logprobs": []})
                event({"type": "response.content_part.done", "item_id": item["id"],
                       "output_index": i, "content_index": 0, "part": item["content"][0]})
            elif item["type"] == "function_call":
                event({"type": "response.output_item.added", "output_index": i,
                       "item": {**item, "status": "in_progress", "arguments": ""}})
                args = item["arguments"]
                half = len(args) // 2
                for piece in (args[:half], args[half:]):
                    event({"type": "response.function_call_arguments.delta",
                           "item_id": item["id"], "output_index": i, "delta": piece})
                event({"type": "response.function_call_arguments.done", "item_id": item["id"],
                       "output_index": i, "arguments": args})
            else:
                event({"type": "response.output_item.added", "output_index": i, "item": item})
            event({"type": "response.output_item.done", "output_index": i, "item": item})
        event({"type": "response.completed", "response": response})
        self.hang_up()

    # ---- Gemini API ----------------------------------------------------

    def gemini_key(self):
        """The caller's Gemini API key: the ``x-goog-api-key`` header, else the ``key`` query
        parameter, else an ``Authorization: Bearer`` token (what Gemini CLI sends with
        GEMINI_API_KEY_AUTH_MECHANISM=bearer)."""
        key = self.headers.get("x-goog-api-key", "").strip()
        if key:
            return key
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        key = (query.get("key") or [""])[0].strip()
        if key:
            return key
        auth = self.headers.get("Authorization", "")
        return auth[len("Bearer "):].strip() if auth.startswith("Bearer ") else ""

    def handle_gemini(self, path, body, model, method):
        """generateContent (JSON), streamGenerateContent (SSE) and countTokens for the model named
        in the path, which the body does not repeat."""
        key = self.gemini_key()
        if not key:
            self.send_json(403, gemini_error(
                403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers "
                "without established identity). Please use API Key or other form of API consumer "
                "identity to call this API."))
            return
        if not self.key_ok(key):
            # What Google answers for a wrong key: 400, not 401.
            self.send_json(400, gemini_error(
                400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
                "API_KEY_INVALID"))
            return
        if not isinstance(body, dict):
            self.send_json(400, gemini_error(
                400, "INVALID_ARGUMENT", "Invalid JSON payload received."))
            return
        if method == "countTokens":
            # The request is {contents} or {generateContentRequest: {contents, tools, ...}}.
            inner = body.get("generateContentRequest")
            inner = inner if isinstance(inner, dict) else body
            prompt = json.dumps([inner.get("systemInstruction"), inner.get("tools"),
                                 inner.get("contents")])
            self.send_json(200, {"totalTokens": len(prompt) // 4 + 1})
            return
        # resolve_fault reads Chat-style messages: the same turns, their parts as the content.
        turns = [{"content": c.get("parts")} for c in body.get("contents") or []
                 if isinstance(c, dict)]
        fault = self.resolve_fault(path, model, {"messages": turns})
        stream = method == "streamGenerateContent"
        if self.status_fault(GEMINI_FAULTS, fault, stream, {}):
            return
        view = gemini_view(body)
        # As for Anthropic, `x-fixture-script` selects the script under a real model's name.
        script = self.headers.get("x-fixture-script", "").strip() or model
        rounds = script_rounds(script)
        k = 0
        if rounds is None:
            parts = [{"text": (Handler.summaries and summary_answer(view)) or STATE.answer}]
        else:
            step = script_step(view, rounds, script)
            if step[0] == "error":
                self.send_json(400, gemini_error(400, "INVALID_ARGUMENT", step[1]))
                return
            k, fault = view.round, None
            if step[0] == "final":
                parts = [{"text": step[1]}]
            else:
                _, name, args, note = step
                # Gemini 3 models sign their calls; the client must send the signature back.
                signature = base64.b64encode(b"fixture-thought-signature-%d" % k).decode()
                parts = [{"text": note}, {"functionCall": {"name": name, "args": args},
                                          "thoughtSignature": signature}]
        # Gemini caches implicitly: the prefix shared with the previous request of the same key
        # and model is reported as cachedContentTokenCount (left out when 0, as Google does).
        prompt = json.dumps([body.get("systemInstruction"), body.get("tools"),
                             body.get("contents")])
        total, cached = self.script_usage("gemini", "%s/%s" % (key, model), prompt)
        output = sum(count_words(p.get("text", "")) for p in parts) + 5
        usage = {"promptTokenCount": total, "candidatesTokenCount": output,
                 "totalTokenCount": total + output,
                 "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]}
        if cached:
            usage["cachedContentTokenCount"] = cached
            usage["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]

        def answer(parts, last):
            """A GenerateContentResponse with `parts`; the last one finishes and has the usage."""
            candidate = {"content": {"role": "model", "parts": parts}, "index": 0}
            obj = {"candidates": [candidate]}
            if last:
                candidate["finishReason"] = "STOP"
                obj["usageMetadata"] = usage
            obj.update({"modelVersion": model, "responseId": "fixture-gemini-%d" % k})
            return obj

        if not stream:
            if fault == "fault-stall":
                self.stall()
                return
            if fault == "fault-malformed":
                self.send_raw(200, b'{"candidates": [', "application/json")
                return
            raw = json.dumps(answer(parts, True)).encode()
            if fault == "fault-cut":
                self.send_raw(200, raw[: len(raw) // 2], "application/json",
                              content_length=len(raw))
                self.hang_up()
                return
            self.send_raw(200, raw, "application/json")
            return
        # The stream: each text in pieces of a few words (two at least), every other part in an
        # event of its own, the last event with finishReason and usageMetadata.
        pieces = []
        for part in parts:
            if set(part) != {"text"}:
                pieces.append(part)
                continue
            texts = split_deltas(part["text"])
            if len(texts) < 2 and len(part["text"]) > 1:
                half = len(part["text"]) // 2
                texts = [part["text"][:half], part["text"][half:]]
            pieces += [{"text": t} for t in texts]
        self.start_sse()
        if self.stream_fault(fault, lambda text: self.write_event(answer([{"text": text}], False)),
                             lambda: self.write_event(GEMINI_INTERNAL),
                             lambda: self.write_event('{"candidates": [ this is not json')):
            return
        for i, piece in enumerate(pieces):
            self.write_event(answer([piece], i == len(pieces) - 1))
        self.hang_up()

    # ---- Anthropic token count -----------------------------------------

    def handle_count_tokens(self, body):
        if not isinstance(body, dict):
            self.send_json(400, anthropic_error(
                "invalid_request_error", "There was an issue with your request body: "
                "it is not valid JSON"))
            return
        prompt = json.dumps([body.get("system"), body.get("tools"), body.get("messages")])
        self.send_json(200, {"input_tokens": len(prompt) // 4 + 1})


# --------------------------------------------------------------------------
# Process lifetime.
# --------------------------------------------------------------------------


def watch_stdin(stop):
    """Set `stop` when stdin hits EOF, if stdin is a pipe or socket.

    A /dev/null, tty or regular-file stdin is ignored: EOF there says nothing
    about whether the parent is still alive.
    """
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return

    def run():
        try:
            while os.read(sys.stdin.fileno(), 65536):
                pass
        except OSError:
            pass
        stop.set()

    threading.Thread(target=run, name="stdin-watch", daemon=True).start()


def parse_args(argv):
    parser = argparse.ArgumentParser(description="Fixture OpenAI/Anthropic/Gemini LLM server.")
    parser.add_argument("--port", type=int, default=0, help="port (0 = any free port)")
    parser.add_argument("--answer", help="assistant answer text")
    parser.add_argument("--answer-file", help="read the assistant answer from this file")
    parser.add_argument("--stall-seconds", type=float, default=30.0,
                        help="how long fault-stall stays silent (default 30)")
    parser.add_argument("--quiet", action="store_true", help="no request log on stderr")
    parser.add_argument("--summaries", action="store_true",
                        help="answer summary requests with an extractive summary of the "
                             "request's conversation instead of the fixed answer")
    parser.add_argument("--api-key", help="accept only this API key (default: any non-empty key)")
    parser.add_argument("--no-auth", action="store_true",
                        help="accept OpenAI requests without a key, as a local server does")
    return parser.parse_args(argv)


def main(argv=None):
    global STATE
    args = parse_args(argv)
    answer = DEFAULT_ANSWER
    if args.answer_file:
        with open(args.answer_file, encoding="utf-8") as f:
            answer = f.read()
    if args.answer is not None:
        answer = args.answer
    STATE = State(answer, args.stall_seconds)
    Handler.quiet = args.quiet
    Handler.api_key = args.api_key
    Handler.no_auth = args.no_auth
    Handler.summaries = args.summaries

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    watch_stdin(stop)

    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    sys.stdout.write("LISTENING %d\n" % server.server_address[1])
    sys.stdout.flush()

    while not stop.wait(0.5):
        pass
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

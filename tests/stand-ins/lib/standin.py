"""What the claude, codex and gemini stand-ins share: reading the prompt, the log, the fault
modes, token estimates and the deterministic answer text. See ../README.md."""

import json
import os
import subprocess
import sys
import time

MODES = ("ok", "fail", "auth", "hang", "garbage", "flood", "empty")


def read_stdin():
    """All of standard input as text (nothing when it is a terminal)."""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    return sys.stdin.buffer.read().decode("utf-8", errors="replace")


def log_run(tool, stdin):
    """Appends one JSON line describing this run to $STANDIN_LOG, when set."""
    path = os.environ.get("STANDIN_LOG")
    if not path:
        return
    entry = {"tool": tool, "argv": sys.argv[1:], "stdin": stdin, "cwd": os.getcwd()}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


def mode():
    """The fault mode asked for by $STANDIN_MODE (unknown values are a usage error)."""
    m = os.environ.get("STANDIN_MODE", "ok") or "ok"
    if m not in MODES:
        sys.stderr.write(f"stand-in: unknown STANDIN_MODE {m!r} (one of {', '.join(MODES)})\n")
        sys.exit(2)
    return m


def tokens(text):
    """A rough, deterministic token count: a quarter of the characters, at least 1."""
    return max(1, len(text) // 4)


def auth_failure():
    """Prints the login complaint (with $STANDIN_SECRET, to test redaction) and exits 1."""
    secret = os.environ.get("STANDIN_SECRET")
    line = "Invalid API key · Please run /login"
    if secret:
        line += f" (key in use: {secret})"
    sys.stderr.write(line + "\n")
    sys.stderr.flush()
    sys.exit(1)


def hang():
    """Starts a child `sleep 3600` (its pid written to $STANDIN_PIDFILE, when set), then sleeps
    for an hour: only killing the whole process tree ends it early."""
    child = subprocess.Popen(["sleep", "3600"])
    pidfile = os.environ.get("STANDIN_PIDFILE")
    if pidfile:
        tmp = pidfile + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(str(child.pid))
        os.replace(tmp, pidfile)
    time.sleep(3600)
    sys.exit(0)


def garbage():
    """Prints text that is not JSON and exits 0."""
    sys.stdout.write("Welcome! <html><body>Something went sideways</body></html>\nnot json at all {\n")
    sys.exit(0)


def flood():
    """Prints output forever (until the reader goes away)."""
    line = ("flood " * 20 + "\n").encode()
    try:
        while True:
            sys.stdout.buffer.write(line * 100)
    except (BrokenPipeError, OSError):
        sys.exit(1)


USER_MARKERS = ("### User", "[user]", "User:")


def user_quotes(prompt, limit=3):
    """The content of the first `limit` user turns found: the text after a marker on its line, or
    the next non-empty line when the marker stands alone."""
    lines = prompt.splitlines()
    quotes = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        marker = next((m for m in USER_MARKERS if stripped.startswith(m)), None)
        if marker is None:
            continue
        rest = stripped[len(marker):].strip(" :")
        if not rest:
            rest = next((l.strip() for l in lines[i + 1:] if l.strip()), "")
        if rest:
            quotes.append(rest[:200])
        if len(quotes) == limit:
            break
    return quotes


def answer(tool, prompt):
    """The deterministic answer to `prompt`."""
    if "Reply with the single word OK" in prompt:
        return "OK"
    if "summar" in prompt.lower():
        quotes = user_quotes(prompt) or [prompt[:200]]
        body = "\n".join("> " + q.replace("\n", " ") for q in quotes)
        return (
            "## Summary\n\n"
            f"Summary written by the {tool} stand-in.\n\n"
            "What the user asked:\n\n"
            f"{body}\n"
        )
    last = next((l.strip() for l in reversed(prompt.splitlines()) if l.strip()), "")
    return f"{tool} stand-in answers: {last[:200]}"

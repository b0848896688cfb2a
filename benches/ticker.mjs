// The event loop's longest stall while a flow runs: a setImmediate ticker records the longest gap
// between two of its turns (a gap is a slice the thread could not answer in: a command, an IPC
// message, another extension waited that long). Shared by the benches that measure stalls.

/** Runs `flow` with the ticker on; resolves with the longest gap (ms), the flow's time (ms) and
 *  what the flow resolved with. */
export async function stalls(flow) {
  let last = performance.now();
  let longest = 0;
  let on = true;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  const start = performance.now();
  const value = await flow();
  const total = performance.now() - start;
  on = false;
  // The last slice of the flow ends at the ticker's next turn.
  await new Promise((r) => setImmediate(r));
  return { longest, total, value };
}

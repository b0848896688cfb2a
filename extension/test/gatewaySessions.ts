// Claude Code–shaped Anthropic request bodies for the gateway's tests: the task, then tool
// rounds that read a 20-line file each, one body per round (each the whole history so far). And
// the gateway's saved state kept in memory (`SavedStates`).
import type { GatewayStateChanges } from "@context-condenser/protocol";
import type { SavedState } from "../src/gateway/stateFile";

export const TASK = "Fix the failing test in src/parse.rs and keep the public API unchanged.";

/** A file of 20 lines, different for each round. */
export function file(round: number): string {
  let text = "";
  for (let i = 0; i < 20; i++) text += `${String(i).padStart(6)}\tlet value_${round}_${i} = compute(&input, ${i}); // step ${i} of module ${round}\n`;
  return text;
}

/** The bodies of a session of `rounds` tool rounds, for `model`, under Claude Code's user id
 *  ending in `session`. */
export function toolSession(rounds: number, model: string, session = "00000000abcd"): string[] {
  const messages: unknown[] = [{ role: "user", content: TASK }];
  const bodies: string[] = [];
  for (let k = 0; k < rounds; k++) {
    messages.push({ role: "assistant", content: [{ type: "tool_use", id: `toolu_${k}`, name: "Read", input: { file_path: `/repo/src/module_${k}.rs` } }] });
    messages.push({ role: "user", content: [{ type: "tool_result", tool_use_id: `toolu_${k}`, content: file(k) }] });
    bodies.push(JSON.stringify({ model, max_tokens: 64, stream: true, messages, metadata: { user_id: `user_x_account__session_5e551011-aaaa-bbbb-cccc-${session}` } }));
  }
  return bodies;
}

/** The gateway's saved state as a test keeps it in memory: each save's changes applied (the
 *  `save` hook of a `GatewayServer`), and every state saved, in order. */
export class SavedStates {
  private index: string | undefined;
  private readonly sessions = new Map<string, string>();
  readonly all: { state: SavedState; durable: boolean }[] = [];
  /** Every session file a save removed. */
  readonly removed: string[] = [];

  /** The `save` hook: applies `changes`, writes nothing, fails nothing. */
  readonly save = (changes: GatewayStateChanges, durable: boolean): string[] => {
    this.index = changes.index;
    for (const f of changes.write) this.sessions.set(f.name, f.text);
    for (const name of changes.remove) this.sessions.delete(name);
    this.removed.push(...changes.remove);
    this.all.push({ state: this.now(), durable });
    return [];
  };

  /** The state as saved now. */
  now(): SavedState {
    return { index: this.index, sessions: [...this.sessions].map(([name, text]) => ({ name, text })) };
  }
}

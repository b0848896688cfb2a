// The API other extensions get from `vscode.extensions.getExtension(...).exports`: condense a
// conversation, count its tokens or a text's, list the providers — with the current engine and
// settings, and the condensing profile's key from the secret storage (sent only where it was
// stored for, or where the user agreed it may go: secrets.ts).

import type { CondenseOptionsInput, CondensationDocument, ConversationInput, Message, ProviderInfo, TokenReport } from "@context-condenser/protocol";
import { chatModel, condensingLlm } from "./chat/chatOptions";
import type { EngineHolder } from "./engine/engineHolder";
import type { Secrets } from "./settings/secrets";

/** What other extensions get from `vscode.extensions.getExtension(...).exports`. */
export interface ContextCondenserApi {
  /** Condenses a conversation (or a list of messages) with the configured providers. */
  condense(conversation: ConversationInput | Message[], options?: Omit<CondenseOptionsInput, "llm">): Promise<CondensationDocument>;
  /** Tokens of a conversation's API view, for a model (default: the chat profile's, else gpt-4o). */
  countTokens(conversation: ConversationInput | Message[], model?: string): TokenReport;
  /** Tokens of a plain text for a model (default: the chat profile's, else gpt-4o): tiktoken's
   *  count in the model's encoding, no message framing. */
  countText(text: string, model?: string): number;
  /** The providers, highest priority first. */
  listProviders(): ProviderInfo[];
}

const asConversation = (c: ConversationInput | Message[]): ConversationInput => (Array.isArray(c) ? { messages: c } : c);

export function createApi(holder: EngineHolder, secrets: Secrets): ContextCondenserApi {
  let calls = 0;
  return {
    // Held under an id of its own for the call, condensed there, read back, let go.
    condense: async (conversation, options) => {
      const llm = await condensingLlm(holder, secrets);
      const engine = holder.engine;
      const id = `api:${++calls}`;
      const handle = engine.hold("conversation", id, asConversation(conversation));
      try {
        const { handle: after, ...outcome } = await engine.condense(handle, { ...options, llm });
        const { messages, system, tools } = engine.parseConversation(engine.heldText(after));
        return { ...outcome, messages, ...(system === undefined ? {} : { system }), ...(tools?.length ? { tools } : {}) };
      } finally {
        engine.release(id);
      }
    },
    countTokens: (conversation, model) => holder.engine.countTokens(asConversation(conversation), model ?? chatModel(holder)),
    countText: (text, model) => holder.engine.countText(text, model ?? chatModel(holder)),
    listProviders: () => holder.engine.listProviders(),
  };
}

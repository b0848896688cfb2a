// The status-bar context meter: how full the context is, for the conversation file in the editor,
// else the active chat. Clicking it runs Condense Now. Its text comes from meter.ts (pure); typing
// in the file recounts after a pause, not at every key. The file is held in the engine (a handle
// per document version): a recount re-reads the text but counts only the messages that changed,
// and with no conversation file or chat to measure the engine is not loaded at all.

import * as vscode from "vscode";
import { chatModel } from "../chat/chatOptions";
import type { ChatView } from "../chat/chatView";
import type { EngineHolder } from "../engine/engineHolder";
import { isConversationDocument } from "./fileCommands";
import type { HeldDocs } from "../engine/heldTasks";
import { meterText } from "./meter";
import { chatProfile } from "../settings/settings";

export class StatusMeter implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("contextCondenser.meter", vscode.StatusBarAlignment.Right, 100);
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** Shows the meter, measured at once. `docs` holds the file it measures in the engine. */
  constructor(
    private readonly holder: EngineHolder,
    private readonly chat: ChatView,
    private readonly docs: HeldDocs,
  ) {
    this.item.name = "Context Condenser: context meter";
    this.item.command = "contextCondenser.condenseNow";
    this.update();
    this.item.show();
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.item.dispose();
  }

  /** Recounts soon: typing does not recount at every key. */
  schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.update(), 300);
  }

  /** The update that writes the item: an earlier one still counting (a large file's first count
   *  takes several slices) gives way to it. */
  private latest = 0;

  /** The meter follows the conversation file in the editor, else the active chat. A count that
   *  fails leaves the meter as it was (a fresh engine or the next edit counts again). */
  update(): void {
    void this.refresh().catch(() => {});
  }

  private async refresh(): Promise<void> {
    const mine = ++this.latest;
    const doc = vscode.window.activeTextEditor?.document;
    const active = doc && isConversationDocument(doc) ? doc : undefined;
    const chat = this.chat.active();
    let view;
    if (!active && !(chat.task && chat.context)) {
      // Nothing to measure: no engine needed.
      view = meterText({}, null);
    } else if (!active && chat.task && chat.context) {
      view = meterText(
        { tokens: chat.context.tokens, contextWindow: chat.context.window, source: `chat "${chat.task.title || "new chat"}"` },
        chat.context.threshold_percent ?? null,
      );
    } else {
      const tokens = await this.docs.tokens(this.holder.engine, active!, chatModel(this.holder));
      if (mine !== this.latest) return;
      const settings = this.holder.settings;
      const a = settings.autoCondense;
      view = meterText(
        { tokens, contextWindow: chatProfile(settings)?.context_window, source: vscode.workspace.asRelativePath(active!.uri) },
        a.enabled ? a.thresholdPercent : null,
      );
    }
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }
}

// The chat view's saved chats: the chat open when the window closed, restored; the active chat saved
// over the revision it was loaded at (a conflict with another window reported, never overwritten);
// a new chat, and opening, renaming and deleting saved ones; each chat's profile, remembered.

import * as vscode from "vscode";
import type { ChatTask } from "@context-condenser/protocol";
import { isChatConflict } from "./chatStore";
import type { ChatState } from "./chatState";
import { asFailure } from "../engine/errors";
import * as notify from "../host/notify";

export const ACTIVE_CHAT = "contextCondenser.activeChat";
/** Each chat's profile, by chat id (global state, beside the chat files): opening a chat makes its
 *  profile the chat profile again; a chat never picked keeps the current one. */
const CHAT_PROFILES = "contextCondenser.chatProfiles";

export class ChatPersistence {
  /** Settles when the chat open when the window closed is restored (or could not be). */
  readonly restored: Promise<void>;

  constructor(private readonly chat: ChatState) {
    this.restored = this.restore();
  }

  /** The chat that was open when the window closed, from disk. */
  private async restore(): Promise<void> {
    const id = this.chat.memento.get<string>(ACTIVE_CHAT);
    if (!id) return;
    try {
      const loaded = await this.chat.store.load(id);
      if (loaded && !loaded.ok) this.chat.reportCorrupt(loaded.corrupt);
      this.chat.task = loaded?.ok ? loaded.chat.task : null;
      this.chat.revision = loaded?.ok ? loaded.chat.revision : 0;
      this.chat.measure();
      this.chat.host.changed();
    } catch (e) {
      this.chat.host.log.error(`could not restore chat ${id}: ${asFailure(e).message}`);
    }
  }

  /**
   * Saves the active chat over the revision it was loaded at. When another window saved it since,
   * nothing is overwritten: the user is told, in the chat and in a notification that offers to
   * reload it, and false is returned.
   */
  async persist(task: ChatTask): Promise<boolean> {
    try {
      const saved = await this.chat.store.save(task, this.chat.revision);
      if (this.chat.task?.id === task.id) this.chat.revision = saved.revision;
      if (saved.setAside) this.chat.reportCorrupt(saved.setAside);
      return true;
    } catch (e) {
      if (!isChatConflict(e)) throw e;
      this.chat.host.log.warn(`chat ${task.id} not saved: ${e.message} (loaded at revision ${e.expected}, the file is at ${e.found ?? "none"})`);
      this.chat.post({ type: "error", message: e.message });
      void notify.warn(`Context Condenser: ${e.message}`, "Reload").then((choice) => {
        if (choice === "Reload") void this.open(task.id).catch((err) => this.chat.host.log.error(`could not reload chat ${task.id}: ${asFailure(err).message}`));
      });
      return false;
    }
  }

  async newChat(): Promise<void> {
    await this.restored;
    if (this.chat.refusedWhileBusy()) return;
    this.chat.task = null;
    this.chat.revision = 0;
    await this.chat.memento.update(ACTIVE_CHAT, undefined);
    await this.chat.refresh();
  }

  /** Renames a saved chat: the new title is asked for in an input box. */
  async rename(id: string): Promise<void> {
    const chat = this.chat;
    if (chat.refusedAfterShutdown() || (chat.task?.id === id && chat.refusedWhileBusy())) return;
    const loaded = chat.task?.id === id ? { task: chat.task, revision: chat.revision } : await this.loadChat(id);
    if (!loaded) return;
    const title = await vscode.window.showInputBox({
      title: "Rename Chat",
      value: loaded.task.title,
      prompt: "The chat's new title",
      validateInput: (v) => (v.trim() === "" ? "A title cannot be empty." : undefined),
    });
    if (title === undefined || title.trim() === loaded.task.title) return;
    // The active chat may have moved on while the box was open: rename what it is now.
    const current = chat.task?.id === id ? { task: chat.task, revision: chat.revision } : loaded;
    const renamed: ChatTask = { ...current.task, title: title.trim() };
    if (chat.task?.id === id) {
      if (!(await this.persist(renamed))) return;
      chat.task = renamed;
    } else {
      try {
        await chat.store.save(renamed, current.revision);
      } catch (e) {
        if (!isChatConflict(e)) throw e;
        chat.post({ type: "error", message: e.message });
        return;
      }
    }
    chat.host.log.info(`chat ${id} renamed`);
    await chat.refresh();
  }

  /** Deletes a saved chat after a modal confirmation; the active chat becomes a new one. */
  async delete(id: string): Promise<void> {
    const chat = this.chat;
    if (chat.refusedAfterShutdown() || (chat.task?.id === id && chat.refusedWhileBusy())) return;
    const loaded = chat.task?.id === id ? { task: chat.task, revision: chat.revision } : await this.loadChat(id);
    if (!loaded) return;
    const choice = await notify.modal(
      `Delete the chat "${loaded.task.title || "Untitled chat"}"?`,
      `Its ${loaded.task.conversation.messages.length} messages and condensations are removed; this cannot be undone.`,
      "Delete",
    );
    if (choice !== "Delete") return;
    await chat.store.delete(id);
    const { [id]: _, ...rest } = this.profiles();
    await chat.memento.update(CHAT_PROFILES, rest);
    chat.host.log.info(`chat ${id} deleted`);
    if (chat.task?.id === id) {
      chat.task = null;
      chat.revision = 0;
      await chat.memento.update(ACTIVE_CHAT, undefined);
    }
    await chat.refresh();
  }

  profiles(): Record<string, string> {
    return this.chat.memento.get<Record<string, string>>(CHAT_PROFILES) ?? {};
  }

  async rememberProfile(chatId: string, profileId: string): Promise<void> {
    await this.chat.memento.update(CHAT_PROFILES, { ...this.profiles(), [chatId]: profileId });
  }

  /** A saved chat with its revision; a missing or corrupt one is reported and gives undefined. */
  private async loadChat(id: string): Promise<{ task: ChatTask; revision: number } | undefined> {
    const loaded = await this.chat.store.load(id);
    if (!loaded) {
      this.chat.post({ type: "error", message: `There is no saved chat "${id}".` });
      return undefined;
    }
    if (!loaded.ok) {
      this.chat.reportCorrupt(loaded.corrupt);
      await this.chat.postState();
      return undefined;
    }
    return loaded.chat;
  }

  async open(id: string): Promise<void> {
    const chat = this.chat;
    if (chat.refusedWhileBusy()) return;
    const loaded = await chat.store.load(id);
    if (!loaded) throw new Error(`there is no saved chat "${id}"`);
    if (!loaded.ok) {
      chat.reportCorrupt(loaded.corrupt);
      await chat.postState();
      return;
    }
    chat.task = loaded.chat.task;
    chat.revision = loaded.chat.revision;
    await chat.memento.update(ACTIVE_CHAT, id);
    const own = this.profiles()[id];
    if (own && own !== chat.host.profileId() && chat.host.profiles().some((p) => p.id === own)) {
      // The settings change refreshes the view.
      await chat.host.selectProfile(own);
    }
    await chat.refresh();
  }
}

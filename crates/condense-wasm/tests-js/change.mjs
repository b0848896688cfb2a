// What a host does with a `ChatChange` (as extension/src/heldTasks.ts's `applyChange` does): its
// copy keeps its first `keep` messages, then those the change orders — whole when sent, else its
// own with any marks sent; every other field from the change's task.

export function applyChange(task, change) {
  const own = new Map(task.conversation.messages.slice(change.keep).map((m) => [m.id, m]));
  const sent = new Map(change.messages.map((m) => [m.id, m]));
  const marks = new Map(change.marks.map((m) => [m.id, m]));
  const rest = change.order.map((id) => {
    if (sent.has(id)) return sent.get(id);
    const mine = own.get(id);
    if (!mine) throw new Error(`the change names message ${id}, which the copy does not have`);
    const mark = marks.get(id);
    if (!mark) return mine;
    const { condense_parent: _hidden, pinned: _pinned, ...message } = mine;
    return {
      ...message,
      ...(mark.condense_parent ? { condense_parent: mark.condense_parent } : {}),
      ...(mark.pinned ? { pinned: true } : {}),
    };
  });
  const messages = [...task.conversation.messages.slice(0, change.keep), ...rest];
  return { ...change.task, conversation: { ...change.task.conversation, messages } };
}

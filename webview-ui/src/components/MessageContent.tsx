import type { ContentBlock, Message } from "../protocol";
import { Link, Markdown } from "./Markdown";
import { Visible } from "./Visible";

/**
 * The content blocks of a message: text (Markdown for the assistant), tools compact, images, and
 * client context (environment details, …) and blocks kept as read (thinking, …) collapsed. Every
 * text shows its bidirectional controls rather than applying them (`Visible`).
 */
export function MessageContent({ message }: { message: Message }) {
  return (
    <>
      {message.content.map((block, i) => (
        <Block key={i} block={block} markdown={message.role === "assistant"} />
      ))}
    </>
  );
}

function Block({ block, markdown }: { block: ContentBlock; markdown: boolean }) {
  switch (block.type) {
    case "text": {
      const text = asString(block["text"]);
      const client = asString(block["client"]);
      // A client's wrapper (Cline's environment details, …): read by the model, not the user's words.
      if (client) return <ClientContext kind={client} text={text} />;
      return markdown ? (
        <Markdown text={text} />
      ) : (
        <p className="plain-text">
          <Visible text={text} />
        </p>
      );
    }
    case "tool_use":
      return <Tool label={asString(block["name"]) || "tool"} kind="call" body={pretty(block["input"])} />;
    case "tool_result":
      return (
        <Tool
          label={block["is_error"] === true ? "error" : "result"}
          kind="result"
          body={toolResultText(block["content"])}
        />
      );
    case "image":
      return <ImageBlock source={block["source"]} />;
    default:
      return <Opaque block={block} />;
  }
}

function ClientContext({ kind, text }: { kind: string; text: string }) {
  return (
    <details className="tool tool--client">
      <summary>
        <span className="tool__kind">Client context</span>{" "}
        <code className="tool__name">
          <Visible text={kind.replace(/_/g, " ")} />
        </code>
      </summary>
      <pre className="tool__body">
        <Visible text={text} />
      </pre>
    </details>
  );
}

/**
 * A block the core keeps as read (Anthropic's thinking, redacted thinking, server tools, …):
 * collapsed, with what it says when it is a thought, never its signature or encrypted data.
 */
function Opaque({ block }: { block: Record<string, unknown> & { type: string } }) {
  const thought = block.type === "thinking" ? asString(block["thinking"]) : "";
  const label =
    block.type === "thinking" ? "thinking" : block.type === "redacted_thinking" ? "thinking (hidden)" : block.type;
  return (
    <details className="tool tool--opaque">
      <summary>
        <span className="tool__kind">
          <Visible text={label} />
        </span>
      </summary>
      {thought ? (
        <pre className="tool__body">
          <Visible text={thought} />
        </pre>
      ) : (
        <p className="plain-text">[kept as sent]</p>
      )}
    </details>
  );
}

function Tool({ label, kind, body }: { label: string; kind: "call" | "result"; body: string }) {
  return (
    <details className={`tool tool--${kind}`}>
      <summary>
        <span className="tool__kind">{kind === "call" ? "Tool call" : "Tool result"}</span>{" "}
        <code className="tool__name">
          <Visible text={label} />
        </code>
      </summary>
      <pre className="tool__body">
        <Visible text={body} />
      </pre>
    </details>
  );
}

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** Inline images show; an image the API fetches by URL would be refused by the CSP: a link. */
function ImageBlock({ source }: { source: unknown }) {
  if (isRecord(source) && source["type"] === "base64") {
    const type = asString(source["media_type"]);
    const data = asString(source["data"]);
    if (IMAGE_TYPES.has(type) && /^[A-Za-z0-9+/=\s]*$/.test(data)) {
      return <img className="message__image" src={`data:${type};base64,${data}`} alt="Attached image" />;
    }
  }
  if (isRecord(source) && source["type"] === "url") {
    return <Link href={asString(source["url"])}>[image]</Link>;
  }
  return <p className="plain-text">[image]</p>;
}

/** A tool result's content: a string, or parts of text and images. */
export function toolResultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return pretty(content);
  return content
    .map((part: unknown) =>
      isRecord(part) && part["type"] === "text" ? asString(part["text"]) : isRecord(part) && part["type"] === "image" ? "[image]" : pretty(part),
    )
    .join("\n");
}

function pretty(value: unknown): string {
  if (value === undefined) return "";
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

const asString = (value: unknown): string => (typeof value === "string" ? value : "");

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

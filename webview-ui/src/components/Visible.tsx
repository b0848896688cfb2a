import type { Element, ElementContent, Root, RootContent, Text } from "hast";
import { bidiMarker, bidiTitle, showBidi, splitBidi } from "@context-condenser/protocol";

/**
 * Text the chat shows but did not write — a message, a tool's name and input, a summary, a path, a
 * server's error — with its bidirectional control characters shown rather than applied: each is a
 * small marked `⟨U+202E⟩` whose title names it, so that no text reads in another order than it
 * is stored. Like any text here, it is a React text node (never HTML).
 */
export function Visible({ text }: { text: string }) {
  const pieces = splitBidi(text);
  if (pieces.length === 1 && "text" in pieces[0]) return <>{text}</>;
  return (
    <>
      {pieces.map((piece, i) =>
        "text" in piece ? (
          piece.text
        ) : (
          <span key={i} className="bidi-control" data-testid="bidi-control" title={bidiTitle(piece.control)}>
            {bidiMarker(piece.control)}
          </span>
        ),
      )}
    </>
  );
}

/** For an attribute (a title, an aria-label) or an `<option>`, which take a string: the markers
 *  as text. */
export const visible = showBidi;

/** The rehype plugin of Markdown text: every text node (code blocks too) shows its controls as
 *  `Visible` does, as elements of the syntax tree. */
export function rehypeVisibleBidi() {
  return (tree: Root): void => {
    tree.children = tree.children.flatMap((child) => visit(child)) as RootContent[];
  };
}

function visit(node: RootContent): RootContent[] {
  if (node.type === "text") return marked(node);
  if (node.type === "element") node.children = node.children.flatMap((child) => visit(child)) as ElementContent[];
  return [node];
}

function marked(node: Text): Array<Text | Element> {
  const pieces = splitBidi(node.value);
  if (pieces.length === 1 && "text" in pieces[0]) return [node];
  return pieces.map((piece) =>
    "text" in piece
      ? { type: "text", value: piece.text }
      : {
          type: "element",
          tagName: "span",
          properties: { className: ["bidi-control"], title: bidiTitle(piece.control), dataTestid: "bidi-control" },
          children: [{ type: "text", value: bidiMarker(piece.control) }],
        },
  );
}

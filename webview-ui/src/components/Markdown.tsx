import type { Root as MdRoot, RootContent as MdContent } from "mdast";
import { memo, type ComponentProps } from "react";
import ReactMarkdown, { type Components } from "react-markdown";
import remarkGfm from "remark-gfm";
import { rehypeHighlight } from "../highlight";

const PHRASING_PARENTS = new Set(["paragraph", "heading", "emphasis", "strong", "delete", "link", "linkReference", "tableCell"]);

/**
 * HTML written in a message is shown as the text it is, never rendered (react-markdown would
 * otherwise drop it silently): inline HTML becomes text, a block of HTML a paragraph of text.
 */
function remarkHtmlAsText() {
  const visit = (node: MdRoot | MdContent): void => {
    if (!("children" in node)) return;
    const phrasing = PHRASING_PARENTS.has(node.type);
    node.children = node.children.map((child) => {
      if (child.type !== "html") return child;
      const text = { type: "text" as const, value: child.value };
      return phrasing ? text : { type: "paragraph" as const, children: [text] };
    }) as typeof node.children;
    for (const child of node.children) visit(child);
  };
  return visit;
}

/** Remote images would be refused by the webview's CSP: they are shown as links. */
function Image({ src, alt }: ComponentProps<"img">) {
  const source = typeof src === "string" ? src : "";
  if (/^data:image\/(png|jpeg|gif|webp);/i.test(source)) return <img src={source} alt={alt ?? ""} />;
  return <a href={source}>{alt ? `[image: ${alt}]` : "[image]"}</a>;
}

const components: Components = { img: Image };
const remarkPlugins = [remarkGfm, remarkHtmlAsText];
const rehypePlugins = [rehypeHighlight];

/** Markdown text (GFM) with highlighted code blocks. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={remarkPlugins} rehypePlugins={rehypePlugins} components={components}>
        {text}
      </ReactMarkdown>
    </div>
  );
});

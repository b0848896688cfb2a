import type { Root as MdRoot, RootContent as MdContent } from "mdast";
import { createContext, memo, useContext, type ComponentProps, type MouseEvent, type ReactNode } from "react";
import ReactMarkdown, { type Components, type UrlTransform } from "react-markdown";
import { isInlineImage, openableUrl } from "@context-condenser/protocol";
import remarkGfm from "remark-gfm";
import { rehypeHighlight } from "../highlight";
import { rehypeVisibleBidi, visible } from "./Visible";

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

/**
 * What a message may link to, decided before anything is rendered (react-markdown's own default
 * would keep relative and `irc:`/`xmpp:` URLs): a link's `href` only as `openableUrl` allows
 * (absolute http, https, mailto); an image's `src` also as a base64 PNG, JPEG, GIF or WebP. Any
 * other URL is dropped (`javascript:`, `vbscript:`, `data:` but those images, `file:`, relative).
 */
export const urlPolicy: UrlTransform = (url, key, node) => {
  if (key === "src" && node.tagName === "img" && isInlineImage(url)) return url;
  return openableUrl(url) ?? null;
};

/** How a click on a link reaches the extension (the app provides it; nothing by default). */
const OpenLinkContext = createContext<(url: string) => void>(() => {});
export const LinkOpener = OpenLinkContext.Provider;

/**
 * A link of a message. It never navigates the webview: a click asks the extension to open it
 * (through VS Code, with its confirmation). A URL the policy refuses is text, marked as such.
 */
export function Link({ href, children }: { href?: unknown; children?: ReactNode }) {
  const open = useContext(OpenLinkContext);
  const url = typeof href === "string" ? openableUrl(href) : undefined;
  if (!url) {
    return (
      <span className="link-blocked" title="Not a link: only http, https and mailto links open">
        {children}
      </span>
    );
  }
  const follow = (e: MouseEvent) => {
    e.preventDefault();
    if (e.type === "click" || e.button === 1) open(url);
  };
  return (
    <a href={url} title={visible(url)} onClick={follow} onAuxClick={follow}>
      {children}
    </a>
  );
}

/** Remote images would be refused by the webview's CSP: they are shown as links. */
function Image({ src, alt }: ComponentProps<"img">) {
  const source = typeof src === "string" ? src : "";
  if (isInlineImage(source)) return <img src={source} alt={alt ?? ""} />;
  return <Link href={source}>{alt ? `[image: ${alt}]` : "[image]"}</Link>;
}

function Anchor({ href, children }: ComponentProps<"a">) {
  return <Link href={href}>{children}</Link>;
}

const components: Components = { img: Image, a: Anchor };
const remarkPlugins = [remarkGfm, remarkHtmlAsText];
// Highlighting first: it reads a code block's text whole; then every text node shows its controls.
const rehypePlugins = [rehypeHighlight, rehypeVisibleBidi];

/** Markdown text (GFM) with highlighted code blocks; bidirectional controls shown, not applied. */
export const Markdown = memo(function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown
        remarkPlugins={remarkPlugins}
        rehypePlugins={rehypePlugins}
        components={components}
        urlTransform={urlPolicy}
      >
        {text}
      </ReactMarkdown>
    </div>
  );
});

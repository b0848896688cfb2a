// Syntax highlighting of fenced code blocks: a rehype plugin over lowlight (highlight.js grammars,
// producing syntax trees, so nothing is ever parsed from HTML strings). Only the languages below
// are bundled; a fence in another language, or in none, stays plain text.

import type { Element, ElementContent, Root, RootContent } from "hast";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import csharp from "highlight.js/lib/languages/csharp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";
import { createLowlight } from "lowlight";

const lowlight = createLowlight({
  bash,
  c,
  cpp,
  csharp,
  css,
  diff,
  go,
  java,
  javascript,
  json,
  markdown,
  python,
  rust,
  shell,
  sql,
  typescript,
  xml,
  yaml,
});

/** Whether a fence's language is highlighted. */
export const highlights = (language: string): boolean => lowlight.registered(language);

/** The rehype plugin: highlights every `pre > code.language-*` in place. */
export function rehypeHighlight() {
  return (tree: Root): void => {
    for (const node of tree.children) visit(node);
  };
}

function visit(node: RootContent): void {
  if (node.type !== "element") return;
  if (node.tagName === "pre") {
    for (const child of node.children) if (child.type === "element" && child.tagName === "code") highlight(child);
    return;
  }
  for (const child of node.children) visit(child);
}

function highlight(code: Element): void {
  const classes = classList(code);
  const language = classes.find((c) => c.startsWith("language-"))?.slice("language-".length);
  code.properties.className = [...classes, "hljs"];
  if (!language || !lowlight.registered(language)) return;
  const tree = lowlight.highlight(language, textOf(code));
  code.children = tree.children as ElementContent[];
}

const classList = (element: Element): string[] => element.properties.className ?? [];

function textOf(node: ElementContent): string {
  if (node.type === "text") return node.value;
  if (node.type === "element") return node.children.map(textOf).join("");
  return "";
}

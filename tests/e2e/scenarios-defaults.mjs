// End-to-end scenario of issue 25's first part, on a code-server start of its own whose settings
// name NO default provider (what a new user has): a plain chat crosses its profile's threshold and
// is condensed by the default (`smart`), and when the model then answers "too long" anyway (the
// fixture server's `fault-overflow-once-condensed`: the first request of a condensed chat), the
// chat is condensed once more and the request sent again — the loop guard used to refuse that run
// as a second one without a new message. Then Condense with… (issue 25's fifth part): the chat's
// button and the command on a conversation file, with the provider the user picks for one run.
// Screenshots go to test-output/e2e/defaults-*.png.
import fs from "node:fs";
import path from "node:path";
import { QUIET } from "./scenarios-ux.mjs";

/** Questions that share no sentence: nothing for lossless to de-duplicate. */
const QUESTIONS = [
  "Why would a recursive descent parser lose the inner group in f(a, (b, c)) when a comma precedes it?",
  "Which unit test should cover trailing commas inside nested argument lists, and what should it assert?",
  "How do I make the tokenizer report the column of an unexpected closing parenthesis in its error?",
  "Is it better to build the syntax tree bottom-up here, or keep the current top-down approach with a lookahead?",
  "What would a fuzz target for this grammar look like, and how long should it run in continuous integration?",
  "Could operator precedence climbing replace the nested match statements in parse_expression without regressions?",
  "How should the error recovery skip to the next statement after a missing semicolon without cascading errors?",
  "Summarize the changes we agreed on so far, in the order I should make them in the repository.",
];

const WORDS = (
  "parser token grammar lookahead comma group nested recursion stack frame buffer cursor column line " +
  "error recovery semicolon statement expression precedence operator literal identifier keyword scope " +
  "closure binding module import export fixture snapshot regression benchmark profile allocation arena"
).split(" ");

/** A question with a few notes no other question shares (a seeded choice of words): about 100
 *  tokens each, so that some ten turns cross the threshold with nothing repeated, and the chat
 *  condensed at the threshold still holds a few turns for the run after "too long" to cut. */
function question(i) {
  let seed = 7919 * (i + 1);
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
  const sentence = () => Array.from({ length: 12 }, () => WORDS[next() % WORDS.length]).join(" ");
  const notes = Array.from({ length: 4 }, (_, k) => `(${i}.${k}) ${sentence()}.`).join(" ");
  return `${QUESTIONS[i % QUESTIONS.length]} My notes: ${notes}`;
}

/**
 * `ctx`: run.mjs's shared { OUT, until, startWorkbench, check, llm, RIGHT_KEY, ... }.
 */
export async function defaultsScenario(ctx) {
  const { OUT, check, until, llm } = ctx;
  const step = (what) => `defaults: ${what}`;
  const WORKSPACE = path.join(OUT, "defaults-workspace");
  fs.mkdirSync(WORKSPACE, { recursive: true });
  fs.copyFileSync(path.join(ctx.repoRoot, "tests/fixtures/small-session.json"), path.join(WORKSPACE, "conversation.json"));
  const settings = {
    ...QUIET,
    // No contextCondenser.defaultProvider: the engine's default decides.
    "contextCondenser.profiles": [
      // A small window with its own threshold (50%): some ten turns cross it. The first request
      // of the condensed chat is answered "too long" once.
      {
        id: "small",
        kind: "openai-compatible",
        base_url: `${llm.origin}/v1`,
        model: "fault-overflow-once-condensed",
        context_window: 4000,
        max_output: 200,
        threshold_percent: 50,
      },
      // The summaries' writer (smart's summary pass).
      { id: "writer", kind: "openai-compatible", base_url: `${llm.origin}/v1`, model: "fixture", context_window: 32000, max_output: 1000 },
    ],
    // smart aims at 40% of the context by default, for which its summary keeps only the question:
    // the threshold run leaves the first message, the summary with its ledger and the question,
    // and a "too long" answer right after can only be reported (the chat shows each pass's
    // reason). Aiming at 80% with six messages kept leaves the run after the overflow a tail to
    // cut, which is what this scenario is about.
    "contextCondenser.providers": { smart: { config: { keep_last: 6, target_percent: 80 } } },
    "contextCondenser.chatProfile": "small",
    "contextCondenser.condensingProfile": "writer",
  };
  const w = await ctx.startWorkbench(ctx, { name: "defaults", settings, workspace: WORKSPACE });
  const { page, run, setKey, shot } = w;
  try {
    check(w.settingsNow()["contextCondenser.defaultProvider"] === undefined, step("the settings name no default provider"));
    await setKey("small", ctx.RIGHT_KEY);
    await setKey("writer", ctx.RIGHT_KEY);
    await run("Context Condenser: New Chat");
    const chat = w.chat();
    const input = chat.locator("[data-testid=input]");
    check(await until(async () => (await input.count()) === 1 && (await input.isEnabled()), 60_000), step("the chat view opens with its input"));
    const chats = path.join(w.dirs.ud, "User", "globalStorage", "context-condenser.context-condenser", "chats");
    const saved = () => {
      const files = fs.existsSync(chats) ? fs.readdirSync(chats).filter((f) => f.endsWith(".json")) : [];
      return files.length === 1 ? JSON.parse(fs.readFileSync(path.join(chats, files[0]), "utf8")) : undefined;
    };
    const answers = () => (saved()?.conversation.messages ?? []).filter((m) => m.role === "assistant" && !m.is_summary && !m.interrupted);
    // Turns until a condensation after a "too long" answer, eighteen at most; each waits for its
    // answer.
    let turns = 0;
    for (let i = 0; i < 18; i++) {
      const before = answers().length;
      await input.fill(question(i));
      await input.press("Enter");
      turns++;
      const answered = await until(async () => answers().length > before && (await chat.locator("[data-testid=stop]").count()) === 0, 60_000);
      if (!answered) break;
      if ((saved()?.condensations ?? []).some((c) => c.reason === "overflow")) break;
    }
    const record = saved();
    const reasons = (record?.condensations ?? []).map((c) => `${c.reason}:${c.provider_id}`);
    check(reasons[0] === "threshold:smart", step(`the plain chat was condensed at the threshold by smart, the default (${reasons.join(", ") || "none"}; ${turns} turns)`));
    const overflowAt = reasons.indexOf("overflow:smart");
    check(overflowAt > 0 && reasons[overflowAt - 1] === "threshold:smart",
      step(`the "too long" answer right after a threshold run was condensed once more (${reasons.join(", ")})`));
    const last = record?.conversation.messages.at(-1);
    check(last?.role === "assistant" && !last.interrupted, step("the request was sent again and answered"));
    // The refused request and the one sent after the run answer the same message.
    const requests = await llm.requests();
    const lastUser = (r) => JSON.stringify((r.body?.messages ?? []).filter((m) => m.role === "user").at(-1)?.content);
    const overflowed = requests.filter((r) => r.body?.model === "fault-overflow-once-condensed" && JSON.stringify(r.body?.messages).includes("context_condenser_ledger"));
    check(overflowed.length >= 2 && lastUser(overflowed[0]) === lastUser(overflowed[1]),
      step(`the same message was sent again after the run: refused, then answered (${overflowed.length} requests with a ledger)`));
    // A later condensation that hid an earlier one's summary shows in its place: the health line
    // counts them all.
    const rows = chat.locator("[data-testid=condensation-row]");
    const health = chat.locator("[data-testid=health]");
    check(await until(async () => (await rows.count()) >= 1 && (await health.innerText()).includes(`${reasons.length} condensations`), 10_000),
      step(`the chat shows the condensations (${reasons.length}: ${await health.innerText().catch(() => "no health line")})`));
    const rowText = await rows.first().innerText().catch(() => "");
    check(/smart/.test(rowText), step(`the row names smart (${rowText.replace(/\s+/g, " ").slice(0, 80)})`));
    check((await chat.locator("[data-testid=error]").count()) === 0, step("no error shows in the chat"));
    await shot("chat");

    // ---- Condense with…: the provider is the user's choice for one run -------------------------
    // The chat's button opens the quick pick of the enabled providers, the default first.
    const row = (text) => page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first();
    await chat.locator("[data-testid=more-actions]").click();
    await chat.locator("[data-testid=condense-with]").click();
    check(await row("truncation").waitFor({ timeout: 20_000 }).then(() => true, () => false), step("the chat's Condense with… lists the providers"));
    const firstRow = await page.locator(".quick-input-list .monaco-list-row").first().innerText().catch(() => "");
    check(/smart/.test(firstRow) && /the default/.test(firstRow), step(`the default comes first, marked (${firstRow.replace(/\s+/g, " ")})`));
    await shot("condense-with");
    await page.keyboard.press("Escape");
    // On a conversation file: the command, truncation picked; the default stays smart.
    await page.keyboard.press("Control+P");
    await w.quickInput.fill("conversation.json");
    await row("conversation.json").waitFor();
    await page.keyboard.press("Enter");
    await page.locator(".tab.active", { hasText: "conversation.json" }).first().waitFor({ timeout: 15_000 });
    await run("View: Focus Active Editor Group");
    await run("Context Condenser: Condense with…");
    await row("truncation").waitFor({ timeout: 20_000 });
    await w.quickInput.fill("truncation");
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
    check(await w.toast(/Condensed with truncation: [\d,]+ → [\d,]+ tokens/).waitFor({ timeout: 30_000 }).then(() => true, () => false),
      step("Condense with… on a conversation file runs the provider picked"));
    check(w.settingsNow()["contextCondenser.defaultProvider"] === undefined, step("the default is unchanged"));
    await shot("condense-with-file");
  } catch (e) {
    check(false, step(e.message));
    await shot("failure").catch(() => {});
  } finally {
    await w.stop();
  }
}

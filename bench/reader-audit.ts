/**
 * Issue 41, point 7: how much of what the models really said each reply reader reads, and what
 * it makes of the rest, from finished runs' traces (never by re-running). Per LLM purpose:
 * replies, read cleanly, read with problems, and unread; with `--fixtures FILE` it writes every
 * reply (purpose, run, question, text, what the reader made of it) as the fixture file the
 * reader tests replay (test/pipelines/fixtures/).
 *
 *   npx tsx bench/reader-audit.ts <run dir> [<run dir> ...] [--fixtures test/pipelines/fixtures/replies.json]
 *
 * Readers: `toc.rac` readDisambiguations (and the old parseDisambiguations beside it),
 * `diva.diversify` parseAmbiguity, `combo.generate` parseLongAnswer (as COMBO calls it),
 * `ve.cot` parseCot, `ve.verifying-question` parseQuestion, `ve.verifying-answer` parseLongAnswer.
 */
import { writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readJsonl } from '../src/common/jsonl';
import { parseAmbiguity, parseCot, parseDisambiguations, parseLongAnswer, parseQuestion, readDisambiguations } from '../src/pipelines/parsing';
import type { Trace } from '../src/trace/types';
import { RAC_REPLY_PREFIX, racReplyText } from '../src/pipelines/toc/prompts';

const args = process.argv.slice(2);
const at = args.indexOf('--fixtures');
const fixtureFile = at >= 0 ? args[at + 1] : undefined;
const runDirs = args.filter((a, i) => !a.startsWith('--') && (at < 0 || i !== at + 1));
if (runDirs.length === 0) {
  console.error('usage: npx tsx bench/reader-audit.ts <run dir> [...] [--fixtures FILE]');
  process.exit(2);
}

type Outcome = { read: boolean; problems: string[]; made: unknown };

/** What the pipeline's reader makes of one reply of `purpose`; undefined for purposes without a text reader. */
function readReply(purpose: string, text: string): Outcome | undefined {
  switch (purpose) {
    case 'toc.rac': {
      const r = readDisambiguations(text);
      const old = parseDisambiguations(text);
      return {
        read: r.pairs.length > 0,
        problems: [...r.rejected.map((x) => `refused: ${x.reason}`), ...r.problems],
        made: { shape: r.shape, pairs: r.pairs, rejected: r.rejected.length, oldPairs: old.pairs },
      };
    }
    case 'diva.diversify': {
      const r = parseAmbiguity(text);
      return { read: r.interpretations.length > 0 && r.type !== null, problems: r.problems, made: { type: r.type, interpretations: r.interpretations } };
    }
    case 'combo.generate': {
      const r = parseLongAnswer(text.replace(/^\s*passage\s*:\s*/i, ''));
      return { read: r.text !== '', problems: r.problems, made: { passage: r.text } };
    }
    case 've.cot': {
      const r = parseCot(text);
      return { read: r.answer !== null, problems: r.problems, made: { answer: r.answer, rationale: r.rationale } };
    }
    case 've.verifying-question': {
      const r = parseQuestion(text);
      return { read: r.text !== '' && r.problems.length === 0, problems: r.problems, made: { question: r.text } };
    }
    case 've.verifying-answer': {
      const r = parseLongAnswer(text);
      return { read: r.text !== '', problems: r.problems, made: { answer: r.text } };
    }
    default:
      return undefined;
  }
}

const rows = new Map<string, { replies: number; clean: number; withProblems: number; unread: number; problems: Map<string, number> }>();
const fixtures: Array<{ purpose: string; run: string; questionId: string; callIndex: number; sample: number; text: string; read: boolean; made: unknown; problems: string[] }> = [];
for (const dir of runDirs) {
  for (const t of readJsonl<Trace>(join(dir, 'traces.jsonl'))) {
    for (const c of t.llmCalls) {
      if (c.judge) continue;
      c.completions.forEach((comp, sample) => {
        // A RAC reply continuing the released prompt's `DQ 1:` opening is read with it, as ToC reads it.
        const last = c.messages.at(-1);
        const continued = c.purpose === 'toc.rac' && last?.role === 'assistant' && last.content === RAC_REPLY_PREFIX;
        const o = readReply(c.purpose, continued ? racReplyText(comp.text) : comp.text);
        if (!o) return;
        const row = rows.get(c.purpose) ?? { replies: 0, clean: 0, withProblems: 0, unread: 0, problems: new Map<string, number>() };
        row.replies += 1;
        if (!o.read) row.unread += 1;
        else if (o.problems.length > 0) row.withProblems += 1;
        else row.clean += 1;
        for (const p of o.problems) {
          const key = p.replace(/".*"/, '"…"').replace(/\d+/g, '#');
          row.problems.set(key, (row.problems.get(key) ?? 0) + 1);
        }
        rows.set(c.purpose, row);
        fixtures.push({ purpose: c.purpose, run: basename(dir), questionId: t.questionId, callIndex: c.index, sample, text: comp.text, read: o.read, made: o.made, problems: o.problems });
      });
    }
  }
}

const pct = (n: number, d: number) => (d === 0 ? '–' : `${((100 * n) / d).toFixed(0)}%`);
console.log('| purpose | replies | read cleanly | read with problems | unread | most frequent problems |');
console.log('|---|---|---|---|---|---|');
for (const [purpose, r] of rows) {
  const top = [...r.problems.entries()].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([k, n]) => `${k} (${n})`).join('; ');
  console.log(`| \`${purpose}\` | ${r.replies} | ${r.clean} (${pct(r.clean, r.replies)}) | ${r.withProblems} (${pct(r.withProblems, r.replies)}) | ${r.unread} (${pct(r.unread, r.replies)}) | ${top || '–'} |`);
}
if (fixtureFile) {
  writeFileSync(fixtureFile, `${JSON.stringify(fixtures, null, 1)}\n`);
  console.log(`\n${fixtures.length} replies written to ${fixtureFile}`);
}

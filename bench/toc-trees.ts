/**
 * Issue 34: what ToC's trees look like in finished runs, read from their traces (never by
 * re-running): valid nodes per tree as a distribution, LLM calls per question against the
 * paper's "fewer than 20", stop reasons, restarts, trees whose pruning was switched off, nodes
 * admitted unverified, un-pruning, and node Answer-F1 of kept, pruned and admitted nodes against
 * the gold disambiguations (the pruning figure's stages, src/pipelines/toc/pruning-figure.ts).
 *
 *   npx tsx bench/toc-trees.ts <run dir> [<run dir> ...] [--data ../shared/data/asqa/ASQA_dev.json] [--common]
 *
 * `--common`: only the questions every run answered (so the runs' rows are paired).
 */
import { readJsonl } from '../src/common/jsonl';
import { dataDir } from '../src/config/paths';
import { loadAsqa } from '../src/datasets/asqa';
import { normaliseAnswer, normaliseQuestion } from '../src/pipelines/common/text';
import { pruningEffect } from '../src/pipelines/toc/pruning-figure';
import { treeQuality } from '../src/pipelines/toc/analysis';
import type { Trace } from '../src/trace/types';
import type { TocDecisions } from '../src/pipelines/toc/decisions';
import { basename, join } from 'node:path';

const args = process.argv.slice(2);
const flagValue = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const dataFile = flagValue('--data') ?? join(dataDir(), 'asqa', 'ASQA_dev.json');
const common = args.includes('--common');
const runDirs = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--data');
if (runDirs.length === 0) {
  console.error('usage: npx tsx bench/toc-trees.ts <run dir> [...] [--data ASQA.json] [--common]');
  process.exit(2);
}

const gold = new Map(loadAsqa(dataFile).map((e) => [e.id, e.qaPairs]));
const runs = runDirs.map((dir) => ({ dir, traces: readJsonl<Trace>(join(dir, 'traces.jsonl')).filter((t) => t.decisions.kind === 'toc') }));
const shared = runs.reduce<Set<string> | null>((acc, r) => {
  const ids = new Set(r.traces.map((t) => t.questionId));
  return acc === null ? ids : new Set([...acc].filter((id) => ids.has(id)));
}, null)!;

const mean = (xs: number[]) => (xs.length === 0 ? NaN : xs.reduce((s, x) => s + x, 0) / xs.length);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const f = (x: number, d = 1) => (Number.isNaN(x) ? '–' : x.toFixed(d));

console.log('| run | questions | valid nodes per tree: mean, median [min, max] | histogram 0…10+ | distinct valid pairs per tree | LLM calls per question: mean, median [max] | share < 20 calls | stop reasons | restarts per tree | pruning switched off | admitted unverified per tree | un-pruned per tree |');
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|');
const f1Rows: string[] = [];
const qualityRows: string[] = [];
for (const run of runs) {
  const traces = common ? run.traces.filter((t) => shared.has(t.questionId)) : run.traces;
  const ds = traces.map((t) => t.decisions as TocDecisions);
  const valid = ds.map((d) => d.validNodeIds.length);
  const calls = traces.map((t) => t.summary.llmCalls);
  const hist = Array.from({ length: 11 }, (_, k) => valid.filter((v) => (k === 10 ? v >= 10 : v === k)).length);
  const stops = new Map<string, number>();
  for (const d of ds) stops.set(d.stopReason, (stops.get(d.stopReason) ?? 0) + 1);
  console.log(
    [
      basename(run.dir),
      traces.length,
      `${f(mean(valid), 2)}, ${f(median(valid))} [${Math.min(...valid)}, ${Math.max(...valid)}]`,
      hist.join(' '),
      // Pairs admitted with pruning off are not deduplicated (as in the released code): how many differ.
      f(mean(ds.map((d) => new Set(d.nodes.filter((n) => d.validNodeIds.includes(n.id)).map((n) => `${normaliseQuestion(n.question)}\u0000${normaliseAnswer(n.answer ?? '')}`)).size)), 2),
      `${f(mean(calls))}, ${f(median(calls))} [${Math.max(...calls)}]`,
      f(calls.filter((c) => c < 20).length / Math.max(1, calls.length), 2),
      [...stops].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', '),
      f(mean(ds.map((d) => d.restarts?.length ?? 0)), 2),
      `${ds.filter((d) => d.pruningOffAtStep !== undefined).length} of ${ds.length}`,
      f(mean(ds.map((d) => d.nodes.filter((n) => n.admittedWithPruningOff).length)), 2),
      f(mean(ds.map((d) => d.unprunedNodeIds?.length ?? 0)), 2),
    ].join(' | ').replace(/^/, '| ').concat(' |'),
  );
  // Issue 41: what the valid nodes hold and how the calls were served, per question.
  for (const t of traces) {
    const q = treeQuality(t);
    qualityRows.push(
      `| ${basename(run.dir)} | ${t.question} | ${q.valid} | ${q.distinctWellFormed} | ${q.garbledValid} | ${q.duplicateValid} | ${q.rejectedPairs} | ${q.calls} (${q.liveCalls} live, ${q.replayedCalls} replayed) | ${(t.decisions as TocDecisions).stopReason} | ${Math.round(t.summary.seconds)} |`,
    );
  }
  const stages = pruningEffect(traces, gold);
  f1Rows.push(`| ${basename(run.dir)} | ${stages.map((s) => `${s.nodes > 0 ? f(s.meanF1) : '–'} (${s.nodes})`).join(' | ')} |`);
}
const stageNames = pruningEffect([], gold).map((s) => s.stage);
console.log(`\nnode Answer-F1 (0–100) by stage, nodes in brackets:\n\n| run | ${stageNames.join(' | ')} |`);
console.log(`|---|${stageNames.map(() => '---').join('|')}|`);
for (const row of f1Rows) console.log(row);
console.log('\ntree quality per question (issue 41):\n\n| run | question | valid nodes | distinct well-formed valid pairs | garbled valid | repeated valid | pairs refused by the reader | LLM calls | stop | seconds |');
console.log('|---|---|---|---|---|---|---|---|---|---|');
for (const row of qualityRows) console.log(row);
if (common) console.log(`\n${shared.size} questions answered by every run`);

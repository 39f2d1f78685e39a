/**
 * Issue 26 study: how well does each judge setting separate ToC's real nodes, and which side of
 * 0.5 do its P fall on? Reads one finished ToC run (its nodes and their verification prompts,
 * the questions' gold data for the silver labels) and re-judges the *same* prompts under each
 * setting, so every setting is scored on identical items:
 *
 *   0.5B raw · 0.5B content-free · 0.5B batch · 0.5B balanced demos (raw and batch) ·
 *   1.5B raw · 1.5B batch
 *
 * Calibrations reuse the pipeline's own code (common/judge.ts, TocPipeline.calibrate with the
 * run's options and the demo pool minus every question of the study config); statistics come from
 * the judge diagnostics (metrics/judge-quality.ts: AUC with the question-resampled bootstrap CI,
 * Brier, mean P per label, share ≥ 0.5). Every judgment goes through the LLM client and its cache.
 *
 *   npx tsx bench/judge-study.ts <run dir> <config.yaml> [--judge15 <catalog name>] [--out file.json]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStudy } from './study-setup';
import { calibrationPool } from '../src/experiments/judge-priors';
import type { ChatMessage, LanguageModel } from '../src/llm/types';
import { labelJudgments } from '../src/metrics/judge-labels';
import { judgeQuality, pairedAucDifference } from '../src/metrics/judge-quality';
import { calibrateProbabilities, CONTENT_FREE, contentFreePassage } from '../src/pipelines/common/judge';
import { TocPipeline } from '../src/pipelines/toc';
import { tocOptionsSchema } from '../src/pipelines/toc/options';
import { balancedVerifyShots, verifyPrompt } from '../src/pipelines/toc/prompts';
import { demoFromExample } from '../src/pipelines/demos';
import type { PipelineContext } from '../src/pipelines/types';
import type { LabelledJudgment } from '../src/run-files';
import type { Trace } from '../src/trace/types';
import type { TocDecisions } from '../src/pipelines/toc/decisions';
import { readJsonl } from '../src/common/jsonl';
import { methodCatalog } from '../src/pipelines/registry';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const [runDir, configFile] = args;
if (!runDir || !configFile) {
  console.error('usage: npx tsx bench/judge-study.ts <run dir> <config.yaml> [--judge15 name] [--out file.json]');
  process.exit(2);
}
const judge15 = flag('--judge15') ?? 'qwen2.5-coder-1.5b-instruct-q4_k_m';
const outFile = flag('--out') ?? join(runDir, 'judge-study.json');
// Also judge gold-pair items on the first K questions of the config's selection (0: none).
const goldQuestions = Number(flag('--gold-items') ?? 0);
const LABELS = ['True', 'False'];

interface Item {
  questionId: string;
  messages: ChatMessage[];
  hasEvidence: boolean;
  label: boolean | null;
}

const t0 = performance.now();
const { composer, base, parts, withJudge: judgeContext } = await openStudy(configFile);
// The config's verification wording (issue 34: `released`, or `any-reading` as before), for the
// prompts this script builds itself; the run's own prompts are read from its traces.
const wording = tocOptionsSchema.parse(base.pipeline.options).verifyWording;
try {
  const examples = new Map(parts.examples.map((e) => [e.id, e]));

  // The items: every node the run's judge scored, its recorded prompt and its silver label.
  const traces = readJsonl<Trace>(join(runDir, 'traces.jsonl'));
  const items: Item[] = [];
  for (const trace of traces) {
    const example = examples.get(trace.questionId);
    if (!example) continue;
    const labels = labelJudgments(trace, example, methodCatalog()).filter((j) => j.purpose === 'toc.verify');
    const nodes = (trace.decisions as TocDecisions).nodes.filter((n) => n.id !== 0 && n.pTrue !== undefined);
    nodes.forEach((n, i) => {
      const call = trace.llmCalls[n.verifyCallIndex!]!;
      // The zero-shot user turn as the run asked it (a balanced run's prompt ends with the same turn).
      items.push({ questionId: trace.questionId, messages: [call.messages.at(-1)!], hasEvidence: n.evidencePassageId !== undefined, label: labels[i]?.label ?? null });
    });
  }
  console.error(`${items.length} nodes from ${traces.length} questions (${items.filter((i) => i.label === true).length} labelled right, ${items.filter((i) => i.label === false).length} wrong)`);

  const withJudge = async (name: string | null): Promise<PipelineContext> => (name ? judgeContext(name) : parts.context);
  const judgeAll = async (llm: LanguageModel, prompts: ChatMessage[][]) => {
    const out: number[][] = [];
    for (const messages of prompts) {
      const r = await llm.judge({ messages, labels: LABELS, purpose: 'toc.verify' });
      out.push(r.mode === 'probability' ? r.probabilities : [r.p, 1 - r.p]);
    }
    return out;
  };
  const balanced = (m: ChatMessage[]): ChatMessage[] => [
    ...balancedVerifyShots(wording).flatMap((s) => [
      { role: 'user' as const, content: s.user },
      { role: 'assistant' as const, content: s.assistant },
    ]),
    ...m,
  ];
  const batchPrior = async (ctx: PipelineContext, verifyDemos: 'none' | 'balanced') => {
    const options = tocOptionsSchema.parse({ ...base.pipeline.options, judgeCalibration: 'batch', verifyDemos });
    const priors = await new TocPipeline(options).calibrate(calibrationPool(ctx.demos?.pool ?? [], parts.examples), ctx);
    return priors!.purposes['toc.verify']!.prior;
  };
  const contentFreePrior = async (ctx: PipelineContext, withEvidence: boolean) =>
    (await judgeAll(ctx.llm, [verifyPrompt(CONTENT_FREE, CONTENT_FREE, withEvidence ? contentFreePassage() : null, 'none', wording)]))[0]!;

  const settings: Array<{ name: string; p: number[]; prior?: number; seconds: number }> = [];
  const record = (name: string, probs: number[][], t: number, prior?: number[]) => {
    const p = probs.map((x) => (prior ? calibrateProbabilities(x, prior).probabilities[0]! : x[0]!));
    settings.push({ name, p, ...(prior ? { prior: prior[0] } : {}), seconds: (performance.now() - t) / 1000 });
    console.error(`${name}: done (${((performance.now() - t) / 1000).toFixed(0)} s)`);
  };

  const small = parts.context;
  let t = performance.now();
  const raw05 = await judgeAll(small.llm, items.map((i) => i.messages));
  record('0.5B raw', raw05, t);
  t = performance.now();
  const cf = await contentFreePrior(small, true);
  const cfNone = await contentFreePrior(small, false);
  settings.push({
    name: '0.5B content-free',
    p: raw05.map((x, k) => calibrateProbabilities(x, items[k]!.hasEvidence ? cf : cfNone).probabilities[0]!),
    prior: cf[0],
    seconds: (performance.now() - t) / 1000,
  });
  t = performance.now();
  const priorsUsed = { small: await batchPrior(small, 'none'), smallBalanced: [] as number[], big: [] as number[] };
  record('0.5B batch', raw05, t, priorsUsed.small);
  t = performance.now();
  const bal05 = await judgeAll(small.llm, items.map((i) => balanced(i.messages)));
  record('0.5B balanced demos', bal05, t);
  t = performance.now();
  priorsUsed.smallBalanced = await batchPrior(small, 'balanced');
  record('0.5B balanced demos + batch', bal05, t, priorsUsed.smallBalanced);

  const big = await withJudge(judge15);
  t = performance.now();
  const raw15 = await judgeAll(big.llm, items.map((i) => i.messages));
  record('1.5B raw', raw15, t);
  t = performance.now();
  priorsUsed.big = await batchPrior(big, 'none');
  record('1.5B batch', raw15, t, priorsUsed.big);

  // Gold-pair items on the first K study questions: each gold disambiguation's answer (right)
  // and another sampled question's answer (wrong) against the best retrieved passage stating the
  // gold answer — built by the same code as the batch prior, so a batch prior read from the demo
  // pool is judged on inputs built like its own (stated in docs/results.md).
  const goldRows: unknown[] = [];
  if (goldQuestions > 0) {
    const studyPool = parts.examples.slice(0, goldQuestions).map(demoFromExample);
    const judged = async (ctx: PipelineContext, verifyDemos: 'none' | 'balanced') => {
      const options = tocOptionsSchema.parse({ ...base.pipeline.options, judgeCalibration: 'batch', verifyDemos, calibrationQuestions: goldQuestions, calibrationSeed: 0 });
      const priors = (await new TocPipeline(options).calibrate(studyPool, ctx))!;
      return { probs: priors.calls.map((c) => c.judge!.probabilities), sampleIds: priors.sampleIds, questionOf: priors.calls.map((c) => c.messages.at(-1)!.content) };
    };
    let g = performance.now();
    const g05 = await judged(small, 'none');
    const gold: Array<{ name: string; p: number[] }> = [];
    gold.push({ name: '0.5B raw', p: g05.probs.map((x) => x[0]!) });
    gold.push({ name: '0.5B content-free', p: g05.probs.map((x) => calibrateProbabilities(x, cf).probabilities[0]!) });
    gold.push({ name: '0.5B batch', p: g05.probs.map((x) => calibrateProbabilities(x, priorsUsed.small).probabilities[0]!) });
    const g05b = await judged(small, 'balanced');
    gold.push({ name: '0.5B balanced demos', p: g05b.probs.map((x) => x[0]!) });
    gold.push({ name: '0.5B balanced demos + batch', p: g05b.probs.map((x) => calibrateProbabilities(x, priorsUsed.smallBalanced).probabilities[0]!) });
    const g15 = await judged(big, 'none');
    gold.push({ name: '1.5B raw', p: g15.probs.map((x) => x[0]!) });
    gold.push({ name: '1.5B batch', p: g15.probs.map((x) => calibrateProbabilities(x, priorsUsed.big).probabilities[0]!) });
    console.error(`gold items: ${g05.probs.length} per setting (${((performance.now() - g) / 1000).toFixed(0)} s)`);
    // Even calls: a gold answer (right); odd: another question's answer (wrong). Clusters: the
    // question the item asks about (the verification turn's text up to "Proposed answer").
    const labelsG = g05.probs.map((_, i) => i % 2 === 0);
    const clusterOf = g05.questionOf.map((q) => q.slice(q.indexOf('Question: '), q.indexOf('Proposed answer')));
    const clusters = [...new Set(clusterOf)];
    // Each setting's AUC against the 0.5B raw judge's, paired on the same items (the bootstrap
    // resamples questions for both at once).
    const reference = gold[0]!;
    for (const s of gold) {
      const perQuestion: LabelledJudgment[][] = clusters.map((c) => s.p.flatMap((p, k) => (clusterOf[k] === c ? [{ purpose: 'toc.verify', p, label: labelsG[k]! }] : [])));
      const paired = clusters.map((c) => s.p.flatMap((p, k) => (clusterOf[k] === c ? [{ pA: reference.p[k]!, pB: p, label: labelsG[k]! }] : [])));
      const vsRaw = s === reference ? null : pairedAucDifference(paired);
      goldRows.push({ setting: s.name, ...studyRow(perQuestion, s.p, labelsG), ...(vsRaw ? { deltaAucVsRaw: vsRaw } : {}) });
    }
  }

  // Diagnostics per setting, questions as the bootstrap's clusters.
  const byQuestion = [...new Set(items.map((i) => i.questionId))];
  const rows = settings.map((s) => {
    const perQuestion: LabelledJudgment[][] = byQuestion.map((q) =>
      items.flatMap((it, k) => (it.questionId === q ? [{ purpose: 'toc.verify', p: s.p[k]!, label: it.label }] : [])),
    );
    return {
      setting: s.name,
      prior: s.prior,
      ...studyRow(perQuestion, s.p, items.map((it) => it.label)),
      seconds: s.seconds,
    };
  });
  const out = { runDir, config: configFile, questions: byQuestion.length, nodes: items.length, wallSeconds: (performance.now() - t0) / 1000, priors: priorsUsed, contentFreePrior: cf, rows, goldQuestions, goldRows };
  writeFileSync(outFile, JSON.stringify(out, null, 2) + '\n');
  const f = (x: number | null | undefined, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
  console.log('| judge | prior | AUC [95% CI] | share ≥ 0.5 | mean P right / wrong | kept right / wrong | Brier |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.setting} | ${f(r.prior)} | ${f(r.auc)} [${f(r.aucCiLow)}, ${f(r.aucCiHigh)}] | ${f(r.shareAtLeastHalf, 2)} | ${f(r.meanPPositive)} / ${f(r.meanPNegative)} | ${r.keptPositives}/${r.positives} / ${r.keptNegatives}/${r.negatives} | ${f(r.brier)} |`,
    );
  }
  console.log(`${items.length} nodes, ${byQuestion.length} questions, ${out.wallSeconds.toFixed(0)} s`);
  if (goldRows.length > 0) {
    console.log(`\ngold-pair items on the first ${goldQuestions} questions:`);
    for (const r of goldRows as Array<(typeof rows)[number] & { deltaAucVsRaw?: { delta: number; low: number; high: number; p: number } }>) {
      const d = r.deltaAucVsRaw;
      const vs = d ? `${d.delta >= 0 ? '+' : ''}${f(d.delta)} [${f(d.low)}, ${f(d.high)}], p ${d.p < 0.001 ? '< 0.001' : f(d.p)}` : 'reference';
      console.log(
        `| ${r.setting} | ${f(r.auc)} [${f(r.aucCiLow)}, ${f(r.aucCiHigh)}] | ${vs} | ${f(r.shareAtLeastHalf, 2)} | ${f(r.meanPPositive)} / ${f(r.meanPNegative)} | ${r.keptPositives}/${r.positives} / ${r.keptNegatives}/${r.negatives} | ${f(r.brier)} |`,
      );
    }
  }
} finally {
  await composer.close();
}

/** One setting's row of the study: the diagnostics, and how many right and wrong items P ≥ 0.5 keeps. */
function studyRow(perQuestion: LabelledJudgment[][], p: readonly number[], labels: ReadonlyArray<boolean | null | undefined>) {
  const d = judgeQuality('toc.verify', perQuestion, { minPerClass: 5 })!;
  return {
    auc: d.auc,
    aucCiLow: d.aucCiLow,
    aucCiHigh: d.aucCiHigh,
    shareAtLeastHalf: d.shareAtLeastHalf,
    meanPPositive: d.meanPPositive,
    meanPNegative: d.meanPNegative,
    brier: d.brier,
    positives: d.positives,
    negatives: d.negatives,
    keptPositives: p.filter((x, k) => labels[k] === true && x >= 0.5).length,
    keptNegatives: p.filter((x, k) => labels[k] === false && x >= 0.5).length,
  };
}

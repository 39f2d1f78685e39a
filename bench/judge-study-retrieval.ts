/**
 * Issue 26 study, second part: the retrieval judges of Diva (`diva.verify`: do these passages
 * answer the interpretation?) and COMBO (`combo.evidentiality`: does this passage help answer the
 * question?) on the study questions, under the 0.5B generator as judge (raw and each calibration
 * the pipeline offers) and the catalog's 1.5B model as `judge:`.
 *
 * Items are built from real retrieval on the study config's questions (first K of its seeded
 * selection), with each method's own prompt and the silver labels of docs/metrics.md:
 *
 * - Diva: each of (up to `--dq` of) a question's gold disambiguations, asked against the passages
 *   retrieved for it and against the passages retrieved for another study question's
 *   disambiguation; label: a passage contains a gold short answer of the question. CHOICE: plain
 *   retrieval per disambiguation, not Diva's multi-query selection over the model's own
 *   interpretations (which a generator would have to write first).
 * - COMBO evidentiality: the question against each of its top `--passages` retrieved passages,
 *   one judgment per passage; label: the passage contains a gold short answer.
 *
 * Batch priors come from the pipeline's own calibrate() on the demo pool minus every study
 * question, as a run computes them. Every judgment goes through the LLM client and its cache.
 *
 *   npx tsx bench/judge-study-retrieval.ts <config.yaml> [--questions 50] [--dq 1] [--passages 3]
 *     [--judge15 name] [--batch15] [--out file.json]
 *
 * `--batch15`: also the 1.5B judge's batch prior for Diva (32 more judgments of five passages each,
 * about as long as the 1.5B's Diva items on 16 questions); off by default.
 */
import { writeFileSync } from 'node:fs';
import { openStudy } from './study-setup';
import { calibrationPool } from '../src/experiments/judge-priors';
import type { ChatMessage, LanguageModel } from '../src/llm/types';
import { goldAnswerMatcher, type JudgePurpose } from '../src/metrics/judge-labels';
import { judgeQuality, pairedAucDifference } from '../src/metrics/judge-quality';
import { calibrateProbabilities, CONTENT_FREE, contentFreePassage } from '../src/pipelines/common/judge';
import { evidentialityPrompt } from '../src/pipelines/combo/prompts';
import { DivaPipeline } from '../src/pipelines/diva';
import { divaOptionsSchema } from '../src/pipelines/diva/options';
import { verifyPrompt } from '../src/pipelines/diva/prompts';
import type { PipelineContext } from '../src/pipelines/types';
import type { LabelledJudgment } from '../src/run-files';
import type { Passage } from '../src/retrieval/types';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const configFile = args[0];
if (!configFile || configFile.startsWith('--')) {
  console.error('usage: npx tsx bench/judge-study-retrieval.ts <config.yaml> [--questions 50] [--dq 1] [--passages 3] [--judge15 name] [--out file.json]');
  process.exit(2);
}
const nQuestions = Number(flag('--questions') ?? 50);
const dqPerQuestion = Number(flag('--dq') ?? 1);
const passagesPerQuestion = Number(flag('--passages') ?? 3);
const judge15 = flag('--judge15') ?? 'qwen2.5-coder-1.5b-instruct-q4_k_m';
const outFile = flag('--out') ?? 'judge-study-retrieval.json';
const batch15 = args.includes('--batch15');
const YES_NO = ['Yes', 'No'];

interface Item {
  questionId: string;
  request: { messages: ChatMessage[] } | { prompt: string };
  label: boolean;
}

const t0 = performance.now();
const { composer, parts, withJudge } = await openStudy(configFile);
try {
  const retriever = parts.context.retriever!;
  const study = parts.examples.slice(0, nQuestions);
  const divaOptions = divaOptionsSchema.parse({ judgeCalibration: 'batch' });
  const search = async (query: string, k: number): Promise<Passage[]> => (await retriever.search(query, k)).map((h) => h.passage);

  // Diva items: a gold disambiguation against its own passages and against another question's.
  const divaItems: Item[] = [];
  const firstPairs = study.map((e) => e.qaPairs.find((p) => p.question.trim() !== '' && p.shortAnswers.length > 0));
  for (const [i, example] of study.entries()) {
    const matches = goldAnswerMatcher(example);
    if (matches.empty) continue;
    const other = firstPairs.slice(i + 1).concat(firstPairs.slice(0, i)).find((p) => p !== undefined);
    const pairs = example.qaPairs.filter((p) => p.question.trim() !== '' && p.shortAnswers.length > 0).slice(0, dqPerQuestion);
    for (const pair of pairs) {
      for (const query of [pair.question, ...(other ? [other.question] : [])]) {
        const passages = await search(query, divaOptions.nPassages);
        divaItems.push({
          questionId: example.id,
          request: { messages: verifyPrompt(pair.question, passages, 'none') },
          label: passages.some((p) => matches.any(p.text)),
        });
      }
    }
  }
  // COMBO evidentiality items: the question against each of its top passages.
  const comboItems: Item[] = [];
  for (const example of study) {
    const matches = goldAnswerMatcher(example);
    if (matches.empty) continue;
    for (const passage of await search(example.question, passagesPerQuestion)) {
      comboItems.push({ questionId: example.id, request: { prompt: evidentialityPrompt(example.question, passage) }, label: matches.any(passage.text) });
    }
  }
  const count = (items: Item[]) => `${items.length} items (${items.filter((i) => i.label).length} labelled right)`;
  console.error(`diva.verify: ${count(divaItems)}; combo.evidentiality: ${count(comboItems)}; retrieval ${((performance.now() - t0) / 1000).toFixed(0)} s`);

  const judgeAll = async (llm: LanguageModel, purpose: JudgePurpose, requests: Item['request'][]) => {
    const out: number[][] = [];
    for (const request of requests) {
      const r = await llm.judge({ ...request, labels: YES_NO, purpose });
      out.push(r.mode === 'probability' ? r.probabilities : [r.p, 1 - r.p]);
    }
    return out;
  };
  const divaBatchPrior = async (ctx: PipelineContext) => {
    const priors = await new DivaPipeline(divaOptions).calibrate(calibrationPool(ctx.demos?.pool ?? [], parts.examples), ctx);
    return priors!.purposes['diva.verify']!.prior;
  };
  // Content-free twins as the pipelines build them (Diva keeps the passage count).
  const divaContentFree = verifyPrompt(CONTENT_FREE, Array.from({ length: divaOptions.nPassages }, (_, i) => contentFreePassage(i)), 'none');
  const comboContentFree = evidentialityPrompt(CONTENT_FREE, contentFreePassage());

  const rows: Array<Record<string, unknown>> = [];
  const addRows = (purpose: JudgePurpose, items: Item[], settings: Array<{ setting: string; probs: number[][]; prior?: number[] }>, seconds: number) => {
    const questions = [...new Set(items.map((i) => i.questionId))];
    for (const s of settings) {
      const p = s.probs.map((x) => (s.prior ? calibrateProbabilities(x, s.prior).probabilities[0]! : x[0]!));
      const perQuestion: LabelledJudgment[][] = questions.map((q) => items.flatMap((it, k) => (it.questionId === q ? [{ purpose, p: p[k]!, label: it.label }] : [])));
      const d = judgeQuality(purpose, perQuestion, { minPerClass: 5 });
      rows.push({
        purpose,
        setting: s.setting,
        ...(s.prior ? { prior: s.prior[0] } : {}),
        questions: questions.length,
        auc: d?.auc ?? null,
        aucCiLow: d?.aucCiLow ?? null,
        aucCiHigh: d?.aucCiHigh ?? null,
        shareAtLeastHalf: d?.shareAtLeastHalf ?? null,
        meanPPositive: d?.meanPPositive ?? null,
        meanPNegative: d?.meanPNegative ?? null,
        brier: d?.brier ?? null,
        positives: items.filter((i) => i.label).length,
        negatives: items.filter((i) => !i.label).length,
        keptPositives: p.filter((x, k) => items[k]!.label && x >= 0.5).length,
        keptNegatives: p.filter((x, k) => !items[k]!.label && x >= 0.5).length,
        judgeSeconds: seconds,
      });
    }
  };

  const small = parts.context;
  const big = await withJudge(judge15);
  const rawP: Record<string, number[]> = {};
  for (const [name, ctx] of [['0.5B', small], ['1.5B', big]] as const) {
    let t = performance.now();
    const diva = await judgeAll(ctx.llm, 'diva.verify', divaItems.map((i) => i.request));
    rawP[`${name} diva.verify`] = diva.map((x) => x[0]!);
    const divaCf = (await judgeAll(ctx.llm, 'diva.verify', [{ messages: divaContentFree }]))[0]!;
    const divaBatch = name === '0.5B' || batch15 ? await divaBatchPrior(ctx) : undefined;
    addRows('diva.verify', divaItems, [
      { setting: `${name} raw`, probs: diva },
      { setting: `${name} content-free`, probs: diva, prior: divaCf },
      ...(divaBatch ? [{ setting: `${name} batch`, probs: diva, prior: divaBatch }] : []),
    ], (performance.now() - t) / 1000);
    console.error(`${name} diva.verify: ${((performance.now() - t) / 1000).toFixed(0)} s`);
    t = performance.now();
    const combo = await judgeAll(ctx.llm, 'combo.evidentiality', comboItems.map((i) => i.request));
    rawP[`${name} combo.evidentiality`] = combo.map((x) => x[0]!);
    const comboCf = (await judgeAll(ctx.llm, 'combo.evidentiality', [{ prompt: comboContentFree }]))[0]!;
    addRows('combo.evidentiality', comboItems, [
      { setting: `${name} raw`, probs: combo },
      { setting: `${name} content-free`, probs: combo, prior: comboCf },
    ], (performance.now() - t) / 1000);
    console.error(`${name} combo.evidentiality: ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }

  // The 1.5B judge's AUC against the 0.5B's on the same items, paired by question.
  const paired = ([['diva.verify', divaItems], ['combo.evidentiality', comboItems]] as const).map(([purpose, items]) => {
    const a = rawP[`0.5B ${purpose}`]!;
    const b = rawP[`1.5B ${purpose}`]!;
    const questions = [...new Set(items.map((i) => i.questionId))];
    const clusters = questions.map((q) => items.flatMap((it, k) => (it.questionId === q ? [{ pA: a[k]!, pB: b[k]!, label: it.label }] : [])));
    return { purpose, deltaAuc15vs05: pairedAucDifference(clusters) };
  });
  const out = { config: configFile, questions: study.length, dqPerQuestion, passagesPerQuestion, wallSeconds: (performance.now() - t0) / 1000, rows, paired };
  writeFileSync(outFile, JSON.stringify(out, null, 2) + '\n');
  const f = (x: unknown, d = 3) => (typeof x !== 'number' || Number.isNaN(x) ? '–' : x.toFixed(d));
  console.log('| judge | setting | prior | AUC [95% CI] | share P ≥ 0.5 | mean P right / wrong | kept right / wrong | Brier |');
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    console.log(
      `| ${r.purpose} | ${r.setting} | ${f(r.prior)} | ${f(r.auc)} [${f(r.aucCiLow)}, ${f(r.aucCiHigh)}] | ${f(r.shareAtLeastHalf, 2)} | ${f(r.meanPPositive)} / ${f(r.meanPNegative)} | ${r.keptPositives}/${r.positives} / ${r.keptNegatives}/${r.negatives} | ${f(r.brier)} |`,
    );
  }
  for (const { purpose, deltaAuc15vs05: d } of paired) {
    console.log(`${purpose}: AUC 1.5B − 0.5B = ${d ? `${f(d.delta)} [${f(d.low)}, ${f(d.high)}], p ${f(d.p)}` : '–'} (paired by question)`);
  }
  console.log(`${study.length} questions, ${out.wallSeconds.toFixed(0)} s`);
} finally {
  await composer.close();
}

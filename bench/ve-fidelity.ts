/**
 * What Verify-and-Edit's released-code defaults did on a run (issue 34; a script, not a test):
 *
 *   npx tsx bench/ve-fidelity.ts artifacts/runs/<run> [--json out.json]
 *
 * Reads the run dir (results, traces, metrics.json, nothing re-run) and prints, beside the run's
 * own metrics (EM with and without the alternative answers, both AUCs, the edit rate, the
 * `ve.consistency` judge): how many questions only an alternative answer made right; on edited
 * questions, how often the most probable majority sample was not the first one (so `editSample`
 * changed the rationale edited); how often a kept question's scored conclusion was another answer
 * (`answerLogprobAnswer`); how many final answers are a written demo's answer (a small model
 * copying its demos); calls, tokens and seconds per question.
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { loadDataset } from '../src/datasets';
import { defaultAlternativesPath } from '../src/datasets/alternative-answers';
import { exactMatch } from '../src/metrics/squad';
import { WRITTEN_DEMOS } from '../src/pipelines/verify-edit/demos';
import { normaliseAnswer } from '../src/pipelines/common/text';
import { loadRun } from '../src/report/load';
import { veDecisionsOf } from '../src/pipelines/verify-edit/decisions';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { json: { type: 'string' } } });
const dir = positionals[0];
if (!dir) throw new Error('usage: npx tsx bench/ve-fidelity.ts <run dir> [--json out.json]');
const run = loadRun(dir);
const config = run.config as { dataset: { path: string; alternatives?: string } };
const examples = new Map(
  loadDataset('hotpotqa-adversarial', config.dataset.path, { alternatives: config.dataset.alternatives ?? defaultAlternativesPath(config.dataset.path) }).map((e) => [e.id, e]),
);

const ve = run.traces.flatMap((t) => { const d = veDecisionsOf(t); return d ? [{ t, d }] : []; });
const byId = new Map(run.results.map((r) => [r.id, r]));
const share = (k: number, n: number) => (n === 0 ? '–' : `${k}/${n} (${((100 * k) / n).toFixed(1)}%)`);
const mean = (xs: number[]) => (xs.length ? xs.reduce((s, x) => s + x, 0) / xs.length : NaN);

let altOnly = 0;
let edited = 0;
let editedNotFirst = 0;
let editedOtherRationale = 0;
let kept = 0;
let keptOtherConclusion = 0;
let demoCopies = 0;
let editedRight = 0;
let keptRight = 0;
const demoAnswers = new Set(WRITTEN_DEMOS['hotpotqa-adversarial'].map((d) => normaliseAnswer(d.answer ?? '')));
for (const { t, d } of ve) {
  const r = byId.get(t.questionId);
  const e = examples.get(t.questionId);
  if (!r || !e) continue;
  const answer = r.answer ?? d.finalAnswer;
  const gold = e.answers.some((g) => exactMatch(answer, g) === 1);
  const right = gold || (e.alternativeAnswers ?? []).some((g) => exactMatch(answer, g) === 1);
  if (right && !gold) altOnly += 1;
  if (demoAnswers.has(normaliseAnswer(answer))) demoCopies += 1;
  if (d.edited) {
    edited += 1;
    if (right) editedRight += 1;
    const first = d.samples.findIndex((s) => s.answer !== '' && normaliseAnswer(s.answer) === normaliseAnswer(d.majorityAnswer));
    if (d.editedSampleIndex !== undefined && first >= 0 && d.editedSampleIndex !== first) {
      editedNotFirst += 1;
      if (d.samples[first].rationale.trim() !== d.samples[d.editedSampleIndex].rationale.trim()) editedOtherRationale += 1;
    }
  } else {
    kept += 1;
    if (right) keptRight += 1;
    if (d.answerLogprobAnswer !== undefined) keptOtherConclusion += 1;
  }
}

const usage = run.results.map((r) => (r.usage ?? {}) as unknown as Record<string, number>);
const m = run.metrics?.metrics ?? {};
const fmt = (name: string) => (m[name] ? `${m[name].mean.toFixed(1)} [${m[name].ciLow.toFixed(1)}, ${m[name].ciHigh.toFixed(1)}] (n ${m[name].n})` : '–');
const judge = (run.metrics as unknown as { judges?: Record<string, { auc?: number; aucCiLow?: number; aucCiHigh?: number; brier?: number; positives?: number; negatives?: number; meanPPositive?: number; meanPNegative?: number }> })?.judges?.['ve.consistency'];
const out = {
  run: run.name,
  questions: ve.length,
  em: fmt('em'),
  em_alt: fmt('em_alt'),
  f1: fmt('f1'),
  f1_alt: fmt('f1_alt'),
  auc: fmt('auc'),
  auc_logprob: fmt('auc_logprob'),
  edited: share(edited, ve.length),
  right_only_by_an_alternative: share(altOnly, ve.length),
  accuracy_edited_em_alt: share(editedRight, edited),
  accuracy_kept_em_alt: share(keptRight, kept),
  edited_sample_not_the_first: share(editedNotFirst, edited),
  edited_rationale_differs_from_the_first: share(editedOtherRationale, edited),
  kept_conclusion_another_answer: share(keptOtherConclusion, kept),
  final_answer_is_a_written_demo_answer: share(demoCopies, ve.length),
  judge_ve_consistency: judge
    ? `AUC ${judge.auc?.toFixed(3)} [${judge.aucCiLow?.toFixed(3)}, ${judge.aucCiHigh?.toFixed(3)}], Brier ${judge.brier?.toFixed(3)}, ${judge.positives} right / ${judge.negatives} wrong, mean consistency right ${judge.meanPPositive?.toFixed(3)} / wrong ${judge.meanPNegative?.toFixed(3)}`
    : '–',
  llm_calls_per_question: mean(usage.map((u) => u.llmCalls ?? 0)).toFixed(2),
  tokens_per_question: mean(usage.map((u) => (u.promptTokens ?? 0) + (u.completionTokens ?? 0))).toFixed(0),
  seconds_per_question: mean(usage.map((u) => u.seconds ?? 0)).toFixed(1),
};
for (const [k, v] of Object.entries(out)) console.log(`${k.padEnd(42)} ${v}`);
if (values.json) writeFileSync(values.json, JSON.stringify(out, null, 2) + '\n');

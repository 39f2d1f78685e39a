/**
 * Issue 34: does ToC's verification wording change how well the judge separates? The released
 * prompt asks whether the proposed answer could be correct (`verifyWording: released`); ambiqa
 * used to add "under one of its possible readings" (`any-reading`). Both wordings judge the same
 * gold-pair items of the first K study questions — each gold disambiguation's answer (right) and
 * another sampled question's answer (wrong) against the best retrieved passage stating the gold
 * answer, built by ToC's own batch-calibration code as in bench/judge-study.ts — with the config's
 * judge. Reported: each wording's AUC with its question-resampled 95% CI, and the paired AUC
 * difference (both wordings on each bootstrap resample of the questions).
 *
 *   npx tsx bench/toc-verify-wording.ts experiments/study/judges-toc-1.5b.yaml [--questions 25]
 */
import { openStudy } from './study-setup';
import { judgeQuality, pairedAucDifference } from '../src/metrics/judge-quality';
import { demoFromExample } from '../src/pipelines/demos';
import { TocPipeline } from '../src/pipelines/toc';
import { tocOptionsSchema } from '../src/pipelines/toc/options';
import type { LabelledJudgment } from '../src/run-files';

const args = process.argv.slice(2);
const configFile = args.find((a) => !a.startsWith('--'));
const qi = args.indexOf('--questions');
const questions = qi >= 0 ? Number(args[qi + 1]) : 25;
if (!configFile || !(questions > 0)) {
  console.error('usage: npx tsx bench/toc-verify-wording.ts <study config.yaml> [--questions K]');
  process.exit(2);
}

const t0 = performance.now();
const { composer, base, parts } = await openStudy(configFile);
try {
  const pool = parts.examples.slice(0, questions).map(demoFromExample);
  const wordings = ['released', 'any-reading'] as const;
  const judged: Record<string, { p: number[]; cluster: string[]; seconds: number }> = {};
  for (const verifyWording of wordings) {
    const t = performance.now();
    const options = tocOptionsSchema.parse({ ...base.pipeline.options, judgeCalibration: 'batch', verifyWording, calibrationQuestions: questions, calibrationSeed: 0 });
    const priors = (await new TocPipeline(options).calibrate(pool, parts.context))!;
    const turns = priors.calls.map((c) => c.messages.at(-1)!.content);
    judged[verifyWording] = {
      p: priors.calls.map((c) => c.judge!.probabilities[0]!),
      // The question an item asks about: the bootstrap's cluster.
      cluster: turns.map((q) => q.slice(q.indexOf('Question: '), q.indexOf('Proposed answer'))),
      seconds: (performance.now() - t) / 1000,
    };
    console.error(`${verifyWording}: ${turns.length} items (${judged[verifyWording]!.seconds.toFixed(0)} s)`);
  }
  const released = judged.released!;
  const other = judged['any-reading']!;
  // Even items: a gold answer (right); odd: another question's answer (wrong).
  const labels = released.p.map((_, i) => i % 2 === 0);
  const clusters = [...new Set(released.cluster)];
  const perQuestion = (p: number[]): LabelledJudgment[][] =>
    clusters.map((c) => p.flatMap((x, k) => (released.cluster[k] === c ? [{ purpose: 'toc.verify', p: x, label: labels[k]! }] : [])));
  const f = (x: number | null | undefined, d = 3) => (x === null || x === undefined || Number.isNaN(x) ? '–' : x.toFixed(d));
  console.log(`| wording | items (right / wrong) | AUC [95% CI] | mean P right / wrong | kept at 0.5 right / wrong |`);
  console.log('|---|---|---|---|---|');
  for (const w of wordings) {
    const p = judged[w]!.p;
    const q = judgeQuality('toc.verify', perQuestion(p), { minPerClass: 5 })!;
    const kept = (want: boolean) => p.filter((x, k) => labels[k] === want && x >= 0.5).length;
    console.log(`| ${w} | ${p.length} (${q.positives} / ${q.negatives}) | ${f(q.auc)} [${f(q.aucCiLow)}, ${f(q.aucCiHigh)}] | ${f(q.meanPPositive)} / ${f(q.meanPNegative)} | ${kept(true)} / ${kept(false)} |`);
  }
  const paired = clusters.map((c) => released.p.flatMap((x, k) => (released.cluster[k] === c ? [{ pA: x, pB: other.p[k]!, label: labels[k]! }] : [])));
  const d = pairedAucDifference(paired);
  if (d) console.log(`\nΔAUC any-reading − released, paired by question: ${d.delta >= 0 ? '+' : ''}${f(d.delta)} [${f(d.low)}, ${f(d.high)}], p ${d.p < 0.001 ? '< 0.001' : f(d.p)}`);
  console.log(`${clusters.length} questions, ${((performance.now() - t0) / 1000).toFixed(0)} s`);
} finally {
  await composer.close();
}

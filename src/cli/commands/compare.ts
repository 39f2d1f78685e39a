import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { artifactsDir } from '../../config/paths';
import { describeExitStatus, parseGroupBy, parsePositiveInt } from '../../experiments/cli-support';
import { ExitStatus } from '../../experiments/exit-status';
import { tokensOf } from '../../llm/usage';
import type { Comparison, GroupPairedRow } from '../../run-files/comparison';

export const summary = 'paired tests between runs or sweep points on the same questions, side by side per question';

const usage = `usage: ambiqa compare <run or sweep dir> <run or sweep dir> … [options]

Pairs the runs question by question (by question id) against a baseline and, for every other
run and metric, prints the mean delta with its paired bootstrap 95% CI, a two-sided paired
sign-flip randomisation p-value, the Holm-adjusted p over the whole table, the questions a
paired test would need for 80% power, and how many paired questions changed answer. A sweep
directory counts as its points' runs. Scores are the runs' own per-question metrics; nothing
is re-run. Runs of different datasets, or with no question in common, are refused.

Runs with trials (\`trials: k\`) are paired by question over all their trials: the CI is a
two-level bootstrap (questions, then each side's trials), and a second table splits the
variance of the per-question deltas into sampling and questions, with the questions needed
for 80% power at 1, 2, 5, 10 and the run's own trials per question.

Writes the comparison (JSON, docs/compare.md) and its side-by-side HTML report, and logs it to
MLflow as a run of its own (tag ambiqa.kind=comparison) with the report attached.

options:
  --baseline NAME    the baseline run: a run name, a sweep point's label or a run folder name
                     (default: the first run)
  --metrics m1,m2    metrics to compare (default: every per-question metric all runs have)
  --group-by f1,f2   paired deltas per group of questions as well, Holm-adjusted across the
                     groups of a field (default: the groups every run recorded with groupBy;
                     kind and label are derived from runs recorded without it)
  --out F.json       the comparison file (default: artifacts/comparisons/<name>/comparison.json)
  --report F.html    the side-by-side report (default: report.html beside --out)
  --data F           dataset file with the gold disambiguations (default: the baseline's dataset.path)
  --resamples N      bootstrap resamples (default 1000)
  --seed N           seed of the bootstrap and of Monte Carlo sign flips (default 0)
  --experiment NAME  MLflow experiment (default: the baseline run's, else ambiqa-comparisons)
  --no-tracking      do not log the comparison to MLflow
  -h, --help         this help

Exit status 0, or 4 when a compared run has failed questions (left out of its pairs; the
comparison is still written); docs/cli.md lists them all.`;

const fmt = (x: number | null, digits = 1) => (x === null || !Number.isFinite(x) ? '' : x.toFixed(digits));
const fmtP = (p: number | null) => (p === null ? '' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

/** The paired table as Markdown (printed; also what docs quote). */
export function comparisonMarkdown(c: Comparison): string {
  const header = ['run', 'metric', 'n', c.baseline, 'run mean', 'Δ [95% CI]', 'p', 'p (Holm)', 'q for 80% power', 'answer changed', 'left out'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of c.rows) {
    const delta = Number.isFinite(r.meanDelta) ? `${r.meanDelta > 0 ? '+' : ''}${r.meanDelta.toFixed(1)} [${fmt(r.ciLow)}, ${fmt(r.ciHigh)}]` : '';
    const leftOut = r.failedInRun + r.failedInBaseline + r.onlyInRun + r.onlyInBaseline;
    lines.push(
      `| ${[r.run, r.metric, String(r.n), fmt(r.baselineMean), fmt(r.runMean), delta, fmtP(r.p) + (r.pMethod === 'monte-carlo' ? ' (MC)' : ''), fmtP(r.pHolm), r.questionsFor80Power === null ? '–' : String(r.questionsFor80Power), String(r.answerChanged), String(leftOut)]
        .map((x) => x.replace(/\|/g, '\\|'))
        .join(' | ')} |`,
    );
  }
  return lines.join('\n') + '\n';
}

/**
 * The per-group paired table (`--group-by`) as Markdown: one row per run, metric, field and group;
 * p (Holm) adjusted across the groups of the field.
 */
export function groupsMarkdown(rows: readonly GroupPairedRow[]): string {
  const header = ['run', 'metric', 'group', 'n', 'baseline', 'run mean', 'Δ [95% CI]', 'p', 'p (Holm, across groups)'];
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
  for (const r of rows) {
    const delta = Number.isFinite(r.meanDelta) ? `${r.meanDelta > 0 ? '+' : ''}${r.meanDelta.toFixed(1)} [${fmt(r.ciLow)}, ${fmt(r.ciHigh)}]` : '';
    lines.push(
      `| ${[r.run, r.metric, `${r.field}=${r.value}`, String(r.n), fmt(r.baselineMean), fmt(r.runMean), delta, fmtP(r.p) + (r.pMethod === 'monte-carlo' ? ' (MC)' : ''), fmtP(r.pHolm)]
        .map((x) => x.replace(/\|/g, '\\|'))
        .join(' | ')} |`,
    );
  }
  return `by group:\n\n${lines.join('\n')}\n`;
}

function usageLines(c: Comparison): string[] {
  return c.runs.map((r) => {
    const u = r.usage;
    if (!u) return `  ${r.name}: no metrics.json usage`;
    const cost = u.cost_usd !== undefined ? `, $${u.cost_usd.toFixed(4)}` : '';
    const tokens = tokensOf({ promptTokens: u.prompt_tokens, completionTokens: u.completion_tokens }) ?? '?';
    return `  ${r.name}: ${r.questions} questions (${r.failed} failed), ${u.llm_calls} LLM calls, ${tokens} tokens${cost}, ${u.wall_seconds.toFixed(0)} s`;
  });
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      baseline: { type: 'string' },
      metrics: { type: 'string' },
      'group-by': { type: 'string' },
      out: { type: 'string' },
      report: { type: 'string' },
      data: { type: 'string' },
      resamples: { type: 'string' },
      seed: { type: 'string' },
      experiment: { type: 'string' },
      'no-tracking': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (positionals.length === 0) throw new AmbiqaError('ambiqa compare: no run or sweep directories given', 'e.g. `npx ambiqa compare artifacts/runs/rag artifacts/runs/toc`');
  const metrics = values.metrics?.split(',').map((m) => m.trim()).filter(Boolean);
  if (values.metrics !== undefined && (!metrics || metrics.length === 0)) throw new AmbiqaError('--metrics: give metric names separated by commas, e.g. --metrics str_em,d_f1');
  const resamples = values.resamples !== undefined ? parsePositiveInt(values.resamples, '--resamples') : undefined;
  let seed: number | undefined;
  if (values.seed !== undefined) {
    seed = Number(values.seed);
    if (!Number.isInteger(seed)) throw new AmbiqaError(`--seed: '${values.seed}' is not an integer`);
  }
  // Loaded lazily: `ambiqa --help` must not read plotly.js.
  const { compareDirs, writeComparison, writeComparisonReport } = await import('../../report/compare');
  const { comparison, notes } = compareDirs(positionals, {
    ...(values.baseline !== undefined ? { baseline: values.baseline } : {}),
    ...(metrics ? { metrics } : {}),
    ...(values['group-by'] !== undefined ? { groupBy: parseGroupBy(values['group-by']) } : {}),
    ...(values.data ? { dataPath: values.data } : {}),
    ...(resamples !== undefined ? { resamples } : {}),
    ...(seed !== undefined ? { seed } : {}),
  });
  const { comparisonRunName, logComparison } = await import('../../report/compare-mlflow');
  const outPath = values.out ?? join(artifactsDir(), 'comparisons', comparisonRunName(comparison).replace(/[^A-Za-z0-9_.+-]/g, '_'), 'comparison.json');
  const outDir = join(outPath, '..');
  const reportPath = values.report ?? join(outDir, 'report.html');

  console.log(`paired against ${comparison.baseline} on ${comparison.dataset}:\n`);
  console.log(comparisonMarkdown(comparison));
  const trials = (await import('../../report/compare-trials')).trialsMarkdown(comparison);
  if (trials) console.log(trials);
  if (comparison.groups) console.log(groupsMarkdown(comparison.groups));
  for (const line of usageLines(comparison)) console.log(line);
  for (const note of [...comparison.notes, ...notes]) console.error(`note: ${note}`);

  writeComparison(comparison, outPath);
  writeComparisonReport(comparison, reportPath);
  if (!values['no-tracking']) {
    const logged = await logComparison(comparison, {
      dir: outDir,
      files: [outPath, reportPath],
      ...(values.experiment ? { experimentName: values.experiment } : {}),
    });
    comparison.mlflow = logged;
    // The files now carry the comparison's own MLflow run (the report links it).
    writeComparison(comparison, outPath);
    writeComparisonReport(comparison, reportPath);
    console.log(`\nMLflow: comparison run ${logged.runId} in ${logged.experimentName} (${logged.runUrl})`);
  }
  console.log(`wrote ${outPath}\nwrote ${reportPath}`);
  // The comparison is written either way; a run with failed questions makes it a comparison of
  // fewer questions than the runs selected, which a script must not take for a whole one.
  const partial = comparison.runs.filter((r) => r.failed > 0);
  if (partial.length === 0) return ExitStatus.ok;
  for (const r of partial) console.log(`  ${r.name}: ${r.failed} of ${r.questions} questions failed (left out of its pairs)`);
  console.log(`  exit status ${ExitStatus.someFailed}: ${describeExitStatus(ExitStatus.someFailed)}`);
  return ExitStatus.someFailed;
}

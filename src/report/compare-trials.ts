/**
 * How a comparison of runs with trials shows its variance split and power (rows with `trials`,
 * src/metrics/compare-trials.ts): as Markdown for `ambiqa compare`'s output and as HTML for the
 * comparison report. Both render nothing for a comparison without trials, so its output is as
 * before.
 */
import { escapeHtml } from '../plots/export';
import type { Comparison, PairedRow, QuestionAnswer } from '../run-files/comparison';

type TrialRow = PairedRow & { trials: NonNullable<PairedRow['trials']> };

const trialRows = (c: Comparison): TrialRow[] => c.rows.filter((r): r is TrialRow => r.trials !== undefined);
const pct = (x: number | null) => (x === null ? '–' : `${Math.round(100 * x)}%`);
const sd = (x: number | null) => (x === null ? '–' : x.toFixed(1));

/** The cells of one row of the split table. */
function splitCells(r: TrialRow): string[] {
  const t = r.trials;
  // Nothing varies (every per-question delta the same): no split to show.
  const share = t.totalVar === 0 ? null : t.samplingShare;
  return [
    r.run,
    r.metric,
    `${t.baselineTrials}/${t.runTrials}`,
    t.pairing,
    `${sd(t.baselineTrialSd)}/${sd(t.runTrialSd)}${t.pairing === 'trial' ? `, Δ ${sd(t.deltaTrialSd)}` : ''}`,
    pct(share),
    share === null ? '–' : pct(1 - share),
    t.totalVar === null ? '–' : Math.sqrt(t.totalVar).toFixed(1),
  ];
}

const SPLIT_HEAD = ['run', 'metric', 'trials (baseline/run)', 'paired by', 'trial SD (baseline/run)', 'sampling', 'questions', 'SD of per-question Δ'];

/** The power grid of one row: a "needed" line, then the power at each question count, columns by trials. */
function powerLines(r: TrialRow): { head: string[]; rows: string[][] } {
  const p = r.trials.power;
  return {
    head: ['questions \\ trials', ...p.trials.map(String)],
    rows: [
      ['needed for 80% power', ...p.questionsNeeded.map((q) => (q === null ? '–' : String(q)))],
      ...p.questions.map((q, i) => [`power with ${q}${q === r.n ? ' (this comparison)' : ''}`, ...p.power[i].map(pct)]),
    ],
  };
}

const mdRow = (cells: readonly string[]) => `| ${cells.map((x) => x.replace(/\|/g, '\\|')).join(' | ')} |`;
const mdTable = (head: readonly string[], rows: readonly (readonly string[])[]) => [mdRow(head), `|${head.map(() => '---').join('|')}|`, ...rows.map(mdRow)].join('\n');

/** The variance split and power tables as Markdown; '' when no row has trials. */
export function trialsMarkdown(c: Comparison): string {
  const rows = trialRows(c);
  if (rows.length === 0) return '';
  const parts = [
    'variance of the per-question deltas under trials (sampling: within-question variance over trials — of the trial differences when paired by trial, of each side otherwise; questions: the rest):',
    '',
    mdTable(SPLIT_HEAD, rows.map(splitCells)),
  ];
  for (const r of rows) {
    const { head, rows: lines } = powerLines(r);
    parts.push('', `power, ${r.run} − ${r.baseline}, ${r.metric} (Δ ${r.meanDelta.toFixed(1)}; two-sided α 0.05, normal approximation; trials on both sides):`, '', mdTable(head, lines));
  }
  return parts.join('\n') + '\n';
}

const htmlTable = (cls: string, head: readonly string[], rows: readonly (readonly string[])[]) =>
  `<table class="${cls}"><thead><tr>${head.map((h, i) => `<th${i >= 2 ? ' class="num"' : ''}>${escapeHtml(h)}</th>`).join('')}</tr></thead>` +
  `<tbody>${rows.map((cells) => `<tr>${cells.map((x, i) => `<td${i >= 2 ? ' class="num"' : ''}>${escapeHtml(x)}</td>`).join('')}</tr>`).join('')}</tbody></table>`;

/** The report's section on trials (variance split, then one power grid per row); '' without trials. */
export function trialsSectionHtml(c: Comparison): string {
  const rows = trialRows(c);
  if (rows.length === 0) return '';
  const grids = rows.map((r) => {
    const { head, rows: lines } = powerLines(r);
    return `<h3>Power: ${escapeHtml(r.run)} − ${escapeHtml(r.baseline)}, ${escapeHtml(r.metric)} (Δ ${escapeHtml(r.meanDelta.toFixed(1))})</h3>` + htmlTable('power', head, lines);
  });
  return (
    '<h2>Trials: sampling against questions</h2>' +
    htmlTable('trials-split', SPLIT_HEAD, rows.map(splitCells)) +
    '<p class="note">Each question was answered several times; its trials are one paired question (per-question means). The 95% CI above is the two-level bootstrap: questions resampled, then each side\'s trials within them. ' +
    'Sampling: the part of the variance of a per-question Δ expected from the trials alone (each side\'s pooled within-question variance over its trials); questions: the rest. ' +
    'Paired by trial: both runs answered the same trials, so trial t of one is compared with trial t of the other (they share sample indexes) and the sampling part comes from the SD of those trial differences (Δ). ' +
    'A side with one trial per question has no estimate of its own sampling variance (–), which then counts under questions. docs/metrics.md, "Trials".</p>' +
    grids.join('') +
    '<p class="note">Questions needed for 80% power at two-sided α = 0.05, and the power of a comparison with that many questions, by trials per question on both sides (normal approximation from the variance split; at least 6 questions).</p>'
  );
}

/** Under trials, an answer's line of trial means ± SD (the answer shown is its first trial's); '' otherwise. */
export function trialsAnswerHtml(answer: QuestionAnswer, metrics: readonly string[]): string {
  const t = answer.trials;
  if (!t) return '';
  const cells = metrics.filter((m) => t.mean[m] !== undefined).map((m) => `${escapeHtml(m)} ${t.mean[m].toFixed(1)}${t.sd[m] !== undefined ? ` ± ${t.sd[m].toFixed(1)}` : ''}`);
  return `<span class="scores trials">over ${t.n} trial${t.n === 1 ? '' : 's'} (mean ± SD): ${cells.join(' · ')}</span>`;
}

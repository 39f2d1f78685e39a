import { defaultAlternativesPath, loadDataset } from '../datasets/index';
import { loadAlternativeAnswers } from '../datasets/alternative-answers';
import type { Example } from '../datasets/types';
import { AmbiqaError } from '../errors';
import { rowKey, traceKey, type ExampleResult, type QuestionScores, type Trace } from '../run-files';
import { methodCatalog, signalMetrics, storedSignals, type RunScorer } from './bindings';
import type { ExperimentConfig } from './config';
import { exampleOfRecord } from './record';

/**
 * A run's stored outputs scored again: what `scoreRun` (session.ts) and `ambiqa score --run`
 * (rescore.ts) share. Nothing is answered again — no pipeline is built, no generator called; the
 * only model calls are the scorer's own (the D-F1 reader). Each row carries its target (format
 * 3); only rows of formats 1 and 2, which have none, fall back to the dataset file the config
 * names (read once, and only then).
 */
export interface StoredScoring {
  /** The run folder, for messages. */
  dir: string;
  config: ExperimentConfig;
  /** The rows to score: the answered ones (a failed question has no output to score). */
  rows: readonly ExampleResult[];
  metrics: readonly string[];
  scorer: RunScorer;
  /**
   * The run's traces, read only when a metric ranks by a method's signal and a row does not
   * carry it (rows written before rows kept `confidence` / `answerLogprob`).
   */
  traces: () => readonly Trace[];
  /** Told after each scored row (progress of a slow reader). */
  onRow?: (done: number, total: number) => void;
}

/** Each row's new scores (every metric scored, with its requirements), by `rowKey`. */
export async function scoreStoredRows(request: StoredScoring): Promise<Map<string, QuestionScores>> {
  const { dir, config, rows, metrics, scorer } = request;
  // A run scored again with em_alt/f1_alt whose rows hold no alternatives (it was not run with
  // them) reads the alternatives file beside its dataset, as the run would have.
  const wantsAlternatives = config.dataset.name === 'hotpotqa-adversarial' && metrics.some((m) => m === 'em_alt' || m === 'f1_alt');
  const alternativesPath = config.dataset.alternatives ?? (wantsAlternatives ? defaultAlternativesPath(config.dataset.path) : undefined);
  const alternatives = wantsAlternatives && rows.some((r) => r.target && r.target.alternativeAnswers === undefined) && alternativesPath ? loadAlternativeAnswers(alternativesPath) : undefined;
  const legacy = rows.some((r) => r.target === undefined)
    ? new Map(
        loadDataset(config.dataset.name, config.dataset.path, {
          split: config.dataset.split,
          ...(config.dataset.questions !== undefined ? { questions: config.dataset.questions } : {}),
          ...(alternativesPath !== undefined ? { alternatives: alternativesPath } : {}),
        }).map((e) => [e.id, e]),
      )
    : undefined;
  const exampleOf = (r: ExampleResult): Example => {
    const own = exampleOfRecord(r, config.dataset.name);
    if (own) return alternatives && own.alternativeAnswers === undefined ? { ...own, alternativeAnswers: alternatives.get(own.id) ?? [] } : own;
    const example = legacy?.get(r.id);
    if (!example) throw new AmbiqaError(`score ${dir}: question ${r.id} is not in ${config.dataset.path}`, 'its row (format 1 or 2) has no target; pass the run its dataset file');
    return example;
  };
  // Traces can be large: read only when a signal metric needs one a row does not carry.
  const needsTraces = metrics.some((m) => signalMetrics.has(m)) && rows.some((r) => r.confidence === undefined || r.answerLogprob === undefined);
  const traces = needsTraces ? new Map(request.traces().map((t) => [traceKey(t), t])) : new Map<string, Trace>();
  const methods = methodCatalog();
  const out = new Map<string, QuestionScores>();
  for (const r of rows) {
    const signals = storedSignals(r, traces.get(rowKey(r)), methods);
    out.set(rowKey(r), await scorer.score(exampleOf(r), { output: r.output, ...(r.answer !== undefined ? { answer: r.answer } : {}), ...signals }));
    request.onRow?.(out.size, rows.length);
  }
  return out;
}

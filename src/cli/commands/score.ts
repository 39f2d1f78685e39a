import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { dataDir } from '../../config/paths';
import { datasetNames, defaultDatasetFiles, describeFormat, detectDataset, isDatasetName, loadDataset, type AsqaQuestionKind, type DatasetName, type Example } from '../../datasets/index';
import { readJsonFile, readJsonlFile } from '../../datasets/read';
import { AmbiqaError } from '../../errors';
import { aggregate, checkMetrics, defaultMetrics, metricsFor, planMetrics, scoreExample, type Prediction } from '../../metrics';
import { createReader, parseReaderSpec, READER_SPEC_HELP } from '../../experiments/reader';
import { ExitStatus } from '../../experiments/exit-status';
import { createComposer } from '../../experiments/compose';
import { commandEnvironment } from '../../experiments/environment';
import { rescoreInPlace } from '../../experiments/rescore';
import { defaultSentenceSplitter } from '../../metrics/sentences';

export const summary = "score a predictions file with the papers' metrics (STR-EM, ROUGE-L(sum), D-F1, DR, EM/F1, accuracy), or re-score a run or sweep in place";

const HELP = `usage: ambiqa score --dataset <name> --predictions <file.jsonl> [--data <file>] [--out <file.json>] [options]
       ambiqa score --run <run dir | sweep dir> [--metrics a,b] [--reader <reader>] [--no-tracking]

Scores another system's (or an ambiqa run's) outputs with the papers' metrics.

With --run, re-scores a finished run (or every point of a sweep) in place from its stored
outputs: no question is answered again (the D-F1 reader's calls go through the LLM cache). The
new scores replace the rows' in results.jsonl (the replaced ones move to each row's scoreHistory),
metrics.json gets the recomputed aggregates and a "scoring" entry (id, time, metrics, reader,
ambiqa version, commit), and the run's MLflow run (each point's and the sweep's parent, with the
sweep's summary) gets the new values. --metrics defaults to every metric the run has; --reader
to the run's own reader. A RUNNING run is refused.

  --dataset <name>        ${datasetNames.join(' | ')}
  --data <file>           the dataset file (default: the usual file under the data dir, e.g.
                          <data>/asqa/ASQA_dev.json)
  --split <name>          ASQA top-level split (default dev); FEVER: sampled | all
  --questions <kind>      ASQA: ambiguous (default) | disambiguated | mixed (DQs as questions)
  --predictions <file>    JSONL, one {"id": ..., "output": "<long answer>"} per line for asqa, or
                          {"id": ..., "answer": "<short answer or label>"} for the other datasets
                          (an ambiqa results.jsonl works as is). Optional "consistency" in [0, 1]
                          for the auc metric.
  --out <file.json>       write {"dataset", "n", "metrics", "per_example", ...} here
  --metrics <a,b,...>     default by dataset (the others that apply in brackets):
${metricsHelp()}
  --reader <reader>       the D-F1 reader (read when d_f1 or dr is computed), fixed independently
                          of the system that wrote the predictions:
                            embedded           (default) the model of \`ambiqa setup\` copies the
                                               answering span with a fixed prompt, greedy (one
                                               call per disambiguated question)
                            embedded:<f.gguf>  another GGUF model, same prompt
                            openai:<model>     an OpenAI-compatible API (OPENAI_BASE_URL,
                                               OPENAI_API_KEY), same prompt
                            qa-onnx:<folder>   an extractive QA model in ONNX (config.json,
                                               tokenizer.json, onnx/model.onnx), e.g. a SQuAD 2.0
                                               RoBERTa exported with Optimum — ASQA's kind of reader
                            none               no reader: d_f1 and dr leave the default metrics
  --run <dir>             a run folder (artifacts/runs/<name>) or a sweep folder
                          (artifacts/sweeps/<name>) to re-score in place (see above); goes with
                          --metrics, --reader and --no-tracking only
  --no-tracking           with --run: leave the MLflow runs as they are
  --resamples <n>         bootstrap resamples for the 95% CIs (default 1000)
  --seed <n>              bootstrap seed (default 0)
  --strict                exit with status 4 when any input problem was found
                          (docs/cli.md lists the exit statuses)
  -h, --help              this text

Every metric is on a 0–100 scale. Problems in the predictions (malformed lines, unknown or
duplicate ids, questions without a prediction — scored as empty outputs —, empty outputs,
questions without qa_pairs) are reported and scoring goes on. D-F1 values are reported with the
reader that produced them; ROUGE-Lsum with the sentence splitter.`;


/** The per-dataset metric lines of the help, from the metric registry. */
function metricsHelp(): string {
  return datasetNames
    .map((d) => {
      const defaults = defaultMetrics(d);
      const others = metricsFor(d).filter((m) => !defaults.includes(m));
      return `                            ${d.padEnd(21)}${defaults.join(',')}${others.length ? ` [${others.join(',')}]` : ''}`;
    })
    .join('\n');
}

interface ReadPredictions {
  byId: Map<string, { prediction: Prediction; line: number }>;
  malformed: Array<{ line: number; message: string }>;
  duplicates: Array<{ id: string; lines: number[] }>;
  total: number;
  /** Lines that had the other dataset family's field (e.g. "answer" for asqa). */
  usedFallbackField: number;
}

function readPredictions(path: string, dataset: DatasetName): ReadPredictions {
  let rows: Array<{ line: number; value: unknown }>;
  let malformed: Array<{ line: number; message: string }> = [];
  if (path.endsWith('.json')) {
    const data = readJsonFile(path, 'predictions file');
    if (!Array.isArray(data)) throw new AmbiqaError(`predictions file ${path}: expected JSONL (one object per line) or a JSON array of objects`);
    rows = data.map((value, i) => ({ line: i + 1, value }));
  } else {
    const r = readJsonlFile(path, 'predictions file');
    rows = r.lines;
    malformed = r.problems;
  }
  const primary = dataset === 'asqa' ? 'output' : 'answer';
  const fallbacks = dataset === 'asqa' ? ['answer'] : dataset === 'fever' ? ['label', 'output'] : ['output'];
  const byId = new Map<string, { prediction: Prediction; line: number }>();
  const dupLines = new Map<string, number[]>();
  let usedFallbackField = 0;
  for (const { line, value } of rows) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      malformed.push({ line, message: 'not a JSON object' });
      continue;
    }
    const v = value as Record<string, unknown>;
    if (typeof v.id !== 'string' && typeof v.id !== 'number') {
      malformed.push({ line, message: 'no "id" (string or number)' });
      continue;
    }
    const id = String(v.id);
    let text: unknown = v[primary];
    if (text === undefined) {
      const f = fallbacks.find((k) => v[k] !== undefined);
      if (f) {
        text = v[f];
        usedFallbackField++;
      }
    }
    if (text !== undefined && text !== null && typeof text !== 'string') {
      malformed.push({ line, message: `"${primary}" is not a string (scored as an empty output)` });
      text = '';
    }
    const prediction: Prediction = { [dataset === 'asqa' ? 'output' : 'answer']: (text as string | undefined) ?? '' };
    if (v.consistency !== undefined) {
      if (typeof v.consistency === 'number') prediction.consistency = v.consistency;
      else malformed.push({ line, message: '"consistency" is not a number (ignored)' });
    }
    if (byId.has(id)) {
      const lines = dupLines.get(id) ?? [byId.get(id)!.line];
      lines.push(line);
      dupLines.set(id, lines);
      continue; // the first prediction for an id is the one scored
    }
    byId.set(id, { prediction, line });
  }
  malformed.sort((a, b) => a.line - b.line);
  return {
    byId,
    malformed,
    duplicates: [...dupLines].map(([id, lines]) => ({ id, lines })),
    total: rows.length,
    usedFallbackField,
  };
}

/** A guess at which dataset a set of ids comes from, for the "wrong predictions file" message. */
function guessDatasetFromIds(ids: string[]): string | null {
  const sample = ids.slice(0, 50);
  if (sample.length === 0) return null;
  if (sample.every((id) => /^-?\d+@/.test(id))) return 'situatedqa';
  if (sample.every((id) => /^[0-9a-f]{24}$/.test(id))) return 'hotpotqa-adversarial';
  if (sample.every((id) => /^\d{1,7}$/.test(id))) return 'fever';
  if (sample.every((id) => /^-?\d{15,20}$/.test(id))) return 'asqa or ambignq';
  return null;
}

function positiveInt(value: string | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new AmbiqaError(`${option} ${value}: expected a non-negative integer`);
  return n;
}

const round = (x: number): number => Math.round(x * 1e4) / 1e4;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      dataset: { type: 'string' },
      data: { type: 'string' },
      split: { type: 'string' },
      questions: { type: 'string' },
      predictions: { type: 'string' },
      out: { type: 'string' },
      metrics: { type: 'string' },
      reader: { type: 'string' },
      run: { type: 'string' },
      'no-tracking': { type: 'boolean', default: false },
      resamples: { type: 'string' },
      seed: { type: 'string' },
      strict: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }
  if (values.run !== undefined) return rescoreCommand(values);
  if (values['no-tracking']) throw new AmbiqaError('--no-tracking goes with --run', 'a predictions file is scored without MLflow');
  if (!values.dataset) throw new AmbiqaError('--dataset is required', `one of: ${datasetNames.join(', ')}`);
  if (!isDatasetName(values.dataset)) throw new AmbiqaError(`--dataset ${values.dataset}: unknown dataset`, `one of: ${datasetNames.join(', ')}`);
  const dataset = values.dataset;
  if (!values.predictions) throw new AmbiqaError('--predictions is required', 'a JSONL file with one {"id", "output"} (asqa) or {"id", "answer"} object per line; or --run <run dir> to re-score a run in place');
  const readerSpec = parseReaderSpec(values.reader ?? 'embedded', '--reader');
  const named = values.metrics ? checkMetrics(dataset, values.metrics.split(',').map((m) => m.trim()).filter(Boolean)) : undefined;
  const plan = planMetrics(dataset, { metrics: named, readerOff: readerSpec.kind === 'none' });
  const metricNames = plan.metrics;
  if (metricNames.length === 0) throw new AmbiqaError('--metrics is empty', `use some of: ${metricsFor(dataset).join(', ')}`);
  const needsReader = plan.needReader.length > 0;
  if (needsReader && readerSpec.kind === 'none') throw new AmbiqaError('--reader none: d_f1 and dr need a reader', `use one of: ${READER_SPEC_HELP}, or leave d_f1 and dr out of --metrics`);
  const bootstrap = { resamples: positiveInt(values.resamples, '--resamples', 1000), seed: positiveInt(values.seed, '--seed', 0) };

  const dataPath = resolve(values.data ?? join(dataDir(), defaultDatasetFiles[dataset]));
  const predictionsPath = resolve(values.predictions);
  // loadDataset checks --questions (a known kind, ASQA only).
  const examples: Example[] = loadDataset(dataset, dataPath, {
    split: values.split,
    ...(values.questions !== undefined ? { questions: values.questions as AsqaQuestionKind } : {}),
  });

  // A predictions file is not a dataset file: say so before anything else.
  const predictionsFormat = detectDataset(predictionsPath);
  if (isDatasetName(predictionsFormat) || predictionsFormat === 'qa-feedback') {
    throw new AmbiqaError(
      `--predictions ${predictionsPath} looks like a dataset file (${describeFormat(predictionsFormat)}), not predictions`,
      'give the JSONL of system outputs: one {"id", "output"} or {"id", "answer"} per line',
    );
  }
  const preds = readPredictions(predictionsPath, dataset);
  if (preds.total === 0 && preds.malformed.length === 0) throw new AmbiqaError(`predictions file ${predictionsPath} has no predictions`, 'it should hold one JSON object per line');
  // Scoring every question as an empty output would print scores of 0.00 for a file that was
  // never read: that is a failure of the input, not a score.
  if (preds.byId.size === 0) {
    const first = preds.malformed[0];
    throw new AmbiqaError(
      `predictions file ${predictionsPath}: none of its ${preds.malformed.length} line(s) is a prediction${first ? ` (e.g. line ${first.line}: ${first.message})` : ''}`,
      'write one {"id", "output"} (asqa) or {"id", "answer"} JSON object per line',
    );
  }
  const known = new Set(examples.map((e) => e.id));
  const unknownIds = [...preds.byId.keys()].filter((id) => !known.has(id));
  if (preds.byId.size > 0 && unknownIds.length === preds.byId.size) {
    const guess = guessDatasetFromIds(unknownIds);
    throw new AmbiqaError(
      `none of the ${preds.byId.size} prediction ids occur in ${dataPath} (${dataset}; e.g. prediction id ${JSON.stringify(unknownIds[0])}, data id ${JSON.stringify(examples[0].id)})` +
        (guess ? `; the prediction ids look like ${guess} ids` : ''),
      'check that --predictions belongs to this --dataset/--data (and --split)',
    );
  }

  const splitter = plan.usesSplitter ? defaultSentenceSplitter() : undefined;
  const readerHandle = needsReader ? await createReader(readerSpec, '--reader') : null;
  const missingIds: string[] = [];
  const emptyIds: string[] = [];
  const noQaPairs: string[] = [];
  const unrecognisedLabels: string[] = [];
  const noConsistency: string[] = [];
  const perExample: Array<Record<string, unknown>> = [];
  const rows: Array<{ metrics: Record<string, number> }> = [];
  const started = Date.now();
  try {
    for (const [i, example] of examples.entries()) {
      const entry = preds.byId.get(example.id);
      if (!entry) missingIds.push(example.id);
      const prediction = entry?.prediction ?? {};
      const text = (dataset === 'asqa' ? prediction.output : prediction.answer) ?? '';
      if (entry && !text.trim()) emptyIds.push(example.id);
      const scored = await scoreExample(dataset, example, prediction, metricNames, {
        ...(readerHandle ? { reader: readerHandle.reader } : {}),
        ...(splitter ? { splitter } : {}),
      });
      if (scored.notes.some((n) => n.endsWith('no qa_pairs'))) noQaPairs.push(example.id);
      if (scored.predictedLabel === null && text.trim()) unrecognisedLabels.push(example.id);
      if (scored.notes.some((n) => n.startsWith('auc:'))) noConsistency.push(example.id);
      rows.push({ metrics: scored.metrics });
      const row: Record<string, unknown> = { id: example.id };
      for (const [k, v] of Object.entries(scored.metrics)) row[k] = round(v);
      if (scored.dqHits) row.dq_hits = scored.dqHits;
      if (scored.readerSpans) row.reader_spans = scored.readerSpans;
      if (scored.predictedLabel !== undefined) row.predicted_label = scored.predictedLabel;
      if (!entry) row.missing = true;
      perExample.push(row);
      if (readerHandle && (i + 1) % 25 === 0) console.error(`  scored ${i + 1}/${examples.length} (${Math.round((Date.now() - started) / 1000)} s)`);
    }
  } finally {
    await readerHandle?.close();
  }

  const agg = aggregate(rows, bootstrap);
  const metrics: Record<string, number> = {};
  const ci95: Record<string, [number, number]> = {};
  const counts: Record<string, number> = {};
  for (const [name, a] of Object.entries(agg.metrics)) {
    if (!metricNames.includes(name as never)) continue; // helper values (e.g. consistency) stay per example
    metrics[name] = round(a.mean);
    ci95[name] = [round(a.ciLow), round(a.ciHigh)];
    counts[name] = a.n;
  }
  const issues = {
    malformed_lines: preds.malformed,
    unknown_ids: unknownIds,
    duplicate_ids: preds.duplicates,
    missing_ids: missingIds,
    empty_outputs: emptyIds,
    no_qa_pairs: noQaPairs,
    ...(dataset === 'fever' ? { unrecognised_labels: unrecognisedLabels } : {}),
    ...(metricNames.includes('auc') ? { no_consistency: noConsistency } : {}),
  };
  const report = {
    dataset,
    data: dataPath,
    predictions: predictionsPath,
    n: examples.length,
    metrics,
    ci95,
    counts,
    ...(readerHandle ? { d_f1_reader: readerHandle.reader.name } : {}),
    ...(splitter ? { sentence_splitter: splitter.name } : {}),
    bootstrap,
    issues,
    per_example: perExample,
  };
  if (values.out) {
    mkdirSync(dirname(resolve(values.out)), { recursive: true });
    writeFileSync(resolve(values.out), `${JSON.stringify(report, null, 1)}\n`);
  }

  // The summary a person reads.
  console.log(`${dataset}: ${examples.length} questions, ${preds.byId.size} distinct prediction ids (${predictionsPath})`);
  for (const name of Object.keys(metrics)) {
    const extra = name === 'd_f1' || name === 'dr' ? `  [reader ${readerHandle?.reader.name}]` : name === 'rougeLsum' && splitter ? `  [${splitter.name}]` : '';
    const skipped = counts[name] < examples.length ? `  (n=${counts[name]})` : '';
    console.log(`  ${name.padEnd(10)} ${metrics[name].toFixed(2).padStart(6)}  95% CI [${ci95[name][0].toFixed(2)}, ${ci95[name][1].toFixed(2)}]${skipped}${extra}`);
  }
  const warn = (count: number, text: string, examplesOf: Array<string | number> = []): void => {
    if (count > 0) console.error(`  warning: ${count} ${text}${examplesOf.length ? ` (e.g. ${examplesOf.slice(0, 3).join(', ')})` : ''}`);
  };
  warn(preds.malformed.length, 'malformed prediction line(s), skipped', preds.malformed.map((m) => `line ${m.line}: ${m.message}`));
  warn(unknownIds.length, 'prediction id(s) not in the data, ignored', unknownIds);
  warn(preds.duplicates.length, 'duplicate prediction id(s); the first line of each was scored', preds.duplicates.map((d) => `${d.id} on lines ${d.lines.join(', ')}`));
  warn(missingIds.length, 'question(s) without a prediction, scored as empty outputs', missingIds);
  warn(emptyIds.length, 'empty output(s)', emptyIds);
  warn(noQaPairs.length, 'question(s) without qa_pairs, left out of str_em/str_hit/d_f1', noQaPairs);
  warn(unrecognisedLabels.length, 'prediction(s) with no FEVER label recognised, scored as wrong', unrecognisedLabels);
  warn(noConsistency.length, 'prediction(s) without "consistency", left out of auc', noConsistency);
  warn(preds.usedFallbackField, `prediction(s) without "${dataset === 'asqa' ? 'output' : 'answer'}"; their "${dataset === 'asqa' ? 'answer' : 'output'}" (or "label") was scored`);
  if (values.out) console.log(`wrote ${resolve(values.out)}`);
  const anyIssue = Object.values(issues).some((v) => Array.isArray(v) && v.length > 0);
  // Some predictions could not be scored as given: the same status as a run whose questions
  // partly failed (3 is the cost cap's).
  return values.strict && anyIssue ? ExitStatus.someFailed : ExitStatus.ok;
}

/** `--run`: a run or sweep re-scored in place (src/experiments/rescore.ts). */
async function rescoreCommand(values: Record<string, string | boolean | undefined>): Promise<number> {
  const clash = ['dataset', 'data', 'split', 'questions', 'predictions', 'out', 'resamples', 'seed', 'strict'].filter((k) => values[k] !== undefined && values[k] !== false);
  if (clash.length > 0) {
    throw new AmbiqaError(
      `${clash.map((k) => `--${k}`).join(', ')} ${clash.length > 1 ? 'are' : 'is'} for scoring a predictions file, not with --run (which re-scores a run folder in place)`,
      "a run's rows carry their targets: give --run <dir> [--metrics a,b] [--reader <reader>]",
    );
  }
  const run = values.run as string;
  if (!run.trim()) throw new AmbiqaError('--run is empty', 'give a run folder (artifacts/runs/<name>) or a sweep folder (artifacts/sweeps/<name>)');
  let metrics: string[] | undefined;
  if (typeof values.metrics === 'string') {
    metrics = values.metrics.split(',').map((m) => m.trim()).filter(Boolean);
    if (metrics.length === 0) throw new AmbiqaError('--metrics is empty', 'name the metrics to score, e.g. --metrics rougeLsum,d_f1');
  }
  const composer = createComposer();
  try {
    await rescoreInPlace({
      target: run,
      ...(metrics ? { metrics } : {}),
      ...(typeof values.reader === 'string' ? { reader: values.reader } : {}),
      tracking: values['no-tracking'] ? null : composer.tracking(),
      env: commandEnvironment(),
    });
    return ExitStatus.ok;
  } finally {
    await composer.close();
  }
}

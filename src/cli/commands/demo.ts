import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir, examplesDir, packageRoot } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { pipelineNames } from '../../pipelines/registry';
import { buildCorpus, type CorpusSource } from '../../retrieval/corpus-builder';
import { saveCorpus } from '../../retrieval/corpus';
import { run as runExperimentCommand } from './run';

export const summary = 'the quick start: ToC on the example questions with the embedded model, logged to MLflow';

const usage = `usage: ambiqa demo [--data <ASQA json>] [--limit N] [--pipeline NAME] [--set path=value ...]

Answers a handful of ambiguous questions with Tree of Clarifications (retrieval included) on the
embedded model, scores them (STR-EM against the gold short answers, ROUGE-Lsum against the long
answers), and logs params, metrics, LLM usage and the per-question outputs to MLflow.

options:
  --data FILE       an ASQA-format file (default: examples/asqa-mini.json, shipped with the repo);
                    e.g. ../shared/data/asqa/ASQA_dev.json with --limit 5
  --limit N         answer only the first N questions
  --pipeline NAME   another pipeline instead of toc (${pipelineNames.join(', ')})
  --set path=value  override any field of experiments/demo.yaml (repeatable)
  --no-tracking     do not log to MLflow
  -h, --help        this help`;

export async function run(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      data: { type: 'string' },
      limit: { type: 'string' },
      pipeline: { type: 'string' },
      set: { type: 'string', multiple: true },
      'no-tracking': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const data = resolve(values.data ?? join(examplesDir, 'asqa-mini.json'));
  if (!existsSync(data)) throw new AmbiqaError(`--data ${data} does not exist`, 'pass an ASQA-format JSON file');

  // The demo's retrieval corpus: the passages the question file carries, pooled with the
  // example distractors, so that retrieval has something to get wrong.
  const sources: CorpusSource[] = [
    { kind: 'asqa', path: data },
    { kind: 'jsonl', path: join(examplesDir, 'corpus-mini-extra.jsonl') },
  ];
  const demoDir = join(artifactsDir(), 'demo');
  mkdirSync(demoDir, { recursive: true });
  const corpusPath = join(demoDir, 'corpus.jsonl');
  const built = buildCorpus(sources);
  saveCorpus(corpusPath, built.passages);
  console.log(`demo: ${built.passages.length} passages in the retrieval corpus (${corpusPath})`);

  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').replace('T', '-');
  const args = [
    join(packageRoot, 'experiments', 'demo.yaml'),
    '--name',
    `demo-${stamp}`,
    '--set',
    `dataset.path=${data}`,
    '--set',
    `retriever.corpus=${corpusPath}`,
  ];
  if (values.limit) args.push('--limit', values.limit);
  if (values.pipeline) args.push('--set', `pipeline.name=${values.pipeline}`, '--set', 'pipeline.options={}');
  for (const s of values.set ?? []) args.push('--set', s);
  if (values['no-tracking']) args.push('--no-tracking');
  const code = await runExperimentCommand(args);
  if (code === 0) {
    console.log(
      [
        '',
        `demo: outputs, traces and metrics are in ${join(artifactsDir(), 'runs', `demo-${stamp}`)}`,
        'demo: browse the MLflow run with `npx ambiqa mlflow-ui` (experiment "ambiqa-demo"),',
        `      or write a shareable report: npx ambiqa report artifacts/runs/demo-${stamp} --out report.html`,
      ].join('\n'),
    );
  }
  return code;
}

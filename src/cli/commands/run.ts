import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { loadExperimentConfig } from '../../experiments/config';
import { createComposer } from '../../experiments/compose';
import { parseOverride } from '../../experiments/overrides';
import { ProgressBar } from '../../experiments/progress';
import { runConfig } from '../../experiments/run-config';
import { commandEnvironment } from '../../experiments/environment';
import { ExitStatus } from '../../experiments/exit-status';
import { describePipelines } from '../../pipelines/registry';
import { resolveShardSpec } from '../../experiments/shard';
import { checkShardGroup, SHARD_GROUP_TAG } from '../../experiments/shard-group';
import { describeExitStatus, describeOutcome, groupByOverride, interruptSignal, parsePositiveInt, parseUsd, runExitStatus } from '../../experiments/cli-support';

export const summary = 'run an experiment config over its dataset (resumable, sharded, logged to MLflow)';

const usage = `usage: ambiqa run <config.yaml> [options]

Answers every selected question of the config's dataset with its pipeline and writes
artifacts/runs/<name>/ (config.yaml, results.jsonl, traces.jsonl, metrics.json, mlflow.json),
logging params, metrics, tags and those files to MLflow.

options:
  --name NAME            run name (default: the config's name, else the file name)
  --set path=value       override any config field; the value is YAML (repeatable),
                         e.g. --set pipeline.options.threshold=2 --set dataset.sample=50
  --limit N              answer only the first N selected questions
  --trials K             answer each question K times (1-100; same as --set trials=K): each
                         trial draws its own samples, metrics average a question's trials
                         and say their spread (docs/experiments.md, "Trials")
  --resume               finish an interrupted run (skips finished questions; the LLM
                         cache replays every call that had finished; same MLflow run)
  --shard i/N            run shard i of N (0-based): a deterministic slice of the questions;
                         combine the shards with \`ambiqa merge\`
  --shard auto[/N]       the shard a scheduler gave this process: a Slurm job array's
                         SLURM_ARRAY_TASK_ID (N: the array's size, or as given), a Kubernetes
                         indexed Job's JOB_COMPLETION_INDEX (N must be given: auto/N)
  --shard-group GROUP    tag the shard's MLflow run with its launch, so that
                         \`ambiqa merge --from-mlflow GROUP\` finds it (\`ambiqa slurm\` sets it)
  --max-cost USD         stop cleanly before a live LLM call would take the run's spend (all
                         its sessions, llm: and judge: together) past USD dollars; exit
                         status 3; --resume with a higher
                         --max-cost finishes it (same as --set llm.maxCostUsd=USD; needs a price:
                         llm.pricing, or a model in the built-in table, docs/llm.md "Cost")
  --no-tracking          do not log to MLflow (same as --set tracking.enabled=false)
  --group-by f1,f2       metrics per group of questions as well (same as --set groupBy=[f1,f2]):
                         kind (ASQA ambiguous | disambiguated, e.g. with dataset.questions
                         mixed) or a field of the dataset's questions (docs/experiments.md)
  --skip-preflight       do not check the endpoints before the first model call (for servers
                         that cannot answer GET /models or a yes/no probe)
  --quiet                no progress line
  -h, --help             this help

Before the first model call every endpoint the run uses (llm:, judge:, the D-F1 reader, the
embedder) is checked once: reachable, key accepted, model served, log-probabilities where a
judge needs them. A problem is refused in one line naming the config field and the fix, and
nothing is written. One run folder has one writer: a second run (or --resume) of a folder in
use is refused, naming the process that holds it.

Ctrl-C, SIGTERM or SIGHUP stops cleanly (what is done is kept; the MLflow run is marked
KILLED); run the same command with --resume to finish. With MLflow unreachable the run
completes and keeps the MLflow operations in the run dir for \`ambiqa sync\`.

Exit status: 0 every selected question answered, 1 error or input refused (config, data,
preflight, a folder in use), 2 command line, 3 cost cap, 4 some questions failed, 5 none
answered, 130 interrupted (docs/cli.md).`;

/** The usage text with the registered pipelines (pipeline.name), listed from the registry. */
function help(): string {
  return `${usage}\n\npipelines (pipeline.name; options in docs/pipelines.md):\n${describePipelines()
    .map((line) => `  ${line}`)
    .join('\n')}`;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      set: { type: 'string', multiple: true },
      limit: { type: 'string' },
      trials: { type: 'string' },
      resume: { type: 'boolean' },
      shard: { type: 'string' },
      'shard-group': { type: 'string' },
      'no-tracking': { type: 'boolean' },
      'skip-preflight': { type: 'boolean' },
      'max-cost': { type: 'string' },
      'group-by': { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(help());
    return 0;
  }
  if (positionals.length !== 1) throw new AmbiqaError('ambiqa run: expected one config file', 'e.g. `npx ambiqa run experiments/toc-asqa.yaml`');
  const overrides = (values.set ?? []).map(parseOverride);
  if (values['no-tracking']) overrides.push(parseOverride('tracking.enabled=false'));
  if (values['group-by'] !== undefined) overrides.push(groupByOverride(values['group-by']));
  if (values['max-cost'] !== undefined) overrides.push(parseOverride(`llm.maxCostUsd=${parseUsd(values['max-cost'], '--max-cost')}`));

  // Everything is checked before a model is loaded or called.
  const composer = createComposer();
  try {
    const config = loadExperimentConfig(positionals[0], composer.registry, {
      overrides,
      ...(values.name !== undefined ? { name: values.name } : {}),
      ...(values.limit !== undefined ? { limit: parsePositiveInt(values.limit, '--limit') } : {}),
      ...(values.trials !== undefined ? { trials: parsePositiveInt(values.trials, '--trials') } : {}),
      ...(values.shard !== undefined ? { shard: resolveShardSpec(values.shard) } : {}),
    });
    const group = values['shard-group'] !== undefined ? checkShardGroup(values['shard-group']) : undefined;
    if (group !== undefined && !config.shard) throw new AmbiqaError('ambiqa run: --shard-group goes with --shard', 'e.g. --shard auto/8 --shard-group toc-asqa-20261205');
    if (config.sweep) {
      process.stderr.write(`note: ${positionals[0]} has a sweep: section; \`ambiqa run\` runs the base config only (use \`ambiqa sweep\` for the grid)\n`);
    }
    const interrupt = interruptSignal();
    try {
      const outcome = await runConfig(config, {
        composer,
        resume: values.resume ?? false,
        preflight: !values['skip-preflight'],
        env: commandEnvironment({
          signal: interrupt.signal,
          ...(values.quiet ? {} : { progress: (label: string) => new ProgressBar({ label }) }),
          ...(group !== undefined ? { tags: { [SHARD_GROUP_TAG]: group } } : {}),
        }),
      });
      if (!outcome) return ExitStatus.interrupted; // Ctrl-C during the preflight: nothing started
      console.log(describeOutcome(outcome, positionals[0]));
      // 0 only when every selected question was answered (docs/cli.md, "Exit statuses").
      const code = runExitStatus(outcome);
      if (code !== 0) console.log(`  exit status ${code}: ${describeExitStatus(code)}`);
      return code;
    } finally {
      interrupt.dispose();
    }
  } finally {
    await composer.close();
  }
}

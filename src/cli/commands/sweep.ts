import { basename, extname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { describeExitStatus, groupByOverride, interruptSignal, parsePositiveInt } from '../../experiments/cli-support';
import { createComposer } from '../../experiments/compose';
import { readExperimentFile } from '../../experiments/config';
import { applyOverrides, parseOverride } from '../../experiments/overrides';
import { ProgressBar } from '../../experiments/progress';
import { sweepsDir } from '../../run-files';
import { checkSweepDir, planSweep, runSweep, type SweepPlan } from '../../experiments/sweep';
import { commandEnvironment } from '../../experiments/environment';
import { preflightAll } from '../../experiments/run-config';

export const summary = 'run a config over the grid in its sweep: section (nested MLflow runs, shared LLM cache, summary table)';

const usage = `usage: ambiqa sweep <config.yaml> [options]

Runs the config once per point of its \`sweep:\` grid, e.g.

  sweep:
    pipeline.options.threshold: [1, 2, 3, 4, 5]
    llm.temperature: [0.3, 0.7]          # axes multiply: 10 runs

as child runs of one MLflow parent run, in one process sharing the loaded models and the LLM
cache (identical calls are made once). Writes artifacts/sweeps/<name>/ with runs/<point>/ and
summary.md / summary.csv / summary.json, and attaches the summary to the parent run.

options:
  --name NAME            sweep name (default: the config's name, else the file name)
  --set path=value       override any config field (YAML value, repeatable); a grid axis too:
                         --set sweep.pipeline.options.n=[3,5]
  --limit N              answer only the first N selected questions in every run
  --trials K             answer each question K times in every run (1-100; same as
                         --set trials=K): paired deltas then account for sampling
  --resume               finish an interrupted sweep (finished points are kept)
  --dry-run              validate every point and print the plan; run nothing
  --no-tracking          do not log to MLflow
  --group-by f1,f2       every point's metrics per group of questions as well (same as
                         --set groupBy=[f1,f2]; docs/experiments.md, "Groups")
  --skip-preflight       do not check the points' endpoints before the first model call
  --quiet                no progress lines
  -h, --help             this help

Every point's endpoints are checked before the first model call, as \`ambiqa run\` checks a
run's. Exit status: the worst of the points' (as \`ambiqa run\` gives them: 0 only when every
point answered every question); the points that did not are named (docs/cli.md).`;

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
      'dry-run': { type: 'boolean' },
      'no-tracking': { type: 'boolean' },
      'group-by': { type: 'string' },
      'skip-preflight': { type: 'boolean' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1) throw new AmbiqaError('ambiqa sweep: expected one config file', 'e.g. `npx ambiqa sweep experiments/ablation-ve-threshold.yaml`');
  const file = positionals[0];
  let raw = readExperimentFile(file);
  const overrides = (values.set ?? []).map(parseOverride);
  if (values['no-tracking']) overrides.push(parseOverride('tracking.enabled=false'));
  if (values['group-by'] !== undefined) overrides.push(groupByOverride(values['group-by']));
  raw = applyOverrides(raw, overrides, file);

  const composer = createComposer();
  try {
    const request = {
      raw,
      source: file,
      registry: composer.registry,
      options: {
        defaultName: basename(file, extname(file)),
        ...(values.name !== undefined ? { name: values.name } : {}),
        ...(values.limit !== undefined ? { limit: parsePositiveInt(values.limit, '--limit') } : {}),
        ...(values.trials !== undefined ? { trials: parsePositiveInt(values.trials, '--trials') } : {}),
      },
      sweepDir: (name: string) => join(sweepsDir(), name),
    };
    const plan = planSweep(request); // every point validated before anything runs
    if (values['dry-run']) {
      console.log(`sweep ${plan.name}: ${plan.points.length} runs into ${plan.dir}`);
      for (const p of plan.points) console.log(`  ${p.point.label}`);
      return 0;
    }
    // Refused before any model loads; checked again under the sweep folder's lock.
    checkSweepDir(plan.dir, values.resume ?? false);
    const interrupt = interruptSignal();
    try {
      const outcome = await runSweep({
        ...request,
        resume: values.resume ?? false,
        // Every point before the first runs.
        ...(values['skip-preflight'] ? {} : { preflight: (p: SweepPlan) => preflightAll(composer, p.points.map((x) => x.config)) }),
        components: (config) => composer.components(config),
        tracking: composer.tracking(),
        env: commandEnvironment({
          signal: interrupt.signal,
          tags: composer.tags(plan.base),
          ...(values.quiet ? {} : { progress: (label: string) => new ProgressBar({ label }) }),
        }),
      });
      console.log(`sweep ${plan.name} ${outcome.status}: ${outcome.dir}/summary.md`);
      if (outcome.mlflow?.runUrl) console.log(`MLflow parent run: ${outcome.mlflow.runUrl}`);
      // A sweep fails when any point fails, and says which (docs/cli.md, "Exit statuses").
      for (const row of outcome.rows) {
        if (!row.exitStatus) continue;
        const m = row.metrics;
        const counts = m ? `: ${m.answered ?? m.n - (m.errors ?? 0)} of ${m.total ?? m.n} questions answered` : '';
        console.log(`  point ${row.point.label} ${row.status}${counts} (exit status ${row.exitStatus}: ${describeExitStatus(row.exitStatus)}; ${row.runDir})`);
      }
      if (outcome.exitStatus !== 0) console.log(`  exit status ${outcome.exitStatus}: ${describeExitStatus(outcome.exitStatus)}`);
      return outcome.exitStatus;
    } finally {
      interrupt.dispose();
    }
  } finally {
    await composer.close();
  }
}

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { safeName } from '../../common/safe-name';
import { createComposer } from '../../experiments/compose';
import { mergeRuns, type MergeOutcome } from '../../experiments/merge';
import { commandEnvironment } from '../../experiments/environment';
import { mergeFromMlflow } from '../../experiments/merge-mlflow';
import { methodCatalog } from '../../pipelines/registry';
import { runsDir } from '../../run-files';
import { describeExitStatus, describeOutcome, runExitStatus } from '../../experiments/cli-support';
import { ExitStatus } from '../../experiments/exit-status';
import { MlflowClient, resolveTrackingUri } from '../../tracking/index';

export const summary = 'combine the shards of a run (--shard i/N) into one result dir and one MLflow parent run';

const usage = `usage: ambiqa merge <run dir> <run dir> … [options]
       ambiqa merge --from-mlflow <group> [options]

Combines the run dirs of one experiment's shards (\`ambiqa run … --shard i/N\`, possibly on
different machines) into artifacts/runs/<name>/: results and traces in evaluation order,
aggregates and confidence intervals recomputed over all questions, usage summed. Creates one
MLflow run for the whole and nests the shards' runs under it.

With --from-mlflow the shards come from the MLflow server (MLFLOW_TRACKING_URI) instead of run
dirs: the runs tagged ambiqa.shard_group=<group> (\`ambiqa run --shard-group\`, set by
\`ambiqa slurm\`), one finished run per index whose uploads are complete (checked against the
checksums in its ambiqa.uploads tag), downloaded to artifacts/runs/<name>/shards/. A missing
index, two finished runs for one index or an incomplete upload is refused, naming the runs.

options:
  --from-mlflow GROUP  merge the shards of this launch from MLflow (no run dirs given)
  --experiment NAME    with --from-mlflow: look only in this MLflow experiment (default: all)
  --name NAME     merged run name (default: the shards' name without .shard-iofN)
  --partial       merge even if shards are missing or unfinished
  --no-tracking   do not log to MLflow
  -h, --help      this help

Exit status as \`ambiqa run\`'s: 0 when every question of every shard was answered, 4 when some
failed or a --partial merge lacks shards, 5 when none was answered (docs/cli.md).`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      partial: { type: 'boolean' },
      'from-mlflow': { type: 'string' },
      experiment: { type: 'string' },
      'no-tracking': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  const group = values['from-mlflow'];
  if (group !== undefined && positionals.length > 0) {
    throw new AmbiqaError('ambiqa merge: give run directories or --from-mlflow <group>, not both', 'with --from-mlflow the shards come from MLflow');
  }
  if (values.experiment !== undefined && group === undefined) throw new AmbiqaError('ambiqa merge: --experiment goes with --from-mlflow');
  if (group === undefined && positionals.length === 0) {
    throw new AmbiqaError('ambiqa merge: no run directories given', 'e.g. `npx ambiqa merge artifacts/runs/toc-asqa.shard-*`, or `--from-mlflow <group>`');
  }
  const composer = createComposer();
  try {
    const common = {
      // A folder name: one plain path segment (`--name ../x` would write outside the runs folder).
      ...(values.name !== undefined ? { name: safeName(values.name, '--name') } : {}),
      outDir: (name: string) => join(runsDir(), name),
      aggregate: composer.aggregate,
      methods: methodCatalog(),
      partial: values.partial ?? false,
      tracking: values['no-tracking'] ? null : composer.tracking(),
      env: commandEnvironment(),
    };
    let outcome: MergeOutcome;
    if (group !== undefined) {
      const { uri } = await resolveTrackingUri();
      outcome = await mergeFromMlflow({
        ...common,
        group,
        client: new MlflowClient(uri),
        ...(values.experiment !== undefined ? { experiment: values.experiment } : {}),
      });
    } else {
      outcome = await mergeRuns({ ...common, dirs: positionals });
    }
    console.log(
      describeOutcome({
        status: outcome.missingShards.length === 0 ? 'FINISHED' : 'KILLED',
        runDir: outcome.dir,
        metrics: outcome.metrics,
        results: outcome.results,
        mlflow: outcome.mlflow,
        answeredNow: 0,
        // The shards' trials are kept: the closing line counts questions × trials as the run's does.
        ...(outcome.config.trials !== undefined ? { trials: outcome.config.trials } : {}),
      }),
    );
    // As a run's (docs/cli.md): 0 only when every question of every shard was answered; a
    // partial merge (missing or unfinished shards) lacks questions, so it is at best "some failed".
    let code: number = runExitStatus({ status: 'FINISHED', metrics: outcome.metrics });
    if (code === ExitStatus.ok && (outcome.missingShards.length > 0 || outcome.metrics.status !== 'FINISHED')) code = ExitStatus.someFailed;
    if (code !== ExitStatus.ok) console.log(`  exit status ${code}: ${describeExitStatus(code)}`);
    return code;
  } finally {
    await composer.close();
  }
}

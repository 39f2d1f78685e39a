import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AmbiqaError } from '../../errors';
import { createComposer } from '../../experiments/compose';
import { mergeRuns } from '../../experiments/merge';
import { runsDir } from '../../run-files';
import { describeOutcome } from '../../experiments/cli-support';

export const summary = 'combine the shards of a run (--shard i/N) into one result dir and one MLflow parent run';

const usage = `usage: ambiqa merge <run dir> <run dir> … [options]

Combines the run dirs of one experiment's shards (\`ambiqa run … --shard i/N\`, possibly on
different machines) into artifacts/runs/<name>/: results and traces in evaluation order,
aggregates and confidence intervals recomputed over all questions, usage summed. Creates one
MLflow run for the whole and nests the shards' runs under it.

options:
  --name NAME     merged run name (default: the shards' name without .shard-iofN)
  --partial       merge even if shards are missing or unfinished
  --no-tracking   do not log to MLflow
  -h, --help      this help`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      partial: { type: 'boolean' },
      'no-tracking': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (positionals.length === 0) throw new AmbiqaError('ambiqa merge: no run directories given', 'e.g. `npx ambiqa merge artifacts/runs/toc-asqa.shard-*`');
  const composer = createComposer();
  try {
    const outcome = await mergeRuns({
      dirs: positionals,
      ...(values.name !== undefined ? { name: values.name } : {}),
      outDir: (name) => join(runsDir(), name),
      aggregate: composer.aggregate,
      partial: values.partial ?? false,
      tracking: values['no-tracking'] ? null : composer.tracking(),
    });
    console.log(
      describeOutcome({
        status: outcome.missingShards.length === 0 ? 'FINISHED' : 'KILLED',
        runDir: outcome.dir,
        metrics: outcome.metrics,
        results: outcome.results,
        mlflow: outcome.mlflow,
        answeredNow: 0,
      }),
    );
    return 0;
  } finally {
    await composer.close();
  }
}

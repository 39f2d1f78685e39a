import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { interruptSignal } from '../../experiments/cli-support';
import { createComposer } from '../../experiments/compose';
import { commandEnvironment } from '../../experiments/environment';
import { ExitStatus } from '../../experiments/exit-status';
import { ProgressBar } from '../../experiments/progress';
import { describeReproduction, fetchRunFromMlflow, parseAllowDifferent, REPRODUCE_CHECKS, reproduceRun, reproduced, reproductionTargets } from '../../experiments/reproduce';
import { MlflowClient, resolveTrackingUri } from '../../tracking/index';

export const summary = 'run a recorded run again (run dir, bundle or MLflow run id) and say which outputs came out identical';

const usage = `usage: ambiqa reproduce <run dir | bundle dir | MLflow run id> [options]

Checks this machine against what the run recorded (provenance.json): the code version (commit,
uncommitted changes), the model files (sha256 of the bytes here), the data files (dataset,
demos, ids, alternatives, corpus) and the engine build (node-llama-cpp, llama.cpp) or endpoint
(model, base URL), and the retriever's own description (index checksum, server). Anything that
differs is refused in one line naming it. Then it re-runs the
recorded config into artifacts/reproductions/<name>-<time>/ and compares every question (every
question × trial under trials): identical, or changed with the first differing field shown.

An embedded model computes every output again (its LLM cache off). An endpoint run replays its
answers from the LLM cache (a call not there is refused, nothing is sent) unless --live.

options:
  --allow-different WHAT  re-run although WHAT differs (still reported): ${REPRODUCE_CHECKS.join(', ')},
                          comma-separated or repeated, or all
  --live                  endpoint runs: ask the endpoint again (its answers go to the
                          reproduction's own cache file) and show the paired metric difference
  --run NAME              a bundle: reproduce only this run (folder or run name)
  --quiet                 no progress line
  -h, --help              this help

An MLflow run id (32 hex digits) is looked up on MLFLOW_TRACKING_URI (else the local server);
its config.yaml, results.jsonl and provenance.json are downloaded, checked against the
checksums its session stored, into artifacts/reproductions/.mlflow/<run id>/.

Exit status: 0 every output identical, 6 some output changed or missing, 1 refused (a
difference, a missing file) or error, 2 command line, 130 interrupted (docs/cli.md).`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'allow-different': { type: 'string', multiple: true },
      live: { type: 'boolean' },
      run: { type: 'string' },
      quiet: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    console.log(usage);
    return 0;
  }
  if (positionals.length !== 1) throw new AmbiqaError('ambiqa reproduce: expected one run folder, bundle folder or MLflow run id', 'e.g. `npx ambiqa reproduce artifacts/runs/quickstart`');
  const allowDifferent = parseAllowDifferent(values['allow-different'] ?? []);
  const targets = await reproductionTargets(positionals[0]!, {
    ...(values.run !== undefined ? { only: values.run } : {}),
    fromMlflow: async (runId) => {
      const { uri } = await resolveTrackingUri();
      return fetchRunFromMlflow(new MlflowClient(uri), runId, join(artifactsDir(), 'reproductions', '.mlflow', runId));
    },
  });
  const composer = createComposer();
  const interrupt = interruptSignal();
  try {
    let code: number = ExitStatus.ok;
    for (const dir of targets) {
      const result = await reproduceRun(dir, {
        composer,
        allowDifferent,
        live: values.live === true,
        env: commandEnvironment({
          signal: interrupt.signal,
          ...(values.quiet ? {} : { progress: (label: string) => new ProgressBar({ label }) }),
        }),
      });
      for (const line of describeReproduction(result)) console.log(line);
      if (result.status === 'KILLED' && interrupt.signal.aborted) return ExitStatus.interrupted;
      if (!reproduced(result)) code = ExitStatus.differs;
    }
    return code;
  } finally {
    interrupt.dispose();
    await composer.close();
  }
}

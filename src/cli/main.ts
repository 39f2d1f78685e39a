import { redactStandardStreams } from '../common/secrets';
import { describeError } from '../errors';

/**
 * `ambiqa <command> [options]`. Each command lives in its own file under `commands/` and exports
 * `run(argv): Promise<number>` (the exit code) and a one-line `summary`. They are imported
 * lazily so that `ambiqa score` does not load llama.cpp.
 */
export interface Command {
  summary: string;
  run(argv: string[]): Promise<number>;
}

const commands: Record<string, () => Promise<Command>> = {
  setup: () => import('./commands/setup'),
  demo: () => import('./commands/demo'),
  'mlflow-ui': () => import('./commands/mlflow-ui'),
  corpus: () => import('./commands/corpus'),
  coverage: () => import('./commands/coverage'),
  score: () => import('./commands/score'),
  run: () => import('./commands/run'),
  sweep: () => import('./commands/sweep'),
  sync: () => import('./commands/sync'),
  merge: () => import('./commands/merge'),
  slurm: () => import('./commands/slurm'),
  report: () => import('./commands/report'),
  compare: () => import('./commands/compare'),
  reproduce: () => import('./commands/reproduce'),
  notebook: () => import('./commands/notebook'),
  serve: () => import('./commands/serve'),
  index: () => import('./commands/index'),
  'serve-index': () => import('./commands/serve-index'),
};

async function usage(): Promise<string> {
  const lines = ['usage: ambiqa <command> [options]   (ambiqa <command> --help for its options)', '', 'commands:'];
  for (const [name, load] of Object.entries(commands)) {
    let summary = '(not available in this build)';
    try {
      summary = (await load()).summary;
    } catch {
      /* a command whose module is missing is listed but marked */
    }
    lines.push(`  ${name.padEnd(11)} ${summary}`);
  }
  return lines.join('\n');
}

/**
 * `--limit -1` → `--limit=-1`. parseArgs refuses a value that starts with a dash ("argument is
 * ambiguous", three lines about `--limit=-XYZ`); joined, the value reaches the command's own
 * check, which says in one line what is wrong with it. Only numbers are joined: `--quiet -h`
 * stays two options.
 */
export function attachNegativeValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (/^--[^=]+$/.test(arg) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${arg}=${next}`);
      i++;
    } else {
      out.push(arg);
    }
  }
  return out;
}

export async function main(argv: string[]): Promise<number> {
  // Before anything prints: every known secret (environment keys, the key the LLM provider
  // reads, URL passwords) is masked in stdout and stderr.
  redactStandardStreams();
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(await usage());
    return name ? 0 : 1;
  }
  const load = commands[name];
  if (!load) {
    console.error(`ambiqa: unknown command '${name}'\n\n${await usage()}`);
    return 2;
  }
  try {
    const command = await load();
    return await command.run(attachNegativeValues(rest));
  } catch (error) {
    // Every command parses its options with node:util parseArgs; its errors (unknown option,
    // missing value) are the user's, so they get the same one-line treatment as AmbiqaError.
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      console.error(`ambiqa ${name}: ${(error as Error).message}\n  fix: see \`ambiqa ${name} --help\``);
      return 2;
    }
    console.error(`ambiqa ${name}: ${describeError(error)}`);
    if (process.env.AMBIQA_DEBUG) console.error(error);
    return 1;
  }
}

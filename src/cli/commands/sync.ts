import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactsDir } from '../../config/paths';
import { AmbiqaError } from '../../errors';
import { MlflowClient } from '../../tracking/client';
import { JOURNAL_FILE, hasJournal, readJournal, readSyncState } from '../../tracking/journal';
import { resolveTrackingUri } from '../../tracking/server';
import { syncDirectories } from '../../tracking/sync';

export const summary = 'upload what runs logged while the MLflow server was unreachable';

const HELP = `usage: ambiqa sync [<run dir> ...] [options]

A run that could not reach MLflow keeps everything it would have logged in
<run dir>/${JOURNAL_FILE}. This uploads it: creates the run (or continues the one
that started live), then params, metrics with their original steps and times, tags,
artifacts and the final status. Safe to repeat: a second sync does nothing.

A directory's sub-folders are searched too (a sweep folder brings its child runs).
With no directories, every run directory under ${artifactsDir()} that has a journal.
The server is MLFLOW_TRACKING_URI, or a local one started from the project venv.

options:
  --uri <url>     the tracking server (overrides MLFLOW_TRACKING_URI)
  --dry-run       list what would be uploaded, send nothing
  -h, --help      show this help`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      uri: { type: 'string' },
      'dry-run': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help) {
    console.log(HELP);
    return 0;
  }

  let dirs: string[];
  if (positionals.length > 0) {
    const found = new Set<string>();
    for (const dir of positionals.map((p) => resolve(p))) {
      if (!existsSync(dir) || !statSync(dir).isDirectory()) {
        throw new AmbiqaError(`'${dir}' is not a directory`, 'give run directories, e.g. artifacts/runs/<run-name>');
      }
      // A sweep or merge folder holds its children's run dirs: take them all.
      const journals = findJournals(dir);
      if (journals.length === 0) {
        throw new AmbiqaError(`${dir} has no ${JOURNAL_FILE} (nor any folder below it)`, 'only runs that could not reach MLflow have one; there is nothing to upload from this directory');
      }
      for (const j of journals) found.add(j);
    }
    dirs = [...found];
  } else {
    dirs = findJournals(artifactsDir());
    if (dirs.length === 0) {
      console.log(`nothing to sync: no ${JOURNAL_FILE} under ${artifactsDir()}`);
      return 0;
    }
  }

  const pending = dirs.map((dir) => ({ dir, total: readJournal(dir).length, applied: readSyncState(dir).applied }));
  if (values['dry-run']) {
    for (const p of pending) console.log(`${show(p.dir)}: ${Math.max(0, p.total - p.applied)} of ${p.total} operation(s) to upload`);
    return 0;
  }
  if (pending.every((p) => p.applied >= p.total)) {
    for (const p of pending) console.log(`${show(p.dir)}: already synced (${p.total} operation(s)), nothing to do`);
    return 0;
  }

  const uri = values.uri ?? (await resolveTrackingUri()).uri;
  const client = new MlflowClient(uri);
  const results = await syncDirectories(dirs, { client });
  for (const result of results) {
    const runs = Object.values(result.runs).map((r) => `${uri}/#/experiments/${r.experimentId}/runs/${r.runId}`);
    if (result.alreadySynced) console.log(`${show(result.dir)}: already synced, nothing to do`);
    else console.log(`${show(result.dir)}: uploaded ${result.applied} operation(s)${runs.length ? ` → ${[...new Set(runs)].join(', ')}` : ''}`);
  }
  return 0;
}

function show(dir: string): string {
  const rel = relative(process.cwd(), dir);
  return rel && !rel.startsWith('..') ? rel : dir;
}

/** Run directories holding a journal, at or below root; the MLflow store itself is skipped. */
function findJournals(root: string, depth = 4): string[] {
  if (!existsSync(root)) return [];
  const found: string[] = [];
  const walk = (dir: string, level: number): void => {
    if (hasJournal(dir)) found.push(dir);
    if (level >= depth) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
      if (level === 0 && root === artifactsDir() && entry.name === 'mlflow') continue;
      if (entry.name === 'mlflow-pending') continue;
      walk(join(dir, entry.name), level + 1);
    }
  };
  walk(root, 0);
  return found.sort();
}

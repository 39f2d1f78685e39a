/**
 * The quick start's demo against its 2-minute bound: `ambiqa demo` (experiments/demo.yaml, ToC on
 * the example questions, the embedded model) timed wall-clock from the command's start to its
 * exit, with the LLM and judge caches off so every call is live. By default once with the
 * shipped config (the released search) and once with `search: stop-when-empty` (ambiqa's search
 * before issue 34), side by side; each run's LLM calls, stop reasons and valid nodes per tree
 * are read from its run directory.
 *
 *   npx tsx bench/demo.ts [--searches released,stop-when-empty] [--tracking] [--bound 120] [--set path=value …]
 *
 * `--set` goes to every demo run (e.g. `--set pipeline.options.maxExpansions=2`).
 * `--tracking` keeps the demo's MLflow logging (it starts a local server when
 * MLFLOW_TRACKING_URI is unset: part of what a new user waits for); without it `--no-tracking`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { artifactsDir } from '../src/config/paths';
import { readJsonl } from '../src/common/jsonl';
import type { Trace } from '../src/trace/types';
import type { TocDecisions } from '../src/pipelines/toc/decisions';

const args = process.argv.slice(2);
const flag = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const searches = (flag('--searches') ?? 'released,stop-when-empty').split(',').filter(Boolean);
const bound = Number(flag('--bound') ?? 120);
const tracking = args.includes('--tracking');
const sets = args.flatMap((a, i) => (a === '--set' && args[i + 1] !== undefined ? ['--set', args[i + 1]!] : []));

const rows: Array<{ search: string; seconds: number; status: number; calls: number; questions: number; stops: string; valid: string }> = [];
for (const search of searches) {
  // The demo names its run demo-<time stamp>: the new directory is this run's.
  const runs = join(artifactsDir(), 'runs');
  const demoRuns = () => new Set(existsSync(runs) ? readdirSync(runs).filter((d) => d.startsWith('demo-')) : []);
  const before = demoRuns();
  const t0 = performance.now();
  const r = spawnSync(
    process.execPath,
    [
      'bin/ambiqa.mjs',
      'demo',
      '--set', `pipeline.options.search=${search}`,
      // The demo's judge is its LLM (no judge: section), so one cache setting covers both.
      '--set', 'llm.cache.mode=off',
      ...sets,
      ...(tracking ? [] : ['--no-tracking']),
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const seconds = (performance.now() - t0) / 1000;
  const created = [...demoRuns()].filter((d) => !before.has(d));
  const runDir = join(runs, created[0] ?? 'none');
  let calls = 0;
  let questions = 0;
  const stops = new Map<string, number>();
  const valid: number[] = [];
  try {
    for (const t of readJsonl<Trace>(join(runDir, 'traces.jsonl'))) {
      questions += 1;
      calls += t.summary.llmCalls;
      const d = t.decisions as TocDecisions;
      stops.set(d.stopReason, (stops.get(d.stopReason) ?? 0) + 1);
      valid.push(d.validNodeIds.length);
    }
  } catch {
    // No traces: the status says why.
  }
  rows.push({
    search,
    seconds,
    status: r.status ?? -1,
    calls,
    questions,
    stops: [...stops].map(([k, v]) => `${k} ${v}`).join(', '),
    valid: valid.join(' '),
  });
  console.log(`${search}: ${seconds.toFixed(1)} s (exit ${r.status}), ${questions} questions, ${calls} LLM calls`);
}
if (sets.length > 0) console.log(`\nwith ${sets.filter((_, i) => i % 2 === 1).join(', ')}`);
console.log(`\n| search | wall s (bound ${bound}) | exit | questions | LLM calls | stop reasons | valid nodes per tree |`);
console.log('|---|---|---|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.search} | ${r.seconds.toFixed(1)}${r.seconds > bound ? ' (over)' : ''} | ${r.status} | ${r.questions} | ${r.calls} | ${r.stops} | ${r.valid} |`);
}
const cpu = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? 'unknown CPU';
console.log(`\n${cpu}; load average at the end ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`);
process.exit(rows.some((r) => r.status !== 0 || r.seconds > bound) ? 1 : 0);

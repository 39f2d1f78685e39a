/**
 * `npm run bench -- startup [--repeat 15] [--baseline DIR]`: how long the `ambiqa` command takes
 * to start, measured from outside as a user sees it.
 *
 *   help      `node bin/ambiqa.mjs --help` (loads every command's module for its summary): wall ms
 *   run       `ambiqa run <one question> --no-tracking --quiet` against a loopback
 *             OpenAI-compatible server of ours (closed-book on examples/asqa-mini.json, LLM cache
 *             off, so the question sends one request): start-up = process spawn to that request
 *             reaching the server; wall = spawn to exit
 *
 * With `--baseline DIR` (another checkout of ambiqa, e.g. `git worktree add /tmp/before <commit>`
 * with its node_modules), both trees run in one bench, interleaved (baseline, this, baseline, …)
 * so that the machine's load falls on both alike; each tree runs once first unmeasured (tsx's
 * compile cache). Prints how each tree runs (the build in dist/, or src/ through tsx), medians
 * with the spread and the difference of medians.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAverage } from './machine';

const { values } = parseArgs({ options: { repeat: { type: 'string', default: '15' }, baseline: { type: 'string' } }, allowPositionals: true });
const repeat = Number(values.repeat);
const here = resolve('.');
const trees = [...(values.baseline ? [{ name: 'baseline', root: resolve(values.baseline) }] : []), { name: 'this tree', root: here }];

// The loopback server: one short reply per request; notes when the first request of a run arrives.
let firstRequestAt = 0;
const server = createServer((req, res) => {
  if (firstRequestAt === 0) firstRequestAt = performance.now();
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        id: 'startup',
        object: 'chat.completion',
        created: 0,
        model: 'bench',
        choices: [{ index: 0, message: { role: 'assistant', content: 'an answer' }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12 },
      }),
    );
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;

const work = mkdtempSync(join(tmpdir(), 'ambiqa-bench-startup-'));
const config = join(work, 'one-question.yaml');
writeFileSync(
  config,
  [
    `dataset: { name: asqa, path: ${JSON.stringify(join(here, 'examples', 'asqa-mini.json'))}, limit: 1 }`,
    'pipeline: { name: closed-book, options: { nShots: 0 } }',
    `llm: { provider: openai-compatible, baseUrl: ${JSON.stringify(baseUrl)}, model: bench, cache: { mode: 'off' } }`,
    'metrics: [str_em]',
    'tracking: { enabled: false }',
    '',
  ].join('\n'),
);

/** Spawn and wait; milliseconds to exit, and to the first request when the command sends one. */
async function timed(root: string, args: string[]): Promise<{ wall: number; startup: number }> {
  const env: NodeJS.ProcessEnv = { ...process.env, AMBIQA_ARTIFACTS_DIR: join(work, 'artifacts') };
  delete env.AMBIQA_ROOT; // a tree from before the build finds its own root (its bin/ambiqa.mjs sets it)
  firstRequestAt = 0;
  const started = performance.now();
  const child = spawn(process.execPath, [join(root, 'bin', 'ambiqa.mjs'), ...args], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  const ended = performance.now();
  if (code !== 0) throw new Error(`${root}: ambiqa ${args.join(' ')} exited ${code}\n${stderr}`);
  return { wall: ended - started, startup: firstRequestAt > 0 ? firstRequestAt - started : Number.NaN };
}

let runIndex = 0;
const measure = async (root: string) => {
  const help = await timed(root, ['--help']);
  const run = await timed(root, ['run', config, '--name', `startup-${process.pid}-${runIndex++}`, '--no-tracking', '--quiet']);
  return { help: help.wall, runStartup: run.startup, runWall: run.wall };
};

/** What `bin/ambiqa.mjs` of a tree runs: its build, or its sources through tsx (and why). */
async function runsFrom(root: string): Promise<string> {
  const script = join(root, 'scripts', 'build.mjs');
  if (!existsSync(script)) return 'src/ through tsx (a tree from before the build)';
  const { staleReason } = (await import(script)) as { staleReason(pkg: string): string | undefined };
  const reason = staleReason(root);
  return reason === undefined ? 'dist/ (the build, source maps on)' : `src/ through tsx (${reason})`;
}

const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'unknown CPU'}, Node ${process.version}`;
console.log(`bench startup: ${repeat} rounds, ${trees.map((t) => `${t.name} (${t.root})`).join(' vs ')}\nmachine: ${machine}; load average at start ${loadAverage()}`);
for (const t of trees) console.log(`${t.name} runs ${await runsFrom(t.root)}`);
for (const t of trees) await measure(t.root); // warm tsx's compile cache, unmeasured
const samples = new Map(trees.map((t) => [t.name, [] as Array<Awaited<ReturnType<typeof measure>>>]));
for (let i = 0; i < repeat; i++) for (const t of trees) samples.get(t.name)!.push(await measure(t.root));
server.close();

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
const quartiles = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[Math.floor((s.length - 1) / 4)]!.toFixed(0)}–${s[Math.ceil((3 * (s.length - 1)) / 4)]!.toFixed(0)}`;
};
const measures = [
  ['ambiqa --help, wall ms', 'help'],
  ['ambiqa run --no-tracking: spawn → first request, ms', 'runStartup'],
  ['ambiqa run --no-tracking: wall ms', 'runWall'],
] as const;
console.log(`\n| measure | ${trees.map((t) => `${t.name}: median (IQR)`).join(' | ')}${trees.length === 2 ? ' | difference of medians |' : ' |'}`);
console.log(`|---|${trees.map(() => '---|').join('')}${trees.length === 2 ? '---|' : ''}`);
for (const [label, key] of measures) {
  const cells = trees.map((t) => {
    const xs = samples.get(t.name)!.map((s) => s[key]);
    return `${median(xs).toFixed(0)} (${quartiles(xs)})`;
  });
  const diff = trees.length === 2 ? ` ${(median(samples.get(trees[1]!.name)!.map((s) => s[key])) - median(samples.get(trees[0]!.name)!.map((s) => s[key]))).toFixed(0)} |` : '';
  console.log(`| ${label} | ${cells.join(' | ')} |${diff}`);
}
console.log(`\nload average at end ${loadAverage()}`);

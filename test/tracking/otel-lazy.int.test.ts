import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { examplesDir } from '../../src/config/paths';
import { ensureBuilt } from '../helpers/build';

/**
 * The OpenTelemetry SDK and OTLP exporter load on the first trace export, not at start-up
 * (src/tracking/otel-export.ts `loadOtel`). Checked in fresh processes through both ways in:
 * the sources as a development checkout's `ambiqa` command runs them when dist/ is stale (tsx, ES
 * modules) and the library entry (`require('ambiqa')`: the CommonJS build, as notebooks load it —
 * where a dynamic `import()` of a relative .ts path once broke under tsx). Each process runs one scripted question with tracking off, counts the OpenTelemetry
 * modules Node has loaded (their CommonJS builds land in `require.cache` either way), then loads
 * the SDK lazily and builds the question's spans with it.
 */
const root = resolve(__dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-otel-lazy-'));
let config: string;

beforeAll(() => {
  ensureBuilt();
  config = join(dir, 'scripted.yaml');
  writeFileSync(
    config,
    [
      'dataset: { name: asqa, path: ' + JSON.stringify(join(examplesDir, 'asqa-mini.json')) + ', limit: 1 }',
      'pipeline: { name: closed-book, options: { nShots: 0 } }',
      `llm: { provider: scripted, reply: 'an answer', cache: ${JSON.stringify(join(dir, 'cache.sqlite'))} }`,
      'metrics: [str_em]',
      'tracking: { enabled: false }',
      '',
    ].join('\n'),
  );
});

/** After the run: OpenTelemetry modules loaded, then the lazily loaded SDK's spans for the run's trace. */
const probe = (runDir: string, load: string) => `
  const otelModules = () => Object.keys(require('node:module').createRequire(${JSON.stringify(join(root, 'package.json'))}).cache).filter((k) => k.includes('@opentelemetry')).length;
  const before = otelModules();
  const m = ${load};
  const trace = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(join(runDir, 'traces.jsonl'))}, 'utf8').split('\\n')[0]);
  const otel = await m.loadOtel();
  const built = new m.SpanBuilder(otel).build({ traceIdHex: m.traceIdFor('run', trace.questionId), trace, metrics: {}, endedAtMs: Date.now() });
  console.log(JSON.stringify({ before, after: otelModules(), spans: built.spans.length, names: built.spans.map((s) => s.name), questionId: trace.questionId }));
`;

function node(args: string[], runs: string): { status: number | null; out: string; result?: { before: number; after: number; spans: number; names: string[]; questionId: string } } {
  const r = spawnSync(process.execPath, args, { cwd: root, encoding: 'utf8', env: { ...process.env, AMBIQA_ARTIFACTS_DIR: runs, AMBIQA_TRACKING: 'off' }, timeout: 120_000 });
  const out = `${r.stdout}${r.stderr}`;
  const line = r.stdout.trim().split('\n').pop() ?? '';
  return { status: r.status, out, ...(line.startsWith('{') ? { result: JSON.parse(line) } : {}) };
}

describe('OpenTelemetry loads only when a trace is exported', () => {
  it('the sources through tsx (ES modules): a run with --no-tracking loads none of it; loadOtel() then builds spans', () => {
    const runs = join(dir, 'cli');
    const runDir = join(runs, 'runs', 'cli-run');
    // What bin/ambiqa.mjs does in a checkout whose dist/ is stale (tsx's ES-module hooks, then
    // src/cli/main.ts), plus the probe.
    const script = `
      import { register } from 'tsx/esm/api';
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      register();
      const { main } = await import('./src/cli/main.ts');
      const code = await main(['run', ${JSON.stringify(config)}, '--name', 'cli-run', '--no-tracking', '--quiet']);
      if (code !== 0) throw new Error('ambiqa run exited ' + code);
      ${probe(runDir, "await import('./src/tracking/otel-export.ts')")}
    `;
    const r = node(['--input-type=module', '-e', script], runs);
    expectLazyThenSpans(r);
  }, 120_000);

  it("the library entry (require('ambiqa'), the CommonJS build): a run with tracking off loads none of it; loadOtel() then builds spans", () => {
    const runs = join(dir, 'lib');
    const runDir = join(runs, 'runs', 'lib-run');
    const script = `
      (async () => {
        const ambiqa = require('./dist/cjs/index.js');
        const run = await ambiqa.run(require('yaml').parse(require('node:fs').readFileSync(${JSON.stringify(config)}, 'utf8')), { name: 'lib-run' });
        if (run.status !== 'FINISHED') throw new Error('run ' + run.status);
        ${probe(runDir, "require('./dist/cjs/tracking/otel-export.js')")}
      })().catch((e) => { console.error('Error: ' + (e && e.stack || e)); process.exit(1); });
    `;
    const r = node(['-e', script], runs);
    expectLazyThenSpans(r);
  }, 120_000);
});

/** None of OpenTelemetry loaded during the run; loading it afterwards built the question's spans. */
function expectLazyThenSpans(r: ReturnType<typeof node>): void {
  expect(r.out).not.toMatch(/Error/);
  expect(r.result).toBeDefined();
  expect(r.result!.before).toBe(0);
  expect(r.result!.after).toBeGreaterThan(0);
  expect(r.result!.spans).toBeGreaterThanOrEqual(2);
  expect(r.result!.names).toContain(`closed-book: ${r.result!.questionId}`);
}

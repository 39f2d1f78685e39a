import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { run as sweepCommand } from '../../src/cli/commands/sweep';
import { AmbiqaError } from '../../src/errors';
import { writeAsqa, writeYaml } from './helpers/files';

// Bad configs are refused by the real `ambiqa run` / `ambiqa sweep` before any model is built or
// called: the scripted provider's call log never appears and no run directory is written.
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-cli-validation-'));
const callLog = join(dir, 'calls.jsonl');
const saved = process.env.AMBIQA_ARTIFACTS_DIR;
let data: string;

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  data = writeAsqa(dir, 3);
});
afterAll(() => {
  if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
  else process.env.AMBIQA_ARTIFACTS_DIR = saved;
});

function config(name: string, patch: (c: Record<string, any>) => void = () => {}): string {
  const c: Record<string, any> = {
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'closed-book', options: { nShots: 0 } },
    llm: { provider: 'scripted', callLog, cache: join(dir, 'cache.sqlite') },
    tracking: { enabled: false },
  };
  patch(c);
  return writeYaml(join(dir, `${name}.yaml`), c);
}

async function refusal(fn: () => Promise<number>): Promise<string> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    expect(existsSync(callLog)).toBe(false);
    expect(existsSync(join(dir, 'artifacts', 'runs'))).toBe(false);
    return (error as AmbiqaError).message;
  }
  throw new Error('expected the command to refuse the config');
}

describe('ambiqa run refuses bad input before any LLM call', () => {
  it('an unknown pipeline, naming the field and the allowed pipelines', async () => {
    const file = config('unknown-pipeline', (c) => (c.pipeline.name = 'tree-of-thoughts'));
    expect(await refusal(() => runCommand([file]))).toBe(
      `${file}: pipeline.name: unknown pipeline "tree-of-thoughts" (allowed: closed-book, vanilla-rag, cot, cot-sc, toc, verify-edit, diva, combo)`,
    );
  });

  it('an unknown pipeline option, listing the options the pipeline has', async () => {
    const file = config('unknown-option', (c) => (c.pipeline.options.shots = 3));
    const msg = await refusal(() => runCommand([file]));
    expect(msg).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: pipeline\\.options: unknown field 'shots' \\(allowed: nShots, temperature,`));
  });

  it('an option out of range given with --set (VE threshold above n)', async () => {
    const file = config('ve', (c) => {
      c.pipeline = { name: 'verify-edit', options: { n: 5, nShots: 0 } };
      c.retriever = 'bm25';
    });
    const msg = await refusal(() => runCommand([file, '--set', 'pipeline.options.threshold=6']));
    expect(msg).toBe(`${file}: pipeline.options.threshold: threshold (6) must be ≤ n (5); votes can never exceed n`);
  });

  it('a dataset path that does not exist', async () => {
    const missing = join(dir, 'no-such-file.json');
    const file = config('missing-data', (c) => (c.dataset.path = missing));
    expect(await refusal(() => runCommand([file]))).toBe(`${file}: dataset.path: file not found: ${missing}`);
  });

  it('a shard spec outside 0..N-1', async () => {
    const file = config('shard');
    expect(await refusal(() => runCommand([file, '--shard', '3/2']))).toBe(
      `${file}: shard: '3/2': shard index must be in 0..1 (shards are numbered from 0)`,
    );
  });

  it('a retrieval pipeline without a retriever, and an unknown retriever type', async () => {
    const file = config('no-retriever', (c) => (c.pipeline = { name: 'vanilla-rag', options: { nShots: 0 } }));
    expect(await refusal(() => runCommand([file]))).toContain('retriever: pipeline vanilla-rag needs a retriever');
    const file2 = config('bad-retriever', (c) => {
      c.pipeline = { name: 'vanilla-rag', options: { nShots: 0 } };
      c.retriever = { type: 'colbert' };
    });
    expect(await refusal(() => runCommand([file2]))).toBe(
      `${file2}: retriever.type: must be one of "bm25", "dense", "hybrid", "multi-query", "colbertv2" (got "colbert")`,
    );
  });

  it('a sweep whose grid holds an invalid point, before the first point runs', async () => {
    const file = config('bad-sweep', (c) => {
      c.pipeline = { name: 'verify-edit', options: { n: 5, nShots: 0 } };
      c.retriever = 'bm25';
      c.sweep = { 'pipeline.options.threshold': [1, 3, 9] };
    });
    const msg = await refusal(() => sweepCommand([file]));
    expect(msg).toContain('(sweep point threshold=9): pipeline.options.threshold: threshold (9) must be ≤ n (5)');
  });
});

describe('negative numbers given to options', () => {
  it('`--limit -1` gets the one-line "positive whole number" error, not parseArgs\' three lines', async () => {
    const { main } = await import('../../src/cli/main');
    const lines: string[] = [];
    const original = console.error;
    console.error = (...args: unknown[]) => lines.push(args.map(String).join(' '));
    let code: number;
    try {
      code = await main(['run', config('limit-negative'), '--limit', '-1']);
    } finally {
      console.error = original;
    }
    expect(code).toBe(1);
    expect(lines.join('\n')).toBe('ambiqa run: --limit -1: must be a positive whole number');
    expect(existsSync(callLog)).toBe(false);
  });
});

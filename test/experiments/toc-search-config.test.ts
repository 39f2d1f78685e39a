import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { run as runCommand } from '../../src/cli/commands/run';
import { examplesDir } from '../../src/config/paths';
import { AmbiqaError } from '../../src/errors';
import { readJsonl } from '../../src/common/jsonl';
import { buildCorpus } from '../../src/retrieval/corpus-builder';
import { saveCorpus } from '../../src/retrieval/corpus';
import type { Trace } from '../../src/trace/types';
import type { TocDecisions } from '../../src/pipelines/toc/decisions';
import { writeYaml } from './helpers/files';

/**
 * ToC's `search` option through the real `ambiqa run`: a bad value is refused in one line naming
 * the option before any model call, and a run started with one search cannot be resumed with the
 * other (issue 34, "Bad input").
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-toc-search-'));
const corpus = join(dir, 'corpus.jsonl');
const callLog = join(dir, 'calls.jsonl');
const saved = { artifacts: process.env.AMBIQA_ARTIFACTS_DIR, tracking: process.env.AMBIQA_TRACKING };

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  process.env.AMBIQA_TRACKING = 'off';
  saveCorpus(corpus, buildCorpus([{ kind: 'asqa', path: join(examplesDir, 'asqa-mini.json') }]).passages);
});
afterAll(() => {
  for (const [k, v] of [['AMBIQA_ARTIFACTS_DIR', saved.artifacts], ['AMBIQA_TRACKING', saved.tracking]] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(dir, { recursive: true, force: true });
});

function configFile(name: string, options: Record<string, unknown> = {}): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    name,
    dataset: { name: 'asqa', path: join(examplesDir, 'asqa-mini.json'), limit: 1, demoSelection: 'fixed' },
    pipeline: { name: 'toc', options: { maxNodes: 3, nPassages: 2, nShots: 1, ...options } },
    llm: {
      provider: 'scripted',
      replies: { 'toc.rac': 'DQ 1: Which one?\nDA 1: This one.', 'toc.verify': 'True', 'toc.answer': 'This one.' },
      callLog,
      cache: join(dir, 'cache.sqlite'),
    },
    retriever: { type: 'bm25', corpus },
    metrics: ['str_em'],
    tracking: { enabled: false },
    concurrency: 1,
  });
}

async function quietly<T>(fn: () => Promise<T>): Promise<T> {
  const log = vi.spyOn(console, 'log').mockImplementation(() => {});
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return await fn();
  } finally {
    log.mockRestore();
    err.mockRestore();
  }
}

async function refusal(fn: () => Promise<number>): Promise<string> {
  try {
    await quietly(fn);
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    return (error as AmbiqaError).message;
  }
  throw new Error('expected ambiqa run to refuse');
}

describe('ToC search in a config', () => {
  it('an unknown search is refused in one line naming the option, before any model call', async () => {
    const file = configFile('bad-search', { search: 'bfs' });
    const message = await refusal(() => runCommand([file]));
    expect(message).toMatch(/pipeline\.options\.search/);
    expect(message).toMatch(/released/);
    expect(message).toMatch(/stop-when-empty/);
    expect(message).not.toContain('\n');
    expect(existsSync(callLog)).toBe(false);
    expect(existsSync(join(dir, 'artifacts', 'runs', 'bad-search'))).toBe(false);
  });

  it('a run started with the released search is not resumed with another search, naming the field', async () => {
    const file = configFile('resume-search');
    expect(await quietly(() => runCommand([file]))).toBe(0);
    const runDir = join(dir, 'artifacts', 'runs', 'resume-search');
    const [trace] = readJsonl<Trace>(join(runDir, 'traces.jsonl'));
    expect((trace!.decisions as TocDecisions).search).toBe('released');
    const message = await refusal(() => runCommand([file, '--resume', '--set', 'pipeline.options.search=stop-when-empty']));
    expect(message).toMatch(/cannot resume .*resume-search: the config differs from the one it was started with in pipeline\.options\.search/);
    // The same search resumes (nothing left to answer).
    expect(await quietly(() => runCommand([file, '--resume', '--set', 'pipeline.options.search=released']))).toBe(0);
  });
});

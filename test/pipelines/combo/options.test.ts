import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as runCommand } from '../../../src/cli/commands/run';
import { AmbiqaError } from '../../../src/errors';
import { writeAsqa, writeYaml } from '../../experiments/helpers/files';

// COMBO's option set (issue 34): a bad value is refused by the real `ambiqa run` in one line
// naming the option, before any model is built or called (the scripted provider's call log is
// never written, nor a run directory).
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-combo-options-'));
const callLog = join(dir, 'calls.jsonl');
const saved = process.env.AMBIQA_ARTIFACTS_DIR;
let data: string;

beforeAll(() => {
  process.env.AMBIQA_ARTIFACTS_DIR = join(dir, 'artifacts');
  data = writeAsqa(dir, 2);
});
afterAll(() => {
  if (saved === undefined) delete process.env.AMBIQA_ARTIFACTS_DIR;
  else process.env.AMBIQA_ARTIFACTS_DIR = saved;
});

function config(name: string, options: Record<string, unknown>): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    dataset: { name: 'asqa', path: data },
    pipeline: { name: 'combo', options: { nPassages: 2, nShots: 0, ...options } },
    llm: { provider: 'scripted', callLog, cache: join(dir, 'cache.sqlite') },
    retriever: { type: 'bm25' },
    tracking: { enabled: false },
  });
}

async function refusal(file: string): Promise<string> {
  try {
    await runCommand([file]);
  } catch (error) {
    expect(error).toBeInstanceOf(AmbiqaError);
    expect(existsSync(callLog)).toBe(false);
    expect(existsSync(join(dir, 'artifacts', 'runs'))).toBe(false);
    const message = (error as AmbiqaError).message;
    expect(message).not.toContain('\n');
    return message;
  }
  throw new Error('expected the command to refuse the config');
}

describe('COMBO options: bad input is refused before any model call', () => {
  it('an unknown compatibility rule, naming the option and its values', async () => {
    const file = config('bad-rule', { compatibility: 'gate' });
    expect(await refusal(file)).toBe(`${file}: pipeline.options.compatibility: must be one of "gated", "product" (got "gate")`);
  });

  it('an unknown pair sort, naming the option', async () => {
    const file = config('bad-sort', { pairSort: 'score' });
    expect(await refusal(file)).toBe(`${file}: pipeline.options.pairSort: must be one of "compatibility", "retrieval" (got "score")`);
  });

  it('a gate threshold out of [0, 1], naming the option', async () => {
    const file = config('bad-threshold', { evidentialThreshold: 1.5 });
    expect(await refusal(file)).toBe(`${file}: pipeline.options.evidentialThreshold: must be ≤ 1 (got 1.5)`);
  });

  it('the retired skipEvidentialBelow, naming what replaced it', async () => {
    const file = config('retired', { skipEvidentialBelow: 0.3 });
    expect(await refusal(file)).toMatch(
      new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: pipeline\\.options\\.skipEvidentialBelow: retired: use 'compatibility: gated'`),
    );
  });
});

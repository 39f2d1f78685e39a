import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { LlmCache, cacheKey } from '../../src/llm/cache';
import { normaliseRequest } from '../../src/llm/client';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-llm-procs-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the cache across processes', () => {
  it('two processes writing the same sqlite file at once lose no sample and see no lock error', async () => {
    const path = join(dir, 'shared.sqlite');
    const script = join(__dirname, 'fixtures', 'cache-writer.ts');
    const count = 600;
    // The writers wait for each other (marker files) so that their writes overlap.
    const writers = ['A', 'B'].map((id) =>
      run(process.execPath, ['--import', 'tsx', script, path, id, String(count), 'A,B'], { timeout: 90_000 }),
    );
    const outputs = await Promise.all(writers);
    type Report = { samples: number; hits: number; startedAt: number; endedAt: number };
    const [a, b] = outputs.map((o) => JSON.parse(o.stdout.trim()) as Report);
    expect([a!.samples, b!.samples]).toEqual([count, count]);
    // The test means something only if the two processes really wrote at the same time.
    expect(a!.startedAt).toBeLessThan(b!.endedAt);
    expect(b!.startedAt).toBeLessThan(a!.endedAt);

    const store = new LlmCache({ path });
    // 100 shared questions + 100 own questions per writer.
    expect(store.size()).toBe(count / 2 + count);
    // Every shared question has exactly one readable sample, from one writer or the other.
    for (let q = 0; q < count; q += 2) {
      const key = cacheKey({
        provider: 'scripted',
        model: 'shared-model',
        request: normaliseRequest({ prompt: `shared question ${q}`, temperature: 0.8 }),
        sampleIndex: 0,
      });
      expect(store.get(key)?.text).toMatch(new RegExp(`^writer [AB]: shared question ${q} #0$`));
    }
    store.close();
  });
});

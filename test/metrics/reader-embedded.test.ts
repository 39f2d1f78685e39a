import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { LlamaCppProvider, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { normalizeAnswer } from '../../src/metrics';
import { LlmSpanReader, disambigF1 } from '../../src/metrics/disambig-f1';
import { manifestPath } from '../../src/setup/manifest';

/**
 * The LLM D-F1 reader on the real embedded model (one thread, one DQ, at most 32 tokens). A small
 * model may or may not find the span; what must hold is the contract: the answer is '' or a span
 * of the long answer, and the D-F1 value is reported with the reader's name.
 */
const hasModel = existsSync(manifestPath());
if (!hasModel) console.log(`skipping the embedded D-F1 reader test: ${manifestPath()} is absent (run \`npx ambiqa setup\`)`);

describe.skipIf(!hasModel)('LLM span reader on the embedded model', () => {
  afterAll(async () => {
    await unloadEmbeddedModels();
  });
  it('returns no answer or a span of the long answer', async () => {
    const reader = new LlmSpanReader(new LlmClient(new LlamaCppProvider({ threads: 1 })));
    const longAnswer = 'The Eiffel Tower was designed by the engineering company of Gustave Eiffel and completed in 1889.';
    const r = await disambigF1([{ question: 'In which year was the Eiffel Tower completed?', shortAnswers: ['1889'] }], longAnswer, reader);
    expect(r.reader).toMatch(/^llm:llama-cpp\//);
    expect(r.spans).toHaveLength(1);
    if (r.spans[0]) expect(` ${normalizeAnswer(longAnswer)} `).toContain(` ${normalizeAnswer(r.spans[0])} `);
    expect(r.score).toBeGreaterThanOrEqual(0);
    expect(r.score).toBeLessThanOrEqual(100);
    expect(reader.stats.calls).toBe(1);
  });
});

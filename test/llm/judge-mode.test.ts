import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LlmClient } from '../../src/llm/client';
import { createLanguageModel, describeLlmConfig, resolveLlmConfig } from '../../src/llm/config';
import { describeError } from '../../src/errors';
import type { LanguageModelProvider, NormalisedJudgeRequest, NormalisedRequest, ProviderCompletion, ProviderJudgement } from '../../src/llm/types';

/** A provider that can give probabilities (P(yes) 0.3) and whose greedy text reply is "Yes". */
class ProbabilityAndTextDouble implements LanguageModelProvider {
  readonly provider = 'judge-mode-double';
  readonly model = 'double-1';
  judgeCalls = 0;
  generateCalls = 0;

  async doGenerate(_request: NormalisedRequest): Promise<ProviderCompletion> {
    this.generateCalls++;
    return { text: 'Yes, it does.', finishReason: 'stop', usage: { promptTokens: 12, completionTokens: 3 } };
  }

  async doJudge(request: NormalisedJudgeRequest): Promise<ProviderJudgement> {
    this.judgeCalls++;
    return { probabilities: request.labels.map((_, i) => (i === 0 ? 0.3 : 0.7)), labelMass: 0.9, mode: 'probability', usage: { promptTokens: 12, completionTokens: 0 } };
  }
}

const dir = mkdtempSync(join(tmpdir(), 'ambiqa-judge-mode-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('llm.judgeMode', () => {
  const request = { prompt: 'Is the sky blue? Reply Yes or No.', labels: ['Yes', 'No'], purpose: 'test.judge' };

  it('probability (the default) reads the distribution; text parses a greedy reply and never asks for probabilities', async () => {
    const graded = new ProbabilityAndTextDouble();
    const g = await new LlmClient(graded).judge(request);
    expect(g.mode).toBe('probability');
    expect(g.p).toBeCloseTo(0.3);
    expect(graded.generateCalls).toBe(0);

    const texty = new ProbabilityAndTextDouble();
    const t = await new LlmClient(texty, { judgeMode: 'text' }).judge(request);
    expect(t.mode).toBe('text');
    expect(t.p).toBe(1);
    expect(t.label).toBe('Yes');
    expect(texty.judgeCalls).toBe(0);
    expect(texty.generateCalls).toBe(1);
  });

  it('keys text judgments apart in the cache, so a text run never replays a probability judgment (or back)', async () => {
    const path = join(dir, 'cache.sqlite');
    const provider = new ProbabilityAndTextDouble();
    const graded = new LlmClient(provider, { cache: { path } });
    await graded.judge(request);
    const texty = new LlmClient(provider, { cache: { path }, judgeMode: 'text' });
    const first = await texty.judge(request);
    expect(first.mode).toBe('text');
    expect(first.cacheHit).toBe(false);
    const again = await texty.judge(request);
    expect(again.cacheHit).toBe(true);
    expect(again.mode).toBe('text');
    const gradedAgain = await graded.judge(request);
    expect(gradedAgain.mode).toBe('probability');
    expect(gradedAgain.cacheHit).toBe(true);
    expect(provider.judgeCalls).toBe(1);
    expect(provider.generateCalls).toBe(1);
    graded.cache?.close();
  });

  it('is a config field, a logged param, and a clear error when misspelled', async () => {
    expect(resolveLlmConfig({}).judgeMode).toBe('probability');
    expect(describeLlmConfig({ provider: 'openai-compatible', model: 'm', judgeMode: 'text' }, {})).toMatchObject({ judgeMode: 'text' });
    const client = await createLanguageModel({ provider: 'openai-compatible', model: 'm', judgeMode: 'text', cache: { mode: 'off' } }, { env: { OPENAI_API_KEY: 'sk-test-key-123456' } });
    expect(client.options.judgeMode).toBe('text');
    let message = '';
    try {
      resolveLlmConfig({ judgeMode: 'logits' as never });
    } catch (error) {
      message = describeError(error);
    }
    expect(message).toContain('llm.judgeMode');
    expect(message).toMatch(/probability/);
  });
});

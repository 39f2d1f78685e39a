import { describe, expect, it } from 'vitest';
import { llmSettings } from '../../src/experiments/compose';

describe('resolved LLM settings in a run\'s params', () => {
  it('adds what an embedded config left to defaults (threads as resolved now, reuse, batching, slots)', () => {
    const s = llmSettings({ provider: 'embedded', contextSize: 4096, judgeMode: 'probability', apiKeyEnv: 'OPENAI_API_KEY', cache: { mode: 'use' } });
    // vitest.config.ts pins AMBIQA_LLM_THREADS=1 for the test workers.
    expect(s['llm.threads']).toBe('1');
    expect(s).toMatchObject({ 'llm.sequences': '8', 'llm.prefixReuse': 'true', 'llm.batchSamples': 'true', 'llm.flashAttention': 'true' });
    expect(s['llm.model']).toBeTypeOf('string');
    // Which engine drew the samples: node-llama-cpp 3.21.1 garbled batched ones.
    expect(s['llm.engine']).toMatch(/^node-llama-cpp@3\.\d+\.\d+$/);
  });

  it('never repeats a field the config set itself, and has nothing for the scripted model', () => {
    const s = llmSettings({ provider: 'embedded', threads: 3, sequences: 2, contextSize: 4096, judgeMode: 'probability', apiKeyEnv: 'OPENAI_API_KEY', cache: { mode: 'use' } });
    expect(s['llm.threads']).toBeUndefined();
    expect(s['llm.sequences']).toBeUndefined();
    const server = llmSettings({ provider: 'openai-compatible', model: 'm', contextSize: 4096, judgeMode: 'probability', apiKeyEnv: 'OPENAI_API_KEY', cache: { mode: 'use' } });
    expect(server['llm.model']).toBeUndefined();
    expect(server['llm.threads']).toBeUndefined();
    expect(server['llm.engine']).toBeUndefined();
    expect(server['llm.baseUrl']).toMatch(/^https?:\/\//);
    expect(llmSettings({ provider: 'scripted' } as never)).toEqual({});
  });
});

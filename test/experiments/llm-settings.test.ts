import { describe, expect, it } from 'vitest';
import { llmSettings } from '../../src/experiments/compose';
import { modelTags } from '../../src/experiments/run-page';
import { defaultCatalog } from '../../src/config/catalog';
import { describeLlmConfig } from '../../src/llm/config';
import { describeCpu } from '../../src/llm/providers/llama-cpp';

describe('resolved LLM settings in a run\'s params', () => {
  it('adds what an embedded config left to defaults (threads as resolved now, reuse, batching, slots)', () => {
    const s = llmSettings({ provider: 'embedded', contextSize: 4096, judgeMode: 'probability', cache: { mode: 'use' } });
    // vitest.config.ts pins AMBIQA_LLM_THREADS=1 for the test workers.
    expect(s['llm.threads']).toBe('1');
    expect(s).toMatchObject({ 'llm.sequences': '8', 'llm.prefixReuse': 'true', 'llm.batchSamples': 'true', 'llm.flashAttention': 'true' });
    expect(s['llm.model']).toBeTypeOf('string');
    // Which engine drew the samples: node-llama-cpp 3.21.1 garbled batched ones.
    expect(s['llm.engine']).toMatch(/^node-llama-cpp@3\.\d+\.\d+$/);
    // Which CPU computed it: llama.cpp's kernels, and so the bits of P, follow its SIMD features.
    expect(s['llm.cpu']).toBeTypeOf('string');
    expect(s['llm.cpu']!.length).toBeGreaterThan(0);
  });

  it('describes the CPU by its model and the SIMD features llama.cpp chooses kernels by', () => {
    const x86 = 'processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: fpu sse4_2 avx f16c avx2 fma avx512f avx512bw avx512vl avx512_vnni avx512_bf16 rdtscp\n';
    expect(describeCpu(x86, 'AMD EPYC ')).toBe('AMD EPYC; sse4_2 avx avx2 fma f16c avx512f avx512bw avx512vl avx512_vnni avx512_bf16');
    const older = 'flags\t\t: fpu sse4_2 avx f16c avx2 fma\n';
    expect(describeCpu(older, 'Intel Xeon')).toBe('Intel Xeon; sse4_2 avx avx2 fma f16c');
    expect(describeCpu('Features\t: fp asimd asimddp sve i8mm\n', 'Neoverse')).toBe('Neoverse; asimd asimddp i8mm sve');
    expect(describeCpu(undefined, 'Apple M2')).toBe('Apple M2');
  });

  it('never repeats a field the config set itself, and has nothing for the scripted model', () => {
    const s = llmSettings({ provider: 'embedded', threads: 3, sequences: 2, contextSize: 4096, judgeMode: 'probability', cache: { mode: 'use' } });
    expect(s['llm.threads']).toBeUndefined();
    expect(s['llm.sequences']).toBeUndefined();
    const server = llmSettings({ provider: 'openai-compatible', model: 'm', judgeMode: 'probability', apiKeyEnv: 'OPENAI_API_KEY', cache: { mode: 'use' } });
    expect(server['llm.model']).toBeUndefined();
    expect(server['llm.threads']).toBeUndefined();
    expect(server['llm.engine']).toBeUndefined();
    expect(server['llm.cpu']).toBeUndefined();
    expect(server['llm.baseUrl']).toMatch(/^https?:\/\//);
    expect(llmSettings({ provider: 'scripted' } as never)).toEqual({});
  });

  it("a judge: section's resolved settings are judge.* params; a catalog name is resolved to its pinned checksum", () => {
    const base = { contextSize: 4096, judgeMode: 'probability' as const, apiKeyEnv: 'OPENAI_API_KEY', cache: { mode: 'use' as const } };
    const onePointFive = defaultCatalog.llms.find((e) => e.name === 'qwen2.5-coder-1.5b-instruct-q4_k_m')!;
    const s = llmSettings({ provider: 'embedded', model: onePointFive.name, ...base }, 'judge');
    expect(s['judge.threads']).toBe('1');
    expect(s['judge.modelSha256']).toBe(onePointFive.sha256);
    // Given in the config, so logged from it (judge.model = the catalog name), not repeated here.
    expect(s['judge.model']).toBeUndefined();
    expect(Object.keys(s).every((k) => k.startsWith('judge.'))).toBe(true);
    expect(describeLlmConfig({ provider: 'embedded', model: onePointFive.name }, {}, 'judge').model).toBe(onePointFive.name);
    const server = llmSettings({ provider: 'openai-compatible', model: 'judge-7b', baseUrl: 'http://127.0.0.1:9/v1', ...base }, 'judge');
    // Nothing left to defaults but the price, which is always stated (none known for judge-7b).
    expect(server).toEqual({ 'judge.pricing': 'unknown (no price known for this model: set pricing for cost_usd)' });
  });

  it('MLflow tags name both models of a run with a judge: (catalog names for embedded files)', () => {
    const [generator, judge] = ['qwen2.5-coder-0.5b-instruct-q4_k_m', 'qwen2.5-coder-1.5b-instruct-q4_k_m'].map((n) => defaultCatalog.llms.find((e) => e.name === n)!);
    const tags = modelTags({ llm: { provider: 'llama-cpp', model: generator!.sha256 }, judge: { provider: 'llama-cpp', model: judge!.sha256 } });
    expect(tags).toEqual({
      'ambiqa.llm.provider': 'llama-cpp',
      'ambiqa.llm.model': generator!.name,
      'ambiqa.llm.model_sha256': generator!.sha256,
      'ambiqa.judge.provider': 'llama-cpp',
      'ambiqa.judge.model': judge!.name,
      'ambiqa.judge.model_sha256': judge!.sha256,
    });
    expect(modelTags({ llm: { provider: 'openai-compatible', model: 'gpt-x' } })).toEqual({ 'ambiqa.llm.provider': 'openai-compatible', 'ambiqa.llm.model': 'gpt-x' });
  });
});

import { execFile } from 'node:child_process';
import { basename, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { env, pipeline } from '@huggingface/transformers';
import { getLlama, LlamaCompletion } from 'node-llama-cpp';
import { beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/config/paths';
import { defaultCatalog, findLlm } from '../../src/config/catalog';
import { sha256File } from '../../src/setup/hash';
import { readModelManifest } from '../../src/config/models';
import { runSetup } from '../../src/setup/setup';

/**
 * The real embedded models in the real cache (`npm test` runs `ambiqa setup` first; if it has
 * not, beforeAll does it). Generations stay at a few tokens.
 */
beforeAll(async () => {
  const result = await runSetup({ quiet: true });
  expect(result.failed.map((f) => `${f.step}: ${f.error.message}`)).toEqual([]);
});

describe('setup with the real registries and cache', () => {
  it('a second `ambiqa setup` does nothing and says so', async () => {
    const { stdout, stderr } = await promisify(execFile)('node', [join(projectRoot, 'bin', 'ambiqa.mjs'), 'setup'], { cwd: projectRoot });
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^= setup: nothing to do, everything is already in place/m);
    expect(stdout).not.toMatch(/^[+!] /m);
    for (const what of ['system packages', 'embedder', 'LLM', 'Python venv', 'manifest']) expect(stdout).toContain(`= ${what}`);
  });

  it('the manifest points at verified files', async () => {
    const manifest = readModelManifest();
    expect(await sha256File(manifest.llm.file)).toBe(manifest.llm.sha256);
    expect(await sha256File(join(manifest.embedder.dir, 'onnx', 'model.onnx'))).toBe(manifest.embedder.sha256);
    const entry = findLlm(defaultCatalog, manifest.llm.name);
    if (entry) expect(manifest.llm.sha256).toBe(entry.sha256);
  });

  it('the embedder folder loads offline in transformers.js and gives normalized 384-dim vectors', async () => {
    const { embedder } = readModelManifest();
    env.allowRemoteModels = false;
    env.localModelPath = dirname(embedder.dir);
    const extract = await pipeline('feature-extraction', basename(embedder.dir), { dtype: 'fp32' });
    const sentences = ['Who won the FIFA World Cup in 2018?', 'France won the 2018 FIFA World Cup.', 'Mitochondria produce most of the energy of a cell.'];
    const output = await extract(sentences, { pooling: 'mean', normalize: true });
    expect(output.dims).toEqual([3, 384]);
    const [q, related, unrelated] = output.tolist() as number[][];
    const dot = (a: number[], b: number[]) => a.reduce((s, x, i) => s + x * b[i], 0);
    for (const v of [q, related, unrelated]) expect(dot(v, v)).toBeCloseTo(1, 4);
    // Real semantics, not just shapes: the answer is much closer to its question than noise is.
    expect(dot(q, related)).toBeGreaterThan(0.5);
    expect(dot(q, related) - dot(q, unrelated)).toBeGreaterThan(0.3);
    await extract.dispose();
  });

  it('the GGUF loads in node-llama-cpp and generates a few tokens', async () => {
    const { llm } = readModelManifest();
    const llama = await getLlama({ gpu: false, build: 'never' });
    const model = await llama.loadModel({ modelPath: llm.file });
    // One thread: test files run in parallel on two shared cores.
    const context = await model.createContext({ contextSize: 256, threads: 1 });
    try {
      const completion = new LlamaCompletion({ contextSequence: context.getSequence() });
      const text = await completion.generateCompletion('The capital of France is', { maxTokens: 6, temperature: 0 });
      expect(model.tokenize(text).length).toBeGreaterThan(0);
      expect(text.trim().length).toBeGreaterThan(0);
    } finally {
      await context.dispose();
      await model.dispose();
      await llama.dispose();
    }
  });
});

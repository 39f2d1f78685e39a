import { describe, expect, it } from 'vitest';
import { DivaPipeline } from '../../../src/pipelines/diva';
import { divaOptionsSchema } from '../../../src/pipelines/diva/options';
import { verifyPrompt as divaVerifyPrompt } from '../../../src/pipelines/diva/prompts';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocOptionsSchema } from '../../../src/pipelines/toc/options';
import { verifyPrompt as tocVerifyPrompt } from '../../../src/pipelines/toc/prompts';
import type { PipelineContext } from '../../../src/pipelines/types';
import { asqaExample, FakeEmbedder, FakeRetriever, fixedDemos, passage, scriptedLlm } from '../fakes';

// Issue 26 point 5: balanced demonstrations in the verification prompts, off by default.
const evidence = passage('p1', 'Kim Carnes', 'Kim Carnes sang Bette Davis Eyes in 1981.');

describe('verification prompts with balanced demonstrations', () => {
  it('ToC: default is the zero-shot prompt; balanced puts an unsupported then a supported example first', () => {
    const plain = tocVerifyPrompt('Who sang Bette Davis Eyes?', 'Kim Carnes', evidence);
    expect(plain).toHaveLength(1);
    expect(plain[0]!.content.startsWith('Passage: Kim Carnes; Kim Carnes sang')).toBe(true);
    const balanced = tocVerifyPrompt('Who sang Bette Davis Eyes?', 'Kim Carnes', evidence, 'balanced');
    expect(balanced.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect([balanced[1]!.content, balanced[3]!.content]).toEqual(['False', 'True']);
    // The real question is asked exactly as without demos.
    expect(balanced[4]).toEqual(plain[0]);
    // Each example asks the same question as the real turn, in the same words.
    const tail = plain[0]!.content.slice(plain[0]!.content.indexOf('Based on the passage'));
    expect(balanced[0]!.content.endsWith(tail)).toBe(true);
    expect(balanced[2]!.content.endsWith(tail)).toBe(true);
  });

  it('Diva: balanced shows No then Yes before the real question', () => {
    const plain = divaVerifyPrompt('Who sang it in 1981?', [evidence]);
    const balanced = divaVerifyPrompt('Who sang it in 1981?', [evidence], 'balanced');
    expect(plain).toHaveLength(1);
    expect(balanced.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['No', 'Yes']);
    expect(balanced.at(-1)).toEqual(plain[0]);
  });

  it('the options default to none and reject unknown values', () => {
    expect(tocOptionsSchema.parse({}).verifyDemos).toBe('none');
    expect(divaOptionsSchema.parse({}).verifyDemos).toBe('none');
    expect(() => tocOptionsSchema.parse({ verifyDemos: 'two' })).toThrow();
  });

  it('ToC sends the demonstrations to the judge, and to its content-free twin', async () => {
    const { llm } = scriptedLlm(
      { 'toc.rac': 'DQ 1: Who sang Bette Davis Eyes in 1981?\nDA 1: Kim Carnes', 'toc.answer': 'Answer: Kim Carnes sang it.' },
      { 'toc.verify': 0.7, 'toc.verify.prior': 0.4 },
    );
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever([evidence]), demos: fixedDemos() };
    const opts = tocOptionsSchema.parse({ nShots: 1, poolSize: 1, nPassages: 1, reranker: 'none', maxDepth: 1, verifyDemos: 'balanced', judgeCalibration: 'content-free' });
    const out = await new TocPipeline(opts).answer(asqaExample('q', 'Who sang Bette Davis Eyes?'), ctx);
    for (const purpose of ['toc.verify', 'toc.verify.prior']) {
      const call = out.trace.llmCalls.find((c) => c.purpose === purpose)!;
      expect(call.messages.filter((m) => m.role === 'assistant').map((m) => m.content)).toEqual(['False', 'True']);
    }
  });

  it('Diva sends the demonstrations to the judge when asked, not otherwise', async () => {
    for (const verifyDemos of ['none', 'balanced'] as const) {
      const { llm } = scriptedLlm(
        {
          'diva.diversify': 'Ambiguity type: time\nReason: Two years.\nInterpretations:\n1. Who sang Bette Davis Eyes in 1981?',
          'diva.generate.rag': 'Answer: Kim Carnes.',
        },
        { 'diva.verify': 0.8 },
      );
      const ctx: PipelineContext = { llm, retriever: new FakeRetriever([evidence]), embedder: new FakeEmbedder(), demos: fixedDemos() };
      const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1, nPassages: 1, verifyDemos })).answer(asqaExample('q', 'Who sang Bette Davis Eyes?'), ctx);
      const call = out.trace.llmCalls.find((c) => c.purpose === 'diva.verify')!;
      expect(call.messages.length).toBe(verifyDemos === 'balanced' ? 5 : 1);
    }
  });
});

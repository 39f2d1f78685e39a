import { describe, expect, it } from 'vitest';
import { decisionStatistics } from '../../../src/metrics/decisions';
import { pairsAsSentences, readLongAnswer } from '../../../src/pipelines/common/outputs';
import { DivaPipeline } from '../../../src/pipelines/diva';
import { divaOptionsSchema } from '../../../src/pipelines/diva/options';
import { TocPipeline } from '../../../src/pipelines/toc';
import { tocOptionsSchema } from '../../../src/pipelines/toc/options';
import type { PipelineContext } from '../../../src/pipelines/types';
import { TraceRecorder } from '../../../src/trace/recorder';
import { asqaExample, FakeEmbedder, FakeRetriever, fixedDemos, passage, scriptedLlm } from '../fakes';
import { methodCatalog } from '../../../src/pipelines/registry';

// Issue 26 point 6: the final step answering with its own clarification lines.
const corpus = [
  passage('p1', 'Kim Carnes', "Kim Carnes sang Bette Davis Eyes, a 1981 hit; Jackie DeShannon recorded it first in 1974."),
  passage('p2', 'Jackie DeShannon', 'Jackie DeShannon co-wrote Bette Davis Eyes and recorded it in 1974.'),
];
const AQ = "Who sang the song she's got Bette Davis eyes?";
// The reply seen on held-out questions (the quotes around the DQ line are the model's).
const DQ_REPLY = `"DQ 1: Who sang the song she's got Bette Davis Eyes in 1981? " DA 1: Kim Carnes`;

function recorder() {
  const { llm } = scriptedLlm({});
  return new TraceRecorder('toc', asqaExample('q', AQ), llm);
}

describe('readLongAnswer', () => {
  it('keeps an ordinary long answer and records nothing', () => {
    const rec = recorder();
    expect(readLongAnswer(rec, 'Answer: Kim Carnes sang it in 1981.', 'x')).toBe('Kim Carnes sang it in 1981.');
    expect(rec.parseFailures).toHaveLength(0);
  });

  it('turns a DQ/DA-only reply into sentences and records a parse failure', () => {
    const rec = recorder();
    const text = readLongAnswer(rec, DQ_REPLY, 'toc.answer');
    expect(text).toBe("Who sang the song she's got Bette Davis Eyes in 1981? Kim Carnes.");
    expect(rec.parseFailures).toEqual([
      expect.objectContaining({ purpose: 'toc.answer', raw: DQ_REPLY, fallback: 'its DQ/DA pairs written as sentences' }),
    ]);
  });

  it("prefers the method's own pairs when given", () => {
    const rec = recorder();
    const own = [
      { question: 'Who sang it in 1981?', answer: 'Kim Carnes' },
      { question: 'Who recorded it first?', answer: 'Jackie DeShannon.' },
    ];
    expect(readLongAnswer(rec, DQ_REPLY, 'toc.answer', { fallbackPairs: own })).toBe(
      'Who sang it in 1981? Kim Carnes. Who recorded it first? Jackie DeShannon.',
    );
    expect(rec.parseFailures[0]!.fallback).toBe("the method's own DQ/DA pairs written as sentences");
  });

  it('reads the long answer after inline pairs without a failure', () => {
    const rec = recorder();
    expect(readLongAnswer(rec, 'DQ 1: Who sang it? DA 1: Kim Carnes Answer: Kim Carnes sang it in 1981.', 'x')).toBe(
      'Kim Carnes sang it in 1981.',
    );
    expect(rec.parseFailures).toHaveLength(0);
  });

  it('strips the markers of a lone unanswered DQ line', () => {
    const rec = recorder();
    expect(readLongAnswer(rec, 'DQ 1: Who sang Bette Davis Eyes', 'x')).toBe('Who sang Bette Davis Eyes');
    expect(rec.parseFailures).toHaveLength(1);
  });

  it('writes one sentence per pair', () => {
    expect(pairsAsSentences([{ question: 'When? ', answer: '1981.' }])).toBe('When? 1981.');
    expect(pairsAsSentences([])).toBe('');
    // Seen on a study question: the model put the answer on both lines.
    expect(pairsAsSentences([{ question: 'Margot Robbie', answer: 'Margot Robbie' }])).toBe('Margot Robbie.');
  });
});

describe('final answers that come back as DQ/DA lines', () => {
  it('ToC: the tree’s valid pairs become the answer, counted in decision_parse_failure_rate', async () => {
    const { llm } = scriptedLlm({
      'toc.rac': "DQ 1: Who sang the 1981 hit Bette Davis Eyes?\nDA 1: Kim Carnes\nDQ 2: Who first recorded Bette Davis Eyes in 1974?\nDA 2: Jackie DeShannon",
      'toc.answer': DQ_REPLY,
    });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), demos: fixedDemos() };
    const opts = tocOptionsSchema.parse({ search: 'stop-when-empty', nShots: 1, poolSize: 2, nPassages: 2, reranker: 'none', pruning: false, maxDepth: 1 });
    const out = await new TocPipeline(opts).answer(asqaExample('q', AQ), ctx);
    expect(out.output).toBe('Who sang the 1981 hit Bette Davis Eyes? Kim Carnes. Who first recorded Bette Davis Eyes in 1974? Jackie DeShannon.');
    const failures = out.trace.parseFailures.filter((f) => f.purpose === 'toc.answer');
    expect(failures).toHaveLength(1);
    const stats = decisionStatistics([out.trace], methodCatalog());
    expect(stats.metrics.decision_parse_failure_rate).toBeCloseTo(1 / out.trace.llmCalls.length, 10);
  });

  it('Diva: the reply’s own pairs become the answer, as a parse failure', async () => {
    const { llm } = scriptedLlm({
      'diva.diversify': 'Ambiguity type: time\nReason: Two recordings.\nInterpretations:\n1. Who sang Bette Davis Eyes in 1981?',
      'diva.verify': 'Yes',
      'diva.generate.rag': 'DQ 1: Which party is in power in Ireland? DA 1: Fianna Fáil',
    });
    const ctx: PipelineContext = { llm, retriever: new FakeRetriever(corpus), embedder: new FakeEmbedder(), demos: fixedDemos() };
    const out = await new DivaPipeline(divaOptionsSchema.parse({ nShots: 1, nPassages: 2 })).answer(asqaExample('q', AQ), ctx);
    expect(out.output).toBe('Which party is in power in Ireland? Fianna Fáil.');
    expect(out.trace.parseFailures.map((f) => f.purpose)).toEqual(['diva.generate']);
  });
});

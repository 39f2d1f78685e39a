import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { run as score } from '../../src/cli/commands/score';
import { examplesDir } from '../../src/config/paths';
import { describeReader, parseReaderSpec } from '../../src/experiments/reader';
import { LlmClient } from '../../src/llm/client';
import { LlamaCppProvider, unloadEmbeddedModels } from '../../src/llm/providers/llama-cpp';
import { normalizeAnswer } from '../../src/metrics';
import { LlmSpanReader, disambigF1 } from '../../src/metrics/disambig-f1';
import { manifestPath } from '../../src/config/models';

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

describe.skipIf(!hasModel)('ambiqa score: D-F1 and DR by default, read by the fixed embedded reader', () => {
  afterAll(async () => {
    await unloadEmbeddedModels();
  });
  it('scores one ASQA long answer with d_f1 and dr and names the reader (model, prompt version, greedy) and the splitter', async () => {
    vi.spyOn(console, 'log').mockImplementation(() => undefined);
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-score-reader-'));
    // One prediction: the other five questions are scored as empty outputs, which the reader
    // never reads, so this costs one call per DQ of one question.
    const preds = join(dir, 'p.jsonl');
    writeFileSync(preds, JSON.stringify({ id: 'demo-titanic', output: 'The 1997 film Titanic was directed by James Cameron; a 1953 film has the same name.' }) + '\n');
    const out = join(dir, 's.json');
    expect(await score(['--dataset', 'asqa', '--data', join(examplesDir, 'asqa-mini.json'), '--predictions', preds, '--out', out])).toBe(0);
    vi.restoreAllMocks();
    const r = JSON.parse(readFileSync(out, 'utf8'));
    expect(Object.keys(r.metrics)).toEqual(['str_em', 'str_hit', 'rougeL', 'rougeLsum', 'd_f1', 'dr']);
    expect(r.d_f1_reader).toBe(describeReader(parseReaderSpec('embedded')));
    expect(r.d_f1_reader).toMatch(/^llm-span-reader\/span-v1 embedded:.+ greedy$/);
    expect(r.sentence_splitter).toBe('punkt-english (nltk 3.8)');
    const row = r.per_example.find((p: { id: string }) => p.id === 'demo-titanic');
    expect(row.reader_spans).toHaveLength(2);
    expect(row.d_f1).toBeGreaterThanOrEqual(0);
    expect(row.dr).toBeCloseTo(Math.sqrt(row.d_f1 * row.rougeLsum), 3);
  });
});

/**
 * Real replies of the shipped 0.5B model to Verify-and-Edit's and COMBO's prompts (issue 41's
 * audit runs, test/pipelines/fixtures/ve-combo-replies.json): what their readers make of them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCot, parseLongAnswer, parseQuestion } from '../../../src/pipelines/parsing';

const fixtures = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 've-combo-replies.json'), 'utf8')) as Array<{ purpose: string; text: string }>;
const of = (purpose: string) => fixtures.filter((f) => f.purpose === purpose);

describe('VE and COMBO readers on real replies', () => {
  it('ve.cot: an answer exactly when the reply says "the answer is", never the phrase itself', () => {
    expect(of('ve.cot').length).toBeGreaterThan(0);
    for (const f of of('ve.cot')) {
      const r = parseCot(f.text);
      expect(r.answer !== null).toBe(/answer is/i.test(f.text));
      if (r.answer !== null) expect(r.answer).not.toMatch(/answer is/i);
    }
  });

  it('ve.verifying-question and ve.verifying-answer: a question with its mark, an answer without a label', () => {
    for (const f of of('ve.verifying-question')) expect(parseQuestion(f.text).text).toMatch(/\?$/);
    for (const f of of('ve.verifying-answer')) expect(parseLongAnswer(f.text).text).not.toMatch(/^(?:answer|question)\s*:/i);
  });

  it('combo.generate: every generated passage is read, without a "Passage:" label', () => {
    expect(of('combo.generate').length).toBeGreaterThan(0);
    for (const f of of('combo.generate')) {
      const text = parseLongAnswer(f.text.replace(/^\s*passage\s*:\s*/i, '')).text;
      expect(text).not.toBe('');
      expect(text).not.toMatch(/^passage\s*:/i);
    }
  });
});

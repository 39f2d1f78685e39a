/**
 * Real RAC replies of the shipped 0.5B generator (test/pipelines/fixtures/toc-rac-replies.json,
 * collected from the embedded model's runs of issue 41: each entry names its run, question and
 * prompt), read by ToC's DQ/DA reader. Each fixture carries the pairs a person read from it
 * (`expected`); every pair the reader makes must also pass its own checks — no label, no
 * instruction, no passage in a node.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { pairFault, parseDisambiguations, readDisambiguations } from '../../../src/pipelines/parsing';
import { racReplyText } from '../../../src/pipelines/toc/prompts';

interface Fixture {
  source: string;
  finishReason: string;
  text: string;
  /** The reply continues the released prompt's `DQ 1:` opening (read as `racReplyText` gives it). */
  continuesPrefix?: boolean;
  expected: Array<{ question: string; answer: string }>;
}

const fixtures = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'toc-rac-replies.json'), 'utf8')) as Fixture[];

describe('ToC reader on real replies', () => {
  it('has fixtures', () => expect(fixtures.length).toBeGreaterThan(0));

  it.each(fixtures.map((f, i) => [i, f] as const))('fixture %i: the reader makes the pairs a person reads, each well formed', (_i, f) => {
    const r = readDisambiguations(f.continuesPrefix ? racReplyText(f.text) : f.text);
    expect(r.pairs).toEqual(f.expected);
    for (const p of r.pairs) {
      expect(pairFault(p.question, p.answer)).toBeNull();
      expect(`${p.question} ${p.answer}`).not.toMatch(/\bD[QA]\s*\d*\s*:|\|/);
    }
  });

  it('the one-line reply with repeated DA labels gave the reader before issue 41 a label inside the answer', () => {
    const oneLine = fixtures.find((f) => f.text.includes('?|DA 1:'))!;
    const old = parseDisambiguations(oneLine.text).pairs;
    expect(old.some((p) => /DA 1:/.test(p.answer))).toBe(true);
    expect(readDisambiguations(oneLine.text).pairs.every((p) => !/DA/.test(p.answer))).toBe(true);
  });

  it('the reply that pastes passages after its labels gave the reader before issue 41 a passage as an answer; now no pair', () => {
    const pasted = fixtures.find((f) => f.text.startsWith(' A studio audition'))!;
    const old = parseDisambiguations(racReplyText(pasted.text)).pairs;
    expect(old.some((p) => p.answer.split(/\s+/).length > 40)).toBe(true);
    expect(readDisambiguations(racReplyText(pasted.text)).pairs).toEqual([]);
  });
});

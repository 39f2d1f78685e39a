import { describe, expect, it } from 'vitest';
import type { LlamaContextSequence, Token } from 'node-llama-cpp';
import { evaluateCanonically, type Slot } from '../../src/llm/providers/llama-cpp';

/**
 * The batch splits of a canonical evaluation depend on token positions only, never on what the
 * slot held before: that is what makes an embedded judgment bit-identical whatever ran before it
 * (test/llm/judge-determinism.int.test.ts checks the bits on the real model). A fake sequence records
 * every batch it is asked to evaluate.
 */
class FakeSequence {
  tokens: Token[] = [];
  batches: Array<{ from: number; to: number; logitsAt?: number }> = [];
  erased: Array<{ start: number; end: number }> = [];
  get nextTokenIndex(): number {
    return this.tokens.length;
  }
  compareContextTokens(tokens: Token[]): { firstDifferentIndex: number } {
    let i = 0;
    while (i < this.tokens.length && i < tokens.length && this.tokens[i] === tokens[i]) i++;
    return { firstDifferentIndex: i };
  }
  async eraseContextTokenRanges(ranges: Array<{ start: number; end: number }>): Promise<void> {
    for (const r of ranges) {
      expect(r.end).toBe(this.tokens.length); // only ever the tail
      this.erased.push(r);
      this.tokens = this.tokens.slice(0, r.start);
    }
  }
  async controlledEvaluate(items: Array<Token | [Token, { generateNext: { probabilities: boolean } }]>) {
    const from = this.tokens.length;
    let logitsAt: number | undefined;
    const out = items.map((item, i) => {
      if (Array.isArray(item)) {
        logitsAt = from + i;
        this.tokens.push(item[0]);
        return { next: { probabilities: new Map<Token, number>([[item[0], 1]]) } };
      }
      this.tokens.push(item);
      return undefined;
    });
    this.batches.push({ from, to: this.tokens.length, ...(logitsAt !== undefined ? { logitsAt } : {}) });
    return out;
  }
}

const prompt = (n: number, salt = 0) => Array.from({ length: n }, (_, i) => (i < 100 ? i : i + salt) as Token);
const slot = (): Slot & { sequence: FakeSequence } => ({ sequence: new FakeSequence() as unknown as LlamaContextSequence & FakeSequence, lastUsed: 0, canonical: 0 });
const spans = (s: FakeSequence) => s.batches.map((b) => [b.from, b.to]);

describe('canonical evaluation (batch splits by position only)', () => {
  it('evaluates a fresh prompt in chunks aligned to the chunk size, logits on the last token', async () => {
    const s = slot();
    const r = await evaluateCanonically(s, prompt(150), { logitsAtEnd: true, chunk: 64 });
    expect(spans(s.sequence)).toEqual([[0, 64], [64, 128], [128, 150]]);
    expect(s.sequence.batches.at(-1)!.logitsAt).toBe(149);
    expect(r).toMatchObject({ evaluated: 150 });
    expect(s.canonical).toBe(150);
  });

  it('the same prompt again re-reads only its last chunk, split as in a fresh slot', async () => {
    const s = slot();
    await evaluateCanonically(s, prompt(150), { logitsAtEnd: true, chunk: 64 });
    s.sequence.batches = [];
    const r = await evaluateCanonically(s, prompt(150), { logitsAtEnd: true, chunk: 64 });
    // Not [149, 150] alone, which a plain resume would evaluate.
    expect(spans(s.sequence)).toEqual([[128, 150]]);
    expect(r.evaluated).toBe(22);
  });

  it('a prompt sharing 100 tokens resumes at 64 (the boundary below), not at 100', async () => {
    const s = slot();
    await evaluateCanonically(s, prompt(150), { logitsAtEnd: true, chunk: 64 });
    s.sequence.batches = [];
    await evaluateCanonically(s, prompt(200, 1000), { logitsAtEnd: true, chunk: 64 });
    expect(s.sequence.erased.at(-1)).toEqual({ start: 64, end: 150 });
    expect(spans(s.sequence)).toEqual([[64, 128], [128, 192], [192, 200]]);
    // Exactly the splits of a fresh slot from 64 on.
    const f = slot();
    await evaluateCanonically(f, prompt(200, 1000), { logitsAtEnd: true, chunk: 64 });
    expect(spans(f.sequence).slice(1)).toEqual(spans(s.sequence));
  });

  it('tokens a non-canonical evaluation left (a generation) are never resumed past the canonical mark', async () => {
    const s = slot();
    await evaluateCanonically(s, prompt(150), { logitsAtEnd: false, chunk: 64 });
    // As after a generation: more tokens appended one at a time, beyond the canonical 150.
    s.sequence.tokens.push(...prompt(60, 7).slice(0, 60).map((t) => (t + 500) as Token));
    s.sequence.batches = [];
    const longer = [...prompt(150), ...s.sequence.tokens.slice(150)];
    await evaluateCanonically(s, longer, { logitsAtEnd: true, chunk: 64 });
    expect(spans(s.sequence)).toEqual([[128, 192], [192, 210]]);
  });

  it('without logits, a slot already holding exactly the prompt canonically evaluates nothing', async () => {
    const s = slot();
    await evaluateCanonically(s, prompt(150), { logitsAtEnd: false, chunk: 64 });
    s.sequence.batches = [];
    expect((await evaluateCanonically(s, prompt(150), { logitsAtEnd: false, chunk: 64 })).evaluated).toBe(0);
    expect(s.sequence.batches).toEqual([]);
    // A shorter prefix of it: its last chunk differs in length, so it is read again.
    expect((await evaluateCanonically(s, prompt(100), { logitsAtEnd: false, chunk: 64 })).evaluated).toBe(36);
    expect(spans(s.sequence)).toEqual([[64, 100]]);
  });
});

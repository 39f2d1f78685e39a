/**
 * Real diversification replies of the shipped 0.5B model (issue 41's audit run,
 * test/pipelines/fixtures/diva-diversify-replies.json; `expected` checked by a person): Diva's
 * reader gets the type and every interpretation, and no interpretation holds a field label.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAmbiguity } from '../../../src/pipelines/parsing';

const fixtures = JSON.parse(readFileSync(join(__dirname, '..', 'fixtures', 'diva-diversify-replies.json'), 'utf8')) as Array<{
  text: string;
  expected: { type: string; interpretations: string[] };
}>;

describe('Diva reader on real replies', () => {
  it.each(fixtures.map((f, i) => [i, f] as const))('fixture %i', (_i, f) => {
    const r = parseAmbiguity(f.text);
    expect({ type: r.type, interpretations: r.interpretations }).toEqual(f.expected);
    for (const q of r.interpretations) expect(q).not.toMatch(/\b(?:type|reason|interpretations?)\s*:/i);
  });
});

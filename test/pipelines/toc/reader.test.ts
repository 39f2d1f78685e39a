/**
 * ToC's DQ/DA reader (issue 41): the released `parse_disambig` reading (a `DQ n:` line, then a
 * `DA n:` line), the one-line `DQ n: …|DA n: …` form the 0.5B model writes, and every candidate
 * checked — never a label, an instruction or a passage in a node. The replies of the shipped
 * models are in test/pipelines/fixtures/toc-rac-replies.json (reader-fixtures.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { pairFault, readDisambiguations } from '../../../src/pipelines/parsing';

const RON = { question: 'Who played Ron in the films?', answer: 'Rupert Grint' };
const PERCY = { question: 'Who played Percy in the films?', answer: 'Chris Rankin' };

describe('readDisambiguations', () => {
  it('reads the released alternating lines', () => {
    const r = readDisambiguations(`DQ 1: ${RON.question}\nDA 1: ${RON.answer}\nDQ 2: ${PERCY.question}\nDA 2: ${PERCY.answer}`);
    expect(r.pairs).toEqual([RON, PERCY]);
    expect(r.rejected).toEqual([]);
    expect(r.shape).toBe('lines');
  });

  it('reads the one-line form without leaving the DA label in the question or the answer', () => {
    const r = readDisambiguations('DQ 1: When was the first perfect game thrown in the American League?|DA 1: 1904');
    expect(r.pairs).toEqual([{ question: 'When was the first perfect game thrown in the American League?', answer: '1904' }]);
    expect(r.shape).toBe('one-line');
    // Several one-line pairs on consecutive lines, and with a space before the bar.
    const many = readDisambiguations(`DQ 1: ${RON.question} | DA 1: ${RON.answer}\nDQ 2: ${PERCY.question}|DA 2: ${PERCY.answer}|`);
    expect(many.pairs).toEqual([RON, PERCY]);
  });

  it('never makes a node of the format reminder copied into an answer', () => {
    const r = readDisambiguations(`DQ 1: ${RON.question}\nDA 1: Reply as in the examples: start with "DQ 1:", then "DA 1:", and so on.`);
    expect(r.pairs).toEqual([]);
    expect(r.rejected).toHaveLength(1);
    expect(r.rejected[0].reason).toMatch(/label inside the answer|instruction/);
  });

  it('never pairs a pasted passage: unlabelled lines are skipped, a DQ without its DA is not a pair', () => {
    const passage = 'Sound of Silence; "The Sound of Silence" is a song by the American music duo Simon & Garfunkel, written by Paul Simon in 1964.';
    const r = readDisambiguations(`DQ 1: ${RON.question}\n${passage}\nDA 1: ${RON.answer}\nDQ 2: ${passage}\nDA 2: 1964`);
    expect(r.pairs).toEqual([RON]);
    expect(r.rejected.map((x) => x.reason)).toEqual(['the question does not end with "?"']);
    expect(r.problems.join()).toMatch(/unlabelled line skipped/);
  });

  it('matches pairs by number: DQ 1 followed by DA 2 is refused', () => {
    const r = readDisambiguations(`DQ 1: ${RON.question}\nDA 2: ${RON.answer}\nDQ 2: ${PERCY.question}\nDA 2: ${PERCY.answer}`);
    expect(r.pairs).toEqual([PERCY]);
    expect(r.rejected[0].reason).toBe('DQ 1 followed by DA 2');
  });

  it('refuses a long answer and a question that does not end a question; drops an exact repeat', () => {
    const long = 'Rupert Grint played Ron in all eight films of the Harry Potter series from 2001 to 2011 and later starred in the Apple TV series Servant for four seasons';
    const r = readDisambiguations(`DQ 1: ${RON.question}\nDA 1: ${long}\nDQ 2: Percy Weasley actor\nDA 2: Chris Rankin\nDQ 3: ${PERCY.question}\nDA 3: ${PERCY.answer}\nDQ 4: ${PERCY.question}\nDA 4: ${PERCY.answer}`);
    expect(r.pairs).toEqual([PERCY]);
    expect(r.rejected.map((x) => x.reason)).toEqual(['answer longer than 25 words', 'the question does not end with "?"']);
    expect(r.problems.join()).toMatch(/repeated pair/);
    // One clause answers a "what did … do" question; several sentences are a passage.
    const clause = 'Under King John significant building resumed at the castle, with the outer bailey wall rebuilt in stone';
    expect(readDisambiguations(`DQ 1: ${RON.question}\nDA 1: ${clause}`).pairs).toHaveLength(1);
    const passage = 'King John rebuilt the outer bailey wall. He also dammed the brooks to create the Great Mere around it.';
    expect(readDisambiguations(`DQ 1: ${RON.question}\nDA 1: ${passage}`).rejected[0]?.reason).toBe('the answer is several sentences (a passage?)');
    // Several short answers separated by ';' (the released template's DA format) are one answer.
    const several = 'Paul Simon; Art Garfunkel; Simon and Garfunkel the duo; the Disturbed heavy metal band from Chicago';
    expect(readDisambiguations(`DQ 1: ${RON.question}\nDA 1: ${several}`).pairs).toEqual([{ question: RON.question, answer: several }]);
  });

  it('stops at the long answer and at a new question block; tolerates markdown and chatter', () => {
    const r = readDisambiguations(`Sure! Here they are:\n**DQ 1:** ${RON.question}\n**DA 1:** ${RON.answer}.\nAnswer: Ron was played by Rupert Grint.\nDQ 2: ${PERCY.question}\nDA 2: ${PERCY.answer}`);
    expect(r.pairs).toEqual([RON]);
    const next = readDisambiguations(`DQ 1: ${RON.question}\nDA 1: ${RON.answer}\n\nQuestion: Who sang it?\nDQ 1: Who sang it first in 1960?\nDA 1: X`);
    expect(next.pairs).toEqual([RON]);
  });

  it('reads nothing from a reply without labels, and says what it saw', () => {
    for (const text of ['', "I'm sorry, I cannot help with that.", 'Answer: Simon and Garfunkel wrote it.']) {
      const r = readDisambiguations(text);
      expect(r.pairs).toEqual([]);
      expect(r.shape).toBe('none');
    }
  });

  it('pairFault names what is wrong with a node from an older trace, and passes a well-formed one', () => {
    expect(pairFault('When was the last perfect game thrown?|DA 1: 1957', '1957')).toBe('a DQ/DA label inside the question');
    expect(pairFault(RON.question, 'start with "DQ 1:", then "DA 1:", and so on')).toBe('a DQ/DA label inside the answer');
    expect(pairFault(RON.question, RON.answer)).toBeNull();
  });
});

import { describe, expect, it } from 'vitest';
import {
  parseAmbiguity,
  parseCot,
  parseDisambiguations,
  parseFeverLabel,
  parseLongAnswer,
  parseQuestion,
  parseShortAnswer,
} from '../../src/pipelines/parsing';

const RON = { question: 'Who played Ron?', answer: 'Rupert Grint' };
const PERCY = { question: 'Who played Percy?', answer: 'Chris Rankin' };

describe('parseDisambiguations', () => {
  it('reads the canonical format and the long answer', () => {
    const r = parseDisambiguations('DQ 1: Who played Ron?\nDA 1: Rupert Grint\nDQ 2: Who played Percy?\nDA 2: Chris Rankin\nAnswer: Ron was played by Rupert Grint. Percy by Chris Rankin.');
    expect(r.pairs).toEqual([RON, PERCY]);
    expect(r.longAnswer).toBe('Ron was played by Rupert Grint. Percy by Chris Rankin.');
    expect(r.problems).toEqual([]);
  });

  it.each([
    ['missing numbers', 'DQ: Who played Ron?\nDA: Rupert Grint\nDQ: Who played Percy?\nDA: Chris Rankin'],
    ['Q1/A1 labels', 'Q1: Who played Ron?\nA1: Rupert Grint\nQ2: Who played Percy?\nA2: Chris Rankin'],
    ['markdown bold', '**DQ 1:** Who played Ron?\n**DA 1:** Rupert Grint\n**DQ 2:** Who played Percy?\n**DA 2:** Chris Rankin'],
    ['chatter first', 'Sure! Here are the disambiguated questions:\n\nDQ 1: Who played Ron?\nDA 1: Rupert Grint.\nDQ 2: Who played Percy?\nDA 2: "Chris Rankin"'],
    ['inline pairs', 'DQ 1: Who played Ron? DA 1: Rupert Grint DQ 2: Who played Percy? DA 2: Chris Rankin'],
    ['DQn without space and bullets', '- DQ1: Who played Ron?\n- DA1: Rupert Grint\n- DQ2: Who played Percy?\n- DA2: Chris Rankin'],
    ['numbered list with dashes', '1. Who played Ron? - Rupert Grint\n2. Who played Percy? — Chris Rankin'],
    ['Question n / Answer n', 'Question 1: Who played Ron?\nAnswer 1: Rupert Grint\nQuestion 2: Who played Percy?\nAnswer 2: Chris Rankin'],
    ['unlabelled answer lines', 'DQ 1: Who played Ron?\nRupert Grint\nDQ 2: Who played Percy?\nChris Rankin'],
    ['echoed question first', 'Question: Who played the Weasleys?\nDQ 1: Who played Ron?\nDA 1: Rupert Grint\nDQ 2: Who played Percy?\nDA 2: Chris Rankin'],
  ])('tolerates %s', (_name, text) => {
    expect(parseDisambiguations(text).pairs).toEqual([RON, PERCY]);
  });

  it('drops a truncated last question and reports it', () => {
    const r = parseDisambiguations('DQ 1: Who played Ron?\nDA 1: Rupert Grint\nDQ 2: Who played Per');
    expect(r.pairs).toEqual([RON]);
    expect(r.problems.join()).toMatch(/without an answer/);
  });

  it('stops where the model starts inventing a new demo', () => {
    const r = parseDisambiguations('DQ 1: Who played Ron?\nDA 1: Rupert Grint\nAnswer: Rupert Grint.\n\nQuestion: Who sang it?\nDQ 1: Who sang it first?\nDA 1: X');
    expect(r.pairs).toEqual([RON]);
    expect(r.longAnswer).toBe('Rupert Grint.');
  });

  it('returns nothing (and says so) for an unrelated reply', () => {
    const r = parseDisambiguations("I'm sorry, I cannot help with that.");
    expect(r.pairs).toEqual([]);
    expect(parseDisambiguations('').pairs).toEqual([]);
  });

  it('does not read ordinary sentences as pairs', () => {
    expect(parseDisambiguations('A-list actors starred in the films. Answers vary.').pairs).toEqual([]);
  });
});

describe('parseCot', () => {
  it('splits rationale and answer', () => {
    expect(parseCot('Palmer came third. He was born in 1991. So the answer is: 1991.')).toEqual({
      rationale: 'Palmer came third. He was born in 1991.',
      answer: '1991',
      problems: [],
    });
  });

  it('accepts variants and takes the last answer phrase', () => {
    expect(parseCot('The question asks what the answer is about. Thus, the answer is **Paris**').answer).toBe('Paris');
    expect(parseCot('Reasoning here.\nAnswer: Seine').answer).toBe('Seine');
    expect(parseCot('So the final answer is "1847".\n\nQuestion: next one').answer).toBe('1847');
  });

  it('reports a missing or truncated answer', () => {
    expect(parseCot('I think it is probably').answer).toBeNull();
    expect(parseCot('So the answer is:').answer).toBeNull();
  });

  it('keeps a multi-line long answer when asked', () => {
    expect(parseCot('Two readings.\nSo the answer is: First line.\nSecond line.', { multiline: true }).answer).toBe('First line. Second line.');
  });
});

describe('other parsers', () => {
  it('reads FEVER labels from common variants', () => {
    expect(parseFeverLabel('SUPPORTS')).toBe('SUPPORTS');
    expect(parseFeverLabel('The claim is supported.')).toBe('SUPPORTS');
    expect(parseFeverLabel('Refuted')).toBe('REFUTES');
    expect(parseFeverLabel('False')).toBe('REFUTES');
    expect(parseFeverLabel('Not enough information')).toBe('NOT ENOUGH INFO');
    expect(parseFeverLabel('It cannot be determined')).toBe('NOT ENOUGH INFO');
    expect(parseFeverLabel('banana')).toBeNull();
  });

  it('reads Diva ambiguity replies', () => {
    const r = parseAmbiguity('**Ambiguity type:** Temporal\nReason: No year given.\nInterpretations:\n1. Who won in 2016?\n2) Who won in 2017?\n- Who won in 1901?');
    expect(r.type).toBe('time');
    expect(r.reason).toBe('No year given.');
    expect(r.interpretations).toEqual(['Who won in 2016?', 'Who won in 2017?', 'Who won in 1901?']);
    expect(parseAmbiguity('Type: none\nInterpretations:\n1. Who is it?').type).toBe('none');
    expect(parseAmbiguity('Who won in 2016?\nWho won in 2017?').interpretations).toHaveLength(2);
    expect(parseAmbiguity('no idea').interpretations).toEqual([]);
  });

  it('issue 41: fields on one line, the list on its header line, a numbered reason — no label or reason becomes an interpretation', () => {
    const want = ['Who won in 2016?', 'Who won in 2017?'];
    expect(parseAmbiguity('Type: time|Reason: No year given.|Interpretations: 1. Who won in 2016? 2. Who won in 2017?')).toMatchObject({ type: 'time', reason: 'No year given.', interpretations: want });
    expect(parseAmbiguity('Type: time\nReason: No year.\nInterpretations: 1. Who won in 2016? 2. Who won in 2017?').interpretations).toEqual(want);
    expect(parseAmbiguity('Type: time\nReason:\n1. The question names no year.\nInterpretations:\n1. Who won in 2016?\n2. Who won in 2017?').interpretations).toEqual(want);
    const labelled = parseAmbiguity('Type: time\nInterpretations:\n1. Who won in 2016?\n2. Reason: the year');
    expect(labelled.interpretations).toEqual(['Who won in 2016?']);
    expect(labelled.problems.join()).toMatch(/field label dropped/);
  });

  it('reads questions, short answers and long answers', () => {
    expect(parseQuestion('Verifying question: When was Jolyon Palmer born? It matters.').text).toBe('When was Jolyon Palmer born?');
    expect(parseShortAnswer('Answer: Rupert Grint.\nMore text').text).toBe('Rupert Grint');
    expect(parseShortAnswer("Sure! Here's the answer:\nRupert Grint").text).toBe('Rupert Grint');
    expect(parseLongAnswer('Answer: Ron was played by Rupert Grint.\nPercy by Chris Rankin.\nQuestion: next').text).toBe(
      'Ron was played by Rupert Grint. Percy by Chris Rankin.',
    );
    expect(parseLongAnswer('DQ 1: x?\nDA 1: y\nAnswer: The long one.').text).toBe('The long one.');
    expect(parseLongAnswer('   ').problems).toContain('empty answer');
  });
});

/**
 * Fixed chain-of-thought demos for adversarial HotpotQA (option `cotDemos: written`).
 *
 * The released code shows every question the same demos: the first `num_shot` = 6 questions of
 * `sim_train.json` (all 30 have a hand-written rationale, `annotations/manual_rat_std.txt`), each
 * with a step-by-step rationale and the answer; see
 * RuochenZhao/Verify-and-Edit `HotpotAdv/consistency.py` (`test_few_shot_manual_prediction`:
 * `train_set[train_slice:train_slice + num_shot]`) and `HotpotAdv/dataset_utils.py`
 * (`read_hotpot_data` with `manual_annotation_style`).
 *
 * Here: the same training questions (ids, questions and answers are the dataset's), in the same
 * order, with step-by-step rationales ("First, … Then, …": one hop per sentence, so each sentence
 * is one fact to verify) that ambiqa wrote from each question's supporting paragraphs — not the
 * authors' text. Eight are written so `nShots` up to 8 stays fixed; the code uses 6.
 */
import type { Demo } from '../types';

export const WRITTEN_DEMOS: Readonly<Record<'hotpotqa-adversarial', readonly Demo[]>> = {
  'hotpotqa-adversarial': [
    {
      id: '5ab29a54554299340b52552c',
      question: 'This British racing driver came in third at the 2014 Bahrain GP2 Series round and was born in what year',
      rationale:
        'First, the driver who finished third at the 2014 Bahrain GP2 Series round was Jolyon Palmer of DAMS. ' +
        'Then, Jolyon Palmer, a British racing driver, was born on 20 January 1991, so he was born in 1991.',
      answer: '1991',
    },
    {
      id: '5ae255345542994d89d5b3e2',
      question: 'What band did Antony King work with that formed in 1985 in Manchester?',
      rationale:
        'First, Antony King has been a front of house engineer for several acts, Simply Red among them. ' +
        'Then, Simply Red is a soul and pop band that was formed in Manchester in 1985.',
      answer: 'Simply Red',
    },
    {
      id: '5ae7fc3a5542994a481bbe60',
      question: "How many inhabitants were in the city close to where Alberta Ferretti's studios was located?",
      rationale:
        "First, Alberta Ferretti's studio is in the village of Cattolica, which lies near the city of Rimini. " +
        'Then, Rimini is a city with 146,606 inhabitants.',
      answer: '146,606',
    },
    {
      id: '5ae140ac5542997b2ef7d17e',
      question: 'TLC: Tables, Ladders & Chairs was a wrestling event featuring which American wrestler and rapper in the main event?',
      rationale:
        "First, in the main event of TLC: Tables, Ladders & Chairs (2010), John Cena beat Wade Barrett in a Chairs match. " +
        'Then, John Cena, whose full name is John Felix Anthony Cena, is an American professional wrestler and also a rapper.',
      answer: 'John Felix Anthony Cena',
    },
    {
      id: '5ae100a9554299422ee995b8',
      question: 'The person who received the Order of the Elephant on 31 January 1998 was born on what date?',
      rationale:
        'First, on 31 January 1998 the Order of the Elephant went to Willem-Alexander, now King of the Netherlands. ' +
        'Then, Willem-Alexander was born on 27 April 1967.',
      answer: '27 April 1967',
    },
    {
      id: '5a8a2c8755429930ff3c0cd8',
      question: 'III - Odyssey of the Mind is the sixth album by a German band formed in what city?',
      rationale:
        'First, III - Odyssey of the Mind is the sixth album of the German band Die Krupps. ' +
        'Then, Die Krupps was founded in 1980 in Düsseldorf.',
      answer: 'Düsseldorf',
    },
    {
      id: '5ae1f313554299234fd0435b',
      question: 'Macologist hosts mods for the first person shooter game developed by what company?',
      rationale:
        'First, among the first-person shooters whose mods Macologist converts and hosts is Doom 3. ' +
        'Then, Doom 3 was developed by id Software.',
      answer: 'id Software',
    },
    {
      id: '5a8d65c255429941ae14dfb1',
      question: 'As of the 2010 United States Census, what was the population of the the city located 3 miles southwest of Winn Airport?',
      rationale:
        'First, Winn Airport lies 3 miles northeast of Corvallis, Oregon, so Corvallis is the city 3 miles southwest of it. ' +
        'Then, the 2010 United States Census counted 54,462 people in Corvallis.',
      answer: '54,462',
    },
  ],
};

/** The written demos for a dataset, or undefined where ambiqa has none. */
export function writtenDemos(dataset: string): readonly Demo[] | undefined {
  return (WRITTEN_DEMOS as Record<string, readonly Demo[]>)[dataset];
}

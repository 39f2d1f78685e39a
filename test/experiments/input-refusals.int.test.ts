import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExitStatus } from '../../src/experiments/exit-status';
import { startFaultServer, type FaultServer } from '../llm/fault-server';
import { runCli } from '../helpers/cli';
import { writeAsqa, writeYaml } from './helpers/files';

/**
 * Input that used to be taken silently is refused through the real command, naming what is
 * wrong and where, before any model call: a `--set` path into JavaScript's object machinery, a
 * question id given twice, bytes that are not UTF-8, a question or prompt past its size limit,
 * a predictions file of which no line is a prediction, and dataset records of the wrong type.
 */
const dir = mkdtempSync(join(tmpdir(), 'ambiqa-refusals-'));
const artifacts = join(dir, 'artifacts');
const env = { ...process.env, AMBIQA_ARTIFACTS_DIR: artifacts };
const callLog = join(dir, 'calls.jsonl');
let server: FaultServer;

beforeAll(async () => {
  server = await startFaultServer();
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A closed-book run of `data` on the scripted model (its call log shows whether a model was called). */
function config(name: string, dataset: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  return writeYaml(join(dir, `${name}.yaml`), {
    name,
    dataset,
    pipeline: { name: 'closed-book', options: { nShots: 0 } },
    llm: { provider: 'scripted', cache: join(dir, 'cache.sqlite'), callLog },
    tracking: { enabled: false },
    ...extra,
  });
}

/** Exit status 1, the first line of the message, no model call and no run folder. */
async function refusal(args: string[], runName: string): Promise<string[]> {
  const r = await runCli(args, env);
  expect(r.code, r.output).toBe(ExitStatus.error);
  expect(existsSync(callLog), 'a model was called').toBe(false);
  expect(existsSync(join(artifacts, 'runs', runName)), 'a run folder was left').toBe(false);
  return r.stderr.trimEnd().split('\n');
}

/** An ASQA entry as the official file has it. */
function asqaEntry(question: string, answer = '1990'): Record<string, unknown> {
  return {
    ambiguous_question: question,
    qa_pairs: [{ question, short_answers: [answer], context: `It was ${answer}.`, wikipage: 'X' }],
    wikipages: [],
    annotations: [{ long_answer: `It was ${answer}.`, knowledge: [] }],
  };
}

describe('--set', () => {
  it('refuses __proto__, constructor and prototype in a field path, and nothing else is disturbed', async () => {
    const file = config('proto', { name: 'asqa', path: writeAsqa(dir, 2) });
    for (const [set, segment] of [
      ['__proto__.polluted=1', '__proto__'],
      ['constructor.prototype.polluted=1', 'constructor'],
      ['pipeline.prototype=1', 'prototype'],
      ['sweep.__proto__.x=[1]', '__proto__'],
    ] as const) {
      const lines = await refusal(['run', file, '--set', set], 'proto');
      expect(lines[0]).toBe(`ambiqa run: --set ${set.slice(0, set.indexOf('='))}: '${segment}' is not a config field (and is never accepted as part of a field path)`);
      // Before, every section of the config then reported an unknown field 'polluted'.
      expect(lines.join('\n')).not.toContain('unknown field');
    }
    // The same config with an ordinary --set runs.
    const ok = await runCli(['run', file, '--set', 'dataset.limit=1', '--quiet'], env);
    expect(ok.code, ok.output).toBe(ExitStatus.ok);
    rmSync(callLog, { force: true });
  });
});

describe('dataset files', () => {
  it('a question id given twice (ASQA: a repeated key, which JSON.parse would keep one of)', async () => {
    const path = join(dir, 'asqa-dup.json');
    const entry = JSON.stringify(asqaEntry('When?'));
    writeFileSync(path, `{"dev": {\n"q00": ${entry},\n"q01": ${entry},\n"q00": ${entry}\n}}\n`);
    const lines = await refusal(['run', config('dup-asqa', { name: 'asqa', path })], 'dup-asqa');
    expect(lines[0]).toBe(
      `ambiqa run: ASQA file ${path}: key "q00" occurs twice in "dev" (lines 2 and 4); JSON keeps only the last, so one of them would be dropped silently`,
    );
  });

  it('a question id given twice in an array format (AmbigNQ) and in JSONL (FEVER)', async () => {
    const ambig = join(dir, 'ambignq-dup.json');
    const record = (id: string, q: string) => ({ id, question: q, annotations: [{ type: 'singleAnswer', answer: ['x'] }] });
    writeFileSync(ambig, JSON.stringify([record('a1', 'one?'), record('a2', 'two?'), record('a1', 'three?')]));
    const lines = await refusal(['run', config('dup-ambignq', { name: 'ambignq', path: ambig })], 'dup-ambignq');
    expect(lines[0]).toBe(`ambiqa run: ${ambig}: question id "a1" (2 times) occurs more than once; every question needs its own id`);

    const fever = join(dir, 'fever-dup.jsonl');
    const claim = (id: number) => JSON.stringify({ id, claim: `Claim ${id}.`, label: 'SUPPORTS', evidence: [] });
    writeFileSync(fever, [claim(7), claim(8), claim(7)].join('\n') + '\n');
    const feverLines = await refusal(['run', config('dup-fever', { name: 'fever', path: fever, split: 'all' })], 'dup-fever');
    expect(feverLines[0]).toBe(`ambiqa run: ${fever}: question id "7" (2 times) occurs more than once; every question needs its own id`);
  });

  it('bytes that are not UTF-8, naming the file, the byte offset and the line', async () => {
    const path = join(dir, 'asqa-latin1.json');
    const text = JSON.stringify({ dev: { q00: asqaEntry('Who won?'), q01: asqaEntry('Where is Caf\u00e9 X?') } }, null, 1);
    const at = Buffer.from(text.slice(0, text.indexOf('\u00e9')), 'utf8').length;
    writeFileSync(path, Buffer.from(text, 'latin1'));
    const line = text.slice(0, text.indexOf('\u00e9')).split('\n').length;
    const lines = await refusal(['run', config('latin1', { name: 'asqa', path })], 'latin1');
    expect(lines[0]).toBe(`ambiqa run: ASQA file ${path}: byte ${at} (line ${line}) is not UTF-8 (bytes 0xe9 0x20 0x58 0x3f); the file must be UTF-8`);
    expect(lines[1]).toMatch(/fix: convert it, e\.g\. `iconv -f latin1 -t utf-8/);
  });

  it('a record of the wrong type says what was expected and what came, and counts records, not problems', async () => {
    const path = join(dir, 'asqa-types.json');
    const good = asqaEntry('When?');
    writeFileSync(path, JSON.stringify({ dev: { q00: good, q01: { ...good, ambiguous_question: 5, qa_pairs: 'none' } } }));
    const lines = await refusal(['run', config('types', { name: 'asqa', path })], 'types');
    expect(lines.slice(0, 3)).toEqual([
      `ambiqa run: ${path}: 1 invalid record (2 problems)`,
      '  question "q01": ambiguous_question: expected string (got 5)',
      '  question "q01": qa_pairs: expected array (got "none")',
    ]);
  });

  it(`a question past dataset.maxQuestionChars (default 10,000) is refused before any call; a higher limit lets it run`, async () => {
    const path = join(dir, 'asqa-long.json');
    writeFileSync(path, JSON.stringify({ dev: { q00: asqaEntry('When?'), q01: asqaEntry(`Why ${'very '.repeat(4000)}long?`) } }));
    const file = config('long', { name: 'asqa', path });
    const lines = await refusal(['run', file], 'long');
    expect(lines).toEqual([
      `ambiqa run: ${path}: question "q01" has 20,009 characters, over the limit of 10,000`,
      '  fix: fix the data file, or raise dataset.maxQuestionChars if such questions are meant',
    ]);
    const ok = await runCli(['run', file, '--set', 'dataset.maxQuestionChars=30000', '--quiet'], env);
    expect(ok.code, ok.output).toBe(ExitStatus.ok);
    rmSync(callLog, { force: true });
  });

  it('a prompt past llm.maxPromptChars is never sent: each question fails saying so, and the run says none was answered', async () => {
    server.requests = [];
    const file = writeYaml(join(dir, 'prompt.yaml'), {
      dataset: { name: 'asqa', path: writeAsqa(dir, 2) },
      pipeline: { name: 'closed-book', options: { nShots: 0 } },
      llm: { provider: 'openai-compatible', baseUrl: server.url, model: 'm', cache: join(dir, 'prompt.sqlite'), maxPromptChars: 20 },
      tracking: { enabled: false },
    });
    const r = await runCli(['run', file, '--quiet'], env);
    expect(r.code, r.output).toBe(ExitStatus.noneAnswered);
    expect(r.stdout).toMatch(/failed \(2\): LLM request closed-book\.answer: the prompt has \d+ characters, over the limit of 20; it was not sent/);
    expect(server.requests).toHaveLength(0);
  });
});

describe('ambiqa score', () => {
  it('fails (exit 1) when no line of the predictions file is a prediction, instead of scoring 0.00', async () => {
    const data = writeAsqa(dir, 2);
    const predictions = join(dir, 'garbage.jsonl');
    writeFileSync(predictions, 'this is not json\n{"no": "id"}\n');
    const r = await runCli(['score', '--dataset', 'asqa', '--data', data, '--predictions', predictions, '--reader', 'none'], env);
    expect(r.code, r.output).toBe(ExitStatus.error);
    expect(r.stderr.split('\n')[0]).toBe(`ambiqa score: predictions file ${predictions}: none of its 2 line(s) is a prediction (e.g. line 1: not valid JSON (Unexpected token 'h', "this is not json" is not valid JSON))`);
    expect(r.stdout).not.toMatch(/0\.00/);
    // One good line among bad ones is scored, as before (exit 0; --strict makes the problems 4).
    writeFileSync(predictions, 'this is not json\n{"id": "q00", "output": "In 1990."}\n');
    const some = await runCli(['score', '--dataset', 'asqa', '--data', data, '--predictions', predictions, '--reader', 'none'], env);
    expect(some.code, some.output).toBe(ExitStatus.ok);
    const strict = await runCli(['score', '--dataset', 'asqa', '--data', data, '--predictions', predictions, '--reader', 'none', '--strict'], env);
    expect(strict.code, strict.output).toBe(ExitStatus.someFailed);
    expect(readFileSync(predictions, 'utf8')).toContain('q00');
  });
});

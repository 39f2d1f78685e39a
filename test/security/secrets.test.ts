import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  REDACTED,
  clearRegisteredSecrets,
  knownSecrets,
  redactDeep,
  redactText,
  registerKeyOfConfig,
  registerSecret,
  redactStandardStreams,
  registerUrlCredentials,
} from '../../src/common/secrets';
import { createComposer } from '../../src/experiments/compose';
import { loadExperimentConfig } from '../../src/experiments/config';
import { LlmCache, cacheKey } from '../../src/llm/cache';
import { LlmClient, normaliseRequest } from '../../src/llm/client';
import { resolveLlmConfig } from '../../src/llm/config';
import { OpenAICompatibleProvider } from '../../src/llm/providers/openai-compatible';
import { ScriptedProvider } from '../../src/llm/providers/scripted';
import { setDisplaySink, show, showTable } from '../../src/notebook/display';
import { writeAsqa, writeYaml } from '../experiments/helpers/files';

const KEY = 'plain-looking-value-5b1e09c4';

afterEach(() => clearRegisteredSecrets());

describe('the secret registry', () => {
  it('masks a key from a variable of any name once the provider has read it', () => {
    expect(redactText(`echo ${KEY}`)).toContain(KEY); // nothing knows it yet
    new OpenAICompatibleProvider({ baseUrl: 'http://127.0.0.1:9/v1', model: 'm', apiKeyEnv: 'MYVAR' }, { MYVAR: KEY });
    expect(knownSecrets({})).toContain(KEY);
    expect(redactText(`echo ${KEY} twice ${KEY}`)).toBe(`echo ${REDACTED} twice ${REDACTED}`);
  });

  it('masks URL passwords anywhere, registered or not', () => {
    expect(redactText('see https://alice:hunter2pass@example.org/v1 now')).toBe(`see https://alice:${REDACTED}@example.org/v1 now`);
    registerUrlCredentials('http://bob:s3cr3t-pa55@mlflow.internal:5000');
    expect(redactText('the password was s3cr3t-pa55')).toBe(`the password was ${REDACTED}`);
  });

  it('registers the key a run config names when it is in the environment now (report, merge)', () => {
    registerKeyOfConfig({ llm: { apiKeyEnv: 'MYVAR' } }, { MYVAR: KEY });
    expect(redactText(KEY)).toBe(REDACTED);
  });

  it('redactDeep masks strings at any depth and secret-named keys', () => {
    registerSecret(KEY);
    const out = redactDeep({ a: [{ text: `x${KEY}y` }], llm: { apiKey: 'whatever', apiKeyEnv: 'MYVAR' }, n: 3 }, { maskSecretKeys: true });
    expect(out).toEqual({ a: [{ text: `x${REDACTED}y` }], llm: { apiKey: REDACTED, apiKeyEnv: 'MYVAR' }, n: 3 });
  });

  it('notebook displays are masked', () => {
    registerSecret(KEY);
    const shown: string[] = [];
    setDisplaySink(
      { html: (h) => shown.push(h), bundle: (b) => shown.push(JSON.stringify(b)) },
      { renderPng: () => Buffer.from('png') },
    );
    try {
      showTable([{ output: `the key is ${KEY}` }]);
      // A figure's JSON carries model output too (trace names, hover text).
      show({ data: [{ type: 'scatter', name: `answer ${KEY}`, x: [1], y: [1] }], layout: { title: { text: `key ${KEY}` } } });
    } finally {
      setDisplaySink(undefined);
    }
    expect(shown).toHaveLength(2);
    expect(shown.join('')).not.toContain(KEY);
    expect(shown.join('')).toContain(REDACTED);
  });
});

describe('stdout and stderr', () => {
  it('are masked once installed (strings and bytes), and restored after', () => {
    registerSecret(KEY);
    const seen: string[] = [];
    const original = process.stderr.write;
    process.stderr.write = ((chunk: string | Uint8Array) => {
      seen.push(Buffer.from(chunk).toString('utf8'));
      return true;
    }) as typeof process.stderr.write;
    try {
      const restore = redactStandardStreams();
      expect(redactStandardStreams()).toBe(restore); // once per process
      process.stderr.write(`warning: ${KEY}\n`);
      process.stderr.write(Buffer.from(`bytes ${KEY}\n`));
      restore();
      process.stderr.write(`after ${KEY}\n`);
    } finally {
      process.stderr.write = original;
    }
    expect(seen).toEqual([`warning: ${REDACTED}\n`, `bytes ${REDACTED}\n`, `after ${KEY}\n`]);
  });
});

describe('model output and the cache', () => {
  it('masks an echoed key before the cache, and on replay of a row written before the key was known', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-secret-cache-'));
    try {
      const cache = new LlmCache({ path: join(dir, 'c.sqlite') });
      // An old row that holds the key verbatim (written by a version without masking).
      const request = normaliseRequest({ prompt: 'old' });
      cache.put(cacheKey({ provider: 'scripted', model: 'echo', request, sampleIndex: 0 }), { provider: 'scripted', model: 'echo', sampleIndex: 0 }, {
        text: `old reply with ${KEY}`,
        finishReason: 'stop',
        usage: { promptTokens: 1, completionTokens: 1 },
        latencySeconds: 0,
      });
      registerSecret(KEY);
      const client = new LlmClient(new ScriptedProvider(() => `fresh reply with ${KEY}`, 'echo'), { cache });
      expect((await client.generate({ prompt: 'old' })).completions[0]!.text).toBe(`old reply with ${REDACTED}`);
      expect((await client.generate({ prompt: 'new' })).completions[0]!.text).toBe(`fresh reply with ${REDACTED}`);
      // What was stored for the new call holds no key: a replay with no key known is clean.
      clearRegisteredSecrets();
      const stored = cache.get(cacheKey({ provider: 'scripted', model: 'echo', request: normaliseRequest({ prompt: 'new' }), sampleIndex: 0 }));
      expect(stored!.text).toBe(`fresh reply with ${REDACTED}`);
      cache.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('credentials in llm.baseUrl', () => {
  const url = 'http://user:pw-in-url-77@127.0.0.1:8000/v1';

  it('are refused at config validation, saying where a key belongs, without echoing the password', () => {
    let message = '';
    try {
      resolveLlmConfig({ provider: 'openai-compatible', baseUrl: url, model: 'm' });
    } catch (error) {
      message = (error as Error).message + String((error as { hint?: string }).hint);
    }
    expect(message).toMatch(/llm\.baseUrl: must not contain credentials/);
    expect(message).toContain('apiKeyEnv');
    expect(message).not.toContain('pw-in-url-77');
  });

  it('are refused in an experiment config before any LLM call', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-url-cred-'));
    try {
      const file = writeYaml(join(dir, 'x.yaml'), {
        dataset: { name: 'asqa', path: writeAsqa(dir, 2) },
        pipeline: { name: 'closed-book' },
        llm: { provider: 'openai-compatible', baseUrl: url, model: 'm' },
        metrics: ['str_em'],
      });
      const registry = createComposer().registry;
      expect(() => loadExperimentConfig(file, registry)).toThrow(/llm\.baseUrl: must not contain credentials .*apiKeyEnv/);
      expect(() => loadExperimentConfig(file, registry)).not.toThrow(/pw-in-url-77/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('are refused by the provider too (OPENAI_BASE_URL)', () => {
    expect(() => new OpenAICompatibleProvider({ model: 'm' }, { OPENAI_BASE_URL: url })).toThrow(/contains credentials/);
  });
});

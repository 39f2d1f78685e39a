import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { REDACTED, flattenParams, isSecretKey, knownSecrets, redactBytes, redactSecrets, redactText, registerSecret } from '../../src/tracking/redact';

const FAKE_KEY = 'sk-test-0123456789abcdefXYZ';

describe('flattenParams', () => {
  it('turns a nested config into dotted, valid MLflow keys', () => {
    const flat = flattenParams({
      pipeline: { name: 'toc', options: { maxNodes: 10, depth: 3, prune: true } },
      llm: { model: 'smollm2', stop: ['\n\n', 'Q:'], seed: null },
      retrievers: [{ kind: 'bm25', k: 5 }, { kind: 'dense', k: 20 }],
      tags: {},
      'odd key[1]': 'x',
    });
    expect(flat).toEqual({
      'pipeline.name': 'toc',
      'pipeline.options.maxNodes': 10,
      'pipeline.options.depth': 3,
      'pipeline.options.prune': true,
      'llm.model': 'smollm2',
      'llm.stop': '["\\n\\n","Q:"]',
      'retrievers.0.kind': 'bm25',
      'retrievers.0.k': 5,
      'retrievers.1.kind': 'dense',
      'retrievers.1.k': 20,
      tags: '{}',
      'odd key_1_': 'x',
    });
  });
});

describe('secret keys', () => {
  it('flags secret names but not token counts or tokenizers', () => {
    for (const key of ['apiKey', 'llm.api_key', 'OPENAI_API_KEY', 'x-api-key', 'hfToken', 'token', 'password', 'MLFLOW_TRACKING_PASSWORD', 'Authorization', 'client_secret', 'aws.secretAccessKey', 'privateKey']) {
      expect(isSecretKey(key), key).toBe(true);
    }
    for (const key of ['max_tokens', 'maxTokens', 'prompt_tokens', 'tokenizer', 'llm.model', 'author', 'keywords', 'cache.key', 'usage.completion_tokens', 'llm.apiKeyEnv', 'api_key_env']) {
      expect(isSecretKey(key), key).toBe(false);
    }
  });
});

describe('redactSecrets', () => {
  const saved = process.env.OPENAI_API_KEY;
  beforeEach(() => {
    process.env.OPENAI_API_KEY = FAKE_KEY;
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved;
  });

  it('masks secret keys, drops them on request, and masks a known secret under any key', () => {
    const params = {
      'llm.apiKey': 'whatever-the-value',
      'llm.baseUrl': `http://127.0.0.1:8000/v1?key=${FAKE_KEY}`,
      'llm.header': FAKE_KEY,
      'llm.max_tokens': 64,
    };
    expect(redactSecrets(params)).toEqual({
      'llm.apiKey': REDACTED,
      'llm.baseUrl': `http://127.0.0.1:8000/v1?key=${REDACTED}`,
      'llm.header': REDACTED,
      'llm.max_tokens': 64,
    });
    expect(Object.keys(redactSecrets(params, { mode: 'drop' }))).not.toContain('llm.apiKey');
    expect(JSON.stringify(redactSecrets(params, { mode: 'drop' }))).not.toContain(FAKE_KEY);
  });

  it('knows registered secrets and replaces them in text and bytes', () => {
    registerSecret('registered-secret-value-42');
    expect(knownSecrets()).toContain('registered-secret-value-42');
    expect(knownSecrets()).toContain(FAKE_KEY);
    expect(redactText(`a ${FAKE_KEY} b registered-secret-value-42`)).toBe(`a ${REDACTED} b ${REDACTED}`);
    const { data, replaced } = redactBytes(Buffer.from(`{"key":"${FAKE_KEY}","again":"${FAKE_KEY}"}`));
    expect(replaced).toBe(2);
    expect(data.toString()).toBe(`{"key":"${REDACTED}","again":"${REDACTED}"}`);
    const untouched = Buffer.from('nothing secret here');
    expect(redactBytes(untouched).data).toBe(untouched);
  });
});

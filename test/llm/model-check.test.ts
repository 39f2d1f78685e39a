import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeError } from '../../src/errors';
import { createLanguageModel } from '../../src/llm/config';
import { LlmRequestError } from '../../src/llm/errors';
import { modelNameMatches } from '../../src/llm/providers/openai-compatible';

/**
 * One-model servers (llama.cpp's, llama-cpp-python's) answer any model name with the model they
 * have; the provider reads `/models` once and refuses a name the server does not list.
 */
let server: Server;
let base = '';
let chats = 0;
let listed: unknown = { object: 'list', data: [{ id: 'qwen-real' }] };

beforeAll(async () => {
  server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.url?.endsWith('/models')) return res.end(JSON.stringify(listed));
    chats += 1;
    res.end(JSON.stringify({ choices: [{ message: { content: 'hi' }, finish_reason: 'stop' }], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const client = (model: string) => createLanguageModel({ provider: 'openai-compatible', baseUrl: base, model, cache: { mode: 'off' }, maxRetries: 3 }, { env: {} });

describe('the served-model check', () => {
  it('refuses a model the server does not list, before any chat request, without retrying', async () => {
    const before = chats;
    const error = await (await client('qwen-typo')).generate({ prompt: 'x' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmRequestError);
    expect((error as LlmRequestError).kind).toBe('config');
    expect(describeError(error)).toBe(`the server at ${base} does not serve model "qwen-typo" (its /models lists "qwen-real")\n  fix: set \`model\` in the llm config (or OPENAI_MODEL) to "qwen-real"`);
    expect(chats).toBe(before);
  });

  it('lets a listed model through, and servers without a usable list go unchecked', async () => {
    expect((await (await client('qwen-real')).generate({ prompt: 'x' })).completions[0]!.text).toBe('hi');
    listed = { object: 'list', data: [] };
    expect((await (await client('anything')).generate({ prompt: 'x' })).completions[0]!.text).toBe('hi');
    listed = 'not a list';
    expect((await (await client('anything-else')).generate({ prompt: 'x' })).completions[0]!.text).toBe('hi');
  });

  it('matches Ollama tags and organisation prefixes', () => {
    expect(modelNameMatches('llama3:latest', 'llama3')).toBe(true);
    expect(modelNameMatches('meta/llama3', 'llama3')).toBe(true);
    expect(modelNameMatches('llama3.1', 'llama3')).toBe(false);
  });
});

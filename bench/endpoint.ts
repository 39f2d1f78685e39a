/**
 * The runner against an API endpoint at scale (a script, not a test):
 *
 *   npx tsx bench/endpoint.ts [--questions 60] [--latency 0.25] [--concurrency 1,8,32,64]
 *                             [--cpu-prof DIR]
 *   npm run bench -- endpoint
 *
 * A loopback OpenAI-compatible server of ours answers every request after a fixed latency:
 * ToC's RAC calls with two fresh DQ/DA pairs, its verification judgments with graded
 * `top_logprobs` (P(True) spread over 0.15–0.95 by a hash of the prompt, so the tree is pruned
 * unevenly, as with a real judge), and its final answers with a long answer. ToC runs at the
 * paper's settings (maxNodes 10, maxDepth 3, maxTrials 3, 5 passages, 5 shots; BM25 over the
 * pooled passages of shared/data; fixed demos, and no reranker unless `--rerank`, so that the
 * MiniLM embedder does not compete for the cores: the paper's reranking of 100 passages per
 * node is the method's own compute, not the runner's)
 * through the CLI, as a user runs it (`ambiqa run … --no-tracking`), once per concurrency, with
 * `concurrency` and `llm.maxConcurrency` both set to it and a fresh LLM cache each time.
 *
 * For each run it prints the wall time against the latency-bound ideal — the larger of
 * requests × latency ÷ concurrency and the longest question's chain of calls × latency (a
 * question's calls are sequential; the samples of one call are not) — plus the run's fixed
 * start-up (process start to first request) and wind-down (last reply to exit), and the CLI
 * process's CPU seconds per request (user + system, start-up included).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { availableParallelism, cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadAverage } from './machine';

const { values } = parseArgs({
  options: {
    questions: { type: 'string', default: '60' },
    latency: { type: 'string', default: '0.25' },
    concurrency: { type: 'string', default: '1,8,32,64' },
    'cpu-prof': { type: 'string' },
    rerank: { type: 'boolean', default: false },
  },
});
const questions = Number(values.questions);
const latencyMs = Number(values.latency) * 1000;
const levels = values.concurrency!.split(',').map(Number);

function hash01(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;
}
function tag(text: string): string {
  return createHash('sha256').update(text).digest('hex').slice(0, 6);
}

interface Body {
  messages?: Array<{ role: string; content: string }>;
  max_tokens?: number;
  logprobs?: boolean;
  top_logprobs?: number;
  seed?: number;
}

/** What the server saw: request arrival and reply times (ms since epoch). */
const seen: { first: number; last: number; requests: number } = { first: 0, last: 0, requests: 0 };

function reply(body: Body): { text: string; top?: Array<{ token: string; logprob: number }> } {
  const messages = body.messages ?? [];
  const last = messages[messages.length - 1]?.content ?? '';
  const all = messages.map((m) => m.content).join('\n');
  if (body.logprobs && body.top_logprobs && body.max_tokens === 1) {
    const p = 0.15 + 0.8 * hash01(all);
    return {
      text: p >= 0.5 ? 'True' : 'False',
      top: [
        { token: 'True', logprob: Math.log(p * 0.96) },
        { token: 'False', logprob: Math.log((1 - p) * 0.96) },
        { token: ' The', logprob: Math.log(0.04) },
      ],
    };
  }
  if (messages[messages.length - 1]?.role === 'assistant' && last.endsWith('Answer:')) {
    return { text: ` The question has several readings; each is answered above (${tag(all)}).` };
  }
  // A RAC call: two interpretations of the node's question, different per prompt and sample.
  const question = [...last.matchAll(/Question: (.*)/g)].pop()?.[1] ?? 'the question';
  const seed = String(body.seed ?? 0);
  const pairs = [1, 2].map((i) => {
    const h = tag(`${all}|${seed}|${i}`);
    return `DQ ${i}: Which reading ${h} of "${question.slice(0, 60).replace(/[?"]/g, '')}" is meant?\nDA ${i}: value ${tag(h)}`;
  });
  return { text: pairs.join('\n') };
}

const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
  if (req.method === 'GET' && req.url?.endsWith('/models')) {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ object: 'list', data: [{ id: 'bench', object: 'model' }] }));
    return;
  }
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Body;
  const now = Date.now();
  if (seen.requests === 0) seen.first = now;
  seen.requests += 1;
  await new Promise((r) => setTimeout(r, latencyMs));
  const { text, top } = reply(body);
  const promptChars = (body.messages ?? []).reduce((a, m) => a + m.content.length, 0);
  const payload = {
    id: `bench-${seen.requests}`,
    object: 'chat.completion',
    created: Math.floor(now / 1000),
    model: 'bench',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: text },
        finish_reason: 'stop',
        ...(top ? { logprobs: { content: [{ token: top[0]!.token, logprob: top[0]!.logprob, top_logprobs: top }] } } : {}),
      },
    ],
    usage: { prompt_tokens: Math.ceil(promptChars / 4), completion_tokens: Math.ceil(text.length / 4), total_tokens: 0 },
  };
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify(payload));
  seen.last = Date.now();
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
const baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`;

const work = mkdtempSync(join(tmpdir(), 'ambiqa-bench-endpoint-'));

function config(concurrency: number): string {
  return `description: bench endpoint — ToC at paper settings against a loopback server
dataset:
  name: asqa
  sample: ${questions}
  seed: 0
  demoSelection: fixed
pipeline:
  name: toc
  options: { maxNodes: 10, maxDepth: 3, maxTrials: 3, pruning: true, nPassages: 5, nShots: 5, expansionTemperature: 0.7, answerTemperature: 0, reranker: ${values.rerank ? 'context' : 'none'} }
llm:
  provider: openai-compatible
  baseUrl: ${baseUrl}
  model: bench
  maxConcurrency: ${concurrency}
  pricing: { prompt: 0.15, completion: 0.6 }
  cache: ${join(work, `cache-${concurrency}.sqlite`)}
retriever: bm25
metrics: [str_em]
tracking: { enabled: false }
concurrency: ${concurrency}
`;
}

interface Row {
  concurrency: number;
  wall: number;
  startup: number;
  winddown: number;
  requests: number;
  calls: number;
  longestChain: number;
  ideal: number;
  cpu: number;
}

async function runOnce(concurrency: number, limit?: number): Promise<Row> {
  const file = join(work, `toc-${concurrency}-${limit ?? 'all'}.yaml`);
  writeFileSync(file, config(concurrency));
  const name = `bench-endpoint-c${concurrency}-${limit ?? 'all'}-${process.pid}`;
  const artifacts = join(work, 'artifacts');
  seen.first = 0;
  seen.last = 0;
  seen.requests = 0;
  const prof = values['cpu-prof'] ? `--cpu-prof --cpu-prof-dir=${values['cpu-prof']} ` : '';
  // `times` reports the CPU of the shell's children: the CLI process (and anything it started).
  const script = `node ${prof}bin/ambiqa.mjs run ${file} --name ${name}${limit ? ` --limit ${limit}` : ''} --no-tracking --quiet >/dev/null; code=$?; times; exit $code`;
  const started = Date.now();
  const child = spawn('bash', ['-c', script], { env: { ...process.env, AMBIQA_ARTIFACTS_DIR: artifacts }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((r) => child.on('close', r));
  const ended = Date.now();
  if (code !== 0) throw new Error(`ambiqa run exited ${code}`);
  const [, children] = out.trim().split('\n');
  const seconds = (children ?? '').split(/\s+/).map((t) => {
    const m = /(\d+)m([\d.]+)s/.exec(t);
    return m ? Number(m[1]) * 60 + Number(m[2]) : 0;
  });
  const traces = readFileSync(join(artifacts, 'runs', name, 'traces.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { llmCalls: unknown[] });
  const calls = traces.reduce((a, t) => a + t.llmCalls.length, 0);
  const longestChain = Math.max(...traces.map((t) => t.llmCalls.length));
  const L = latencyMs / 1000;
  return {
    concurrency,
    wall: (ended - started) / 1000,
    startup: (seen.first - started) / 1000,
    winddown: (ended - seen.last) / 1000,
    requests: seen.requests,
    calls,
    longestChain,
    ideal: Math.max((seen.requests * L) / concurrency, longestChain * L),
    cpu: (seconds[0] ?? 0) + (seconds[1] ?? 0),
  };
}

console.log(
  `bench endpoint: ToC (paper settings, BM25, fixed demos, ${values.rerank ? 'MiniLM reranking' : 'no reranker'}) on ${questions} ASQA dev questions against a loopback server with ${latencyMs / 1000} s latency\n` +
    `machine: ${cpus()[0]?.model ?? '?'} × ${availableParallelism()}, load ${loadAverage()} (1/5/15 min) at start`,
);
const rows: Row[] = [];
let fixed: Row | undefined;
try {
  // One question at concurrency 1: the CPU every run pays whatever its size (process start,
  // module loading, the dataset, the BM25 index over the pooled corpus).
  fixed = await runOnce(1, 1);
  console.log(`  one question: ${fixed.wall.toFixed(1)} s wall, ${fixed.cpu.toFixed(1)} CPU s (${fixed.requests} requests)`);
  for (const c of levels) {
    const row = await runOnce(c);
    rows.push(row);
    console.log(`  concurrency ${c}: ${row.wall.toFixed(1)} s wall (${row.requests} requests)`);
  }
} finally {
  server.close();
  rmSync(work, { recursive: true, force: true });
}
console.log(
  '\n| concurrency | requests | calls | longest chain | wall s | ideal s | start-up s | wind-down s | wall − start-up − wind-down | ÷ ideal | CPU s | CPU ms / request |\n|---|---|---|---|---|---|---|---|---|---|---|---|',
);
for (const r of rows) {
  const middle = r.wall - r.startup - r.winddown;
  console.log(
    `| ${r.concurrency} | ${r.requests} | ${r.calls} | ${r.longestChain} | ${r.wall.toFixed(1)} | ${r.ideal.toFixed(1)} | ${r.startup.toFixed(1)} | ${r.winddown.toFixed(1)} | ${middle.toFixed(1)} | ${(middle / r.ideal).toFixed(2)} | ${r.cpu.toFixed(1)} | ${((1000 * r.cpu) / r.requests).toFixed(1)} |`,
  );
}
if (fixed) {
  console.log(
    `\nrunner CPU per request after start-up: (CPU − ${fixed.cpu.toFixed(1)} s of the one-question run) ÷ (requests − ${fixed.requests}): ` +
      rows.map((r) => `c=${r.concurrency} ${((1000 * (r.cpu - fixed!.cpu)) / (r.requests - fixed!.requests)).toFixed(1)} ms`).join(', '),
  );
}
console.log(`load at end: ${loadAverage()}`);

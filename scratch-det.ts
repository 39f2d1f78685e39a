import type { Token } from 'node-llama-cpp';
import { LlmClient } from './src/llm/client';
import { LlamaCppProvider, evaluateCanonically, embeddedModelFromManifest, loadEmbeddedEngine, unloadEmbeddedModels, toChatHistory } from './src/llm/providers/llama-cpp';

const sys = 'You verify whether a passage supports an answer to a question. ' + 'Read the passage with care, and think about names, dates and places that it mentions. '.repeat(4);
const passage = (n: number) => Array.from({ length: n }, (_, i) => `Sentence ${i}: the river Danube passes the city number ${i * 7} on its long way to the Black Sea.`).join(' ');
const judgeReq = (q: string, n: number) => ({
  messages: [
    { role: 'system' as const, content: sys },
    { role: 'user' as const, content: `Passage: ${passage(n)}\nQuestion: ${q}\nDoes the passage support the answer "Vienna"? Answer True or False.` },
  ],
  labels: ['True', 'False'],
});
const hex = (x: number) => Buffer.from(new Float64Array([x]).buffer).toString('hex');
const threads = Number(process.env.T ?? 1);

async function lowLevel(out: Record<string, string>) {
  const { lib, model } = await loadEmbeddedEngine(embeddedModelFromManifest().path);
  const ctx = await model.createContext({ contextSize: 2048, threads, sequences: 1, flashAttention: true });
  const seq = ctx.getSequence();
  const chatWrapper = new lib.JinjaTemplateChatWrapper({ template: (model.fileInfo.metadata as any).tokenizer.chat_template, tokenizer: model.tokenizer });
  const req = judgeReq('Which city on the Danube is the capital of Austria?', 20);
  const tokens: Token[] = chatWrapper.generateContextState({ chatHistory: toChatHistory(req.messages) }).contextText.tokenize(model.tokenizer);
  const trueTok = model.tokenize('True', false)[0]!;
  const run = async (splits: number[]) => {
    await seq.clearHistory();
    let from = 0;
    let dist: Map<Token, number> | undefined;
    for (const to of [...splits, tokens.length]) {
      const piece = tokens.slice(from, to);
      const o = await seq.controlledEvaluate(piece.map((t, i) => (to === tokens.length && i === piece.length - 1 ? [t, { generateNext: { probabilities: true } }] : t)) as any);
      if (to === tokens.length) dist = o[piece.length - 1]!.next.probabilities;
      from = to;
    }
    return dist!.get(trueTok)!;
  };
  out['low n tokens'] = String(tokens.length);
  out['low one batch'] = hex(await run([]));
  out['low one batch again'] = hex(await run([]));
  out['low split 100'] = hex(await run([100]));
  out['low split 64,128,..'] = hex(await run(Array.from({ length: Math.floor((tokens.length - 1) / 64) }, (_, i) => 64 * (i + 1))));
  out['low last alone'] = hex(await run([tokens.length - 1]));
  out['low p one batch'] = String(await run([]));
  out['low p last alone'] = String(await run([tokens.length - 1]));
  // Speed of chunk sizes on a ~1,500-token prompt (fresh slot each time), alternating.
  const long: Token[] = chatWrapper.generateContextState({ chatHistory: toChatHistory(judgeReq('Which city?', 70).messages) }).contextText.tokenize(model.tokenizer).slice(0, 1500);
  out['speed tokens'] = String(long.length);
  for (const round of [1]) {
    for (const chunk of [64, 512]) {
      await seq.clearHistory();
      const t = performance.now();
      await evaluateCanonically({ sequence: seq, lastUsed: 0, canonical: 0 } as never, long, { logitsAtEnd: true, chunk });
      out[`speed chunk ${chunk} round ${round} s`] = ((performance.now() - t) / 1000).toFixed(2);
    }
  }
  await ctx.dispose();
}

async function provider(out: Record<string, string>) {
  for (const n of [3, 30]) {
    const req = judgeReq('Which city on the Danube is the capital of Austria?', n);
    const off = new LlamaCppProvider({ threads, prefixReuse: false, pool: 'off' + n });
    const pOff = (await new LlmClient(off).judge(req)).p;
    out[`n${n} reuse-off fresh`] = hex(pOff);
    const on = new LlamaCppProvider({ threads, pool: 'on' + n });
    const c = new LlmClient(on);
    out[`n${n} reuse-on fresh`] = hex((await c.judge(req)).p);
    on.resetStats();
    out[`n${n} reuse-on again`] = hex((await c.judge(req)).p) + ` (evaluated ${on.stats.promptTokensEvaluated}/${on.stats.promptTokens})`;
    const on2 = new LlamaCppProvider({ threads, pool: 'on2' + n });
    const c2 = new LlmClient(on2);
    await c2.generate({ messages: [req.messages[0]!, { role: 'user', content: `Passage: ${passage(n)}\nQuestion: Who?` }], maxTokens: 3 });
    on2.resetStats();
    out[`n${n} reuse-on after shared prefix`] = hex((await c2.judge(req)).p) + ` (evaluated ${on2.stats.promptTokensEvaluated}/${on2.stats.promptTokens})`;
    out[`n${n} p`] = String(pOff);
  }
}

async function main() {
  const out: Record<string, string> = {};
  const t0 = Date.now();
  await lowLevel(out);
  out.seconds = String((Date.now() - t0) / 1000);
  console.log(JSON.stringify(out, null, 1));
  await unloadEmbeddedModels();
}
main();

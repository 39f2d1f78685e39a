import { createComposer } from '../src/experiments/compose';
import { loadExperimentConfig } from '../src/experiments/config';
import { LlmClient } from '../src/llm/client';
import { LlamaCppProvider, unloadEmbeddedModels } from '../src/llm/providers/llama-cpp';
const composer = createComposer({ notify: () => undefined });
const config = loadExperimentConfig('experiments/toc-asqa.yaml', composer.registry, { limit: 4, overrides: [
  { path: ['retriever'], value: { type: 'bm25' }, text: 'bm25' }, { path: ['reranker'], value: undefined, text: 'none' },
  { path: ['metrics'], value: ['str_em'], text: 'm' }, { path: ['llm'], value: { provider: 'embedded', cache: { mode: 'off' } }, text: 'off' },
  { path: ['pipeline', 'options', 'judgeCalibration'], value: 'content-free', text: 'cf' }] });
const c = await composer.components(config);
const p = new LlamaCppProvider({ threads: 2 });
await p.load();
const wrap = (name: 'doGenerate' | 'doGenerateBatch' | 'doJudge') => {
  const orig = (p as any)[name].bind(p);
  (p as any)[name] = async (req: any, ...rest: any[]) => {
    const before = { ...p.stats }; const t0 = performance.now();
    const out = await orig(req, ...rest);
    const last = req.messages[req.messages.length - 1];
    const sys = req.messages[0];
    console.log(`${name.padEnd(15)} msgs=${req.messages.length} n=${Array.isArray(rest[0]) ? rest[0].length : 1} prompt=${p.stats.promptTokens - before.promptTokens} evaluated=${p.stats.promptTokensEvaluated - before.promptTokensEvaluated} gen=${p.stats.completionTokens - before.completionTokens} ${((performance.now() - t0) / 1000).toFixed(1)}s | ${JSON.stringify(sys.content.slice(0, 50))} … ${JSON.stringify(last.content.slice(0, 40))}`);
    return out;
  };
};
wrap('doGenerate'); wrap('doGenerateBatch'); wrap('doJudge');
for (const ex of c.examples.slice(0, 4)) {
  const t0 = performance.now();
  const out = await c.pipeline.answer(ex, { ...c.context, llm: new LlmClient(p, { cache: null }) });
  console.log(`== ${ex.id}: ${((performance.now() - t0) / 1000).toFixed(1)} s, calls ${out.trace.summary.llmCalls}\n`);
}
await composer.close(); await unloadEmbeddedModels(); process.exit(0);

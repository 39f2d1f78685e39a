/**
 * The preflight: every endpoint a run will use is checked once, before the first model call, so
 * that a model the server does not serve, a refused key or a judge without log-probabilities is
 * found in a second and one line each — not after the generator has worked through questions
 * (money on an API) and every question failed on its first judgment.
 *
 * What is checked, per endpoint (the run's `llm:`, its `judge:`, the D-F1 reader, the MiniLM
 * embedder):
 *   - an OpenAI-compatible server: that it answers `GET /models` (reachable), that it accepts the
 *     key there (HTTP 401/403 is a refused key), and that the model is listed where the server
 *     lists models (a server without `/models` is not asked more);
 *   - the endpoint that judges, for pipelines whose registry entry has yes/no judges (ToC, Diva,
 *     COMBO) with `judgeMode: probability`: one judgment with the pipeline's own labels through
 *     the run's own LLM client (cache neither read nor written), which must come back with
 *     log-probabilities; with `judgeMode: text` the counted text fallback is stated instead;
 *   - embedded models: their files (the config check has already refused a missing GGUF), and
 *     the embedder's folder when the run embeds.
 * A problem is one line naming the config field and the fix. Nothing here writes the run
 * directory. `--skip-preflight` skips it all, for servers that cannot answer such checks; a
 * mid-run outage is still retried by the limiter and resumed by `--resume`, as before.
 */
import { AmbiqaError } from '../errors';
import type { LlmClient } from '../llm/client';
import { safeUrl } from '../llm/errors';
import { describeModelList, OpenAICompatibleProvider, type ModelListing } from '../llm/providers/openai-compatible';
import { pipelineEntry } from '../pipelines/registry';
import { MiniLmEmbedder } from '../retrieval/embedder';
import { preflightRetriever } from '../retrieval/remote/inspect';
import type { Retriever } from '../retrieval/types';
import type { ExperimentConfig } from './config';
import { parseReaderSpec } from './reader';

/**
 * The labels of a pipeline's yes/no judges (its registry entry's `method.analysis.judges`: ToC's
 * True/False, Diva's and COMBO's Yes/No), positive first; empty for a pipeline that judges
 * nothing, whose runs need no log-probabilities. A pipeline registered from a notebook with
 * judges is probed like a built-in one.
 */
export function judgeLabels(pipeline: string): Array<readonly [string, string]> {
  return (pipelineEntry(pipeline)?.method?.analysis?.judges ?? []).flatMap((j) => (j.labels ? [j.labels] : []));
}

/** In every probe's prompt (tests find the probe's requests by it). */
export const PROBE_MARK = 'is Paris the capital of France?';

/** The question the log-probability probe asks, answered in one token by any instruct model. */
export function probePrompt(labels: readonly [string, string]): string {
  return `Answer with one word, ${labels[0]} or ${labels[1]}: ${PROBE_MARK}`;
}

export interface PreflightDeps {
  /** The run's client for a section (the composer's: one per distinct section, shared with the run). */
  client(section: 'llm' | 'judge'): Promise<LlmClient>;
  /** Whether the run embeds (kNN demos, dense retrieval, an embedding reranker). */
  embeds: boolean;
  /** The run's retriever when it lives outside the process (a server): checked before any model call. */
  retriever?: () => Promise<Retriever>;
  env?: NodeJS.ProcessEnv;
}

export interface PreflightReport {
  /** One line each: `<field>: <what is wrong>; fix: <what to do>`. */
  problems: string[];
  /** What was found and is fine but worth saying (a text fallback chosen by config). */
  notes: string[];
}

type Section = 'llm' | 'judge';

export async function runPreflight(config: ExperimentConfig, deps: PreflightDeps): Promise<PreflightReport> {
  const problems: string[] = [];
  const notes: string[] = [];
  const env = deps.env ?? process.env;
  const labels = judgeLabels(config.pipeline.name)[0];
  const judgeSection: Section = config.judge ? 'judge' : 'llm';
  // An endpoint serving both sections is asked once; its problems are named by the first.
  const checked = new Map<string, boolean>();

  const sections: Section[] = config.judge ? ['llm', 'judge'] : ['llm'];
  for (const section of sections) {
    const given = config[section]!;
    if (given.provider !== 'openai-compatible') continue;
    let client: LlmClient;
    try {
      client = await deps.client(section);
    } catch (error) {
      // e.g. no key for api.openai.com: refused when the client is made, named like the rest.
      problems.push(`${section}: ${oneLine(error)}`);
      continue;
    }
    const provider = client.backend;
    if (!(provider instanceof OpenAICompatibleProvider)) continue;
    const key = `${provider.endpoint}|${provider.model}|${provider.apiKeyEnv}`;
    let ok = checked.get(key);
    if (ok === undefined) {
      const before = problems.length;
      problems.push(...endpointProblems(section, provider, await provider.listModels(), `${section}.baseUrl`));
      ok = problems.length === before;
      checked.set(key, ok);
    }
    // The probe is a model call: only to an endpoint that passed, and only the one that judges.
    if (!ok || section !== judgeSection || !labels) continue;
    if (given.judgeMode === 'text') {
      notes.push(`${section}.judgeMode is text: judgments parse short text replies (P is 0 or 1), counted per run as judge_mode=text`);
      continue;
    }
    try {
      const probe = await client.judge({ prompt: probePrompt(labels), labels: [...labels], purpose: 'preflight.logprobs' }, { cache: false });
      if (probe.mode === 'probability') {
        // Log-probabilities came: the judge can be graded.
      } else if (probe.fallback === 'no-label') {
        notes.push(`${section}: the server at ${provider.endpoint} returns log-probabilities, but none of the probe's top tokens was ${labels[0]} or ${labels[1]}; judgments whose labels it does not put among its top tokens are parsed from text (counted per run as judge_mode)`);
      } else {
        problems.push(
          `${section}.judgeMode: the server at ${provider.endpoint} returned no usable log-probabilities for a yes/no judgment, so every judgment would be parsed from a text reply (P is 0 or 1, and thresholds have nothing to cut); fix: serve the model where logprobs/top_logprobs work (llama.cpp's server, vLLM), or set ${section}.judgeMode=text to accept that fallback`,
        );
      }
    } catch (error) {
      problems.push(`${section}: a yes/no judgment sent to check log-probabilities failed: ${oneLine(error)}; fix: make the endpoint answer chat requests for model "${provider.model}" (or --skip-preflight)`);
    }
  }

  // The D-F1 reader `openai:<model>` reads OPENAI_BASE_URL and OPENAI_API_KEY.
  if (config.reader && config.metrics.some((m) => m === 'd_f1' || m === 'dr')) {
    const spec = parseReaderSpec(config.reader);
    if (spec.kind === 'openai') {
      try {
        const provider = new OpenAICompatibleProvider({ model: spec.model }, env);
        problems.push(...endpointProblems('reader', provider, await provider.listModels(), 'OPENAI_BASE_URL'));
      } catch (error) {
        problems.push(`reader: ${oneLine(error)}`);
      }
    }
  }

  // A retrieval server: reachable and answering in its API's shape (one query, no retries),
  // before any model call: a run against a server that is down would fail every question.
  if (deps.retriever) {
    try {
      await preflightRetriever(await deps.retriever());
    } catch (error) {
      const hint = error instanceof AmbiqaError && error.hint ? `; fix: ${error.hint}` : '';
      const message = (error instanceof Error ? error.message : String(error)).replace(/\s*\n\s*/g, ' — ');
      problems.push(`${message}${hint} (--skip-preflight runs without this check)`);
    }
  }

  if (deps.embeds) {
    try {
      void new MiniLmEmbedder(); // checks the model folder; loads nothing
    } catch (error) {
      problems.push(`embedder: ${oneLine(error)}`);
    }
  }
  return { problems, notes };
}

/** What is wrong with one OpenAI-compatible endpoint, given its `/models` answer. */
function endpointProblems(field: 'llm' | 'judge' | 'reader', provider: OpenAICompatibleProvider, listing: ModelListing, urlSetting: string): string[] {
  const url = safeUrl(provider.baseUrl);
  const keyField = field === 'reader' ? 'OPENAI_API_KEY' : `${field}.apiKeyEnv`;
  const modelField = field === 'reader' ? 'reader' : `${field}.model`;
  switch (listing.kind) {
    case 'unreachable':
      return [
        `${field === 'reader' ? 'reader' : `${field}.baseUrl`}: cannot reach the server at ${url} (${listing.reason}); fix: start it, or set ${urlSetting} to where it listens (--skip-preflight runs without this check)`,
      ];
    case 'auth':
      return [
        provider.hasApiKey
          ? `${keyField}: the server at ${url} refused the API key in ${provider.apiKeyEnv} (HTTP ${listing.status}${listing.detail ? `: ${listing.detail}` : ''}); fix: export ${provider.apiKeyEnv}=<a key it accepts>`
          : `${keyField}: the server at ${url} wants an API key (HTTP ${listing.status}) and ${provider.apiKeyEnv} is not set; fix: export ${provider.apiKeyEnv}=<your key>${field === 'reader' ? '' : ` (or name another variable in ${field}.apiKeyEnv)`}`,
      ];
    case 'listed': {
      if (provider.servesModel(listing)) return [];
      const only = listing.ids.length === 1 ? listing.ids[0] : undefined;
      const fix = field === 'reader' ? `set reader to openai:${only ?? '<one of them>'}` : `set ${modelField} to ${only ? `"${only}"` : 'one of them'}`;
      return [`${modelField}: the server at ${url} does not serve model "${provider.model}" (its /models lists ${describeModelList(listing.ids)}); fix: ${fix}`];
    }
    case 'unlisted':
      return [];
  }
}

function oneLine(error: unknown): string {
  const text = error instanceof AmbiqaError ? `${error.message}${error.hint ? ` (${error.hint})` : ''}` : error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' — ');
}

/** The preflight's refusal: every problem on a line of its own. */
export function preflightError(report: PreflightReport): AmbiqaError {
  const head = report.problems.length === 1 ? '' : `preflight: ${report.problems.length} problems, no model was called and nothing was written:\n  `;
  return new AmbiqaError(`${head}${report.problems.join('\n  ')}`);
}

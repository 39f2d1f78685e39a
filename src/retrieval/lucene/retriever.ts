/**
 * BM25 on Lucene: `retriever: {type: bm25, engine: lucene, index: <dir>}` (a searcher over a
 * local index, shared per machine, see searcher.ts) or `{..., url: <Anserini REST base>,
 * indexName?}` (a server someone runs: Anserini's or Pyserini's REST API,
 * `GET /v1/{index}/search?query=&hits=`). Hits carry their stored passage, so the run holds only
 * the passages it asked for.
 */
import { RetryPolicy } from '../../common/retry';
import { AmbiqaError } from '../../errors';
import { describeUrl, fetchJson } from '../remote/http';
import type { Passage, Retriever, ScoredPassage } from '../types';
import { validateK } from '../validate';
import { inspectIndex, readAnnotations, type IndexInfo } from './index-dir';
import { announcedSearcher, startSearcher, type SearcherHandle } from './searcher';

export interface LuceneOptions {
  /** A local index folder (ours or a Pyserini prebuilt one). */
  index?: string;
  /** An Anserini/Pyserini REST server's base URL. */
  url?: string;
  /** The index's name on that server (default `corpus`, the alias our searcher uses). */
  indexName?: string;
  /** Per request (default 30 s). */
  timeoutMs?: number;
  /** Messages from the searcher start-up. */
  log?: (line: string) => void;
}

interface Candidate {
  docid: string;
  score: number;
  doc?: unknown;
}

/**
 * A stored document as a passage. Ours: `{contents, title, section?, source?}` with contents =
 * formatPassage(passage). Pyserini's DPR index: `{contents: "\"Title\"\ntext"}` (no title field).
 * Anything else: the contents as text.
 */
export function passageFromDoc(id: string, doc: unknown): Passage {
  const fields: Record<string, unknown> = typeof doc === 'string' ? { contents: doc } : typeof doc === 'object' && doc !== null ? (doc as Record<string, unknown>) : {};
  const contents = typeof fields.contents === 'string' ? fields.contents : typeof fields.text === 'string' ? fields.text : '';
  const section = typeof fields.section === 'string' && fields.section ? fields.section : undefined;
  if (typeof fields.title === 'string') {
    const title = fields.title;
    const prefix = section ? `${title} | ${section}; ` : `${title}; `;
    const text = contents.startsWith(prefix) ? contents.slice(prefix.length) : contents;
    const p: Passage = { id, title, text };
    if (section) p.section = section;
    if (typeof fields.source === 'string' && fields.source) p.source = fields.source;
    return p;
  }
  const newline = contents.indexOf('\n');
  if (newline > 0 && newline < 300) {
    const first = contents.slice(0, newline).trim();
    const title = first.length >= 2 && first.startsWith('"') && first.endsWith('"') ? first.slice(1, -1) : first;
    return { id, title, text: contents.slice(newline + 1) };
  }
  return { id, title: '', text: contents };
}

export class LuceneRetriever implements Retriever {
  readonly name = 'bm25:lucene';
  private searcher?: Promise<SearcherHandle>;
  private info?: IndexInfo;
  private readonly policy = new RetryPolicy({ maxRetries: 2, baseDelayMs: 200, maxDelayMs: 2_000 });
  /** Passages this run was given, by id (bounded): judge labelling reads texts from here. */
  private readonly seen = new Map<string, Passage>();

  constructor(private readonly options: LuceneOptions) {
    if (!options.index === !options.url) {
      throw new AmbiqaError('retriever: engine lucene needs exactly one of `index` (a Lucene index folder) or `url` (an Anserini REST server)');
    }
    // Cheap (a directory listing and one small file): a missing, truncated, foreign or
    // other-version index is refused when the config is built, before any searcher or model.
    this.indexInfo();
  }

  /** Checked cheaply, before any searcher starts: the index folder is a Lucene index we read. */
  private indexInfo(): IndexInfo | undefined {
    if (!this.options.index) return undefined;
    return (this.info ??= inspectIndex(this.options.index));
  }

  private endpoint(): Promise<{ url: string; indexName: string }> {
    if (this.options.url) return Promise.resolve({ url: this.options.url.replace(/\/+$/, ''), indexName: this.options.indexName ?? 'corpus' });
    this.indexInfo();
    this.searcher ??= (async () => {
      const dir = this.options.index!;
      const shared = announcedSearcher(dir);
      if (shared) {
        this.options.log?.(`lucene: using the searcher ambiqa serve-index runs at ${shared.url}`);
        return { ...shared, stop: async () => undefined };
      }
      this.options.log?.(`lucene: starting a searcher over ${dir}`);
      return startSearcher(dir);
    })();
    this.searcher.catch(() => (this.searcher = undefined));
    return this.searcher;
  }

  private field(): string {
    return this.options.url ? 'retriever.url' : 'retriever.index';
  }

  async search(query: string, k: number): Promise<ScoredPassage[]> {
    validateK(k);
    // Anserini refuses an empty query (HTTP 400); no words, no hits, as in the in-memory BM25.
    if (query.trim() === '') return [];
    const { url, indexName } = await this.endpoint();
    const body = await fetchJson(`${url}/v1/${encodeURIComponent(indexName)}/search?query=${encodeURIComponent(query)}&hits=${k}`, {
      policy: this.policy,
      field: this.field(),
      ...(this.options.timeoutMs ? { timeoutMs: this.options.timeoutMs } : {}),
    });
    const candidates = this.candidates(body, url);
    return candidates.slice(0, k).map((c, rank) => {
      this.requireDocument(c.doc, url);
      const passage = passageFromDoc(String(c.docid), c.doc);
      this.remember(passage);
      return { passage, score: c.score, rank };
    });
  }

  private candidates(body: unknown, url: string): Candidate[] {
    const list = (body as { candidates?: unknown } | null)?.candidates;
    if (!Array.isArray(list) || list.some((c) => typeof c !== 'object' || c === null || (typeof c.docid !== 'string' && typeof c.docid !== 'number') || typeof c.score !== 'number')) {
      throw new AmbiqaError(
        `${this.field()} ${describeUrl(url)}: the answer is not Anserini's search shape ({"candidates": [{"docid", "score", "doc"}]})`,
        'point it at an Anserini/Pyserini REST server (`/v1/{index}/search`)',
      );
    }
    return list as Candidate[];
  }

  /**
   * Anserini's searcher sends `doc: null` when the index stores no `raw` document. A local index
   * is checked for that before it opens (inspectIndex), but compound segments and servers are
   * only seen here: a hit without its text would reach the model as an empty passage.
   */
  private requireDocument(doc: unknown, url: string): void {
    if (doc !== null && doc !== undefined) return;
    const where = this.options.index ?? describeUrl(url);
    throw new AmbiqaError(
      `${this.field()} ${where}: a hit came back without its document (the index stores no \`raw\` field), so passages would be empty`,
      'rebuild the index with `npx ambiqa index`, or with Pyserini/Anserini\'s `--storeRaw`',
    );
  }

  private remember(p: Passage): void {
    if (this.seen.size >= 200_000) this.seen.delete(this.seen.keys().next().value as string);
    this.seen.set(p.id, p);
  }

  /** A passage this retriever returned earlier in the run (judge labels), else undefined. */
  returned(id: string): Passage | undefined {
    return this.seen.get(id);
  }

  /**
   * One passage by its id, from the index's stored fields (`GET /v1/{index}/doc/{id}`): the
   * corpus on disk, served by id without loading it. Undefined when the index has no such id.
   */
  async passage(id: string): Promise<Passage | undefined> {
    const { url, indexName } = await this.endpoint();
    const target = `${url}/v1/${encodeURIComponent(indexName)}/doc/${encodeURIComponent(id)}`;
    const response = await fetch(target, { signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000) });
    if (response.status === 404) {
      await response.body?.cancel();
      return undefined;
    }
    if (!response.ok) throw new AmbiqaError(`${this.field()} ${describeUrl(target)}: HTTP ${response.status}`);
    const body = (await response.json()) as { docid?: unknown; doc?: unknown };
    this.requireDocument(body.doc, url);
    const passage = passageFromDoc(String(body.docid ?? id), body.doc);
    this.remember(passage);
    return passage;
  }

  /** Question key → its annotated passage ids, from the index's sidecar (empty for a server or a prebuilt index). */
  annotations(): Map<string, Set<string>> {
    return this.options.index ? readAnnotations(this.options.index) : new Map();
  }

  async preflight(): Promise<void> {
    const { url, indexName } = await this.endpoint();
    const target = `${url}/v1/${encodeURIComponent(indexName)}/search?query=the&hits=1`;
    let response: Response;
    try {
      response = await fetch(target, { signal: AbortSignal.timeout(this.options.timeoutMs ?? 30_000) });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message;
      throw new AmbiqaError(`${this.field()} ${describeUrl(target)}: no answer (${cause})`, this.options.url ? 'start the server, or fix the URL' : undefined);
    }
    const text = await response.text();
    if (!response.ok) {
      throw new AmbiqaError(`${this.field()} ${describeUrl(target)}: HTTP ${response.status}${text ? ` (${text.slice(0, 160)})` : ''}`, this.options.url ? `is '${indexName}' an index that server serves? (retriever.indexName)` : undefined);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new AmbiqaError(`${this.field()} ${describeUrl(target)}: the answer is not JSON (starts ${JSON.stringify(text.slice(0, 60))})`);
    }
    this.candidates(body, url);
  }

  /**
   * What the run logs to MLflow about this engine. Keys without the `retriever.` prefix:
   * `retrieverParams` adds it (or `retriever.<i>.` inside a hybrid), as for the other engines.
   */
  describe(): Record<string, string> {
    const out: Record<string, string> = { engine: 'lucene' };
    if (this.options.url) {
      out.url = describeUrl(this.options.url);
      out.indexName = this.options.indexName ?? 'corpus';
      return out;
    }
    const info = this.indexInfo()!;
    out.index = info.dir;
    out['index.commit'] = info.segmentsFile;
    out['index.sha256'] = info.checksum;
    out['index.lucene'] = info.luceneVersion;
    if (info.meta) out['index.passages'] = String(info.meta.passages);
    return out;
  }

  async close(): Promise<void> {
    const searcher = this.searcher;
    this.searcher = undefined;
    if (searcher) await (await searcher.catch(() => undefined))?.stop();
  }
}

/**
 * Where persisted indexes live: `<cacheDir>/retrieval/<kind>-<key>/`, where the key hashes the
 * corpus content hash together with every setting that changes the index. A changed corpus or
 * setting gives a new folder (the index is rebuilt); an unchanged one finds its files again.
 */
import { join } from 'node:path';
import { cacheDir } from '../config/paths';
import { sha256 } from './corpus';

export function retrievalCacheDir(base?: string): string {
  return base ?? join(cacheDir(), 'retrieval');
}

export function indexKey(corpusHash: string, settings: unknown): string {
  return sha256(JSON.stringify({ corpus: corpusHash, settings })).slice(0, 20);
}

export function indexDir(kind: string, corpusHash: string, settings: unknown, base?: string): string {
  return join(retrievalCacheDir(base), `${kind}-${indexKey(corpusHash, settings)}`);
}

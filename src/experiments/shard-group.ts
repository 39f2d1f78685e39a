import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { knownSecrets, redactBytes } from '../common/secrets';
import { AmbiqaError } from '../errors';

/**
 * What lets `ambiqa merge --from-mlflow <group>` assemble a launch from MLflow alone, with no
 * shared volume: each shard's MLflow run carries the launch's group and its shard, and says
 * whether its files all reached the server.
 */

/** The launch a shard belongs to (`ambiqa run --shard-group`, set by `ambiqa slurm`). */
export const SHARD_GROUP_TAG = 'ambiqa.shard_group';
/** `i/N`, set on every shard's run. */
export const SHARD_TAG = 'ambiqa.shard';
/**
 * `pending` while a session runs; once every run file of the session is stored, `<file>=<sha256>`
 * for each, space-separated. A session that stops before its last upload leaves `pending`, so a
 * merge can tell a complete upload from a partial one (and a resumed session's fresh files from
 * an earlier session's).
 */
export const UPLOADS_TAG = 'ambiqa.uploads';
export const UPLOADS_PENDING = 'pending';

const groupPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** A group name goes into MLflow filter strings and file names: letters, digits, `.`, `_`, `-`. */
export function checkShardGroup(group: string, option = '--shard-group'): string {
  if (!groupPattern.test(group)) {
    throw new AmbiqaError(`${option} ${JSON.stringify(group)}: a shard group is letters, digits, dot, dash or underscore (at most 200)`, 'e.g. toc-asqa-20261205-141203');
  }
  return group;
}

/**
 * The checksum of a file as the tracking layer uploads it: secrets are masked on the way out, so
 * the bytes hashed are the masked ones, the bytes the server holds.
 */
export function uploadedSha256(path: string): string {
  return createHash('sha256').update(redactBytes(readFileSync(path), knownSecrets()).data).digest('hex');
}

export function sha256(data: Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The `ambiqa.uploads` value for these (already uploaded) files. */
export function uploadManifest(paths: string[]): string {
  return paths.map((p) => `${basename(p)}=${uploadedSha256(p)}`).join(' ');
}

/** File name → sha256, or undefined for `pending`, an absent tag or a value that is not a manifest. */
export function parseUploadManifest(value: string | undefined): Map<string, string> | undefined {
  if (!value || value === UPLOADS_PENDING) return undefined;
  const out = new Map<string, string>();
  for (const entry of value.trim().split(/\s+/)) {
    const m = /^([^=\s]+)=([0-9a-f]{64})$/.exec(entry);
    if (!m) return undefined;
    out.set(m[1]!, m[2]!);
  }
  return out.size > 0 ? out : undefined;
}

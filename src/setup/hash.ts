import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';

/** sha256 of a file, streamed (model files are hundreds of MB). */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path, { highWaterMark: 4 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export function sha256Text(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * A file's hash remembered beside it (`<file>.stamp.json`), valid while its size and mtime are
 * unchanged. A second `ambiqa setup` must finish in well under a second, so it trusts the stamp
 * instead of re-reading hundreds of MB; editing or replacing the file invalidates the stamp.
 */
interface Stamp {
  size: number;
  mtimeMs: number;
  sha256: string;
}

export function stampPath(file: string): string {
  return `${file}.stamp.json`;
}

/** The stamped hash when the stamp still matches the file, else undefined. Never reads the file. */
export function stampedSha256(file: string, stampFile = stampPath(file)): string | undefined {
  const path = stampFile;
  if (!existsSync(file) || !existsSync(path)) return undefined;
  try {
    const stamp = JSON.parse(readFileSync(path, 'utf8')) as Stamp;
    const stat = statSync(file);
    if (stat.size === stamp.size && stat.mtimeMs === stamp.mtimeMs && /^[0-9a-f]{64}$/.test(stamp.sha256)) {
      return stamp.sha256;
    }
  } catch {
    /* a corrupt stamp is the same as no stamp: the file gets hashed again */
  }
  return undefined;
}

export function writeStamp(file: string, sha256: string, stampFile = stampPath(file)): void {
  const stat = statSync(file);
  const stamp: Stamp = { size: stat.size, mtimeMs: stat.mtimeMs, sha256 };
  writeFileSync(stampFile, `${JSON.stringify(stamp)}\n`);
}

/**
 * The file's sha256: from its stamp when still valid (cheap), else computed and stamped.
 * `fresh` tells whether the file was actually read. `stampFile` puts the stamp elsewhere (for a
 * user's own file, which setup must not write beside).
 */
export async function verifiedSha256(file: string, stampFile = stampPath(file)): Promise<{ sha256: string; fresh: boolean }> {
  const stamped = stampedSha256(file, stampFile);
  if (stamped) return { sha256: stamped, fresh: false };
  const sha256 = await sha256File(file);
  writeStamp(file, sha256, stampFile);
  return { sha256, fresh: true };
}

import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, truncateSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { redactText } from './secrets';

/**
 * Durable JSON-lines files. A run appends one line per finished example and fsyncs it, so a
 * SIGKILL loses at most the example in flight. A kill in the middle of a write can leave a torn
 * last line; `readJsonl` drops it and `repairJsonl` cuts the file back to the last whole line
 * before appending again.
 *
 * Every run-directory file goes through `JsonlAppender` or `writeFileAtomic`, and both mask the
 * secrets the process knows (src/common/secrets.ts) on the way to disk: the last net under
 * whatever a pipeline or a model put into a record.
 */
export class JsonlAppender {
  private fd: number | null;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a');
  }

  append(record: unknown): void {
    if (this.fd === null) throw new Error(`${this.path} is closed`);
    writeSync(this.fd, redactText(JSON.stringify(record)) + '\n');
    fsyncSync(this.fd);
  }

  close(): void {
    if (this.fd !== null) {
      closeSync(this.fd);
      this.fd = null;
    }
  }
}

/** Records of a JSONL file; a torn (unparseable) last line is ignored, any other bad line is an error. */
export function readJsonl<T>(path: string): T[] {
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  const lines = text.split('\n');
  const out: T[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.trim() === '') continue;
    try {
      out.push(JSON.parse(line) as T);
    } catch (error) {
      const isLast = lines.slice(i + 1).every((l) => l.trim() === '');
      if (isLast) break;
      throw new Error(`${path}:${i + 1}: not valid JSON (${(error as Error).message})`);
    }
  }
  return out;
}

/** Cut a JSONL file back to its last complete, parseable line. Returns the bytes removed. */
export function repairJsonl(path: string): number {
  if (!existsSync(path)) return 0;
  const buf = readFileSync(path);
  let end = buf.length;
  // Drop an unterminated tail, then any last line that does not parse.
  while (end > 0) {
    const lastNl = buf.lastIndexOf(0x0a, end - 1);
    if (lastNl !== end - 1) {
      end = lastNl + 1;
      continue;
    }
    const prevNl = end >= 2 ? buf.lastIndexOf(0x0a, end - 2) : -1;
    const line = buf.subarray(prevNl + 1, end - 1).toString('utf8');
    try {
      if (line.trim() !== '') JSON.parse(line);
      break;
    } catch {
      end = prevNl + 1;
    }
  }
  const removed = buf.length - end;
  if (removed > 0) truncateSync(path, end);
  return removed;
}

/** Replace a file atomically: write a sibling, fsync, rename over. */
export function writeFileAtomic(path: string, content: string): void {
  const tmp = `${path}.tmp-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    writeSync(fd, redactText(content));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  fsyncDir(dirname(path));
}

export function writeJsonlAtomic(path: string, records: unknown[]): void {
  writeFileAtomic(path, records.map((r) => JSON.stringify(r) + '\n').join(''));
}

function fsyncDir(dir: string): void {
  try {
    const fd = openSync(dir, 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  } catch {
    /* some filesystems do not allow fsync on a directory; the rename is still atomic */
  }
}

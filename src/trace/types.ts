/**
 * The trace every pipeline writes beside its answer. It is plain JSON (no classes, no Maps) so
 * that it can be written to `traces.jsonl`, read back in a notebook, and turned into plots,
 * metrics and reports without re-running anything.
 */
import type { ChatMessage, JudgeMode } from '../llm/types';

/**
 * A registered pipeline name. The trace sits below the pipelines, so it cannot name them: the
 * list (and the literal union `BuiltinPipelineName`) lives in src/pipelines/registry.ts, where
 * pipelines defined outside this repository can also be registered.
 */
export type PipelineName = string;

export interface LlmCallRecord {
  /** Position in the question's call sequence (0-based). */
  index: number;
  /** What the call was for, e.g. `toc.rac`, `toc.verify`, `ve.edit.answer`. */
  purpose: string;
  messages: ChatMessage[];
  params: {
    temperature: number;
    topP: number;
    maxTokens: number;
    stop: string[];
    n: number;
    seed: number | null;
    /** Index of the first sample when not 0 (a later round of adaptive self-consistency). */
    firstSample?: number;
  };
  completions: Array<{
    text: string;
    finishReason: string;
    promptTokens: number;
    completionTokens: number;
    latencySeconds: number;
    cacheHit: boolean;
    /** Sum of token log-probabilities, when asked for (`logprobs: true`). */
    logprob?: number;
    /** US dollars, priced by the model that served the call (0 for replays); absent when no price is known. */
    costUsd?: number;
  }>;
  wallSeconds: number;
  /**
   * The model that answered, as `provider:model`, when it is not the trace's `llm` (a judgment
   * served by the run's separate `judge:` model). Absent: the trace's `llm` answered.
   */
  model?: string;
  /**
   * Set for judge calls (`LanguageModel.judge`): the labels, their probabilities (request order)
   * and P(labels[0]). `completions[0].text` holds the most probable label (or the parsed reply in
   * text mode).
   */
  judge?: {
    labels: string[];
    probabilities: number[];
    p: number;
    mode: JudgeMode;
    labelMass: number;
    /** Text mode: the reply named none of the labels. */
    unparsed?: boolean;
    /**
     * Set when the pipeline calibrated this judgment (`judgeCalibration: content-free` or `batch`):
     * the label prior (content-free: read from call `priorCallIndex`), the calibrated
     * probabilities and calibrated P(labels[0]) the pipeline thresholded. `applied: false` when
     * the prior could not be divided out (text mode, a zero prior): then `p` is the raw P.
     */
    calibration?: {
      /**
       * `content-free`: the prior from this question's content-free call (`priorCallIndex`);
       * `batch`: the run's stored prior (judge-priors.json: the mean over a calibration sample of
       * demo-pool questions judged before the run), so there is no call index.
       */
      method: 'content-free' | 'batch';
      priorCallIndex?: number;
      prior: number[];
      probabilities: number[];
      p: number;
      applied: boolean;
    };
  };
}

export interface RetrievalRecord {
  index: number;
  purpose: string;
  retriever: string;
  query: string;
  k: number;
  hits: Array<{ id: string; score: number }>;
  /** Set when a reranker re-ordered the hits. */
  reranker?: string;
}

/** A model reply that did not parse and what the pipeline did instead. Counted, never fatal. */
export interface ParseFailure {
  purpose: string;
  llmCallIndex: number;
  reason: string;
  raw: string;
  fallback: string;
}

/**
 * Something the pipeline had to work around that is not a parse failure: an empty retrieval, no
 * demos left for a question, a call budget that cut the search short. Counted in the summary.
 */
export interface TraceWarning {
  purpose: string;
  message: string;
  /** What the pipeline did instead. */
  fallback?: string;
}

export interface TraceSummary {
  llmCalls: number;
  promptTokens: number;
  completionTokens: number;
  cacheHits: number;
  /** Wall seconds for the whole question. */
  seconds: number;
  retrievals: number;
  parseFailures: number;
  /** Number of `Trace.warnings` (absent in traces written before warnings existed). */
  warnings?: number;
  /** LLM samples (a call with n = 5 is one call, five samples). */
  samples?: number;
  /**
   * What the question's live LLM calls cost in US dollars (`llm.pricing`, `judge.pricing`);
   * replays from ambiqa's cache cost 0; 0 for the embedded model. Absent when no price is known.
   */
  costUsd?: number;
}

// ---------------------------------------------------------------- method-specific decisions

export interface TocNode {
  /** `0` is the root (the ambiguous question); children get increasing ids in BFS order. */
  id: number;
  parentId: number | null;
  depth: number;
  question: string;
  /** Root: null. */
  answer: string | null;
  /** Order in which the node was created (= BFS order). */
  bfsOrder: number;
  /** The node's expansion (RAC call) if it was expanded. */
  expanded: boolean;
  /** Evidence passage used for self-verification. */
  evidencePassageId?: string;
  /**
   * Self-verification verdict: P(true) ≥ the `pruneThreshold` option; null when pruning was off or
   * the node is the root or was never verified.
   */
  verdict: boolean | null;
  /**
   * P(true) the verdict thresholded: from the self-verification judge (0/1 when it fell back to
   * text), calibrated when `judgeCalibration` is on.
   */
  pTrue?: number;
  /** With `judgeCalibration`: P(true) as the judge gave it, before calibration. */
  pTrueRaw?: number;
  /** With `judgeCalibration`: P(true) on the content-free prompt (the judge's prior). */
  pTruePrior?: number;
  /** Un-pruning would have restored this node, but the judge rejected it below `unpruneFloor`. */
  unpruneBlocked?: boolean;
  /** Pruned by self-verification (after un-pruning was applied). */
  pruned: boolean;
  /** Was pruned, then restored because too few nodes survived. */
  unpruned: boolean;
  /** Dropped as a duplicate of an earlier node. */
  duplicateOf?: number;
  /** Whether the evidence passage contains the node's answer (hasAnswer). */
  evidenceHasAnswer?: boolean;
  /** LLM call (index into `llmCalls`) of the expansion that produced the node. */
  createdByCallIndex?: number;
  /** LLM call of the node's self-verification. */
  verifyCallIndex?: number;
  /**
   * Set when the node was neither verified nor kept because the search ended first: the valid-node
   * cap was reached mid-expansion, or the LLM-call budget left no room to verify it.
   */
  skipped?: 'max-nodes' | 'max-calls';
  /**
   * Admitted unverified because the released search had switched pruning (and its dedup) off
   * (`TocDecisions.pruningOffAtStep`); absent when pruning was on, or off from the start.
   */
  admittedWithPruningOff?: boolean;
}

export interface TocDecisions {
  kind: 'toc';
  nodes: TocNode[];
  expansions: Array<{
    nodeId: number;
    llmCallIndex: number;
    newChildren: number;
    failed: boolean;
    reason?: string;
    /** The expansion repeated this few-shot demo's DQs instead of clarifying the question; no node was made. */
    copiedDemoId?: string;
    /** Released search: the loop step (1-based, the code's `n_expansions`) of this expansion. */
    step?: number;
    /** Released search: whether pruning was on for this expansion's pairs. */
    pruning?: boolean;
    /** Passages of this expansion's prompt that contained one of its answers and left the pool (`dropAnsweredPassages`). */
    removedPassageIds?: string[];
  }>;
  /** Which search built the tree (absent in traces written before issue 34: `stop-when-empty`). */
  search?: 'released' | 'stop-when-empty';
  /**
   * Why the search ended. Both searches: `max-nodes`, `max-expansions`, `max-calls` (the safety
   * budget), `unambiguous` (`earlyExit` found at most one distinct interpretation at the root and
   * answered directly). Released search: `max-restarts` (`maxTrials` restarts of the emptied
   * queue). Stop-when-empty search: `max-trials` (consecutive failed expansions), `queue-empty`,
   * `max-depth` (the queue emptied because nodes at `maxDepth` are not queued).
   */
  stopReason: 'max-nodes' | 'max-depth' | 'max-trials' | 'max-restarts' | 'max-expansions' | 'queue-empty' | 'max-calls' | 'unambiguous';
  /** Released search: loop steps taken (expansions plus popped nodes too deep to expand). */
  steps?: number;
  /** Released search: every restart — the step at which the empty queue was refilled, and with which node ids (the root, then the valid nodes in BFS order). */
  restarts?: Array<{ step: number; queue: number[] }>;
  /** Released search: the step whose expansion switched pruning off (absent when it stayed on). */
  pruningOffAtStep?: number;
  /** Released search: nodes popped at or below `maxDepth`, not expanded, each still a step. */
  depthSkips?: Array<{ step: number; nodeId: number }>;
  /** Passages that left the pool (`dropAnsweredPassages`), in the order they left. */
  removedPassageIds?: string[];
  /** Node ids given to the answer-generation prompt, in BFS order. */
  validNodeIds: number[];
  /** Passages given to the final prompt. */
  answerPassageIds: string[];
  /** Node ids restored by un-pruning (nearest the root first). */
  unprunedNodeIds?: number[];
  /** Consecutive failed expansions when the search stopped. */
  failedTrials?: number;
  /** Pruned nodes un-pruning left pruned because their P(true) was below `unpruneFloor`. */
  unpruneBlockedNodeIds?: number[];
}

export interface VeSample {
  rationale: string;
  answer: string;
}

export interface VeDecisions {
  kind: 'verify-edit';
  samples: VeSample[];
  /** answer (normalised) → votes. */
  votes: Record<string, number>;
  majorityAnswer: string;
  /**
   * The majority answer's share: votes / n (`consistency: vote`), or its share of the samples'
   * probability mass (`consistency: logprob`).
   */
  consistency: number;
  /** How consistency was computed (absent in traces written before the option existed: vote). */
  consistencyMode?: 'vote' | 'logprob';
  /** logprob mode: answer (normalised) → probability-weighted votes, scaled to n so `threshold` applies. */
  weightedVotes?: Record<string, number>;
  /** `adaptive: true`: samples drawn of the budget, and whether the vote settled early. */
  adaptive?: AdaptiveSampling;
  threshold: number;
  edited: boolean;
  edits: Array<{
    sentence: string;
    verifyingQuestion: string;
    retrievedSentences: string[];
    answer: string;
    /** Passages the retrieved sentences came from. */
    retrievedPassageIds?: string[];
  }>;
  /** The rationale that was edited (the first sample giving the majority answer). */
  majorityRationale?: string;
  /** The task the prompts were written for. */
  task?: 'short' | 'fact';
  editedRationale?: string;
  finalAnswer: string;
}

export type AmbiguityType = 'subject' | 'object' | 'predicate' | 'time' | 'location' | 'none';
export type DivaUsefulness = 'Useful' | 'PartialUseful' | 'Useless';

export interface DivaDecisions {
  kind: 'diva';
  ambiguityType: AmbiguityType;
  ambiguityReason: string;
  interpretations: string[];
  /** One per interpretation: do the passages answer it? (P(yes) ≥ `verifyThreshold`.) */
  verdicts: boolean[];
  /**
   * One per interpretation: P(yes) from the verification judge, calibrated when
   * `judgeCalibration` is on (absent when verification was off).
   */
  pAnswered?: number[];
  /** With `judgeCalibration`: P(yes) per interpretation as the judge gave it. */
  pAnsweredRaw?: number[];
  /** With `judgeCalibration`: P(yes) per interpretation on the content-free prompt. */
  pAnsweredPrior?: number[];
  usefulness: DivaUsefulness;
  route: 'rag' | 'closed-book';
  passageIds: string[];
  /** Per passage id: mean cosine similarity to the interpretations (the diversification ranking). */
  passageScores?: number[];
  /** `earlyExit`: the model typed the question unambiguous; answered by RAG on it, unverified. */
  earlyExit?: boolean;
}

/** One (retrieved, generated) pair as the COMBO reader sees it; indices into the decisions' lists. */
export interface ComboPair {
  /** Index into `retrievedPassageIds`. */
  retrieved: number;
  /** Index into `generatedPassages`. */
  generated: number;
  /** compatibility[retrieved][generated]. */
  compatibility: number;
}

export interface ComboDecisions {
  kind: 'combo';
  generatedPassages: string[];
  retrievedPassageIds: string[];
  /** P(evidential) per retrieved passage. */
  evidentiality: number[];
  /**
   * consistency[i][j]: P(retrieved i and generated j agree); 0 where it was not judged (a row in
   * `consistencySkipped`).
   */
  consistency: number[][];
  /**
   * compatibility[i][j]: with the `gated` rule (default) 0 for a passage judged not evidential,
   * else consistency[i][j]; with `product`, consistency[i][j] * evidentiality[i].
   */
  compatibility: number[][];
  /** matching[i] = generated passage index paired with retrieved passage i (-1: none). */
  matching: number[];
  /** Which scorers produced the numbers, e.g. `llm-judge` or `embedding-cosine`. */
  scorers?: { evidentiality: string; consistency: string };
  /** Sum of compatibility over the pairs the reader sees. */
  matchingScore?: number;
  /**
   * Rows whose consistency was not judged because the gate found the passage not evidential
   * (`compatibility: gated`; absent with `product`, which judges every pair).
   */
  consistencySkipped?: boolean[];
  /**
   * The pairs in the order the reader's prompt lists them (`pairSort`: by compatibility, highest
   * first, or by retrieval rank). When there are fewer generated (or retrieved) passages than N,
   * the shorter list is repeated cyclically to N, as the released code does, so an index can
   * appear in more than one pair. Absent in traces written before issue 34.
   */
  pairs?: ComboPair[];
}

export interface SelfConsistencyDecisions {
  kind: 'cot-sc';
  samples: VeSample[];
  votes: Record<string, number>;
  majorityAnswer: string;
  consistency: number;
  /** `adaptive: true`: samples drawn of the budget, and whether the vote settled early. */
  adaptive?: AdaptiveSampling;
}

/** Adaptive self-consistency (option `adaptive`): the budget n, the samples drawn, early stop. */
export interface AdaptiveSampling {
  budget: number;
  drawn: number;
  stoppedEarly: boolean;
}

export interface BaselineDecisions {
  kind: 'baseline';
  passageIds: string[];
  /** CoT: the generated rationale. */
  rationale?: string;
}

export type MethodDecisions =
  | TocDecisions
  | VeDecisions
  | DivaDecisions
  | ComboDecisions
  | SelfConsistencyDecisions
  | BaselineDecisions;

export interface Trace {
  pipeline: PipelineName;
  questionId: string;
  question: string;
  llm: { provider: string; model: string };
  /** The model that served the yes/no judgments, when the run has a `judge:` section of its own. */
  judge?: { provider: string; model: string };
  /** Demo question ids used as few-shot examples. */
  demoIds: string[];
  llmCalls: LlmCallRecord[];
  retrievals: RetrievalRecord[];
  parseFailures: ParseFailure[];
  /** Worked-around conditions (empty retrieval, no demos, budget); absent in old traces. */
  warnings?: TraceWarning[];
  /** The pipeline's resolved options (every default filled in). */
  options?: Record<string, unknown>;
  decisions: MethodDecisions;
  summary: TraceSummary;
  /** The final long answer, and the short answer where the method has one. */
  output: string;
  answer?: string;
}

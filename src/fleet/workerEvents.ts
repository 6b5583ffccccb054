import type { LedgerEntry } from '../api/client.ts';
import type { PassSummary } from '../sync/events.ts';
import type { EnsureResult } from './jobQueue.ts';
import type { Outcome } from './passOutcome.ts';

/** Why a job ended without a pass: a bad job, one already done, the account gone, paused, backing off, or busy elsewhere. */
export type SkipReason = 'invalid' | 'redundant' | 'missing' | 'paused' | 'backing_off' | 'busy';

/**
 * What a fleet worker tells the world, per account: logs, the metrics and the status page subscribe (typed, as the
 * engine's SyncEvents). Account names are `^[a-z][a-z0-9_]{0,39}$`: safe as label values.
 */
export interface FleetWorkerEventMap {
  /**
   * A job was fetched and starts, `lateMs` after the instant it was due: for live work (`live`: a list or reply due, a
   * first pass, a takeover) the instant its work fell due, else its startAfter.
   */
  'job:started': [{ account: string; jobId: string; lateMs: number; live: boolean; retryCount: number; manual: boolean }];
  /** A job ended without a pass (see SkipReason). */
  'job:skipped': [{ account: string; jobId: string; reason: SkipReason }];
  /** A pass ended and its outcome was recorded (the same as the account's row now says). */
  'pass:finished': [FleetPassReport];
  /** One request of an account's engine, whatever its outcome (what its ledger records). */
  'request:sent': [{ account: string; entry: LedgerEntry }];
  /** A chain of passes was started or hurried: by the reconciler, an operator's announcement, or a reply inserted. */
  'chain:woken': [{ account: string; via: 'reconcile' | 'announce' | 'reply'; result: EnsureResult }];
  /** Every promote (jobQueue.promote): background jobs raised to live now, and the live jobs due and waiting for a slot. */
  'jobs:live': [{ promoted: number; waiting: number }];
}

export interface FleetPassReport {
  account: string;
  worker: string;
  jobId: string;
  /** When the job started and ended (epoch ms, the worker's clock). */
  startedAt: number;
  finishedAt: number;
  /** The engine's summary; null when no pass ran (the token did not open, the database failed). */
  summary: PassSummary | null;
  outcome: Outcome;
  /** When the account's next job is due. */
  nextPassAt: number;
  /** The worker was stopping: the account was handed back, due at once. */
  handedBack: boolean;
  /** Cut off by the loss of the account's lock or a hard stop. */
  interrupted: boolean;
}

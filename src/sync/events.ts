import { EventEmitter } from 'node:events';
import type { LedgerEntry } from '../api/client.ts';
import type { ListName } from '../api/endpoints.ts';
import { AuthError, RateLimitedError, TransientError } from '../errors.ts';
import type { Plan } from './planner.ts';

/** What the sync core tells the world. Logging and metrics subscribe; tests await events instead of sleeping. */
export interface SyncEventMap {
  'pass:started': [{ at: number; plan: Plan }];
  'pass:finished': [PassSummary];
  /** `withheld`: tickets the answer showed leaving, kept in the list until the next poll confirms (0 normally). */
  'list:polled': [{ list: ListName; at: number; items: number; changes: number; withheld: number }];
  'list:failed': [{ list: ListName; error: Error }];
  'detail:fetched': [{ id: string; changed: boolean; kind: string }];
  'detail:deleted': [{ id: string }];
  'detail:failed': [{ id: string; error: Error }];
  'budget:low': [{ dailyLeft: number; dailyAllowed: number }];
  /** One request sent, whatever its outcome: what the ledger records. */
  'request:sent': [LedgerEntry];
}

export interface PassSummary {
  startedAt: number;
  finishedAt: number;
  requests: number;
  polls: ListName[];
  ticketsChanged: number;
  detailsFetched: number;
  deleted: number;
  missing: number;
  errors: string[];
  /** Lists whose answer could not be used (a 4xx of their own, a body that is not a list): nothing of them changed. */
  failedLists: ListName[];
  /** Why the pass ended early, or null when it ran its plan to the end. */
  stoppedBy: PassStop | null;
  /**
   * It stopped starting requests before its plan was done because it was asked to make room (SyncEngine.pass's
   * `until` or `yield`): not a failure, and `stoppedBy` stays null unless something else ended it. @default false
   */
  yielded?: boolean;
  /** The error that ended it early, for a caller that explains it (the CLI's `sync`); told safely, as in `errors`. */
  stopError?: Error;
}

/**
 * Why a pass ended early: a 429 or a spent budget (`rate_limited`), a server or network error that outlived its
 * retries (`server_error`), a rejected token (`auth_failed`), anything else (`failed`). The one mapping from errors is
 * {@link passStopOf}; the daemon, the metrics, the CLI and the bench compare these values, never error names.
 */
export type PassStop = 'rate_limited' | 'server_error' | 'auth_failed' | 'failed';

export function passStopOf(error: Error): PassStop {
  if (error instanceof RateLimitedError) return 'rate_limited';
  if (error instanceof TransientError) return 'server_error';
  if (error instanceof AuthError) return 'auth_failed';
  return 'failed';
}

export class SyncEvents extends EventEmitter<SyncEventMap> {
  /** Emits without letting a listener's exception break the sync. */
  safeEmit<K extends keyof SyncEventMap>(event: K, ...args: SyncEventMap[K]): void {
    try {
      (this.emit as (e: K, ...a: SyncEventMap[K]) => boolean)(event, ...args);
    } catch {
      // A broken listener must not stop the mirror.
    }
  }
}

import { EventEmitter } from 'node:events';
import type { LedgerEntry } from '../api/client.ts';
import type { ListName } from '../api/endpoints.ts';
import type { Plan } from './planner.ts';

/** What the sync core tells the world. Logging and metrics subscribe; tests await events instead of sleeping. */
export interface SyncEventMap {
  'pass:started': [{ at: number; plan: Plan }];
  'pass:finished': [PassSummary];
  'list:polled': [{ list: ListName; at: number; items: number; changes: number }];
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
  /** The pass ended early: the reason (auth, rate limit, server trouble). */
  stoppedBy: string | null;
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

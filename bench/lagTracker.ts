import type { ListName } from '../src/api/endpoints.ts';
import { LIST_BIT, type Change } from './changeRecorder.ts';

/**
 * When the mirror came to reflect each change. Strategies report what they stored, as they store it:
 *
 * - `polled(list, at)`: a response of `list`, observed at `at`, was diffed and written;
 * - `detailStored(id, at)`: a detail of ticket `id` observed at `at` was written (or its 404 recorded).
 *
 * Definitions (all lags from the instant the API started showing the change):
 * - **list lag** of a list-visible change: until every list whose response it changed has been polled and written
 *   after it. From then on the mirror's row shows the ticket's list fields and list membership as of the change or
 *   later (a poll writes the whole current state of what it lists).
 * - **detail lag** of any change: until a detail of the ticket, requested after the change, has been stored. For a
 *   detail-only change it is the change's lag; for a list-visible one it is the lag of its full content (messages …).
 *
 * A change not reflected by the end of the run keeps a null lag (reported as unreflected, counted as infinite).
 */

export interface ObservedChange extends Change {
  listLagMs: number | null;
  detailLagMs: number | null;
}

/** What a strategy reports as it goes. */
export interface Observer {
  /** A response of `list`, observed at `at`, was diffed and written. */
  polled(list: ListName, at: number): void;
  /** A detail of the ticket observed at `at` was written (or its 404 recorded). */
  detailStored(ticketId: string, at: number): void;
  /** A request was sent at `at`, for `kind` (`list_open` … `detail`, `backfill`, `revalidate`). */
  sent(kind: string, at: number): void;
}

export class LagTracker implements Pick<Observer, 'polled' | 'detailStored'> {
  readonly changes: ObservedChange[] = [];
  /** List-visible changes waiting for polls, with the lists still to be polled. */
  #waitingForLists: Array<{ change: ObservedChange; remaining: number }> = [];
  readonly #waitingForDetail = new Map<string, ObservedChange[]>();
  readonly #neverFetched: Set<string>;
  #backfillDoneAt: number | null = null;

  /** `initialIds`: the tickets that existed at the start; the backfill is done once each has been stored. */
  constructor(initialIds: readonly string[]) {
    this.#neverFetched = new Set(initialIds);
  }

  /** Instant the last ticket of the starting dataset was first stored; null while some never were. */
  get backfillDoneAt(): number | null {
    return this.#backfillDoneAt;
  }

  get backfillRemaining(): number {
    return this.#neverFetched.size;
  }

  add(change: Change): void {
    const c: ObservedChange = { ...change, listLagMs: null, detailLagMs: null };
    this.changes.push(c);
    if (c.lists !== 0) this.#waitingForLists.push({ change: c, remaining: c.lists });
    const waiting = this.#waitingForDetail.get(c.ticketId);
    if (waiting) waiting.push(c);
    else this.#waitingForDetail.set(c.ticketId, [c]);
  }

  polled(list: ListName, at: number): void {
    const bit = LIST_BIT[list];
    let kept = 0;
    for (const w of this.#waitingForLists) {
      if (w.remaining & bit && w.change.at <= at) w.remaining &= ~bit;
      if (w.remaining === 0) w.change.listLagMs = at - w.change.at;
      else this.#waitingForLists[kept++] = w;
    }
    this.#waitingForLists.length = kept;
  }

  detailStored(ticketId: string, at: number): void {
    const waiting = this.#waitingForDetail.get(ticketId);
    if (waiting) {
      const later = waiting.filter((c) => c.at > at);
      for (const c of waiting) if (c.at <= at) c.detailLagMs = at - c.at;
      if (later.length > 0) this.#waitingForDetail.set(ticketId, later);
      else this.#waitingForDetail.delete(ticketId);
    }
    if (this.#neverFetched.delete(ticketId) && this.#neverFetched.size === 0) this.#backfillDoneAt = at;
  }
}

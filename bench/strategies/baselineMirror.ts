import { ApiClient } from '../../src/api/client.ts';
import type { ListName } from '../../src/api/endpoints.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { markDeleted, writeDetail } from '../../src/db/repos/details.ts';
import { applyListDiff, loadMirrorForList, markMissingAfterSweep } from '../../src/db/repos/lists.ts';
import { NotFoundError } from '../../src/errors.ts';
import { diffList } from '../../src/sync/differ.ts';
import { mapDetail, parseListItems, Problems } from '../../src/sync/mapping.ts';
import { isoMicros } from '../../src/time.ts';
import type { StrategyContext } from './strategy.ts';

/**
 * What the baselines share with ticket-mirror: the same API client (auth, validation, error mapping), the same differ
 * and the same writers, so that only *when* and *what* they request differs. There is no budget gate: each request
 * goes straight out, and a 429 comes back as a RateLimitedError for the baseline to handle its own way.
 */
export class BaselineMirror {
  readonly #ctx: StrategyContext;
  readonly #client: ApiClient;
  /** Each list's last response, serialised: an identical one changes nothing but bookkeeping. */
  readonly #lastBody = new Map<ListName, string>();

  constructor(ctx: StrategyContext) {
    this.#ctx = ctx;
    this.#client = new ApiClient({
      baseUrl: ctx.sim.url,
      token: ctx.sim.token,
      clock: ctx.clock,
      gate: { run: (_kind, send) => send() },
      record: async () => async (entry) => ctx.observer.sent(entry.kind, entry.at),
      random: () => 0.5,
      sleep: async (ms) => {
        throw new Error(`a baseline tried to sleep ${ms} ms: a request failed where none should`);
      },
    });
  }

  /**
   * Polls one list, diffs it against the mirror and writes the diff (every new or changed ticket becomes due). A
   * response identical to the list's previous one is not written again: it would only move `last_seen_at` (this saves
   * the benchmark's wall time, and changes none of its figures).
   */
  async poll(list: ListName): Promise<void> {
    const response = await this.#client.list(list);
    const body = response.body.all();
    const text = JSON.stringify(body);
    if (this.#lastBody.get(list) === text) {
      this.#ctx.observer.polled(list, response.at);
      return;
    }
    this.#lastBody.set(list, text);
    const items = parseListItems(body, list, new Problems());
    const at = isoMicros(response.at);
    await this.#ctx.db.transaction(async (tx) => {
      const mirror = await loadMirrorForList(tx, list, items);
      await applyListDiff(tx, diffList(list, items, mirror, at));
    });
    this.#ctx.observer.polled(list, response.at);
  }

  /** After all four lists answered: tickets in none of them are missing (and due, to learn whether they were deleted). */
  async sweepDone(): Promise<void> {
    await markMissingAfterSweep(this.#ctx.db, isoMicros(this.#ctx.clock.now()));
  }

  /** Fetches and writes one detail; a 404 marks the ticket deleted. */
  async fetch(id: string): Promise<void> {
    const { db, clock, observer } = this.#ctx;
    const requestedAt = isoMicros(clock.now());
    try {
      const response = await this.#client.detail(id);
      const mapped = mapDetail(response.body, id);
      await db.transaction((tx) => writeDetail(tx, mapped, isoMicros(response.at), requestedAt));
      observer.detailStored(id, response.at);
    } catch (error) {
      if (!(error instanceof NotFoundError)) throw error;
      await markDeleted(db, id, isoMicros(clock.now()), requestedAt);
      observer.detailStored(id, clock.now());
    }
  }

  /** Tickets whose list item changed since their detail was last stored, oldest change first. */
  async dueIds(): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.#ctx.db,
      sql`select id from tickets where detail_due_since is not null and deleted_at is null order by detail_due_since, id`,
    );
    return rows.map((r) => r.id);
  }

  /** Tickets the open list showed at its last poll, newest first. */
  async openIds(): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(this.#ctx.db, sql`select id from tickets where in_open order by created_at desc, id`);
    return rows.map((r) => r.id);
  }
}

import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LIST_NAMES, type RequestKind } from '../../src/api/endpoints.ts';
import { ManualClock } from '../../src/clock.ts';
import { queryRows, sql, type Db } from '../../src/db/connect.ts';
import { loadSamples } from '../../src/db/repos/ledger.ts';
import {
  countWork,
  ListActivity,
  pickBackfill,
  pickDue,
  pickRevalidate,
  plannerInputs,
  revalidationLearnt,
  revalidationMultipliers,
  type RevalidationSample,
} from '../../src/db/repos/work.ts';
import { neutralMultipliers } from '../../src/model/revalidation.ts';
import { BUCKET_MS, type PlannerHistory } from '../../src/model/plannerHistory.ts';
import { BudgetGate } from '../../src/sync/gate.ts';
import { isoMicros } from '../../src/time.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';

/**
 * The SQL the planner stands on (src/db/repos/work.ts), against the semantics documented there and on
 * `PlannerHistory` (src/sync/planner.ts). Every instant is relative to one fixed `NOW`: Monday 5 January 2026, 12:10 UTC.
 */

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
/** An instant of January 2026, UTC. */
const jan = (day: number, h: number, m: number, s = 0, ms = 0) => Date.UTC(2026, 0, day, h, m, s, ms);
const NOW = jan(5, 12, 10);
/** Long enough ago that the activity bonus of pickRevalidate is nil (e^−30). */
const LONG_AGO = NOW - 30 * DAY;
const HISTORY_BUCKETS = 8 * 48;

interface TicketSpec {
  id: string;
  open?: boolean;
  self?: boolean;
  unassigned?: boolean;
  resolved?: boolean;
  unread?: boolean;
  /** @default LONG_AGO */
  createdAt?: number | null;
  updatedAt?: number | null;
  lastContactAt?: number | null;
  syncedAt?: number | null;
  dueSince?: number | null;
  retryAfter?: number | null;
  deletedAt?: number | null;
}

const stamp = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : isoMicros(ms));

async function insertTickets(db: Db, specs: readonly TicketSpec[]): Promise<void> {
  for (const t of specs) {
    await db.execute(sql`
      insert into tickets (id, in_open, in_self, in_unassigned, in_resolved, has_unread_messages,
        created_at, updated_at, last_contact_at, first_seen_at, last_seen_at,
        detail_synced_at, detail_due_since, detail_retry_after, deleted_at)
      values (${t.id}, ${t.open ?? false}, ${t.self ?? false}, ${t.unassigned ?? false}, ${t.resolved ?? false}, ${t.unread ?? false},
        ${stamp(t.createdAt === undefined ? LONG_AGO : t.createdAt)}::timestamptz, ${stamp(t.updatedAt)}::timestamptz,
        ${stamp(t.lastContactAt)}::timestamptz, ${isoMicros(LONG_AGO)}::timestamptz, ${isoMicros(NOW)}::timestamptz,
        ${stamp(t.syncedAt)}::timestamptz, ${stamp(t.dueSince)}::timestamptz, ${stamp(t.retryAfter)}::timestamptz,
        ${stamp(t.deletedAt)}::timestamptz)`);
  }
}

async function insertRequests(db: Db, sentAt: readonly number[], kind: RequestKind = 'list_open'): Promise<void> {
  for (const at of sentAt) {
    await db.execute(sql`
      insert into api_requests (at, method, path, status, kind) values (${isoMicros(at)}::timestamptz, 'GET', '/api/v1/tickets', 200, ${kind})`);
  }
}

/** One re-read counted, as writeDetail counts it (in the detail's statement). */
async function recordRevalidation(db: Db, sample: RevalidationSample, found: boolean, at: number): Promise<void> {
  await db.execute(revalidationLearnt(sample, found ? sql`true` : sql`false`, at));
}

/** The planner's history at `now`, its requests as the budget reads them from the ledger (as the engine does). */
async function history(db: Db, now = NOW): Promise<PlannerHistory> {
  const samples = await loadSamples(db, now - DAY, { minute: 60, daily: 1440 });
  const gate = new BudgetGate({ limits: { daily: 1440, minute: 60, reserve: 0.1 }, clock: new ManualClock(now), realTimeInterval: false, samples });
  return (await plannerInputs(db, now, gate.sentAt(), gate.backgroundSentAt())).history;
}

/** Polls of `items` items each (1,000 unless given: more than any of their changes, which then all count). */
async function insertPolls(db: Db, polls: ReadonlyArray<{ list: string; at: number; changes: number; items?: number; withheld?: number }>): Promise<void> {
  for (const p of polls) {
    await db.execute(sql`insert into list_polls (list, at, items, changes, withheld)
      values (${p.list}, ${isoMicros(p.at)}::timestamptz, ${p.items ?? 1000}, ${p.changes}, ${p.withheld ?? 0})`);
  }
}

/** An array of `length` zeros with `value` at each index of `at` (null: nowhere). */
function spikes(length: number, at: ReadonlyArray<[number | null, number]>): number[] {
  const out = new Array<number>(length).fill(0);
  for (const [k, value] of at) if (k !== null) out[k]! += value;
  return out;
}

/** Sent at `sentAt`, a request is in [k] of `freeing` (null: not in the window). */
const FREEING_CASES: ReadonlyArray<{ label: string; sentAt: number; k: number | null }> = [
  { label: 'yesterday 10:20 (left the window at 10:20 today)', sentAt: jan(4, 10, 20), k: null },
  { label: 'exactly 24 h ago', sentAt: NOW - DAY, k: null },
  { label: '24 h − 1 ms ago (frees in the current hour)', sentAt: NOW - DAY + 1, k: 0 },
  { label: 'yesterday 12:59:59.999', sentAt: jan(4, 12, 59, 59, 999), k: 0 },
  { label: 'yesterday 13:00', sentAt: jan(4, 13, 0), k: 1 },
  { label: 'yesterday 13:20', sentAt: jan(4, 13, 20), k: 1 },
  { label: 'yesterday 22:20', sentAt: jan(4, 22, 20), k: 10 },
  { label: 'today 00:00', sentAt: jan(5, 0, 0), k: 12 },
  { label: 'today 10:20 (frees 10:00–11:00 tomorrow)', sentAt: jan(5, 10, 20), k: 22 },
  { label: 'today 11:59:59.999', sentAt: jan(5, 11, 59, 59, 999), k: 23 },
  // A request of the current hour frees in hour 24, past the last entry; it is counted in the last one (as the
  // planner's unit tests do): `headroom` never adds freeing[23] before a horizon, so either reading plans the same.
  { label: 'today 12:00 (the current hour)', sentAt: jan(5, 12, 0), k: 23 },
  { label: 'now', sentAt: NOW, k: 23 },
  { label: '1 ms after now (not sent yet)', sentAt: NOW + 1, k: null },
];

/** The current half hour is 12:00–12:30, so [k] is the half hour that starts k × 30 min before 12:00. */
const BUCKET_NOW_START = jan(5, 12, 0);
const OLDEST_BUCKET_START = BUCKET_NOW_START - (HISTORY_BUCKETS - 1) * BUCKET_MS;
const CHANGES_CASES: ReadonlyArray<{ label: string; at: number; k: number | null }> = [
  { label: 'now', at: NOW, k: 0 },
  { label: '12:00, the current half hour’s start', at: jan(5, 12, 0), k: 0 },
  { label: '11:59:59.999', at: jan(5, 11, 59, 59, 999), k: 1 },
  { label: '11:30', at: jan(5, 11, 30), k: 1 },
  { label: '11:29:59.999', at: jan(5, 11, 29, 59, 999), k: 2 },
  { label: 'yesterday 12:10', at: NOW - DAY, k: 48 },
  { label: 'a week ago 12:00', at: jan(5, 12, 0) - 7 * DAY, k: 336 },
  { label: 'the start of the oldest of the 384 half hours', at: OLDEST_BUCKET_START, k: HISTORY_BUCKETS - 1 },
  { label: '1 ms before the oldest half hour', at: OLDEST_BUCKET_START - 1, k: null },
  { label: 'nine days ago', at: NOW - 9 * DAY, k: null },
  { label: '1 ms after now', at: NOW + 1, k: null },
];

/**
 * pickRevalidate's ranking, staleness × weight: `winner` is picked before `loser`. The loser is always ticket "a" and
 * the winner "b", so the tie-break by id cannot be what decides.
 */
const RANKING_CASES: ReadonlyArray<{ label: string; winner: Omit<TicketSpec, 'id'>; loser: Omit<TicketSpec, 'id'> }> = [
  {
    label: 'an open ticket read 2 h ago before a resolved one read 10 days ago (weight 1 vs 0.005)',
    winner: { open: true, syncedAt: NOW - 2 * HOUR },
    loser: { resolved: true, syncedAt: NOW - 10 * DAY },
  },
  {
    label: 'a resolved ticket read 40 days ago before an open one read 4 h ago (resolved ones still come round)',
    winner: { resolved: true, syncedAt: NOW - 40 * DAY },
    loser: { open: true, syncedAt: NOW - 4 * HOUR },
  },
  {
    label: 'a ticket only in the self list weighs as open',
    winner: { self: true, syncedAt: NOW - 6 * HOUR },
    loser: { resolved: true, syncedAt: NOW - 10 * DAY },
  },
  {
    label: 'a ticket only in the unassigned list weighs as open',
    winner: { unassigned: true, syncedAt: NOW - 6 * HOUR },
    loser: { resolved: true, syncedAt: NOW - 10 * DAY },
  },
  {
    label: 'an unread open ticket read 2 h ago before a read one read 2.5 h ago (×1.5)',
    winner: { open: true, unread: true, syncedAt: NOW - 2 * HOUR },
    loser: { open: true, syncedAt: NOW - 2.5 * HOUR },
  },
  {
    label: 'an open ticket with a contact 1 h ago, read 2 h ago, before an idle one read 2.8 h ago (up to ×1.5)',
    winner: { open: true, lastContactAt: NOW - HOUR, syncedAt: NOW - 2 * HOUR },
    loser: { open: true, syncedAt: NOW - 2.8 * HOUR },
  },
  {
    label: 'activity counts from updated_at too',
    winner: { open: true, lastContactAt: LONG_AGO, updatedAt: NOW - HOUR, syncedAt: NOW - 2 * HOUR },
    loser: { open: true, syncedAt: NOW - 2.8 * HOUR },
  },
  {
    label: 'activity counts from created_at when there was no contact yet',
    winner: { open: true, createdAt: NOW - HOUR, syncedAt: NOW - 2 * HOUR },
    loser: { open: true, syncedAt: NOW - 2.8 * HOUR },
  },
  {
    label: 'the bonuses stay under 2.25×: an idle read open ticket read 4.6 h ago before an unread, active one read 2 h ago',
    winner: { open: true, syncedAt: NOW - 4.6 * HOUR },
    loser: { open: true, unread: true, lastContactAt: NOW, syncedAt: NOW - 2 * HOUR },
  },
  {
    // A ticket whose detail gave no usable created_at, updated_at nor last_contact_at (the mapping stores null) has no
    // known activity, so no activity bonus: it must not rank as if it had been active just now.
    label: 'an idle open ticket read 2.8 h ago before one with no known activity read 2 h ago',
    winner: { open: true, syncedAt: NOW - 2.8 * HOUR },
    loser: { open: true, createdAt: null, updatedAt: null, lastContactAt: null, syncedAt: NOW - 2 * HOUR },
  },
];

describe.each(backends)('work queries on $name', ({ open }) => {
  let database: TestDatabase;
  let db: Db;
  beforeAll(async () => {
    database = await open();
    db = database.db;
  });
  afterAll(() => database.destroy());
  beforeEach(async () => {
    await db.execute(sql`truncate tickets, api_requests, list_polls, revalidation_learning restart identity cascade`);
  });

  describe('countWork, pickDue and pickBackfill', () => {
    it('counts due and never-fetched tickets fetchable now, and the picks return exactly those', async () => {
      await insertTickets(db, [
        { id: 'due-new', dueSince: NOW - 5 * MIN },
        { id: 'due-fetched', syncedAt: NOW - DAY, dueSince: NOW - 4 * MIN },
        { id: 'due-retry-ends-now', dueSince: NOW - 3 * MIN, retryAfter: NOW },
        { id: 'due-held', dueSince: NOW - 2 * MIN, retryAfter: NOW + 1 },
        { id: 'bf', open: true },
        { id: 'bf-retry-over', open: true, retryAfter: NOW - MIN },
        { id: 'bf-held', open: true, retryAfter: NOW + MIN },
        { id: 'bf-deleted', open: true, deletedAt: NOW - HOUR },
        { id: 'fetched', open: true, syncedAt: NOW - DAY },
        { id: 'resolved-read-long-ago', resolved: true, syncedAt: NOW - 3 * DAY },
      ]);
      // Open: the four in the open list that are not deleted. The stalest re-readable detail: the resolved one; among
      // the open tickets, 'fetched' (a due one is not re-readable).
      expect(await countWork(db, NOW)).toEqual({ due: 3, backfill: 2, open: 4, oldestDetailAt: NOW - 3 * DAY, oldestOpenDetailAt: NOW - DAY });
      expect(await pickDue(db, NOW, 100)).toEqual(['due-new', 'due-fetched', 'due-retry-ends-now']);
      expect((await pickBackfill(db, NOW, 100)).sort()).toEqual(['bf', 'bf-retry-over']);
      // Once the back-offs end, the held tickets count again.
      expect(await countWork(db, NOW + MIN)).toEqual({ due: 4, backfill: 3, open: 4, oldestDetailAt: NOW - 3 * DAY, oldestOpenDetailAt: NOW - DAY });
      // A plan reads the same figures in its one statement.
      expect((await plannerInputs(db, NOW, [], [])).work).toEqual({ due: 3, backfill: 2, open: 4, oldestDetailAt: NOW - 3 * DAY, oldestOpenDetailAt: NOW - DAY });
    });

    it('counts nothing in an empty mirror, and a limit of 0 picks nothing', async () => {
      expect(await countWork(db, NOW)).toEqual({ due: 0, backfill: 0, open: 0, oldestDetailAt: null, oldestOpenDetailAt: null });
      expect((await plannerInputs(db, NOW, [], [])).work).toEqual({ due: 0, backfill: 0, open: 0, oldestDetailAt: null, oldestOpenDetailAt: null });
      await insertTickets(db, [{ id: 'due', dueSince: NOW - MIN }, { id: 'bf', open: true }, { id: 'old', open: true, syncedAt: LONG_AGO }]);
      expect(await pickDue(db, NOW, 0)).toEqual([]);
      expect(await pickBackfill(db, NOW, 0)).toEqual([]);
      expect(await picked(db, NOW, 0, HOUR)).toEqual([]);
    });

    it('pickDue takes the oldest request first, ties by id, up to the limit, skipping tickets in back-off', async () => {
      await insertTickets(db, [
        { id: 'd-b', dueSince: jan(5, 10, 0) },
        { id: 'd-a', dueSince: jan(5, 10, 0) },
        { id: 'd-c', dueSince: jan(5, 9, 0) },
        { id: 'd-held', dueSince: jan(5, 8, 0), retryAfter: NOW + MIN },
        { id: 'not-due', open: true, syncedAt: NOW - DAY },
      ]);
      expect(await pickDue(db, NOW, 10)).toEqual(['d-c', 'd-a', 'd-b']);
      expect(await pickDue(db, NOW, 2)).toEqual(['d-c', 'd-a']);
      expect(await pickDue(db, NOW + MIN, 10)).toEqual(['d-held', 'd-c', 'd-a', 'd-b']);
    });

    it('pickBackfill takes open before resolved, newest first, and skips back-off, deleted, due and fetched tickets', async () => {
      await insertTickets(db, [
        { id: 'resolved-new', resolved: true, createdAt: jan(5, 11, 0) },
        { id: 'resolved-old', resolved: true, createdAt: Date.UTC(2025, 10, 1) },
        { id: 'resolved-no-created', resolved: true, createdAt: null },
        { id: 'open-old', open: true, createdAt: Date.UTC(2025, 11, 1) },
        { id: 'open-new', open: true, createdAt: jan(4, 9, 0) },
        { id: 'unassigned-older', unassigned: true, createdAt: Date.UTC(2025, 9, 1) },
        { id: 'open-held', open: true, createdAt: jan(5, 11, 30), retryAfter: NOW + MIN },
        { id: 'open-deleted', open: true, createdAt: jan(5, 11, 30), deletedAt: NOW - HOUR },
        { id: 'open-due', open: true, createdAt: jan(5, 11, 30), dueSince: NOW - MIN },
        { id: 'open-fetched', open: true, createdAt: jan(5, 11, 30), syncedAt: NOW - DAY },
      ]);
      const order = ['open-new', 'open-old', 'unassigned-older', 'resolved-new', 'resolved-old', 'resolved-no-created'];
      expect(await pickBackfill(db, NOW, 100)).toEqual(order);
      expect(await pickBackfill(db, NOW, 2)).toEqual(order.slice(0, 2));
    });
  });

  /** The ids pickRevalidate picks, in order. */
  const picked = async (...args: Parameters<typeof pickRevalidate>) => (await pickRevalidate(...args)).map((p) => p.id);
  /** What a re-read of `id` at `at` would teach (its pick's class and expected worth); null when it is not pickable. */
  const sampleOf = async (id: string, at: number) => {
    const pick = (await pickRevalidate(db, at, 1_000, 0)).find((p) => p.id === id);
    return pick ? { cls: pick.cls, expected: pick.expected } : null;
  };

  describe('pickRevalidate', () => {
    it('prefers an open stale ticket over an equally stale resolved one', async () => {
      await insertTickets(db, [
        { id: 'a-resolved', resolved: true, syncedAt: NOW - 2 * DAY },
        { id: 'b-open', open: true, syncedAt: NOW - 2 * DAY },
      ]);
      expect(await picked(db, NOW, 10, HOUR)).toEqual(['b-open', 'a-resolved']);
      expect(await picked(db, NOW, 1, HOUR)).toEqual(['b-open']);
    });

    it('skips due, never-fetched, deleted and backed-off tickets', async () => {
      await insertTickets(db, [
        { id: 'ok', open: true, syncedAt: NOW - DAY },
        { id: 'retry-over', open: true, syncedAt: NOW - DAY, retryAfter: NOW },
        { id: 'due', open: true, syncedAt: NOW - DAY, dueSince: NOW - MIN },
        { id: 'never-fetched', open: true },
        { id: 'deleted', open: true, syncedAt: NOW - DAY, deletedAt: NOW - HOUR },
        { id: 'held', open: true, syncedAt: NOW - DAY, retryAfter: NOW + 1 },
      ]);
      expect(await picked(db, NOW, 10, HOUR)).toEqual(['ok', 'retry-over']);
    });

    it('never picks a detail read less than the minimum age it is given (the planner derives it: one hour here)', async () => {
      await insertTickets(db, [
        { id: 'read-now', open: true, syncedAt: NOW },
        { id: 'read-1-min-ago', open: true, syncedAt: NOW - MIN },
        { id: 'read-just-under-min-age', open: true, syncedAt: NOW - HOUR + 1 },
        { id: 'read-just-over-min-age', open: true, syncedAt: NOW - HOUR - 1 },
        { id: 'read-2-h-ago', open: true, syncedAt: NOW - 2 * HOUR },
        // A resolved ticket's weight is tiny, but the minimum age is what excludes it, not its rank.
        { id: 'resolved-read-1-min-ago', resolved: true, syncedAt: NOW - MIN },
      ]);
      expect(await picked(db, NOW, 10, HOUR)).toEqual(['read-2-h-ago', 'read-just-over-min-age']);
      // An hour later, every detail read before NOW is old enough.
      expect(await picked(db, NOW + HOUR, 10, HOUR)).toEqual([
        'read-2-h-ago',
        'read-just-over-min-age',
        'read-just-under-min-age',
        'read-1-min-ago',
        'resolved-read-1-min-ago',
      ]);
      // With a budget far larger than the mirror the planner's minimum age is short (its sweep interval): 30 s here.
      expect(await picked(db, NOW, 10, 30_000)).toEqual([
        'read-2-h-ago',
        'read-just-over-min-age',
        'read-just-under-min-age',
        'read-1-min-ago',
        'resolved-read-1-min-ago',
      ]);
    });

    // Ranked by weight alone, an idle ticket of a class learnt to rarely change waited behind livelier ones for days (on
    // `standard`, a change of a Sunday still unseen after 48 quiet hours): past the maximum age, an open one goes first.
    it('an open ticket read longer ago than the maximum age it is given goes first, stalest first, whatever its weight', async () => {
      await insertTickets(db, [
        { id: 'a-idle-30h', open: true, syncedAt: NOW - 30 * HOUR, lastContactAt: LONG_AGO },
        { id: 'b-hot-10h', open: true, unread: true, lastContactAt: NOW - HOUR, syncedAt: NOW - 10 * HOUR },
        { id: 'c-idle-26h', self: true, syncedAt: NOW - 26 * HOUR, lastContactAt: LONG_AGO },
        { id: 'd-resolved-40d', resolved: true, syncedAt: NOW - 40 * DAY },
      ]);
      // Learnt: the idle class changes at half the fixed rate, the hot unread one at twice (the bounds).
      const learnt = Array.from({ length: 12 }, (_, cls) => (cls === 2 ? 0.5 : cls === 3 ? 2 : 1));
      expect(await picked(db, NOW, 10, HOUR, learnt)).toEqual(['b-hot-10h', 'a-idle-30h', 'c-idle-26h', 'd-resolved-40d']);
      // With a maximum age of a day, the two idle open ones go first, stalest first; a resolved ticket never jumps so.
      expect(await picked(db, NOW, 10, HOUR, learnt, DAY)).toEqual(['a-idle-30h', 'c-idle-26h', 'b-hot-10h', 'd-resolved-40d']);
    });

    it('a class learnt to change unseen more often is re-read before the fixed weights would have it', async () => {
      // Fixed weights: the idle open ticket read 3 h ago first (3 against 1.9 × 1.5 = 2.85).
      await insertTickets(db, [
        { id: 'a-idle', open: true, syncedAt: NOW - 3 * HOUR },
        { id: 'b-unread', open: true, unread: true, syncedAt: NOW - 1.9 * HOUR },
      ]);
      expect(await picked(db, NOW, 10, HOUR)).toEqual(['a-idle', 'b-unread']);
      expect(await picked(db, NOW, 10, HOUR, neutralMultipliers())).toEqual(['a-idle', 'b-unread']);
      // Re-reads of unread, long-idle open tickets (class 5) found a change every time; of read idle ones (class 2), never.
      const unread = (await sampleOf('b-unread', NOW))!;
      const idle = (await sampleOf('a-idle', NOW))!;
      expect(unread.cls).toBe(5);
      expect(idle.cls).toBe(2);
      for (let i = 0; i < 20; i++) {
        await recordRevalidation(db, unread, true, NOW - HOUR + i * MIN);
        await recordRevalidation(db, idle, false, NOW - HOUR + i * MIN);
      }
      const learnt = await revalidationMultipliers(db);
      expect(learnt[5]).toBeGreaterThan(1);
      expect(learnt[2]).toBeLessThan(1);
      expect(await picked(db, NOW, 10, HOUR, learnt)).toEqual(['b-unread', 'a-idle']);
    });

    it('each pick carries what its re-read teaches: the ticket\'s class and fixed weight × hours since read', async () => {
      await insertTickets(db, [
        { id: 'open-active', open: true, lastContactAt: NOW - HOUR, syncedAt: NOW - 2 * HOUR },
        { id: 'resolved-unread-day', resolved: true, unread: true, updatedAt: NOW - 10 * HOUR, syncedAt: NOW - 4 * HOUR },
        { id: 'no-activity', self: true, createdAt: null, syncedAt: NOW - HOUR },
        { id: 'never-read', open: true },
      ]);
      const active = (await sampleOf('open-active', NOW))!;
      expect(active.cls).toBe(0);
      expect(active.expected).toBeCloseTo(2 * (1 + 0.5 * Math.exp(-1 / 24)), 6);
      const resolved = (await sampleOf('resolved-unread-day', NOW))!;
      expect(resolved.cls).toBe(6 + 3 + 1);
      expect(resolved.expected).toBeCloseTo(4 * 0.005 * 1.5 * (1 + 0.5 * Math.exp(-10 / 24)), 6);
      expect(await sampleOf('no-activity', NOW)).toEqual({ cls: 2, expected: 1 });
      expect(await sampleOf('never-read', NOW)).toBeNull();
      expect(await sampleOf('no-such-ticket', NOW)).toBeNull();
    });

    const learning = async (cls: number) => {
      const [row] = await queryRows<{ reads: number; found: number; expected: number; updated_at: string }>(
        db,
        sql`select reads, found, expected, updated_at from revalidation_learning where class = ${cls}`,
      );
      return { reads: Number(row!.reads), found: Number(row!.found), expected: Number(row!.expected), at: new Date(String(row!.updated_at)).getTime() };
    };

    it('the counts decay with a time constant of a week; a re-read counted at an earlier instant (a clock set back) is counted whole and the decay goes on from it', async () => {
      const sample = { cls: 4, expected: 2 };
      await recordRevalidation(db, sample, true, NOW - 7 * DAY);
      await recordRevalidation(db, sample, false, NOW);
      // The week-old read decays by e^-1 at NOW.
      expect((await learning(4)).reads).toBeCloseTo(Math.exp(-1) + 1, 6);
      await recordRevalidation(db, sample, true, NOW - DAY);
      const row = await learning(4);
      expect(row.reads).toBeCloseTo(Math.exp(-1) + 1 + 1, 6);
      expect(row.found).toBeCloseTo(Math.exp(-1) + 1, 6);
      expect(row.expected).toBeCloseTo(2 * (Math.exp(-1) + 1 + 1), 6);
      expect(row.at).toBe(NOW - DAY);
      // A week after that instant, everything decays by e^-1 once more.
      await recordRevalidation(db, sample, false, NOW + 6 * DAY);
      expect((await learning(4)).reads).toBeCloseTo(Math.exp(-1) * (Math.exp(-1) + 2) + 1, 6);
    });

    it('rows stamped decades ago or far ahead (a clock that started at 1970, a row a user wrote) neither fail a count nor stop the decay', async () => {
      await db.execute(sql`insert into revalidation_learning (class, reads, found, expected, updated_at) values
        (1, 50, 40, 10, '1970-01-01T00:00:00Z'), (2, 50, 40, 10, '1990-06-01T00:00:00Z'), (3, 50, 40, 10, '2199-01-01T00:00:00Z')`);
      // Decayed over decades, PostgreSQL's exp() gave a numeric too small for a float8, and the count failed.
      for (const cls of [1, 2, 3]) await recordRevalidation(db, { cls, expected: 1 }, false, NOW);
      for (const cls of [1, 2]) {
        const row = await learning(cls);
        expect(row.at).toBe(NOW);
        expect(row.reads).toBeCloseTo(1, 9);
        expect(row.found).toBeCloseTo(0, 9);
        expect(row.expected).toBeCloseTo(1, 9);
      }
      // The row from the future is counted whole once; from then on it decays like any other.
      const ahead = await learning(3);
      expect(ahead).toMatchObject({ reads: 51, found: 40, expected: 11, at: NOW });
      await recordRevalidation(db, { cls: 3, expected: 1 }, false, NOW + 7 * DAY);
      expect((await learning(3)).found).toBeCloseTo(40 * Math.exp(-1), 6);
    });

    for (const { label, winner, loser } of RANKING_CASES) {
      it(`ranking: ${label}`, async () => {
        await insertTickets(db, [
          { id: 'a', ...loser },
          { id: 'b', ...winner },
        ]);
        expect(await picked(db, NOW, 10, HOUR)).toEqual(['b', 'a']);
      });
    }
  });

  describe('plannerInputs: the lists', () => {
    it("gives each list's last poll up to now, null for a list never polled", async () => {
      await insertPolls(db, [
        { list: 'open', at: jan(5, 11, 0), changes: 1 },
        { list: 'open', at: jan(5, 12, 5, 30, 123), changes: 0 },
        { list: 'open', at: jan(4, 12, 0), changes: 3 },
        { list: 'self', at: jan(5, 9, 15), changes: 0 },
        { list: 'somewhere-else', at: jan(5, 12, 9), changes: 0 },
        // More than a minute ahead of the clock (a row a user inserted): not the last poll, or the list would wait until
        // then. Within the minute (a clock stepped back a little, which is not told as set back) it is.
        { list: 'self', at: jan(5, 12, 11, 1), changes: 0 },
        { list: 'open', at: jan(5, 12, 11), changes: 0 },
        { list: 'unassigned', at: Date.UTC(3000, 0, 1), changes: 0 },
      ]);
      expect((await plannerInputs(db, NOW, [], [])).lists).toEqual({
        open: { lastPolledAt: jan(5, 12, 11) },
        self: { lastPolledAt: jan(5, 9, 15) },
        unassigned: { lastPolledAt: null },
        resolved: { lastPolledAt: null },
      });
    });
  });

  describe('plannerInputs: what the ledger gained', () => {
    it('after a row: its newest id, and whether a row not among its own is there (another process spent); nothing without `ledger`', async () => {
      const ids = async () => (await queryRows<{ id: string | number }>(db, sql`select id from api_requests order by id`)).map((r) => Number(r.id));
      expect((await plannerInputs(db, NOW, [], [])).ledger).toBeUndefined();
      expect((await plannerInputs(db, NOW, [], [], undefined, { after: 0, own: [] })).ledger).toEqual({ latest: 0, others: false });
      await insertRequests(db, [NOW - 3 * MIN, NOW - 2 * MIN]);
      const [first, second] = await ids();
      // Its own rows only: nobody else spent.
      expect((await plannerInputs(db, NOW, [], [], undefined, { after: 0, own: [first!, second!] })).ledger).toEqual({ latest: second, others: false });
      // One of them not its own: another process's.
      expect((await plannerInputs(db, NOW, [], [], undefined, { after: 0, own: [first!] })).ledger).toEqual({ latest: second, others: true });
      // Rows up to `after` are not looked at; nothing after it: `after` is the newest.
      expect((await plannerInputs(db, NOW, [], [], undefined, { after: first!, own: [second!] })).ledger).toEqual({ latest: second, others: false });
      expect((await plannerInputs(db, NOW, [], [], undefined, { after: second!, own: [] })).ledger).toEqual({ latest: second, others: false });
    });
  });

  describe('plannerInputs: the history', () => {
    it('is empty for an empty mirror', async () => {
      expect(await history(db)).toEqual({
        changes: new Array<number>(HISTORY_BUCKETS).fill(0),
        firstPollAt: null,
        pollsLastDay: 0,
        freeing: new Array<number>(24).fill(0),
        sentThisHour: 0,
        backgroundThisHour: 0,
        nextExpiryAt: null,
        nextRetryAt: null,
      });
    });

    for (const { label, sentAt, k } of FREEING_CASES) {
      it(`counts a request sent ${label} ${k === null ? 'nowhere (not in the window)' : `in freeing[${k}]`}`, async () => {
        await insertRequests(db, [sentAt]);
        const h = await history(db);
        expect(h.freeing).toEqual(spikes(24, [[k, 1]]));
        expect(h.nextExpiryAt).toBe(k === null ? null : sentAt + DAY);
        expect(h.sentThisHour).toBe(k !== null && sentAt >= jan(5, 12, 0) ? 1 : 0);
      });
    }

    it('sums the window by hour of freeing, and the oldest request in it gives nextExpiryAt', async () => {
      await insertRequests(
        db,
        FREEING_CASES.map((c) => c.sentAt),
      );
      await insertRequests(db, [jan(4, 13, 40), jan(4, 13, 41), jan(5, 3, 0)]);
      const h = await history(db);
      const expected = spikes(24, [...FREEING_CASES.map((c): [number | null, number] => [c.k, 1]), [1, 2], [15, 1]]);
      expect(h.freeing).toEqual(expected);
      expect(h.freeing.reduce((a, b) => a + b, 0)).toBe(FREEING_CASES.filter((c) => c.k !== null).length + 3);
      expect(h.nextExpiryAt).toBe(NOW + 1);
    });

    it('counts in sentThisHour only the requests of the current clock hour up to now', async () => {
      await insertRequests(db, [
        jan(4, 12, 5),
        jan(5, 11, 0),
        jan(5, 11, 59, 59, 999),
        jan(5, 12, 0),
        jan(5, 12, 0, 0, 1),
        jan(5, 12, 5),
        NOW,
        NOW + 1,
        jan(5, 13, 0),
      ]);
      const h = await history(db);
      expect(h.sentThisHour).toBe(4);
      // At 13:00 the clock hour turns: what 12:xx sent no longer counts.
      expect((await history(db, jan(5, 13, 0))).sentThisHour).toBe(1);
    });

    it('counts in backgroundThisHour the current clock hour\'s backfill and revalidation, as the ledger keeps them', async () => {
      // The pace of revalidation counts these alone (a restarted daemon reads them back from the ledger).
      await insertRequests(db, [jan(5, 11, 59), jan(5, 12, 1), jan(5, 12, 2)], 'revalidate');
      await insertRequests(db, [jan(5, 12, 3)], 'backfill');
      await insertRequests(db, [jan(5, 12, 4)], 'detail');
      await insertRequests(db, [jan(5, 12, 5), jan(5, 12, 6)]);
      const h = await history(db);
      expect(h.sentThisHour).toBe(6);
      expect(h.backgroundThisHour).toBe(3);
      expect((await history(db, jan(5, 13, 0))).backgroundThisHour).toBe(0);
    });

    for (const { label, at, k } of CHANGES_CASES) {
      it(`counts the changes of a poll at ${label} ${k === null ? 'nowhere (ignored)' : `in changes[${k}]`}`, async () => {
        await insertPolls(db, [{ list: 'open', at, changes: 7 }]);
        const h = await history(db);
        expect(h.changes).toHaveLength(HISTORY_BUCKETS);
        expect(h.changes).toEqual(spikes(HISTORY_BUCKETS, [[k, 7]]));
        expect(h.pollsLastDay).toBe(k !== null && k < 48 ? 1 : 0);
        expect(h.firstPollAt).toBe(at);
      });
    }

    it('sums changes over the four lists per half hour, and counts the polls of the last 48 half hours', async () => {
      await insertPolls(db, [
        // A sweep in the current half hour.
        ...LIST_NAMES.map((list, i) => ({ list, at: jan(5, 12, 5), changes: i })),
        { list: 'open', at: jan(5, 11, 45), changes: 5 },
        { list: 'resolved', at: jan(5, 11, 31), changes: 2 },
        // The 47th half hour before the current one is in the day; the 48th is not.
        { list: 'self', at: jan(4, 12, 30), changes: 0 },
        { list: 'self', at: jan(4, 12, 29, 59, 999), changes: 11 },
        // A list that is not one of the four is not the planner's business.
        { list: 'somewhere-else', at: jan(5, 12, 6), changes: 100 },
      ]);
      const h = await history(db);
      expect(h.changes).toEqual(
        spikes(HISTORY_BUCKETS, [
          [0, 0 + 1 + 2 + 3],
          [1, 5 + 2],
          [48, 11],
        ]),
      );
      expect(h.pollsLastDay).toBe(4 + 2 + 1);
    });

    it('counts no more changes for a poll than its list could show: each item listed, each member before it leaving', async () => {
      await insertPolls(db, [
        // The first poll of open (nothing before it: its items), then one after a poll that withheld 3 leaves.
        { list: 'open', at: jan(5, 11, 40), items: 10, changes: 2147483647, withheld: 3 },
        { list: 'open', at: jan(5, 11, 50), items: 4, changes: 2147483647 },
        // Within the bound, counted as it is: 6 items, 4 + 0 members before.
        { list: 'open', at: jan(5, 12, 1), items: 6, changes: 10 },
        // The same instant: the lower id is the poll before.
        { list: 'self', at: jan(5, 12, 2), items: 7, changes: 0 },
        { list: 'self', at: jan(5, 12, 2), items: 0, changes: 1_000_000 },
      ]);
      const kept = new ListActivity();
      const expected = spikes(HISTORY_BUCKETS, [[0, 10 + 7], [1, 10 + (4 + 13)]]);
      expect((await history(db)).changes).toEqual(expected);
      expect((await plannerInputs(db, NOW, [], [], kept)).history.changes).toEqual(expected);
      // A plan that reads only the polls since the last one finds the poll before each in the table: 5 + (6 + 0).
      await insertPolls(db, [{ list: 'open', at: NOW + MIN, items: 5, changes: 2147483647 }]);
      const after = spikes(HISTORY_BUCKETS, [[0, 10 + 7 + 11], [1, 10 + 17]]);
      expect((await plannerInputs(db, NOW + 2 * MIN, [], [], kept)).history.changes).toEqual(after);
      expect((await history(db, NOW + 2 * MIN)).changes).toEqual(after);
    });

    it('gives the first list poll ever as firstPollAt, even one older than the eight days of changes', async () => {
      await insertPolls(db, [
        { list: 'open', at: jan(5, 12, 0), changes: 1 },
        { list: 'resolved', at: Date.UTC(2025, 11, 6, 8, 15, 30, 123), changes: 4 },
        { list: 'self', at: jan(1, 0, 0), changes: 2 },
      ]);
      const h = await history(db);
      expect(h.firstPollAt).toBe(Date.UTC(2025, 11, 6, 8, 15, 30, 123));
      // Thirty days ago is outside the window of changes.
      expect(h.changes).toEqual(spikes(HISTORY_BUCKETS, [[0, 1], [(jan(5, 12, 0) - jan(1, 0, 0)) / BUCKET_MS, 2]]));
    });

    it('gives the earliest back-off that ends after now as nextRetryAt', async () => {
      await insertTickets(db, [
        { id: 'ended', open: true, retryAfter: NOW - MIN },
        { id: 'ends-now', open: true, retryAfter: NOW },
        { id: 'later', open: true, syncedAt: NOW - DAY, retryAfter: NOW + 2 * HOUR },
        { id: 'next', open: true, dueSince: NOW - HOUR, retryAfter: NOW + 5 * MIN + 1 },
      ]);
      expect((await history(db)).nextRetryAt).toBe(NOW + 5 * MIN + 1);
      expect((await history(db, NOW + 5 * MIN + 1)).nextRetryAt).toBe(NOW + 2 * HOUR);
      expect((await history(db, NOW + 2 * HOUR)).nextRetryAt).toBeNull();
    });

    it('kept between plans (ListActivity), counts what a whole read counts, plan after plan: polls recorded since, polls dated ahead whose half hour comes, the window moving on, a clock set back', async () => {
      // A seeded walk: each step records a few polls — most at the plan's instant (the engine's own: in virtual time a
      // poll may bear the very instant of the plan before it), some back in the eight days, some ahead (a row a user
      // wrote), one far ahead — then plans again, a few minutes to a day later, and now and then an hour earlier.
      let seed = 7;
      const random = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
      const kept = new ListActivity();
      let now = NOW;
      for (let step = 0; step < 60; step++) {
        const polls: Array<{ list: string; at: number; changes: number }> = [];
        for (let i = Math.floor(random() * 4); i > 0; i--) {
          const r = random();
          const at = r < 0.6 ? now : r < 0.8 ? now - Math.floor(random() * 8 * DAY) : r < 0.95 ? now + Math.floor(random() * 3 * HOUR) : now + 30 * DAY;
          polls.push({ list: LIST_NAMES[Math.floor(random() * 4)]!, at, changes: Math.floor(random() * 5) });
        }
        await insertPolls(db, polls);
        const r = random();
        now += r < 0.1 ? -HOUR : r < 0.8 ? Math.floor(random() * 20 * MIN) : Math.floor(random() * DAY);
        const whole = (await plannerInputs(db, now, [], [])).history;
        const incremental = (await plannerInputs(db, now, [], [], kept)).history;
        expect({ step, changes: incremental.changes, polls: incremental.pollsLastDay }).toEqual({ step, changes: whole.changes, polls: whole.pollsLastDay });
      }
    });

    it('kept between plans, reads only what the last plan did not count, and two plans at once count nothing twice', async () => {
      const kept = new ListActivity();
      await insertPolls(db, [{ list: 'open', at: NOW - HOUR, changes: 2 }]);
      await plannerInputs(db, NOW, [], [], kept);
      // A row the last plan counted, changed behind its back: not read again (list_polls is the mirror's own log).
      await db.execute(sql`update list_polls set changes = 100`);
      await insertPolls(db, [{ list: 'self', at: NOW + MIN, changes: 3 }]);
      const [a, b] = await Promise.all([plannerInputs(db, NOW + 2 * MIN, [], [], kept), plannerInputs(db, NOW + 2 * MIN, [], [], kept)]);
      const expected = spikes(HISTORY_BUCKETS, [[0, 3], [2, 2]]);
      // The first counted into `kept`, reading the new row alone; the second, at once, read everything itself.
      expect([a.history.changes, b.history.changes].map((c) => c.reduce((x, y) => x + y, 0))).toEqual([5, 103]);
      expect((await plannerInputs(db, NOW + 3 * MIN, [], [], kept)).history.changes).toEqual(expected);
      // A plan at an instant before the last one's (a clock set back, its rows restamped) reads everything again.
      expect((await plannerInputs(db, NOW + MIN, [], [], kept)).history.changes).toEqual(spikes(HISTORY_BUCKETS, [[0, 3], [2, 100]]));
    });

    it('kept between plans, still counts every poll after a row a user wrote with the highest id there is, and one with a negative id', async () => {
      const kept = new ListActivity();
      await db.execute(sql`insert into list_polls (id, list, at, items, changes) values
        (9223372036854775807, 'open', ${isoMicros(NOW - HOUR)}::timestamptz, 10, 4), (-5, 'self', ${isoMicros(NOW - 2 * HOUR)}::timestamptz, 10, 1)`);
      await plannerInputs(db, NOW, [], [], kept);
      // The engine's polls get ids below the user's; each is answered after the plan before it, and so still counted.
      let now = NOW;
      for (let i = 1; i <= 5; i++) {
        await insertPolls(db, [{ list: 'unassigned', at: now + 1, changes: i }]);
        now += 10 * MIN;
        const whole = (await plannerInputs(db, now, [], [])).history.changes;
        expect((await plannerInputs(db, now, [], [], kept)).history.changes).toEqual(whole);
      }
      expect((await plannerInputs(db, now, [], [], kept)).history.changes.reduce((a, b) => a + b, 0)).toBe(4 + 1 + 15);
    });

    it('keeps microseconds from moving a bucket: 11:59:59.999999 is the previous half hour', async () => {
      await db.execute(sql`
        insert into list_polls (list, at, items, changes) values ('open', ${isoMicros(jan(5, 11, 59, 59, 999), 999)}::timestamptz, 3, 3)`);
      await db.execute(sql`
        insert into api_requests (at, method, path, kind) values (${isoMicros(jan(5, 11, 59, 59, 999), 999)}::timestamptz, 'GET', '/x', 'detail')`);
      const h = await history(db);
      expect(h.changes.slice(0, 3)).toEqual([0, 3, 0]);
      expect(h.sentThisHour).toBe(0);
      expect(h.freeing).toEqual(spikes(24, [[23, 1]]));
    });
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { historyOf } from '../../src/db/repos/history.ts';
import { loadSamples } from '../../src/db/repos/ledger.ts';
import { AuthError } from '../../src/errors.ts';
import { DAY_MS } from '../../src/time.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

const HOUR = 3_600_000;

describe.each(backends)('sync engine on $name against the simulator', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const backlog = () => count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and deleted_at is null`);
  const synced = async () => (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 && (await backlog()) === 0;

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('backfills an exact copy: every field, timestamps to the microsecond, text byte for byte, no URL stored', async () => {
    await m.runUntil(synced);
    expect(await backlog()).toBe(0);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
    const [dump] = await queryRows<{ text: string }>(
      m.db,
      sql`select (select coalesce(string_agg(raw::text, ''), '') from tickets) || (select coalesce(string_agg(message, ''), '') from messages) as text`,
    );
    expect(dump!.text).not.toContain(m.sim.storageUrl);
    expect(dump!.text).not.toMatch(/signature=/);
    expect(m.sim.log.filter((r) => r.status === 429)).toHaveLength(0);
  });

  it('counts the tickets a pass changed, not the rows: a ticket in three lists and its detail is one', async () => {
    const [first] = await m.runUntil(() => false, 1);
    const tickets = await count(m.db, sql`select count(*)::int as n from tickets`);
    expect(tickets).toBeGreaterThan(0);
    // Every ticket is new in the first pass: each counted once, though open tickets are in two or three lists.
    expect(first!.ticketsChanged).toBe(tickets);
    const [run] = await queryRows<{ tickets_changed: number }>(m.db, sql`select tickets_changed from sync_runs order by id limit 1`);
    expect(run!.tickets_changed).toBe(tickets);
  });

  /**
   * Another process on the same database — a `check` or `sync` beside `run` — records all but three of the day's
   * requests in the ledger: the engine counts them, and sends no more than those three in the ten minutes after.
   */
  const othersSpendTheDay = async () => {
    const before = m.engine.gate.snapshot();
    const others = before.dailyLeft - 3;
    await m.db.execute(sql`insert into api_requests (at, method, path, status, kind)
      select ${new Date(m.clock.now() - 60_000).toISOString()}::timestamptz, 'GET', '/api/v1/tickets/self', 200, 'lookup' from generate_series(1, ${others})`);
    m.clock.advance(61_000);
    const sent = m.sim.log.length;
    const passes = await m.runFor(10 * 60_000);
    expect(passes.flatMap((p) => p.errors)).toEqual([]);
    // Before, the engine kept the ledger as it was at start plus its own requests, and went on spending past the limit.
    expect(m.engine.gate.snapshot().dailyUsed).toBeGreaterThanOrEqual(before.dailyUsed + others);
    expect(m.sim.log.length - sent).toBeLessThanOrEqual(3);
    return before;
  };

  it('counts what other processes wrote to the ledger since its last pass: a budget they spent is not spent again', async () => {
    await m.runUntil(synced);
    const before = await othersSpendTheDay();
    expect(await count(m.db, sql`select count(*)::int as n from api_requests`)).toBeLessThanOrEqual(before.dailyAllowed);
  });

  it('still counts what other processes wrote after a row a user inserted with the highest id there is', async () => {
    await m.runUntil(synced);
    // A hand-made ledger row: the sequence does not move, so every request after it gets a lower id.
    await m.db.execute(sql`insert into api_requests (id, at, method, path, status, kind)
      values (9223372036854775807, ${new Date(m.clock.now() - 3_600_000).toISOString()}::timestamptz, 'GET', '/by-hand', 200, 'lookup')`);
    m.clock.advance(61_000);
    const [pass] = await m.runUntil(() => false, 1);
    expect(pass!.errors).toEqual([]);
    await m.restart();
    await othersSpendTheDay();
  });

  /** Once synced, an open unassigned ticket assigned to the token's user: its id and its history rows before. */
  const assignedToSelf = async () => {
    await m.runUntil(synced);
    const model = m.sim.model;
    const moved = model.listUnassigned().find((t) => t.status !== 'resolved')!.id;
    const before = await historyOf(m.db, moved);
    model.assign(moved, 'self');
    return { model, moved, before };
  };

  it('one history row per observed state: a ticket moved from one list to another between two polls of a sweep gets one row', async () => {
    const { model, moved, before } = await assignedToSelf();
    await m.runFor(HOUR);
    const after = await historyOf(m.db, moved);
    // Before: a row in `self` and still in `unassigned`, for the time between the two lists' polls, which no poll saw,
    // then one in `self` assigned to nobody, until the detail of the same pass.
    expect(after.filter((h) => h.in_self && h.in_unassigned)).toEqual([]);
    expect(after).toHaveLength(before.length + 1);
    const [previous, current] = after.slice(-2);
    expect(current).toMatchObject({ in_self: true, in_unassigned: false, assigned_to: model.self, valid_to: null });
    expect(previous!.valid_to).toBe(current!.valid_from);
    // The change happened in (changed_after, valid_from]: after the state before was last seen, by this pass's first poll.
    expect(Date.parse(current!.changed_after!)).toBeLessThanOrEqual(Date.parse(current!.valid_from));
    expect(Date.parse(current!.changed_after!)).toBeGreaterThan(Date.parse(before.at(-1)!.valid_from));
    expect(await count(m.db, sql`select count(*)::int as n from ticket_history where valid_to is null and ticket_id = ${moved}`)).toBe(1);
  });

  it('one history row per observed state also when the pass ends early, its detail throttled after the polls', async () => {
    const { model, moved, before } = await assignedToSelf();
    m.sim.faults.inject({ kind: 'status429', match: `/api/v1/ticket/${moved}`, retryAfterSec: 60 });
    const passes = await m.runFor(HOUR);
    expect(passes.some((p) => p.stoppedBy === 'rate_limited' && p.polls.length > 0)).toBe(true);
    expect(m.sim.log.filter((r) => r.status === 429)).toHaveLength(1);
    const after = await historyOf(m.db, moved);
    // The moment between the two lists' polls (in neither), which no poll saw, is not a state of its own. Two new rows:
    // in self as the lists show it, then assigned to self once the detail came, a pass later (no list item carries
    // assigned_to).
    expect(after.filter((h) => h.in_self === h.in_unassigned)).toEqual([]);
    expect(after).toHaveLength(before.length + 2);
    expect(after.at(-2)).toMatchObject({ in_self: true, in_unassigned: false, assigned_to: null });
    expect(after.at(-1)).toMatchObject({ in_self: true, in_unassigned: false, assigned_to: model.self, valid_to: null });
    for (let i = before.length; i < after.length; i++) expect(after[i - 1]!.valid_to).toBe(after[i]!.valid_from);
  });

  it('catches every kind of change, with history rows', async () => {
    await m.runUntil(synced);
    const model = m.sim.model;
    const open1 = model.randomTicketId('open')!;
    const resolvedId = model.randomTicketId('resolved')!;
    const fresh = model.newTicket();
    model.inboundMessage(open1);
    model.setPriority(open1, 'urgent');
    model.assign(open1, 'self');
    model.reopen(resolvedId);
    const toResolve = [...model.listOpen()].find((t) => t.id !== open1)!.id;
    model.resolve(toResolve);
    await m.runFor(4 * HOUR);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));

    const [row] = await queryRows<{ in_self: boolean; priority: string }>(m.db, sql`select in_self, priority from tickets where id = ${open1}`);
    expect(row).toEqual({ in_self: true, priority: 'urgent' });
    const history = await historyOf(m.db, open1);
    expect(history.at(-1)).toMatchObject({ priority: 'urgent', in_self: true, valid_to: null });
    expect(history.length).toBeGreaterThan(1);
    for (const h of history.slice(1)) expect(h.changed_after).not.toBeNull();
    const reopened = await historyOf(m.db, resolvedId);
    expect(reopened.at(-1)).toMatchObject({ in_open: true, in_resolved: false });
    expect(reopened.some((h) => h.in_resolved)).toBe(true);
    expect((await historyOf(m.db, fresh.id)).length).toBeGreaterThanOrEqual(1);
  });

  it('marks a deleted ticket and keeps it', async () => {
    await m.runUntil(synced);
    const id = m.sim.model.randomTicketId('open')!;
    m.sim.model.deleteTicket(id);
    await m.runFor(8 * HOUR);
    const [row] = await queryRows<{ missing_since: string | null; deleted_at: string | null }>(
      m.db,
      sql`select missing_since, deleted_at from tickets where id = ${id}`,
    );
    expect(row!.missing_since).not.toBeNull();
    expect(row!.deleted_at).not.toBeNull();
    expect(await count(m.db, sql`select count(*)::int as n from messages where ticket_id = ${id}`)).toBeGreaterThan(0);
  });

  it('a failed list call marks nothing missing and changes nothing', async () => {
    await m.runUntil(synced);
    const before = await mirrorAsTruth(m.db);
    m.sim.faults.inject({ match: /^\/api\/v1\/tickets\/resolved$/, kind: 'truncated', times: 100 });
    await m.runFor(13 * HOUR);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where missing_since is not null or deleted_at is not null`)).toBe(0);
    expect(await mirrorAsTruth(m.db)).toEqual(before);
  });

  it('stops after one request on a rejected token or an HTML login page', async () => {
    m.sim.faults.inject({ kind: 'html', times: 1 });
    await expect(m.engine.pass()).rejects.toBeInstanceOf(AuthError);
    expect(m.sim.log).toHaveLength(1);
    expect(await count(m.db, sql`select count(*)::int as n from api_requests`)).toBe(1);
  });

  it('rides out a 429 storm without a retry storm', async () => {
    m.sim.faults.inject({ kind: 'status429', times: 50 });
    await m.runFor(10 * 60_000);
    const during = m.sim.log.length;
    // One 429 blocks the gate for the Retry-After; the engine does not hammer.
    expect(during).toBeLessThanOrEqual(12);
    await m.runUntil(synced);
    expect(await backlog()).toBe(0);
  });

  it('survives a restart mid-backfill: no request twice, the 24 h ledger kept', async () => {
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`)) >= 5);
    const ledgerBefore = await count(m.db, sql`select count(*)::int as n from api_requests`);
    await m.restart();
    expect(m.engine.gate.snapshot().dailyUsed).toBe(ledgerBefore);
    await m.runUntil(synced);
    const details = m.sim.log.filter((r) => r.path.startsWith('/api/v1/ticket/'));
    const perTicket = new Map<string, number>();
    for (const d of details) perTicket.set(d.path, (perTicket.get(d.path) ?? 0) + 1);
    expect([...perTicket.values()].every((n) => n === 1)).toBe(true);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  it('a user who empties api_requests (TRUNCATE, DELETE) does not give a restarted daemon the day\'s budget again', async () => {
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`)) >= 5);
    const used = m.engine.gate.snapshot().dailyUsed;
    expect(used).toBeGreaterThan(10);
    await m.db.execute(sql`truncate api_requests`);
    await m.restart();
    // Counted from sync_runs: every request of the passes, at the end of its pass.
    expect(m.engine.gate.snapshot().dailyUsed).toBe(used);
    // A few rows deleted of a ledger that has some again: the shortfall alone is added.
    await m.runFor(10 * 60_000);
    const usedNow = m.engine.gate.snapshot().dailyUsed;
    await m.db.execute(sql`delete from api_requests where id in (select id from api_requests order by id desc limit 3)`);
    await m.restart();
    expect(m.engine.gate.snapshot().dailyUsed).toBe(usedNow);

    // Forged rows of sync_runs (the user's table too): one claiming two billion requests in a 10-minute pass counts
    // what such a pass could send at the minute limit (11 minutes × 60), one that ends in the future nothing.
    const now = m.clock.now();
    await m.db.execute(sql`insert into sync_runs (started_at, finished_at, requests) values
      (${new Date(now - 20 * 60_000).toISOString()}::timestamptz, ${new Date(now - 10 * 60_000).toISOString()}::timestamptz, 2147483647),
      (${new Date(now).toISOString()}::timestamptz, ${new Date(now + 3_600_000).toISOString()}::timestamptz, 500)`);
    await m.restart();
    const inForgedPass = await count(m.db, sql`select count(*)::int as n from api_requests where at >= ${new Date(now - 20 * 60_000).toISOString()}::timestamptz and at <= ${new Date(now - 10 * 60_000).toISOString()}::timestamptz`);
    expect(m.engine.gate.snapshot().dailyUsed).toBe(usedNow + 11 * 60 - inForgedPass);

    // A forged pass of 23 hours claims more than any 24 h can hold: all the shortfall together counts the daily limit
    // at most (one sample each: memory), and a minute limit too large for bigint arithmetic does not break the query.
    await m.db.execute(sql`insert into sync_runs (started_at, finished_at, requests) values
      (${new Date(now - 23 * 3_600_000).toISOString()}::timestamptz, ${new Date(now - 60_000).toISOString()}::timestamptz, 2147483647)`);
    let told = 0;
    const samples = await loadSamples(m.db, now - DAY_MS, { minute: 1e17, daily: 1440 }, (n) => (told = n));
    expect(told).toBe(1440);
    // With the ledger's rows, the newest 1,440 of all: those since the forged pass's end (the ledger's, and the
    // shortfall of a later pass whose rows were deleted above, when one ended after it), then its shortfall.
    const end = now - 60_000;
    const ledgerSinceEnd = await count(m.db, sql`select count(*)::int as n from api_requests where at > ${new Date(end).toISOString()}::timestamptz`);
    const sinceEnd = samples.filter((s) => s.at > end).length;
    expect(samples).toHaveLength(1440);
    expect(sinceEnd).toBeGreaterThanOrEqual(ledgerSinceEnd);
    expect(sinceEnd).toBeLessThanOrEqual(ledgerSinceEnd + 3);
    expect(samples.filter((s) => s.at === end && s.remaining === null)).toHaveLength(1440 - sinceEnd);
  });
});

describe.each(backends)('a ticket whose detail keeps failing, on $name', ({ open }) => {
  it('backs off alone and does not block the others', { timeout: 120_000 }, async () => {
    const database = await open();
    const m = await virtualMirror(database);
    try {
      const fetched = () => count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`);
      await m.runUntil(async () => (await fetched()) === m.sim.model.groundTruth().length);
      const victim = m.sim.model.randomTicketId('open')!;
      const others = m.sim.model.listOpen().filter((t) => t.id !== victim).slice(0, 3).map((t) => t.id);
      m.sim.faults.inject({ match: `/api/v1/ticket/${victim}`, kind: 'status500', times: 1000 });
      // A status change shows in the open list: each ticket's detail becomes due.
      for (const id of [victim, ...others]) {
        const now = m.sim.model.listOpen().find((t) => t.id === id)!.status;
        m.sim.model.setStatus(id, now === 'on_hold' ? 'open' : 'on_hold');
      }
      await m.runFor(30 * 60_000);
      const rows = await queryRows<{ id: string; due: boolean; failures: number }>(
        m.db,
        sql`select id, detail_due_since is not null as due, detail_failures as failures from tickets where id in (${victim}, ${others[0]!}, ${others[1]!}, ${others[2]!})`,
      );
      const byId = new Map(rows.map((r) => [r.id, r]));
      expect(byId.get(victim)).toMatchObject({ due: true });
      expect(byId.get(victim)!.failures).toBeGreaterThan(0);
      for (const id of others) expect(byId.get(id)).toMatchObject({ due: false, failures: 0 });
      // Backing off: far fewer attempts on the victim than passes in half an hour.
      const attempts = m.sim.log.filter((r) => r.path === `/api/v1/ticket/${victim}`).length;
      expect(attempts).toBeLessThanOrEqual(3 * 6);
    } finally {
      await m.close();
      await database.destroy();
    }
  });
});

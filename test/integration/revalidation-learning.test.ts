import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * What a pass's re-reads teach the revalidation order (revalidation_learning, db/repos/work.ts): every revalidation
 * request that got a detail is counted in its ticket's class, in the detail's transaction, and counted as finding a
 * change exactly when the detail differed. Real HTTP to the simulator, virtual time.
 */
describe.each(backends)('revalidation learns from its re-reads, on $name', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const learnt = () =>
    queryRows<{ class: number; reads: number; found: number }>(m.db, sql`select class, reads, found from revalidation_learning order by class`);

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database, { openTickets: 6, resolvedTickets: 4, dailyLimit: 100_000, minuteLimit: 600 }, { daily: 100_000, minute: 600, reserve: 0.1 });
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('counts each re-read in its class, and as a find only when the detail changed unseen', async () => {
    // An open ticket, read: another agent's reply on it changes nothing any list shows.
    const ticket = m.sim.model.randomTicketId('open')!;
    m.sim.model.setStatus(ticket, 'open');
    m.sim.model.markRead(ticket);
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`)) === 10);
    expect(await learnt()).toEqual([]);
    m.sim.model.agentReply(ticket);
    const reread: Array<{ id: string; changed: boolean }> = [];
    const onFetched = (e: { id: string; changed: boolean; kind: string }) => {
      if (e.kind === 'revalidate') reread.push({ id: e.id, changed: e.changed });
    };
    m.engine.events.on('detail:fetched', onFetched);
    const hasReply = () => count(m.db, sql`select count(*)::int as n from messages where ticket_id = ${ticket}`);
    const before = await hasReply();
    await m.runUntil(async () => (await hasReply()) > before);
    m.engine.events.off('detail:fetched', onFetched);
    const rows = await learnt();
    const reads = rows.reduce((s, r) => s + Number(r.reads), 0);
    const found = rows.reduce((s, r) => s + Number(r.found), 0);
    // The reply was found by a re-read, the only one that found anything.
    expect(reread.filter((r) => r.changed)).toEqual([{ id: ticket, changed: true }]);
    // Every re-read counted once (the decay over the minutes this took is below a part in a thousand), the find once.
    expect(reads).toBeCloseTo(reread.length, 1);
    expect(found).toBeCloseTo(1, 2);
    // In the class of a ticket in an active list.
    const finds = await queryRows<{ cls: number }>(m.db, sql`select class::int as cls from revalidation_learning where found > 0.5`);
    expect(finds).toHaveLength(1);
    expect(finds[0]!.cls).toBeLessThan(6);
  });

  it('rows a user stamped decades ago or far ahead in every class stop no re-read, and are brought back to now', async () => {
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`)) === 10);
    await m.db.execute(sql`insert into revalidation_learning (class, reads, found, expected, updated_at)
      select c, 50, 40, 10, case when c % 2 = 0 then timestamptz '2000-01-01T00:00:00Z' else timestamptz '2199-01-01T00:00:00Z' end
      from generate_series(0, 11) as c
      on conflict (class) do update set reads = 50, found = 40, expected = 10, updated_at = excluded.updated_at`);
    const reread: string[] = [];
    const failed: string[] = [];
    const onFetched = (e: { id: string; kind: string }) => {
      if (e.kind === 'revalidate') reread.push(e.id);
    };
    const onFailed = (e: { id: string }) => failed.push(e.id);
    m.engine.events.on('detail:fetched', onFetched);
    m.engine.events.on('detail:failed', onFailed);
    await m.runUntil(async () => reread.length >= 10);
    m.engine.events.off('detail:fetched', onFetched);
    m.engine.events.off('detail:failed', onFailed);
    expect(failed).toEqual([]);
    // Each class re-read since has its instant at a pass's, not in 1970 nor in 2199.
    const stamps = await queryRows<{ at: string }>(m.db, sql`select updated_at::text as at from revalidation_learning where reads <> 50`);
    expect(stamps.length).toBeGreaterThan(0);
    for (const { at } of stamps) {
      expect(new Date(at).getTime()).toBeLessThanOrEqual(m.clock.now());
      expect(new Date(at).getTime()).toBeGreaterThan(m.clock.now() - 24 * 3_600_000);
    }
  });
});

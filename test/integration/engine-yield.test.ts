import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * SyncEngine.pass's soft deadline (what a fleet worker's slice and graceful stop use): past `until`, or once `yield`
 * is aborted, the pass starts no request; the ones in flight finish and what they brought is written; the work left
 * is the next pass's. Virtual time: the clock is moved from the engine's own events.
 */
describe.each(backends)('a pass that yields, on $name', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const fetched = () => count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`);

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database, { openTickets: 20, resolvedTickets: 20, dailyLimit: 100_000, minuteLimit: 600 }, { daily: 100_000, minute: 600, reserve: 0.1 });
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('past its deadline before its first request: nothing is sent, and it says it yielded, not failed', async () => {
    const s = await m.engine.pass({ until: m.clock.now() });
    expect(s).toMatchObject({ requests: 0, yielded: true, stoppedBy: null, polls: [] });
    expect(m.sim.log).toHaveLength(0);
  });

  it('an aborted yield signal does the same', async () => {
    const s = await m.engine.pass({ yield: AbortSignal.abort() });
    expect(s).toMatchObject({ requests: 0, yielded: true });
    expect(m.sim.log).toHaveLength(0);
  });

  it('the deadline passing mid-pass: no request starts after it, what came back is written, the next pass goes on', async () => {
    const until = m.clock.now() + 60_000;
    let sent = 0;
    // The third request of the pass (its third list poll: polls go one by one) moves the clock past the deadline.
    const onSent = () => {
      if (++sent === 3) m.clock.advance(120_000);
    };
    m.engine.events.on('request:sent', onSent);
    const s = await m.engine.pass({ until });
    m.engine.events.off('request:sent', onSent);
    expect(s).toMatchObject({ yielded: true, stoppedBy: null, requests: 3, detailsFetched: 0, missing: 0 });
    expect(s.polls).toHaveLength(3);
    expect(m.sim.log).toHaveLength(3);
    // The three lists it polled are written: their tickets are in the mirror.
    expect(await count(m.db, sql`select count(*)::int as n from tickets`)).toBeGreaterThan(0);
    const next = await m.engine.pass();
    expect(next.yielded).toBeUndefined();
    expect(next.requests).toBeGreaterThan(0);
    expect(await fetched()).toBe(next.detailsFetched);
  });

  it('yieldBackground: the live work is done (polls, the details they made due), no backfill or revalidation starts', async () => {
    const kinds: string[] = [];
    const onSent = (e: { kind: string }) => kinds.push(e.kind);
    m.engine.events.on('request:sent', onSent);
    const pass = async (yieldBackground: boolean) => {
      kinds.length = 0;
      return m.engine.pass({ yieldBackground: () => yieldBackground });
    };
    // The first pass polls every list; what it finds is backfill, for later passes.
    const first = await pass(true);
    expect(kinds.length).toBe(4);
    expect(kinds.every((k) => k.startsWith('list_'))).toBe(true);
    expect(first.detailsFetched).toBe(0);
    const ticket = m.sim.model.randomTicketId('open')!;
    m.sim.model.markRead(ticket);
    await m.runUntil(async () => (await fetched()) === 40);
    // A customer writes on an open ticket: the open list shows it unread, and its detail is live work.
    m.sim.model.inboundMessage(ticket);
    m.clock.advance(30 * 60_000);
    const synced = () => queryRows<{ at: string }>(m.db, sql`select detail_synced_at::text as at from tickets where id = ${ticket}`);
    const before = await synced();
    const second = await pass(true);
    expect(kinds).toContain('list_open');
    expect(kinds).toContain('detail');
    expect(kinds.filter((k) => k === 'backfill' || k === 'revalidate')).toEqual([]);
    expect(second.yielded).toBe(true);
    expect(await synced()).not.toEqual(before);
    // Nobody waiting: the background work (revalidation, with this budget) goes on.
    const third = await pass(false);
    expect(kinds).toContain('revalidate');
    expect(third.yielded).toBeUndefined();
    m.engine.events.off('request:sent', onSent);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ListName } from '../../src/api/endpoints.ts';
import { sql } from '../../src/db/connect.ts';
import type { SyncEventMap } from '../../src/sync/events.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, TICK_MS, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

type Polled = SyncEventMap['list:polled'][0];

/**
 * A list that shrinks by more than half (and by at least 10) waits for the next poll to confirm it: a gateway's empty
 * 200 must not take 24 tickets out of the open list, with history rows and a detail fetch each; a real mass resolve
 * still shows, one poll later, even across a restart.
 */
describe.each(backends)('a shrinking list on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const inOpen = () => count(m.db, sql`select count(*)::int as n from tickets where in_open`);
  const historyRows = () => count(m.db, sql`select count(*)::int as n from ticket_history`);
  const dueDetails = () => count(m.db, sql`select count(*)::int as n from tickets where detail_due_since is not null`);
  // Details fetched because a list showed a change (revalidation of old details goes on regardless: kind 'revalidate').
  const detailRequests = () => count(m.db, sql`select count(*)::int as n from api_requests where kind = 'detail'`);

  /** Runs passes until `list` has been polled once more; its event. */
  async function nextPoll(list: ListName): Promise<Polled> {
    let polled: Polled | undefined;
    const listener = (e: Polled) => {
      if (e.list === list) polled = e;
    };
    m.engine.events.on('list:polled', listener);
    try {
      for (let i = 0; i < 400 && !polled; i++) {
        await m.engine.pass();
        m.clock.advance(TICK_MS);
      }
    } finally {
      m.engine.events.off('list:polled', listener);
    }
    if (!polled) throw new Error(`the ${list} list was not polled`);
    return polled;
  }

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database, { openTickets: 24, resolvedTickets: 6 });
    await m.runUntil(
      async () =>
        (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 &&
        (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`)) === 0,
    );
    expect(await inOpen()).toBe(24);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('an empty answer once: nothing leaves the list, no history row, no detail fetch; the next poll clears it', async () => {
    const history = await historyRows();
    const details = await detailRequests();
    m.sim.faults.inject({
      match: /^\/api\/v1\/tickets$/,
      kind: 'answer',
      answer: { status: 200, headers: { 'content-type': 'application/json' }, body: '[]' },
    });

    const held = await nextPoll('open');
    expect(held).toMatchObject({ items: 0, withheld: 24, changes: 0 });
    expect(m.sim.faults.pending).toBe(0);
    expect(await inOpen()).toBe(24);
    expect(await historyRows()).toBe(history);
    expect(await dueDetails()).toBe(0);

    const normal = await nextPoll('open');
    expect(normal).toMatchObject({ items: 24, withheld: 0, changes: 0 });
    expect(await inOpen()).toBe(24);
    expect(await historyRows()).toBe(history);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where missing_since is not null`)).toBe(0);
    expect(await detailRequests()).toBe(details);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  it('a mass resolve is confirmed by the next poll, across a restart, and then applied whole', async () => {
    const history = await historyRows();
    const resolved = m.sim.model.listOpen().slice(0, 20).map((t) => t.id);
    for (const id of resolved) m.sim.model.resolve(id);

    const held = await nextPoll('open');
    expect(held).toMatchObject({ items: 4, withheld: 20 });
    expect(await inOpen()).toBe(24);
    // Withheld is kept in the database: a new engine confirms what the old one held.
    await m.restart();
    const confirmed = await nextPoll('open');
    expect(confirmed).toMatchObject({ items: 4, withheld: 0, changes: 20 });
    expect(await inOpen()).toBe(4);
    expect(await historyRows()).toBeGreaterThanOrEqual(history + 20);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where in_open and id in ${resolved}`)).toBe(0);

    await m.runUntil(async () => (await dueDetails()) === 0);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sql } from '../../src/db/connect.ts';
import { ListActivity } from '../../src/db/repos/work.ts';
import { formatStatus, mirrorStatus } from '../../src/sync/status.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * `status` on a mirror in which a fetched ticket was then deleted (issue 11: "212 of 211 details fetched" on the demo,
 * whose simulator deletes tickets): the deleted ticket leaves the total and the fetched count alike, so the fetched
 * count never exceeds its total, and the backfill is shown done.
 */
describe.each(backends)('status counts on $name', { timeout: 120_000 }, ({ open }) => {
  const TICKETS = 12;
  const LIMITS = { daily: 1440, minute: 60, reserve: 0.1 };
  let database: TestDatabase;
  let mirror: VirtualMirror;

  beforeAll(async () => {
    database = await open();
    mirror = await virtualMirror(database, { openTickets: 5, resolvedTickets: TICKETS - 5 }, LIMITS);
  });
  afterAll(async () => {
    await mirror?.close();
    await database?.destroy();
  });

  const status = () => mirrorStatus(mirror.db, { dailyLimit: LIMITS.daily, minuteLimit: LIMITS.minute, reserve: LIMITS.reserve }, mirror.clock.now());

  it('a fetched ticket that is deleted leaves both the total and the fetched count', async () => {
    await mirror.runUntil(async () => (await count(mirror.db, sql`select count(*)::int as n from tickets where detail_synced_at is not null`)) === TICKETS);
    const before = await status();
    expect(before.backfill).toMatchObject({ fetched: TICKETS, total: TICKETS, remaining: 0 });

    const gone = mirror.sim.model.randomTicketId('open')!;
    mirror.sim.model.deleteTicket(gone);
    await mirror.runUntil(async () => (await count(mirror.db, sql`select count(*)::int as n from tickets where deleted_at is not null`)) === 1);

    const after = await status();
    expect(after.counts.deleted).toBe(1);
    expect(after.counts.tickets).toBe(TICKETS);
    expect(after.backfill).toMatchObject({ fetched: TICKETS - 1, total: TICKETS - 1, remaining: 0 });
    expect(formatStatus(after)).toContain(`backfill  ${TICKETS - 1} of ${TICKETS - 1} details fetched (100%); 0 to go`);
  });

  it('with the lists\' activity kept from one call to the next (the status server\'s), gives the plan a whole read gives', async () => {
    const config = { dailyLimit: LIMITS.daily, minuteLimit: LIMITS.minute, reserve: LIMITS.reserve };
    const kept = new ListActivity();
    for (let hour = 0; hour < 3; hour++) {
      // Changes the hour's polls find (new tickets): the plan's poll schedule follows them.
      for (let i = 0; i < 3; i++) mirror.sim.model.newTicket({ attachments: 0 });
      await mirror.runFor(60 * 60_000);
      const whole = await mirrorStatus(mirror.db, config, mirror.clock.now());
      const incremental = await mirrorStatus(mirror.db, config, mirror.clock.now(), kept);
      expect(incremental.plan).toEqual(whole.plan);
    }
  });
});

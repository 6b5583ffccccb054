import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { nextReplyDueAt } from '../../src/db/repos/outboxDue.ts';
import { deliverOutbox } from '../../src/outbox/deliver.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * reply_outbox rows as users and their tools write them. A row whose ticket the service will not read: a reply whose
 * POST got an answer that proves nothing is checked against the ticket's detail, and when that detail cannot be had,
 * the checks must stay bounded — one row must never spend the day's budget. A row with an instant the mirror cannot
 * read must end failed with the reason, never stop the outbox for the rows after it.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const logger = createLogger('silent');

describe.each(backends)('reply_outbox rows as users and their tools write them, on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;

  const deliver = () => deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger });
  const enqueue = async (ticket: string, message: string) => {
    const [row] = await queryRows<{ id: number }>(m.db, sql`insert into reply_outbox (ticket_id, message) values (${ticket}, ${message}) returning id`);
    return Number(row!.id);
  };
  const row = async (id: number) => {
    const [r] = await queryRows<{ state: string; attempts: number; error: string | null }>(m.db, sql`select state, attempts, error from reply_outbox where id = ${id}`);
    return r!;
  };
  const requests = () => count(m.db, sql`select count(*)::int as n from api_requests`);
  /**
   * Delivers for `ms` of virtual time whenever a row falls due, as the daemon's loop (it wakes for that); in between,
   * a delivery would find nothing to do.
   */
  const deliverFor = async (ms: number) => {
    const end = m.clock.now() + ms;
    while (m.clock.now() < end) {
      await deliver();
      const [next] = await queryRows<{ at: string | null }>(m.db, sql`select min(next_attempt_at) as at from reply_outbox where state in ('pending', 'sending')`);
      const due = next?.at ? Date.parse(next.at) : Infinity;
      m.clock.advance(Math.max(1, Math.min(due - m.clock.now(), end - m.clock.now())));
    }
  };

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('a ticket_id of 3,000 characters (HTTP 431 to the POST and to every GET) ends failed after one POST and one check', async () => {
    const id = await enqueue('é'.repeat(3000), 'Hello there');
    await deliverFor(3 * HOUR);
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 1, error: expect.stringMatching(/cannot be read .*HTTP 431.*not sent again/) });
    expect(await requests()).toBe(2);
  });

  it('a ticket whose every request fails with a 5xx is checked ever more rarely, and ends failed after a day: a bounded cost', async () => {
    const ticket = m.sim.model.randomTicketId('open')!;
    m.sim.faults.inject({ match: `/ticket/${ticket}`, kind: 'status500', times: 1_000_000 });
    const id = await enqueue(ticket, 'Hello there');
    await deliverFor(3 * HOUR);
    expect(await row(id)).toMatchObject({ state: 'sending', attempts: 1 });
    // Before: a check every minute, each GET tried 3 times: 502 requests in these 3 hours, the budget for the day soon.
    expect(await requests()).toBeLessThan(30);
    await deliverFor(22 * HOUR);
    expect(await row(id)).toMatchObject({
      state: 'failed',
      attempts: 1,
      error: expect.stringMatching(/outcome is unknown.*could not be read for 24 h.*HTTP 500.*not sent again/),
    });
    expect(await requests()).toBeLessThan(100);
    expect(m.sim.model.detail(ticket)!.messages.filter((msg) => msg.message === 'Hello there')).toHaveLength(0);
  });

  it("a row with an instant outside the years 0001–9999 ('infinity', 12000 AD, BC) ends failed saying which; the replies after it are sent", async () => {
    const ticket = m.sim.model.randomTicketId('open')!;
    const inserted = async (requestedAt: string) => {
      const [r] = await queryRows<{ id: number }>(
        m.db,
        sql`insert into reply_outbox (ticket_id, message, requested_at) values (${ticket}, 'Hello there', ${requestedAt}::timestamptz) returning id`,
      );
      return Number(r!.id);
    };
    const infinite = await inserted('infinity');
    const future = await inserted('12000-01-01T00:00:00Z');
    // Columns only the daemon writes, set by hand: an INSERT that sets them is forged, an UPDATE is not.
    const minusInfinity = await enqueue(ticket, 'Hello again');
    await m.db.execute(sql`update reply_outbox set next_attempt_at = '-infinity' where id = ${minusInfinity}`);
    const bc = await enqueue(ticket, 'Hello once more');
    await m.db.execute(sql`update reply_outbox set state = 'sending', sending_since = '0044-03-15 BC' where id = ${bc}`);
    const fine = await enqueue(ticket, 'The reply after them');

    expect(await deliver()).toEqual({ sent: 1, failed: 4, waiting: 0 });
    expect(await row(infinite)).toMatchObject({ state: 'failed', attempts: 0, error: expect.stringMatching(/^requested_at is outside the years 0001–9999: not sent/) });
    expect(await row(future)).toMatchObject({ state: 'failed', attempts: 0, error: expect.stringMatching(/^requested_at is outside/) });
    expect(await row(minusInfinity)).toMatchObject({ state: 'failed', attempts: 0, error: expect.stringMatching(/^next_attempt_at is outside/) });
    expect(await row(bc)).toMatchObject({ state: 'failed', attempts: 0, error: expect.stringMatching(/^sending_since is outside/) });
    expect(await row(fine)).toMatchObject({ state: 'sent', attempts: 1 });
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('a row whose attempts a person set to 2^31 - 1 is still sent once, and the rows after it too', async () => {
    const ticket = m.sim.model.randomTicketId('open')!;
    const maxed = await enqueue(ticket, 'Hello there');
    await m.db.execute(sql`update reply_outbox set attempts = 2147483647 where id = ${maxed}`);
    const fine = await enqueue(ticket, 'The reply after it');
    expect(await deliver()).toEqual({ sent: 2, failed: 0, waiting: 0 });
    expect(await row(maxed)).toMatchObject({ state: 'sent', attempts: 2147483647 });
    expect(await row(fine)).toMatchObject({ state: 'sent', attempts: 1 });
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(2);
  });

  it('rows a person inserted with ids a JavaScript number cannot hold (the highest and lowest there are, 2^53 and 2^53 + 1): each sent once, and the rows after them', async () => {
    const ticket = m.sim.model.randomTicketId('open')!;
    // 2^53 and 2^53 + 1 are one number in JavaScript: read as numbers, a move of one row would move the other.
    const ids = ['9223372036854775807', '-9223372036854775808', '9007199254740992', '9007199254740993'];
    for (const [i, id] of ids.entries()) {
      await m.db.execute(sql`insert into reply_outbox (id, ticket_id, message) values (${id}::bigint, ${ticket}, ${`Reply with a hand-made id, ${i}`})`);
    }
    const fine = await enqueue(ticket, 'The reply after them');
    await deliverFor(HOUR);
    const states = await queryRows<{ id: string; state: string; attempts: number }>(m.db, sql`select id::text, state, attempts from reply_outbox order by id`);
    expect(states).toEqual(
      [ids[1], String(fine), ids[2], ids[3], ids[0]].map((id) => ({ id, state: 'sent', attempts: 1 })),
    );
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(5);
  });

  it("a row a person parked with next_attempt_at = 'infinity' never falls due: a fleet worker plans its next pass without it", async () => {
    const ticket = m.sim.model.randomTicketId('open')!;
    const parked = await enqueue(ticket, 'Hello there');
    await m.db.execute(sql`update reply_outbox set next_attempt_at = 'infinity' where id = ${parked}`);
    expect(await nextReplyDueAt(m.db)).toBeNull();
    const later = await enqueue(ticket, 'Later, please');
    await m.db.execute(sql`update reply_outbox set next_attempt_at = '2026-01-05T10:00:00Z' where id = ${later}`);
    expect(await nextReplyDueAt(m.db)).toBe(Date.UTC(2026, 0, 5, 10));
  });
});

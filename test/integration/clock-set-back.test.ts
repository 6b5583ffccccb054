import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { restampFuture } from '../../src/db/repos/clockSetBack.ts';
import { deliverOutbox } from '../../src/outbox/deliver.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { CLOCK_SET_BACK_MS, isoMicros } from '../../src/time.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { TICK_MS } from '../helpers/mirror.ts';

const HOUR = 3_600_000;
const YEAR = 365 * 24 * HOUR;
const logger = createLogger('silent');

/**
 * The host's clock ran a year ahead (a bad RTC at boot, a VM restored with the wrong time) while the mirror worked,
 * then NTP set it right: the ledger, the list polls and the details are stamped a year in the future. The API's own
 * clock was right all along. The mirror must go on mirroring within the quota, not wait a year for its records to
 * look old. Real HTTP to the simulator, whose clock is the true one; the engine has a clock of its own.
 */
describe.each(backends)('a clock set back a year, on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let sim: RunningSimulator;
  let truth: ManualClock;
  let host: ManualClock;
  let engine: SyncEngine;

  const newEngine = () =>
    new SyncEngine({
      db: database.db,
      apiUrl: sim.url,
      apiToken: sim.token,
      clock: host,
      limits: { daily: 1440, minute: 60, reserve: 0.1 },
      logger,
      realTime: false,
      sleep: async (ms) => {
        truth.advance(ms);
        host.advance(ms);
      },
    });

  beforeEach(async () => {
    database = await open();
    truth = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
    host = new ManualClock(truth.now());
    sim = await startSimulator({ seed: 7, openTickets: 8, resolvedTickets: 12, clock: truth });
    engine = newEngine();
    await engine.init();
  });
  afterEach(async () => {
    await sim.close();
    await database.destroy();
  });

  // As the daemon does: a pass, then the replies.
  const run = async (ms: number) => {
    for (const end = truth.now() + ms; truth.now() < end; ) {
      await engine.pass();
      await deliverOutbox({ db: database.db, client: engine.client, clock: host, logger });
      truth.advance(TICK_MS);
      host.advance(TICK_MS);
    }
  };

  /** The latest instant the mirror wrote from its own clock, over every such column. */
  const latestStamp = async () => {
    const [row] = await queryRows<{ at: string | null }>(
      database.db,
      sql`select greatest(
        (select max(at) from api_requests), (select max(at) from list_polls),
        (select max(greatest(first_seen_at, last_seen_at, detail_synced_at, missing_since, deleted_at, detail_due_since, state_seen_at, detail_retry_after)) from tickets),
        (select max(greatest(synced_at, removed_at)) from messages), (select max(greatest(synced_at, removed_at)) from attachments),
        (select max(greatest(valid_from, valid_to, changed_after)) from ticket_history),
        (select max(greatest(started_at, finished_at)) from sync_runs), (select max(updated_at) from revalidation_learning),
        (select max(greatest(next_attempt_at, sending_since, sent_at)) from reply_outbox))::text as at`,
    );
    return row?.at == null ? null : new Date(row.at).getTime();
  };

  it.each([
    ['in the same process', false],
    ['after a restart (the budget loaded from the ledger)', true],
  ])('keeps polling, fetching, replying once and keeping to the quota once the clock is right again, %s', async (_, restart) => {
    host.set(truth.now() + YEAR);
    await run(2 * HOUR);
    // A reply whose outcome is unknown when the clock is set right: the service stored it, but answered 502.
    const replied = sim.model.randomTicketId('open')!;
    sim.faults.inject({ kind: 'answer', afterApplication: true, match: `/ticket/${replied}/reply`, answer: { status: 502, body: 'Bad gateway' } });
    await database.db.execute(sql`insert into reply_outbox (ticket_id, message) values (${replied}, ${'Sent while the clock ran ahead.'})`);
    await run(TICK_MS);
    expect(sim.log.length).toBeGreaterThan(20);
    expect(await latestStamp()).toBeGreaterThan(truth.now() + YEAR - 3 * HOUR);
    const [sending] = await queryRows<{ state: string }>(database.db, sql`select state from reply_outbox`);
    expect(sending!.state).toBe('sending');

    host.set(truth.now());
    if (restart) {
      engine = newEngine();
      await engine.init();
    }
    const fixedAt = truth.now();
    // A change after the clock was set right: a new ticket, which the lists show.
    const ticket = sim.model.newTicket();
    await run(2 * HOUR);
    const after = sim.log.filter((r) => r.at >= fixedAt);
    // Every list polled again, the new ticket's detail fetched; never a 429.
    for (const list of ['/api/v1/tickets', '/api/v1/tickets/self', '/api/v1/tickets/unassigned', '/api/v1/tickets/resolved']) {
      expect(after.filter((r) => r.path.split('?')[0] === list).length).toBeGreaterThan(0);
    }
    expect(after.filter((r) => r.status === 429)).toEqual([]);
    const [row] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from tickets where id = ${ticket.id} and detail_synced_at is not null`);
    expect(row!.n).toBe(1);
    // The reply: checked against the ticket, found, sent — once.
    const [reply] = await queryRows<{ state: string }>(database.db, sql`select state from reply_outbox`);
    expect(reply!.state).toBe('sent');
    expect(sim.model.detail(replied)!.messages.filter((msg) => msg.message === 'Sent while the clock ran ahead.')).toHaveLength(1);
    expect(sim.log.filter((r) => r.method === 'POST')).toHaveLength(1);
    // No detail fetched over and over (a ticket due "since next year" was never cleared by its fetch).
    const details = new Map<string, number>();
    for (const r of after) if (/^\/api\/v1\/ticket\/[^/]+$/.test(r.path.split('?')[0]!)) details.set(r.path, (details.get(r.path) ?? 0) + 1);
    expect(Math.max(...details.values())).toBeLessThanOrEqual(8);
    // Nothing the mirror wrote lies ahead of the clock any more, and nothing empty was stamped: no ticket deleted or missing.
    expect(await latestStamp()).toBeLessThanOrEqual(truth.now());
    const [marks] = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from tickets where deleted_at is not null or missing_since is not null`);
    expect(marks!.n).toBe(0);
    // Within the quota of the true 24 h: what it sent ahead and since stays below the allowance.
    expect(sim.log.filter((r) => r.at > truth.now() - 24 * HOUR).length).toBeLessThanOrEqual(1296);
  });
});

/** restampFuture column by column: what lies ahead comes back to now, and nothing else moves. */
describe.each(backends)('restampFuture, on $name', ({ open }) => {
  let database: TestDatabase;
  const NOW = Date.UTC(2026, 0, 5, 12, 0, 0);
  const AHEAD = isoMicros(NOW + YEAR);
  const PAST = isoMicros(NOW - HOUR);

  beforeEach(async () => {
    database = await open();
  });
  afterEach(async () => {
    await database.destroy();
  });

  const one = async <T>(query: ReturnType<typeof sql>) => (await queryRows<T>(database.db, query))[0]!;
  /** How far (ms) the newest ledger row lies ahead of NOW; 0 when none does. */
  const ledgerAheadMs = async () => Math.max(0, ms((await one<{ at: string }>(sql`select max(at)::text as at from api_requests`)).at)! - NOW);
  const ms = (v: string | null) => (v === null ? null : new Date(v).getTime());

  it('brings every instant the mirror wrote ahead of now back to now, leaves past and empty ones and the API data', async () => {
    const { db } = database;
    await db.execute(sql`insert into api_requests (at, method, path, kind) values (${AHEAD}, 'GET', '/a', 'detail'), (${PAST}, 'GET', '/b', 'detail')`);
    await db.execute(sql`insert into list_polls (list, at, items, changes) values ('open', ${AHEAD}, 1, 0)`);
    // One ticket with every bookkeeping instant ahead (the API's ahead too: its data, kept); one with some ahead and
    // the others empty — least() would have stamped those.
    await db.execute(sql`insert into tickets (id, created_at, updated_at, first_seen_at, last_seen_at, detail_synced_at, missing_since,
        deleted_at, detail_due_since, state_seen_at, detail_retry_after)
      values ('all', ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}, ${AHEAD}),
        ('some', null, null, ${PAST}, ${AHEAD}, ${AHEAD}, null, null, null, null, null)`);
    await db.execute(sql`insert into ticket_history (ticket_id, in_open, in_self, in_unassigned, in_resolved, valid_from, valid_to, changed_after)
      values ('some', true, false, false, false, ${PAST}, ${AHEAD}, ${PAST}), ('some', true, false, false, false, ${AHEAD}, null, ${AHEAD})`);
    await db.execute(sql`insert into revalidation_learning (class, reads, found, expected, updated_at) values (0, 1, 0, 1, ${AHEAD})`);
    expect(await ledgerAheadMs()).toBe(YEAR);
    expect(YEAR).toBeGreaterThan(CLOCK_SET_BACK_MS);

    await db.transaction((tx) => restampFuture(tx, NOW));

    expect(await ledgerAheadMs()).toBe(0);
    const requests = await queryRows<{ path: string; at: string }>(db, sql`select path, at::text as at from api_requests order by path`);
    expect(requests.map((r) => [r.path, ms(r.at)])).toEqual([['/a', NOW], ['/b', NOW - HOUR]]);
    expect(ms((await one<{ at: string }>(sql`select at::text as at from list_polls`)).at)).toBe(NOW);
    const all = await one<Record<string, string | null>>(sql`select * from tickets where id = 'all'`);
    for (const c of ['first_seen_at', 'last_seen_at', 'detail_synced_at', 'missing_since', 'deleted_at', 'detail_due_since', 'state_seen_at', 'detail_retry_after']) {
      expect([c, ms(all[c] as string)]).toEqual([c, NOW]);
    }
    expect([ms(all.created_at as string), ms(all.updated_at as string)]).toEqual([NOW + YEAR, NOW + YEAR]);
    const some = await one<Record<string, string | null>>(sql`select * from tickets where id = 'some'`);
    expect([ms(some.first_seen_at as string), ms(some.last_seen_at as string), ms(some.detail_synced_at as string)]).toEqual([NOW - HOUR, NOW, NOW]);
    expect([some.missing_since, some.deleted_at, some.detail_due_since, some.state_seen_at, some.detail_retry_after]).toEqual([null, null, null, null, null]);
    const history = await queryRows<{ valid_from: string; valid_to: string | null; changed_after: string }>(
      db,
      sql`select valid_from::text, valid_to::text, changed_after::text from ticket_history order by id`,
    );
    expect(history.map((h) => [ms(h.valid_from), ms(h.valid_to), ms(h.changed_after)])).toEqual([
      [NOW - HOUR, NOW, NOW - HOUR],
      [NOW, null, NOW],
    ]);
    expect(ms((await one<{ at: string }>(sql`select updated_at::text as at from revalidation_learning`)).at)).toBe(NOW);
  });

  it('replies: a pending one may go now, a sending one keeps the length of its lease, a claimed or final one is left alone', async () => {
    const { db } = database;
    for (const text of ['pending', 'sending', 'claimed', 'sent', 'failed']) {
      await db.execute(sql`insert into reply_outbox (ticket_id, message) values ('T1', ${text})`);
    }
    const lease = 10 * 60_000;
    await db.execute(sql`update reply_outbox set next_attempt_at = ${AHEAD} where message = 'pending'`);
    await db.execute(sql`update reply_outbox set state = 'sending', sending_since = ${AHEAD}, next_attempt_at = ${isoMicros(NOW + YEAR + lease)}
      where message in ('sending', 'claimed')`);
    await db.execute(sql`update reply_outbox set claimed_by = 'someone', claimed_via = 'embedded' where message = 'claimed'`);
    await db.execute(sql`update reply_outbox set state = 'sent', sent_at = ${AHEAD}, sending_since = ${AHEAD} where message = 'sent'`);
    await db.execute(sql`update reply_outbox set state = 'failed', sending_since = ${AHEAD} where message = 'failed'`);

    await db.transaction((tx) => restampFuture(tx, NOW));

    const rows = await queryRows<{ message: string; state: string; next_attempt_at: string | null; sending_since: string | null; sent_at: string | null }>(
      db,
      sql`select message, state, next_attempt_at::text, sending_since::text, sent_at::text from reply_outbox order by id`,
    );
    expect(rows.map((r) => [r.message, r.state, ms(r.next_attempt_at), ms(r.sending_since), ms(r.sent_at)])).toEqual([
      ['pending', 'pending', NOW, null, null],
      ['sending', 'sending', NOW + lease, NOW, null],
      ['claimed', 'sending', NOW + YEAR + lease, NOW + YEAR, null],
      ['sent', 'sent', null, NOW + YEAR, NOW + YEAR],
      ['failed', 'failed', null, NOW + YEAR, null],
    ]);
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Daemon } from '../../src/daemon/daemon.ts';
import { logPasses } from '../../src/daemon/compose.ts';
import { readiness } from '../../src/daemon/readiness.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import type { PassSummary } from '../../src/sync/events.ts';
import { storableJson } from '../../src/text.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * What a customer types must never stop the mirror: characters PostgreSQL refuses are stored as U+FFFD, and a write
 * the database refuses for one ticket fails that ticket alone.
 */
describe.each(backends)('hostile text on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const synced = async () =>
    (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 &&
    (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and deleted_at is null`)) === 0;

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('stores a NUL and a lone surrogate in a name and a message as U+FFFD, in the columns and in raw', async () => {
    const hostile = m.sim.model.newTicket({ name: 'Zo\u0000ë \ud83d', message: 'hi\u0000 there \ud83d 😀', attachments: 0 });
    const other = m.sim.model.randomTicketId('resolved')!;
    const followUp = m.sim.model.inboundMessage(other, { message: '\udc00 late\u0000', attachments: 0 });

    const passes = await m.runUntil(synced);
    expect(await synced()).toBe(true);
    for (const p of passes) expect(p).toMatchObject({ errors: [], stoppedBy: null });

    const [ticket] = await queryRows<{ name: string; raw_name: string; raw_message: string }>(
      m.db,
      sql`select name, raw->>'name' as raw_name, raw->'messages'->0->>'message' as raw_message from tickets where id = ${hostile.id}`,
    );
    expect(ticket).toEqual({ name: 'Zo\ufffdë \ufffd', raw_name: 'Zo\ufffdë \ufffd', raw_message: 'hi\ufffd there \ufffd 😀' });
    const [message] = await queryRows<{ message: string }>(m.db, sql`select message from messages where id = ${followUp.id}`);
    expect(message!.message).toBe('\ufffd late\ufffd');
    // Every ticket, these two included, is exactly the API's, with each refused character replaced.
    expect(await mirrorAsTruth(m.db)).toEqual(storableJson(truthOf(m.sim)));
  });

  it('a list whose created_at lies beyond the year 9999 or before 100 AD is polled and stored, not refused for good', async () => {
    await m.runUntil(synced);
    const newcomer = m.sim.model.newTicket({ attachments: 0 });
    const odd = new Map([
      [newcomer.id, '9999-12-31T23:59:59.000000-01:00'],
      [m.sim.model.list('open').find((i) => i.id !== newcomer.id)!.id, '0050-06-01T12:00:00.000000Z'],
    ]);
    // The open list, as the service would give it, with those two instants: its next answer.
    const items = m.sim.model.list('open').map((i) => ({ ...i, created_at: odd.get(i.id) ?? i.created_at }));
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/tickets(\?|$)/, answer: { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) } });
    const polled = () => count(m.db, sql`select count(*)::int as n from list_polls where list = 'open'`);
    const before = await polled();
    const passes = await m.runUntil(async () => (await polled()) > before);
    // Before, the year 10000 reached PostgreSQL as '+010000-01-01T00:59.000000Z': the whole list rolled back, each poll.
    for (const p of passes) expect(p).toMatchObject({ errors: [], stoppedBy: null });
    const [a, b] = [...odd.keys()];
    const rows = await queryRows<{ id: string; created_at: string | null; in_open: boolean }>(
      m.db,
      sql`select id, created_at::text as created_at, in_open from tickets where id = ${a} or id = ${b}`,
    );
    expect(rows).toHaveLength(2);
    // Both kept in the list; their details, fetched since (the list showed a change), give the service's instants.
    expect(rows.every((r) => r.in_open)).toBe(true);
    expect(rows.map((r) => new Date(r.created_at!).getUTCFullYear())).toEqual([2026, 2026]);
  });

  it('a write the database refuses for one ticket backs that ticket off; the others are stored and the pass goes on', async () => {
    const victim = m.sim.model.randomTicketId('open')!;
    // A trigger in this test's schema refuses the victim's messages (SQLSTATE P0001), whatever they hold.
    await m.db.execute(
      sql.raw(`create function tm_test_refuse() returns trigger language plpgsql as $$
        begin raise exception 'refused by the test trigger'; end $$`),
    );
    await m.db.execute(
      sql.raw(`create trigger tm_test_refuse before insert or update on messages for each row
        when (new.ticket_id = '${victim}') execute function tm_test_refuse()`),
    );

    const others = async () =>
      count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and id <> ${victim}`);
    const passes = await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 && (await others()) === 0);
    expect(await others()).toBe(0);
    for (const p of passes) expect(p.stoppedBy).toBeNull();
    const failing = passes.filter((p) => p.errors.length > 0);
    expect(failing.length).toBeGreaterThan(0);
    for (const p of failing) {
      expect(p.errors).toEqual([expect.stringMatching(new RegExp(`^ticket ${victim}: `))]);
      // The pass went on: it stored other details besides failing the victim's.
      expect(p.detailsFetched).toBeGreaterThan(0);
    }

    const [row] = await queryRows<{ synced: boolean; failures: number; backed_off: boolean }>(
      m.db,
      sql`select detail_synced_at is not null as synced, detail_failures as failures, detail_retry_after is not null as backed_off
        from tickets where id = ${victim}`,
    );
    expect(row).toMatchObject({ synced: false, backed_off: true });
    expect(row!.failures).toBeGreaterThan(0);
    expect(await count(m.db, sql`select count(*)::int as n from messages where ticket_id = ${victim}`)).toBe(0);
    const truth = (truthOf(m.sim) as Array<{ id: string }>).filter((t) => t.id !== victim);
    const mirror = (await mirrorAsTruth(m.db)) as Array<{ id: string }>;
    expect(mirror.filter((t) => t.id !== victim)).toEqual(truth);
  });
});

/**
 * drizzle's error message lists every bound parameter: a refused write must be told by the database's message, its
 * SQLSTATE and the ticket, in `sync_runs.error`, the pass summary, the log and `/readyz`, never with the ticket's content.
 */
describe.each(backends)('a refused write, told without the ticket\'s content, on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  let log: string;
  let engine: SyncEngine;
  let victim: string;
  /** What the victim's rows carry, which the failing statements had as parameters. */
  let content: string[];

  async function refuseVictim(raise: string): Promise<void> {
    await m.db.execute(sql.raw(`create function tm_test_refuse() returns trigger language plpgsql as $$ begin ${raise}; end $$`));
    await m.db.execute(
      sql.raw(`create trigger tm_test_refuse before insert or update on messages for each row
        when (new.ticket_id = '${victim}') execute function tm_test_refuse()`),
    );
  }

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
    log = '';
    const logger = createLogger('info', { write: (line: string) => void (log += line) });
    engine = new SyncEngine({
      db: m.db,
      apiUrl: m.sim.url,
      apiToken: m.sim.token,
      clock: m.clock,
      limits: { daily: 1440, minute: 60, reserve: 0.1 },
      logger,
      realTime: false,
      sleep: async (ms) => void m.clock.advance(ms),
    });
    logPasses(engine, logger);
    const ticket = m.sim.model.newTicket({
      name: 'Quentin Zebulon-Marchetti',
      email: 'quentin.zm@customer.example',
      message: 'My account number is 7731-0092, please call me back',
      attachments: 0,
    });
    victim = ticket.id;
    content = [ticket.name, ticket.email, ...ticket.messages.map((msg) => msg.message)];
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  const runErrors = async () =>
    (await queryRows<{ error: string }>(m.db, sql`select error from sync_runs where error is not null`)).map((r) => r.error);

  it('a write refused for one ticket: SQLSTATE and ticket id in sync_runs, the summary and the log, no content', async () => {
    await refuseVictim(`raise exception 'refused by the test trigger'`);
    const summaries: PassSummary[] = [];
    for (let i = 0; i < 200 && !summaries.some((s) => s.errors.length > 0); i++) {
      summaries.push(await engine.pass());
      m.clock.advance(15_000);
    }
    const errors = summaries.flatMap((s) => s.errors);
    expect(errors).toEqual([`ticket ${victim}: refused by the test trigger (SQLSTATE P0001)`]);
    expect(await runErrors()).toEqual(errors);
    const lines = log.split('\n').filter((line) => line.includes(victim));
    expect(lines.map((line) => JSON.parse(line).msg)).toEqual(['ticket detail not stored; will retry later', 'sync pass']);
    for (const line of lines) expect(line).toContain('(SQLSTATE P0001)');
    for (const text of [log, ...errors, ...(await runErrors())]) {
      for (const c of content) expect(text).not.toContain(c);
      expect(text).not.toMatch(/params:|insert into/i);
    }
  });

  it('a database that cannot write ends the pass: its reason in /readyz, the log and sync_runs is told safely', async () => {
    await refuseVictim(`raise exception using errcode = '53100', message = 'could not extend file: No space left on device'`);
    const daemon = new Daemon({ engine, clock: m.clock, logger: createLogger('info', { write: (line: string) => void (log += line) }) });
    for (let i = 0; i < 200 && daemon.health.state !== 'failing'; i++) {
      await daemon.tick();
      m.clock.advance(15_000);
    }
    const told = `ticket ${victim}: could not extend file: No space left on device (SQLSTATE 53100)`;
    expect(daemon.health).toMatchObject({ state: 'failing', reason: told });
    expect(readiness({ role: 'leader', ...daemon.health }, null).reason).toBe(`last sync pass failed: ${told}`);
    expect(await runErrors()).toEqual([told]);
    expect(log).toContain('"msg":"sync pass failed"');
    expect(log).toContain(told);
    for (const text of [log, ...(await runErrors())]) {
      for (const c of content) expect(text).not.toContain(c);
      expect(text).not.toMatch(/params:|insert into/i);
    }
  });
});

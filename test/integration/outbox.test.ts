import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql, type Database } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { deliverOutbox, outboxAfterPass, type OutboxHooks } from '../../src/outbox/deliver.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { backends, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

const MINUTE = 60_000;
const logger = createLogger('silent');

interface OutboxRecord {
  id: number;
  state: string;
  attempts: number;
  error: string | null;
  message_id: string | null;
  sent_at: string | null;
  next_attempt_at: string | null;
}

/** A simulated kill: the deliverer's process is gone at that point. */
class Killed extends Error {}

describe.each(backends)('a flood of reply rows on $name', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  beforeEach(async () => {
    database = await open();
    // 30 a day, 10 % reserved: 27 allowed, of which replies may use a third, 9, in any rolling 24 h.
    m = await virtualMirror(database, {}, { daily: 30, minute: 60, reserve: 0.1 });
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('replies stop at their third of the daily budget: the rest wait, pending, and go when the first replies leave the window', async () => {
    const lines: Array<{ msg: string }> = [];
    const watching = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    const ticket = m.sim.model.randomTicketId('open')!;
    for (let i = 0; i < 15; i++) await m.db.execute(sql`insert into reply_outbox (ticket_id, message) values (${ticket}, ${`Flooded reply number ${i}`})`);
    const firstAt = m.clock.now();
    expect(await deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger: watching, maxRows: 100 })).toEqual({ sent: 9, failed: 0, waiting: 1 });
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(9);
    const pending = await queryRows<{ state: string; error: string | null; next_attempt_at: string | null }>(
      m.db,
      sql`select state, error, next_attempt_at::text from reply_outbox where state <> 'sent' order by id`,
    );
    expect(pending).toHaveLength(6);
    expect(pending.every((r) => r.state === 'pending')).toBe(true);
    // The first held back says why and when it may go: the instant the first reply leaves the 24 h window.
    expect(pending[0]!.error).toMatch(/replies have used their share of the daily budget \(9 in 24 h/);
    expect(Date.parse(pending[0]!.next_attempt_at!)).toBeGreaterThan(firstAt + 24 * 60 * MINUTE);
    expect(Date.parse(pending[0]!.next_attempt_at!)).toBeLessThan(firstAt + 24 * 60 * MINUTE + MINUTE);
    expect(lines.filter((l) => l.msg.startsWith('reply waits: replies have used their share'))).toHaveLength(1);

    // The sync keeps its two thirds: a pass after the flood polls the lists. A restarted engine, which knows the replies
    // from the ledger alone, holds them back too.
    const summary = await m.engine.pass();
    expect(summary.requests).toBeGreaterThan(0);
    await m.restart();
    m.clock.advance(MINUTE);
    await m.db.execute(sql`update reply_outbox set next_attempt_at = null where state = 'pending'`);
    expect(await deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger, maxRows: 100 })).toMatchObject({ sent: 0 });
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(9);

    // A day later the first replies have left the window: the rest go.
    m.clock.advance(24 * 60 * MINUTE);
    await m.db.execute(sql`update reply_outbox set next_attempt_at = null where state = 'pending'`);
    expect(await deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger, maxRows: 100 })).toEqual({ sent: 6, failed: 0, waiting: 0 });
    expect(m.sim.model.detail(ticket)!.messages.filter((msg) => msg.message.startsWith('Flooded reply'))).toHaveLength(15);
  });
});

describe.each(backends)('reply outbox on $name against the simulator', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  let ticketId: string;

  const deliver = (hooks?: OutboxHooks) => deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger, ...(hooks ? { hooks } : {}) });
  const enqueue = async (message: string, ticket = ticketId) => {
    const [row] = await queryRows<{ id: number }>(m.db, sql`insert into reply_outbox (ticket_id, message) values (${ticket}, ${message}) returning id`);
    return Number(row!.id);
  };
  const row = async (id: number) => {
    const [r] = await queryRows<OutboxRecord>(m.db, sql`select * from reply_outbox where id = ${id}`);
    return { ...r!, id: Number(r!.id) };
  };
  const posts = () => m.sim.log.filter((r) => r.method === 'POST');
  /** Replies the service stored with this text: what "exactly once" is about. */
  const stored = (text: string) => m.sim.model.detail(ticketId)!.messages.filter((msg) => msg.message === text.trim()).length;

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
    ticketId = m.sim.model.randomTicketId('open')!;
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('delivers a row: one POST, the row sent, the message in the mirror at once and completed by the next pass', async () => {
    const id = await enqueue('  We have refunded the order.\n');
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    const r = await row(id);
    expect(r).toMatchObject({ state: 'sent', attempts: 1, error: null, next_attempt_at: null });
    const truth = m.sim.model.detail(ticketId)!.messages.at(-1)!;
    expect(truth).toMatchObject({ message: 'We have refunded the order.', user: m.sim.model.self });
    expect(r.message_id).toBe(truth.id);
    expect(r.sent_at).not.toBeNull();
    expect(posts()).toHaveLength(1);
    expect(await count(m.db, sql`select count(*)::int as n from api_requests where kind = 'reply'`)).toBe(1);

    // Written at once, on a ticket the mirror had not seen yet: a minimal row, due for its detail.
    const [message] = await queryRows<{ message: string; message_type: string; outbound_sent: boolean | null }>(
      m.db,
      sql`select message, message_type, outbound_sent from messages where id = ${truth.id}`,
    );
    // The text as sent (as given); the next detail brings the service's own, which the simulator trims.
    expect(message).toEqual({ message: '  We have refunded the order.\n', message_type: 'outbound', outbound_sent: null });
    expect(await count(m.db, sql`select count(*)::int as n from tickets where id = ${ticketId} and detail_due_since is not null`)).toBe(1);

    const completedByPass = async () => (await count(m.db, sql`select count(*)::int as n from messages where id = ${truth.id} and outbound_sent`)) === 1;
    await m.runUntil(completedByPass, 40);
    const [completed] = await queryRows<{ outbound_sent: boolean; author: unknown }>(
      m.db,
      sql`select outbound_sent, author from messages where id = ${truth.id}`,
    );
    expect(completed).toEqual({ outbound_sent: true, author: m.sim.model.self });

    // The token's user is known now (from the reply the outbox posted): the next reply's row names it at once.
    const next = await enqueue('And the invoice is attached.');
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    const [fresh] = await queryRows<{ author: unknown }>(
      m.db,
      sql`select m.author from messages m join reply_outbox o on o.message_id = m.id where o.id = ${next}`,
    );
    expect(fresh!.author).toEqual(m.sim.model.self);
  });

  it("the daemon's after-pass hook delivers, and takes no row once its signal is aborted", async () => {
    const afterPass = outboxAfterPass({ db: m.db, clock: m.clock, logger, client: () => m.engine.client });
    const stopped = new AbortController();
    stopped.abort();
    const id = await enqueue('Checking in on this.');
    await afterPass(stopped.signal);
    expect(await row(id)).toMatchObject({ state: 'pending' });
    await afterPass(new AbortController().signal);
    expect(await row(id)).toMatchObject({ state: 'sent' });
    expect(posts()).toHaveLength(1);
  });

  it('the table refuses a text under 3 characters; the service\'s refusals end rows failed with its reason: blanks it trims (422), an unknown ticket (404)', async () => {
    // The rule as the spec gives it, on the text as given: the CHECK and the daemon count alike (before, the CHECK
    // trimmed spaces only and the daemon every blank, so a row of two tabs and "ab" was accepted, then failed unsent).
    await expect(enqueue('ab')).rejects.toThrow();
    await expect(enqueue('👍👍')).rejects.toThrow();
    const blanks = await enqueue(' \n\tab\n ');
    const unknown = await enqueue('Hello there', 'NoSuchTicket');
    expect(await deliver()).toEqual({ sent: 0, failed: 2, waiting: 0 });
    // Sent as given: the simulator, as Laravel does, trims before its own rule and answers 422.
    expect(await row(blanks)).toMatchObject({ state: 'failed', attempts: 1, error: expect.stringMatching(/at least 3 characters/) });
    expect(await row(unknown)).toMatchObject({ state: 'failed', attempts: 1, error: 'ticket NoSuchTicket not found' });
    expect(posts().map((p) => p.path)).toEqual([`/api/v1/ticket/${ticketId}/reply`, '/api/v1/ticket/NoSuchTicket/reply']);
  });

  it('a kill after marking sending, before the POST: after a restart, checked and sent once', async () => {
    const id = await enqueue('Your replacement ships today.');
    await expect(deliver({ afterMarkSending: () => { throw new Killed(); } })).rejects.toBeInstanceOf(Killed);
    expect(await row(id)).toMatchObject({ state: 'sending', attempts: 1 });
    await m.restart();
    // Within the lease the row may still be in flight elsewhere: nobody touches it.
    expect(await deliver()).toEqual({ sent: 0, failed: 0, waiting: 0 });
    expect(m.sim.log).toHaveLength(0);

    m.clock.advance(2 * MINUTE + 1);
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sent', attempts: 2 });
    expect(m.sim.log.map((r) => `${r.method} ${r.path}`)).toEqual([`GET /api/v1/ticket/${ticketId}`, `POST /api/v1/ticket/${ticketId}/reply`]);
    expect(stored('Your replacement ships today.')).toBe(1);
  });

  it('a kill after the POST, before recording it: after a restart, found in the ticket, not posted again', async () => {
    const id = await enqueue('Your replacement ships today.');
    let posted = '';
    await expect(
      deliver({
        afterPost: (_row, reply) => {
          posted = reply.id;
          throw new Killed();
        },
      }),
    ).rejects.toBeInstanceOf(Killed);
    expect(await row(id)).toMatchObject({ state: 'sending', message_id: null });
    await m.restart();
    m.clock.advance(2 * MINUTE + 1);
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sent', attempts: 1, message_id: posted });
    expect(posts()).toHaveLength(1);
    expect(stored('Your replacement ships today.')).toBe(1);
    // The check's detail was stored: the message is in the mirror, complete.
    const [message] = await queryRows<{ author: unknown }>(m.db, sql`select author from messages where id = ${posted}`);
    expect(message!.author).toEqual(m.sim.model.self);
  });

  it('a lost answer is checked, never blindly re-sent: a 503 before the service, a cut 201 after it', async () => {
    m.sim.faults.inject({ match: '/reply', kind: 'status503' });
    const before = await enqueue('First answer, lost before the service.');
    expect(await deliver()).toEqual({ sent: 0, failed: 0, waiting: 1 });
    expect(await row(before)).toMatchObject({ state: 'sending', error: expect.stringMatching(/outcome unknown/) });
    m.clock.advance(MINUTE);
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(posts().map((p) => p.status)).toEqual([503, 201]);
    expect(stored('First answer, lost before the service.')).toBe(1);

    m.sim.faults.inject({ match: '/reply', kind: 'truncated' });
    const after = await enqueue('Second answer, cut after the service.');
    expect(await deliver()).toEqual({ sent: 0, failed: 0, waiting: 1 });
    m.clock.advance(2 * MINUTE);
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(after)).toMatchObject({ state: 'sent', attempts: 1 });
    expect(posts()).toHaveLength(3);
    expect(stored('Second answer, cut after the service.')).toBe(1);
  });

  it('an ambiguous check ends failed with the reason, without a second POST', async () => {
    const id = await enqueue('We will call you tomorrow.');
    await expect(deliver({ afterMarkSending: () => { throw new Killed(); } })).rejects.toBeInstanceOf(Killed);
    // Meanwhile a reply by the token's user with another text appears: it could be this one, altered.
    m.sim.model.reply(ticketId, 'We will call you tomorrow morning.');
    m.clock.advance(2 * MINUTE + 1);
    expect(await deliver()).toEqual({ sent: 0, failed: 1, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'failed', error: expect.stringMatching(/different text.*duplicate/) });
    expect(posts()).toHaveLength(0);
  });

  it("a 429 from the server proves nothing: the row is checked no earlier than its Retry-After, then sent once", async () => {
    m.sim.faults.inject({ match: '/reply', kind: 'status429', retryAfterSec: 90 });
    const id = await enqueue('Sorry for the wait.');
    expect(await deliver()).toEqual({ sent: 0, failed: 0, waiting: 1 });
    const throttled = await row(id);
    expect(throttled).toMatchObject({ state: 'sending', attempts: 1, error: expect.stringMatching(/429/) });
    expect(Date.parse(throttled.next_attempt_at!) - m.clock.now()).toBeGreaterThanOrEqual(90_000);
    expect(await deliver()).toEqual({ sent: 0, failed: 0, waiting: 0 });
    // Once the Retry-After has passed, the ticket is read: no trace of the reply (this 429 came before the service
    // stored anything), so it goes out again — the only way a second POST can follow an answer that proved nothing.
    m.clock.set(Date.parse(throttled.next_attempt_at!));
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sent', attempts: 2 });
    expect(m.sim.log.map((r) => `${r.method} ${r.status}`)).toEqual(['POST 429', 'GET 200', 'POST 201']);
    expect(stored('Sorry for the wait.')).toBe(1);
  });

  it('gives up after five tries whose answers were lost, backing off between them', async () => {
    m.sim.faults.inject({ match: '/reply', kind: 'status500', times: 100 });
    const id = await enqueue('This will not get through.');
    const checks: number[] = [];
    for (let i = 0; i < 12 && (await row(id)).state !== 'failed'; i++) {
      const r = await row(id);
      if (r.next_attempt_at) checks.push(Date.parse(r.next_attempt_at) - m.clock.now());
      m.clock.advance(Math.max(0, r.next_attempt_at ? Date.parse(r.next_attempt_at) - m.clock.now() : 0));
      await deliver();
    }
    expect(await row(id)).toMatchObject({ state: 'failed', attempts: 5, error: expect.stringMatching(/not delivered after 5 attempts/) });
    expect(posts()).toHaveLength(5);
    expect(checks).toEqual([1, 2, 4, 8, 16].map((n) => n * MINUTE));
    expect(stored('This will not get through.')).toBe(0);
  });
});

describe.runIf(postgresUrl)('reply outbox with concurrent deliverers on one PostgreSQL', () => {
  let database: TestDatabase;
  let second: Database;
  let m: VirtualMirror;

  beforeEach(async () => {
    database = await backends.find((b) => b.name === 'postgres')!.open();
    second = await openDatabase({ databaseUrl: postgresUrl!, schema: database.schema });
    m = await virtualMirror(database);
  });
  afterEach(async () => {
    await m.close();
    await second.close();
    await database.destroy();
  });

  it('two processes deliver every row exactly once between them', async () => {
    const tickets = [...m.sim.model.listOpen()].slice(0, 4).map((t) => t.id);
    const texts = Array.from({ length: 12 }, (_, i) => `Concurrent reply number ${i}`);
    for (const [i, text] of texts.entries()) {
      await m.db.execute(sql`insert into reply_outbox (ticket_id, message) values (${tickets[i % tickets.length]!}, ${text})`);
    }
    // Each engine sees the other's requests in the server's rate-limit headers and, projected over a day, would
    // rightly conclude the daily budget is gone; a large daily limit keeps this test about the outbox.
    const engine = (db: Database['db']) =>
      new SyncEngine({ db, apiUrl: m.sim.url, apiToken: m.sim.token, clock: m.clock, limits: { daily: 100_000, minute: 60, reserve: 0.1 }, logger, realTime: false });
    const [a, b] = [engine(database.db), engine(second.db)];
    await Promise.all([a.init(), b.init()]);
    const reports = await Promise.all([
      deliverOutbox({ db: database.db, client: a.client, clock: m.clock, logger, maxRows: 100 }),
      deliverOutbox({ db: second.db, client: b.client, clock: m.clock, logger, maxRows: 100 }),
    ]);
    expect(reports[0]!.sent + reports[1]!.sent).toBe(texts.length);
    expect(reports.every((r) => r.sent > 0)).toBe(true);
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(texts.length);
    const rows = await queryRows<{ state: string; attempts: number; message_id: string }>(m.db, sql`select state, attempts, message_id from reply_outbox`);
    expect(rows.every((r) => r.state === 'sent' && r.attempts === 1)).toBe(true);
    expect(new Set(rows.map((r) => r.message_id)).size).toBe(texts.length);
    const storedTexts = tickets.flatMap((t) => m.sim.model.detail(t)!.messages.map((msg) => msg.message)).filter((t) => t.startsWith('Concurrent'));
    expect(storedTexts.sort()).toEqual([...texts].sort());
  });
});

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { NotFoundError } from '../../src/errors.ts';
import { postReply } from '../../src/outbox/postReply.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { rebuildFromRaw } from '../../src/sync/rebuild.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';
import { runCli, startCommand, waitUntil } from '../helpers/runProcess.ts';

describe.each(backends)('postReply on $name against the simulator', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const deps = () => ({ db: m.db, client: m.engine.client, clock: m.clock });

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('posts once, through the ledger, and writes the message into a mirrored ticket at once', async () => {
    const ticketId = m.sim.model.randomTicketId('open')!;
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets where id = ${ticketId} and detail_synced_at is not null`)) === 1);
    // Past the minute whose budget the sync may have spent.
    m.clock.advance(61_000);
    const requestsBefore = m.sim.log.length;

    const posted = await postReply(deps(), ticketId, 'On its way.\n');
    expect(m.sim.log.slice(requestsBefore).map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([`POST /api/v1/ticket/${ticketId}/reply 201`]);
    const truth = m.sim.model.detail(ticketId)!.messages.at(-1)!;
    // Sent as given; the copy written at once is the text sent (the next detail brings the service's, here trimmed).
    expect(truth.message).toBe('On its way.');
    expect(posted).toMatchObject({ ticketId, messageId: truth.id, text: 'On its way.\n' });
    const [row] = await queryRows<{ ticket_id: string; message: string; message_type: string }>(
      m.db,
      sql`select ticket_id, message, message_type from messages where id = ${truth.id}`,
    );
    expect(row).toEqual({ ticket_id: ticketId, message: 'On its way.\n', message_type: 'outbound' });
    expect(await count(m.db, sql`select count(*)::int as n from api_requests where kind = 'reply' and status = 201`)).toBe(1);
    // The reply changed the ticket in ways no list shows: its detail is due.
    expect(await count(m.db, sql`select count(*)::int as n from tickets where id = ${ticketId} and detail_due_since is not null`)).toBe(1);
  });

  it('a rebuild from raw leaves a reply recorded after the ticket\'s last detail as it is, not removed', async () => {
    const ticketId = m.sim.model.randomTicketId('open')!;
    await m.runUntil(async () => (await count(m.db, sql`select count(*)::int as n from tickets where id = ${ticketId} and detail_synced_at is not null`)) === 1);
    m.clock.advance(61_000);
    const posted = await postReply(deps(), ticketId, 'Fixed in the next release.');
    // The stored payload predates the reply: before, the rebuild marked it removed, at an instant before it was sent.
    expect(await rebuildFromRaw(m.db)).toMatchObject({ failed: [] });
    const [row] = await queryRows<{ removed_at: string | null }>(m.db, sql`select removed_at from messages where id = ${posted.messageId}`);
    expect(row).toEqual({ removed_at: null });
    // A message the payload no longer shows, recorded before it, is still marked removed.
    await m.db.execute(sql`insert into messages (id, ticket_id, message, synced_at) select 'gone-1', id, 'old text', detail_synced_at - interval '1 day' from tickets where id = ${ticketId}`);
    await rebuildFromRaw(m.db);
    expect(await count(m.db, sql`select count(*)::int as n from messages where id = 'gone-1' and removed_at is not null`)).toBe(1);
  });

  it('throws NotFoundError for an unknown ticket and records nothing but the request', async () => {
    await expect(postReply(deps(), 'NoSuchTicket', 'Hello there')).rejects.toBeInstanceOf(NotFoundError);
    expect(await count(m.db, sql`select count(*)::int as n from tickets`)).toBe(0);
    expect(await count(m.db, sql`select count(*)::int as n from api_requests where status = 404`)).toBe(1);
  });
});

describe('ticket-mirror reply, as a child process on the embedded database', () => {
  let sim: RunningSimulator;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 3, openTickets: 4, resolvedTickets: 2 });
    dir = mkdtempSync(join(tmpdir(), 'tm-reply-cli-'));
    env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: join(dir, 'pglite'), LOG_LEVEL: 'silent' };
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('posts the reply read from stdin, prints its id, exits 0, and the message is in the database', async () => {
    const ticketId = sim.model.randomTicketId('open')!;
    const result = await runCli(['reply', ticketId, '-'], env, dir, 'Thanks for your patience.\n');
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const truth = sim.model.detail(ticketId)!.messages.at(-1)!;
    expect(truth.message).toBe('Thanks for your patience.');
    expect(result.stdout).toBe(`${truth.id}\n`);
    const database = await openDatabase({ pgliteDir: env.PGLITE_DIR! });
    try {
      const rows = await queryRows<{ id: string; ticket_id: string }>(database.db, sql`select id, ticket_id from messages`);
      expect(rows).toEqual([{ id: truth.id, ticket_id: ticketId }]);
      // The copy written at once holds the text as sent: stdin's final line break dropped, nothing else.
      expect(await queryRows(database.db, sql`select message from messages`)).toEqual([{ message: 'Thanks for your patience.' }]);
      expect(await count(database.db, sql`select count(*)::int as n from api_requests where method = 'POST'`)).toBe(1);
    } finally {
      await database.close();
    }
  }, 60_000);

  it('refuses a message shorter than 3 characters with exit 2, before any request', async () => {
    const before = sim.log.length;
    const result = await runCli(['reply', sim.model.randomTicketId('open')!, '👍👍'], env, dir);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/at least 3 characters.*nothing was sent/);
    expect(result.stdout).toBe('');
    expect(sim.log.length).toBe(before);
  }, 60_000);

  it('Ctrl-C while the POST is out says the reply may have been posted, and exits 130', async () => {
    const ticket = sim.model.randomTicketId('open')!;
    sim.faults.inject({ kind: 'slow', match: `/ticket/${ticket}/reply`, delayMs: 20_000 });
    const reply = startCommand(['reply', ticket, 'Hello there'], { ...env, PGLITE_DIR: join(dir, 'interrupted') });
    try {
      await waitUntil('the POST is out', () => sim.log.some((r) => r.method === 'POST' && r.path.includes(ticket)), 60_000, reply);
      reply.child.kill('SIGINT');
      expect(await reply.exited).toEqual({ code: 130, signal: null });
      expect(reply.output()).toBe(`ticket-mirror: interrupted (SIGINT) while posting: the reply may have been posted; check ticket ${ticket} before sending again\n`);
    } finally {
      sim.faults.clear();
      await reply.dispose();
    }
  }, 90_000);

  it('refuses a blank ticket id with exit 2, before any request (it spent one on /ticket//reply)', async () => {
    const before = sim.log.length;
    for (const id of ['', '  ']) {
      const result = await runCli(['reply', id, 'Hello there'], env, dir);
      expect(result.code).toBe(2);
      expect(result.stderr).toBe('ticket-mirror: the ticket id is empty; nothing was sent\n');
    }
    expect(sim.log.length).toBe(before);
  }, 60_000);

  it('exits 1 with "not found" for an unknown ticket, and 2 for a rejected token', async () => {
    const missing = await runCli(['reply', 'NoSuchTicket', 'Hello there'], env, dir);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/ticket NoSuchTicket not found/);
    const rejected = await runCli(['reply', sim.model.randomTicketId('open')!, 'Hello there'], { ...env, TICKETS_API_TOKEN: 'wrong' }, dir);
    expect(rejected.code).toBe(2);
    expect(rejected.stderr).toMatch(/rejected the token/);
  }, 60_000);

  it('says an HTML answer may have posted the reply (exit 1), never that the token was rejected, and posts once', async () => {
    const ticketId = sim.model.randomTicketId('open')!;
    // The service stores the reply; a proxy answers with its login page instead.
    sim.faults.inject({
      kind: 'answer',
      afterApplication: true,
      match: `/ticket/${ticketId}/reply`,
      answer: { status: 201, headers: { 'content-type': 'text/html' }, body: '<!DOCTYPE html><html><body>Sign in</body></html>' },
    });
    const before = sim.log.length;
    const result = await runCli(['reply', ticketId, 'Posted behind a proxy.'], env, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(new RegExp(`the reply may have been posted \\(.*HTML.*\\); check ticket ${ticketId} before sending again`));
    expect(result.stderr).not.toMatch(/token/);
    expect(result.stdout).toBe('');
    expect(sim.log.slice(before).map((r) => r.method)).toEqual(['POST']);
    expect(sim.model.detail(ticketId)!.messages.filter((m) => m.message === 'Posted behind a proxy.')).toHaveLength(1);
  }, 60_000);
});

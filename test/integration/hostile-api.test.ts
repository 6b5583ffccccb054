import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Daemon } from '../../src/daemon/daemon.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { historyOf } from '../../src/db/repos/history.ts';
import { createLogger } from '../../src/logger.ts';
import type { ScriptedAnswer } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, TICK_MS, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * Answers that did not come from the API, met by the whole sync core: the simulator over real HTTP, a real database,
 * virtual time. Nothing from outside the API may mark a ticket deleted, stall the mirror for a quarter of an hour, or
 * send a request the ledger does not count.
 */

const MIN = 60_000;
const logger = createLogger('silent');

describe.each(backends)('answers that are not the API’s, in sync passes on $name', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const deleted = () => count(m.db, sql`select count(*)::int as n from tickets where deleted_at is not null`);
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

  it.each<[string, ScriptedAnswer]>([
    ["a gateway's 404 {message}", { status: 404, headers: { 'content-type': 'application/json' }, body: '{"message":"Not Found"}' }],
    ['an HTML 404 page', { status: 404, headers: { 'content-type': 'text/html' }, body: '<!DOCTYPE html><html><body><h1>404</h1></body></html>' }],
    ['an empty 404', { status: 404 }],
  ])('%s to every detail marks no ticket deleted, and the mirror completes once it stops', async (_, answer) => {
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/ticket\//, answer, times: 100_000 });
    await m.runFor(30 * MIN);
    const gateway404s = m.sim.log.filter((r) => r.path.startsWith('/api/v1/ticket/') && r.status === 404);
    expect(gateway404s.length).toBeGreaterThan(0);
    expect(await deleted()).toBe(0);

    m.sim.faults.clear();
    await m.runUntil(synced);
    expect(await deleted()).toBe(0);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  it('after the token has worked, login pages on a poll make the daemon try again within a minute, not back off 15 min', async () => {
    await m.runUntil(synced);
    const daemon = new Daemon({ engine: m.engine, clock: m.clock, logger });
    // Every attempt of one poll of the open list meets a login page (a proxy's hiccup).
    m.sim.faults.inject({ kind: 'html', match: /^\/api\/v1\/tickets$/, times: 3 });
    for (let i = 0; i < 400 && m.sim.faults.pending > 0; i++) {
      await daemon.tick();
      m.clock.advance(TICK_MS);
    }
    expect(m.sim.faults.pending).toBe(0);
    expect(daemon.health.state).not.toBe('auth_failed');
    const lastPage = m.sim.log.length;
    const pageAt = m.sim.log.at(-1)!.at;
    for (let i = 0; i < 20 && m.sim.log.length === lastPage; i++) {
      await daemon.tick();
      m.clock.advance(TICK_MS);
    }
    const next = m.sim.log[lastPage]!;
    expect(next).toMatchObject({ path: '/api/v1/tickets', status: 200 });
    expect(next.at - pageAt).toBeLessThanOrEqual(MIN);
    expect(daemon.health.state).toBe('ok');
    await daemon.stop();
  });

  it("one answer whose x-ratelimit headers claim 100,000 requests in a minute does not stop the mirror for a day", async () => {
    await m.runUntil(synced);
    // A gateway's own counters on its 503, not the API's: 99,999 requests by "someone else" in one minute.
    const headers = { 'content-type': 'text/html', 'x-ratelimit-limit': '100000', 'x-ratelimit-remaining': '0' };
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/tickets$/, answer: { status: 503, headers, body: '<html><body>503</body></html>' } });
    await m.runUntil(() => m.sim.faults.pending === 0, 400);
    expect(m.sim.faults.pending).toBe(0);
    const sent = m.sim.log.length;
    await m.runFor(30 * MIN);
    expect(m.engine.gate.snapshot().dailyLeft).toBeGreaterThan(1000);
    expect(m.sim.log.length).toBeGreaterThan(sent);
  });

  it('JSON nested 100,000 levels deep, in a detail or a list item, is refused by name; the pass goes on', async () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    const ticket = m.sim.model.randomTicketId('open')!;
    m.sim.faults.inject({
      kind: 'answer',
      match: new RegExp(`^/api/v1/ticket/${ticket}$`),
      answer: { status: 200, headers: { 'content-type': 'application/json' }, body: `{"id":${JSON.stringify(ticket)},"name":${deep(100_000)}}` },
      times: 100_000,
    });
    m.sim.faults.inject({
      kind: 'answer',
      match: /^\/api\/v1\/tickets\/unassigned$/,
      answer: { status: 200, headers: { 'content-type': 'application/json' }, body: `[{"id":"x1","name":${deep(100_000)}}]` },
    });
    const summaries = await m.runFor(30 * MIN);
    expect(summaries.flatMap((s) => s.errors)).toEqual(
      expect.arrayContaining([expect.stringMatching(/^unassigned list: .*nested deeper than/), expect.stringMatching(new RegExp(`^ticket ${ticket}: .*nested deeper than`))]),
    );
    // Every other ticket was stored meanwhile.
    expect(await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and deleted_at is null`)).toBe(1);
    m.sim.faults.clear();
    await m.runUntil(synced);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  it("a ticket the lists keep showing whose detail the API answers 404 is not marked deleted at each poll, nor asked for at each poll", async () => {
    await m.runUntil(synced);
    // An API out of step with itself (or an id its detail route cannot serve): listed, and "not found".
    const ticket = m.sim.model.randomTicketId('open')!;
    const notFound = { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":"Ticket not found."}' };
    m.sim.faults.inject({ kind: 'answer', match: new RegExp(`^/api/v1/ticket/${ticket}$`), answer: notFound, times: 100_000 });
    const start = m.sim.log.length;
    const summaries = await m.runFor(3 * 60 * MIN);
    const polls = m.sim.log.slice(start).filter((r) => r.path === '/api/v1/tickets').length;
    const asked = m.sim.log.slice(start).filter((r) => r.path === `/api/v1/ticket/${ticket}`).length;
    expect(polls).toBeGreaterThan(15);
    // Backed off like any failing detail (1 min doubling): 8 requests in 3 h at most, not one a poll.
    expect(asked).toBeLessThanOrEqual(8);
    expect(summaries.reduce((n, s) => n + s.deleted, 0)).toBe(0);
    expect(await deleted()).toBe(0);
    expect(summaries.flatMap((s) => s.errors)).toContainEqual(expect.stringMatching(new RegExp(`^ticket ${ticket}: .*404.*a list still shows it`)));

    // Gone for real: it leaves the lists, and the next 404 marks it deleted.
    m.sim.faults.clear();
    m.sim.model.deleteTicket(ticket);
    await m.runUntil(async () => (await deleted()) === 1, 2_000);
    expect(await deleted()).toBe(1);
  });

  it('a message or attachment whose id is 6,000 characters long is skipped; the rest of its ticket is stored, without retries', async () => {
    const ticket = m.sim.model.randomTicketId('open')!;
    const long = () => randomBytes(3_000).toString('hex');
    const detail = structuredClone(m.sim.model.detail(ticket)!) as unknown as Record<string, unknown> & { messages: Array<Record<string, unknown>>; attachments: unknown[] };
    const file = { id: long(), name: 'a.txt', mime_type: 'txt', size: 1, url: 'https://files.example.com/a?sig=x' };
    detail.messages.push({ ...detail.messages[0]!, id: long(), attachments: [] });
    detail.messages[0]!.attachments = [...(detail.messages[0]!.attachments as unknown[]), file];
    detail.attachments = [...detail.attachments, { ...file, id: long() }];
    const path = new RegExp(`^/api/v1/ticket/${ticket}$`);
    m.sim.faults.inject({ kind: 'answer', match: path, answer: { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(detail) }, times: 100_000 });
    const summaries = await m.runFor(60 * MIN);
    expect(summaries.flatMap((s) => s.errors).filter((e) => e.includes(ticket))).toEqual([]);
    // Asked for as often as any open ticket (revalidation), never as a failing one.
    const asked = (p: RegExp) => m.sim.log.filter((r) => p.test(r.path)).length;
    const other = m.sim.model.list('open').find((t) => t.id !== ticket)!.id;
    expect(asked(path)).toBeGreaterThanOrEqual(1);
    expect(asked(path)).toBeLessThanOrEqual(asked(new RegExp(`^/api/v1/ticket/${other}$`)) + 1);
    const stored = await queryRows<{ id: string }>(m.db, sql`select id from messages where ticket_id = ${ticket} order by id`);
    const short = detail.messages.map((x) => x.id as string).filter((id) => id.length < 1_000);
    expect(stored.map((r) => r.id)).toEqual([...short].sort());
    expect(await count(m.db, sql`select count(*)::int as n from attachments where length(id) > 1000`)).toBe(0);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where id = ${ticket} and detail_synced_at is not null`)).toBe(1);
  });

  it('a list item whose id is 6,000 characters long (too long for any index) is skipped; the list goes on being mirrored', async () => {
    await m.runUntil(synced);
    const long = { ...m.sim.model.list('open')[0]!, id: randomBytes(3_000).toString('hex') };
    const body = JSON.stringify([...m.sim.model.list('open'), long]);
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/tickets$/, answer: { status: 200, headers: { 'content-type': 'application/json' }, body }, times: 100_000 });
    const summaries = await m.runFor(30 * MIN);
    expect(m.sim.faults.pending).toBeLessThan(100_000);
    expect(summaries.flatMap((s) => s.errors).filter((e) => e.startsWith('open list'))).toEqual([]);
    expect(summaries.filter((s) => s.polls.includes('open')).length).toBeGreaterThan(0);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  const JSON_TYPE = { 'content-type': 'application/json' };
  const asked = (path: string) => m.sim.log.filter((r) => r.path === path).length;

  it('list items without an email or with a null status keep the stored values, and their details are not asked for at each poll', async () => {
    await m.runUntil(synced);
    const [lacking, nulled] = m.sim.model.list('open');
    const items = m.sim.model.list('open').map((t) => {
      if (t.id === lacking!.id) return Object.fromEntries(Object.entries(t).filter(([key]) => key !== 'email'));
      return t.id === nulled!.id ? { ...t, status: null } : t;
    });
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/tickets$/, answer: { status: 200, headers: JSON_TYPE, body: JSON.stringify(items) }, times: 100_000 });
    const start = m.sim.log.length;
    await m.runFor(3 * 60 * MIN);
    const polls = m.sim.log.slice(start).filter((r) => r.path === '/api/v1/tickets').length;
    expect(polls).toBeGreaterThan(15);
    // Before: the poll wiped the field, the ticket's detail was due and restored it, and the next poll wiped it again
    // (a read after every poll). Now they are read as often as the tickets the answer did not touch, which revalidation
    // re-reads in rounds: compared with the most-read of those, not with one of them (rounds give a ticket one or two
    // reads more than another).
    const untouched = m.sim.model.list('open').filter((t) => t.id !== lacking!.id && t.id !== nulled!.id);
    const mostRead = Math.max(...untouched.map((t) => asked(`/api/v1/ticket/${t.id}`)));
    expect(polls).toBeGreaterThan(2 * mostRead);
    for (const id of [lacking!.id, nulled!.id]) expect(asked(`/api/v1/ticket/${id}`)).toBeLessThanOrEqual(mostRead + 1);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });

  it('a detail without its messages, with null attachments and no email marks nothing removed, keeps the email, and is not asked for at each poll', async () => {
    await m.runUntil(synced);
    const ticket = m.sim.model.list('open').map((t) => t.id).find((id) => m.sim.model.detail(id)!.attachments.length > 0)!;
    const other = m.sim.model.list('open').find((t) => t.id !== ticket)!.id;
    const { messages: _messages, email: _email, ...detail } = { ...structuredClone(m.sim.model.detail(ticket)!), attachments: null };
    const held = await count(m.db, sql`select (select count(*) from messages where ticket_id = ${ticket}) + (select count(*) from attachments where ticket_id = ${ticket}) as n`);
    expect(held).toBeGreaterThan(1);
    m.sim.faults.inject({ kind: 'answer', match: new RegExp(`^/api/v1/ticket/${ticket}$`), answer: { status: 200, headers: JSON_TYPE, body: JSON.stringify(detail) }, times: 100_000 });
    await m.runFor(3 * 60 * MIN);
    expect(asked(`/api/v1/ticket/${ticket}`)).toBeGreaterThan(1);
    expect(asked(`/api/v1/ticket/${ticket}`)).toBeLessThanOrEqual(asked(`/api/v1/ticket/${other}`) + 1);
    // The contract's removed_at is "no longer in the ticket's detail": a detail that lists none says nothing of them.
    expect(await count(m.db, sql`select (select count(*) from messages where ticket_id = ${ticket} and removed_at is not null)
      + (select count(*) from attachments where ticket_id = ${ticket} and removed_at is not null) as n`)).toBe(0);
    const [row] = await queryRows<{ email: string | null }>(m.db, sql`select email from tickets where id = ${ticket}`);
    expect(row!.email).toBe(m.sim.model.detail(ticket)!.email);
  });

  it('a detail without assigned_to, one of its messages without a text: the stored assignee and text stay, no false history row', async () => {
    const ticket = m.sim.model.list('open').map((t) => t.id).find((id) => m.sim.model.detail(id)!.messages.length > 0)!;
    m.sim.model.assign(ticket, 'self');
    await m.runUntil(synced);
    await m.runFor(30 * MIN);
    const truth = m.sim.model.detail(ticket)!;
    const before = await historyOf(m.db, ticket);
    expect(before.at(-1)).toMatchObject({ assigned_to: m.sim.model.self });
    const { assigned_to: _assignee, ...detail } = structuredClone(truth) as unknown as Record<string, unknown> & { messages: Array<Record<string, unknown>> };
    detail.messages[0]!.message = null;
    m.sim.faults.inject({ kind: 'answer', match: new RegExp(`^/api/v1/ticket/${ticket}$`), answer: { status: 200, headers: JSON_TYPE, body: JSON.stringify(detail) }, times: 100_000 });
    const asked0 = asked(`/api/v1/ticket/${ticket}`);
    await m.runFor(4 * 60 * MIN);
    expect(asked(`/api/v1/ticket/${ticket}`)).toBeGreaterThan(asked0);
    const [row] = await queryRows<{ assigned_to: unknown }>(m.db, sql`select assigned_to from tickets where id = ${ticket}`);
    expect(row!.assigned_to).toEqual(m.sim.model.self);
    expect(await historyOf(m.db, ticket)).toHaveLength(before.length);
    const [message] = await queryRows<{ message: string | null }>(m.db, sql`select message from messages where id = ${truth.messages[0]!.id}`);
    expect(message!.message).toBe(truth.messages[0]!.message);
  });

  it('a message id two tickets give (ids per ticket) stays with the ticket that had it first, instead of moving at every read', async () => {
    // Tickets whose first message has an attachment: the other ticket's must not point at the message it lacks.
    const [a, b] = m.sim.model.list('open').map((t) => t.id).filter((id) => (m.sim.model.detail(id)!.messages[0]?.attachments.length ?? 0) > 0);
    const sharing = (ticket: string) => {
      const detail = structuredClone(m.sim.model.detail(ticket)!) as unknown as { messages: Array<{ id: string }> };
      detail.messages[0]!.id = 'shared-1';
      return JSON.stringify(detail);
    };
    for (const ticket of [a!, b!]) {
      m.sim.faults.inject({ kind: 'answer', match: new RegExp(`^/api/v1/ticket/${ticket}$`), answer: { status: 200, headers: JSON_TYPE, body: sharing(ticket) }, times: 100_000 });
    }
    await m.runUntil(synced);
    const owner = async () => (await queryRows<{ ticket_id: string }>(m.db, sql`select ticket_id from messages where id = 'shared-1'`))[0]!.ticket_id;
    const first = await owner();
    const owners = new Set<string>();
    for (let hour = 0; hour < 6; hour++) {
      await m.runFor(60 * MIN);
      owners.add(await owner());
    }
    expect([...owners]).toEqual([first]);
    expect(asked(`/api/v1/ticket/${a}`) + asked(`/api/v1/ticket/${b}`)).toBeGreaterThan(2);
    // The other ticket's own messages are all there; the shared id is the only one it lacks.
    const other = first === a ? b! : a!;
    const stored = await count(m.db, sql`select count(*)::int as n from messages where ticket_id = ${other} and removed_at is null`);
    expect(stored).toBe(m.sim.model.detail(other)!.messages.length - 1);
    // Its attachments of that message are stored, with the ticket and no message (the one they name is another ticket's).
    const lacking = m.sim.model.detail(other)!.messages[0]!.attachments.map((f) => f.id);
    const rows = await queryRows<{ id: string; ticket_id: string; message_id: string | null }>(
      m.db,
      sql`select id, ticket_id, message_id from attachments where id in (select jsonb_array_elements_text(${JSON.stringify(lacking)}::jsonb)) order by id`,
    );
    expect(rows).toEqual([...lacking].sort().map((id) => ({ id, ticket_id: other, message_id: null })));
  });

  it('a list whose answer stays unusable (a null item) is asked for again at its interval, not at every pass', async () => {
    await m.runUntil(synced);
    const body = JSON.stringify([...m.sim.model.list('open'), null]);
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/tickets$/, answer: { status: 200, headers: { 'content-type': 'application/json' }, body }, times: 100_000 });
    const start = m.sim.log.length;
    const summaries = await m.runFor(60 * MIN);
    const polls = m.sim.log.slice(start).filter((r) => r.path === '/api/v1/tickets').length;
    expect(summaries.flatMap((s) => s.errors).filter((e) => e.startsWith('open list: open[')).length).toBe(polls);
    // As often as the list polled with it (unassigned, in the probes between sweeps: every few minutes), not at each of
    // the 240 passes.
    const others = m.sim.log.slice(start).filter((r) => r.path === '/api/v1/tickets/unassigned').length;
    expect(polls).toBeGreaterThan(0);
    expect(polls).toBeLessThanOrEqual(others + 1);
  });

  it.each<[string, ScriptedAnswer]>([
    ['the API\'s 404', { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":"Not found"}' }],
    ['a gateway\'s bare 404', { status: 404 }],
    ['the API\'s 410', { status: 410, headers: { 'content-type': 'application/json' }, body: '{"error":"Gone"}' }],
  ])('%s to one list, for good, fails that list alone: the others and the details go on, nothing is marked missing', async (_, answer) => {
    await m.runUntil(synced);
    m.sim.faults.inject({ kind: 'answer', match: /^\/api\/v1\/tickets\/self$/, answer, times: 100_000 });
    const start = m.sim.log.length;
    // New tickets keep coming; their details must too.
    for (let i = 0; i < 3; i++) m.sim.model.newTicket({ attachments: 0 });
    const summaries = await m.runFor(60 * MIN);
    const after = m.sim.log.slice(start);
    const selfPolls = after.filter((r) => r.path === '/api/v1/tickets/self').length;
    expect(selfPolls).toBeGreaterThan(0);
    // Asked for at its interval (with the others), not at every pass: a bare 404 is retried twice within its poll, as a
    // gateway's hiccup may be (api/client.ts), the API's own 404 and 410 are not.
    const attempts = answer.body === undefined ? 3 : 1;
    expect(selfPolls).toBeLessThanOrEqual(attempts * (after.filter((r) => r.path === '/api/v1/tickets/resolved').length + 1));
    expect(after.filter((r) => r.path.startsWith('/api/v1/ticket/')).length).toBeGreaterThanOrEqual(3);
    expect(summaries.every((s) => s.stoppedBy === null)).toBe(true);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where missing_since is not null or deleted_at is not null`)).toBe(0);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`)).toBe(0);
  });

  it('a 403 to one ticket\'s detail backs that ticket off; the others are fetched, the token is not taken as rejected', async () => {
    await m.runUntil(synced);
    const victim = m.sim.model.randomTicketId('open')!;
    m.sim.faults.inject({
      kind: 'answer',
      match: new RegExp(`^/api/v1/ticket/${victim}$`),
      answer: { status: 403, headers: { 'content-type': 'application/json' }, body: '{"error":"This action is unauthorized."}' },
      times: 100_000,
    });
    m.sim.model.resolve(victim);
    const others = Array.from({ length: 3 }, () => m.sim.model.newTicket({ attachments: 0 }).id);
    const start = m.sim.log.length;
    const summaries = await m.runFor(60 * MIN);
    const after = m.sim.log.slice(start);
    for (const id of others) expect(after.filter((r) => r.path === `/api/v1/ticket/${id}`).length).toBeGreaterThanOrEqual(1);
    expect(await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`)).toBe(0);
    // Backed off on its own: 1 min, 2, 4, 8, 16, 32 within the hour at most, not at every pass.
    const forbidden = after.filter((r) => r.path === `/api/v1/ticket/${victim}`).length;
    expect(forbidden).toBeGreaterThan(0);
    expect(forbidden).toBeLessThanOrEqual(7);
    expect(summaries.every((s) => s.stoppedBy === null)).toBe(true);
  });

  it('a request whose answer never comes already has its api_requests row, counted once, also after a restart', async () => {
    const controller = new AbortController();
    const options = {
      db: m.db,
      apiUrl: m.sim.url,
      apiToken: m.sim.token,
      clock: m.clock,
      limits: { daily: 1440, minute: 60, reserve: 0.1 },
      logger,
      realTime: false,
    };
    const engine = new SyncEngine({ ...options, signal: controller.signal });
    await engine.init();
    m.sim.faults.inject({ kind: 'hang', match: '/api/v1/tickets' });
    const pending = engine.client.list('open').then(
      () => null,
      (error: unknown) => error,
    );
    await vi.waitFor(() => expect(m.sim.log).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const ledger = () => queryRows<{ path: string; kind: string; status: number | null; duration_ms: number | null }>(m.db, sql`select path, kind, status, duration_ms from api_requests`);
    // The answer has not come: the row is there already, without an outcome.
    expect(await ledger()).toEqual([{ path: '/api/v1/tickets', kind: 'list_open', status: null, duration_ms: null }]);
    expect(engine.gate.snapshot().dailyUsed).toBe(1);
    // What a process started after a kill -9 now would count.
    const restarted = new SyncEngine(options);
    await restarted.init();
    expect(restarted.gate.snapshot().dailyUsed).toBe(1);

    controller.abort();
    expect(await pending).toBeInstanceOf(Error);
    const [row] = await ledger();
    expect(await ledger()).toHaveLength(1);
    expect(row).toMatchObject({ status: null, duration_ms: expect.any(Number) });
    expect(engine.gate.snapshot().dailyUsed).toBe(1);
    expect(m.sim.log).toHaveLength(1);
  });
});

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import type { TicketDetail, TicketListItem } from '../../src/simulator/types.ts';

/** Real HTTP against a simulator on ephemeral ports; time is a ManualClock, never slept on. */

const JSON_HEADERS = { authorization: 'Bearer sim-token', accept: 'application/json' };

const started: RunningSimulator[] = [];

async function simulator(opts: SimulatorOptions = {}): Promise<{ sim: RunningSimulator; clock: ManualClock }> {
  const clock = new ManualClock();
  const sim = await startSimulator({ clock, ...opts });
  started.push(sim);
  return { sim, clock };
}

afterEach(async () => {
  await Promise.all(started.splice(0).map((sim) => sim.close()));
});

function get(sim: RunningSimulator, path: string, headers: Record<string, string> = JSON_HEADERS): Promise<Response> {
  return fetch(`${sim.url}${path}`, { headers });
}

function postReply(sim: RunningSimulator, id: string, body: string, headers = JSON_HEADERS): Promise<Response> {
  return fetch(`${sim.url}/api/v1/ticket/${id}/reply`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body,
  });
}

function expectApiHeaders(res: Response): void {
  expect(res.headers.get('content-type')).toMatch(/^(application\/json|text\/html)/);
  expect(res.headers.get('x-ratelimit-limit')).toBe('60');
  expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
}

describe('authentication', () => {
  it('answers 401 {"error":"Unauthenticated."} to a missing or wrong token', async () => {
    const { sim } = await simulator();
    for (const headers of [{ accept: 'application/json' }, { ...JSON_HEADERS, authorization: 'Bearer nope' }]) {
      const res = await get(sim, '/api/v1/tickets', headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe('application/json');
      expect(await res.json()).toEqual({ error: 'Unauthenticated.' });
      expectApiHeaders(res);
    }
  });

  it('answers an HTML login page (status 200) when Accept: application/json is missing', async () => {
    const { sim } = await simulator();
    const res = await get(sim, '/api/v1/tickets', {});
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toMatch(/<form[^>]*action="\/login"/);
    expectApiHeaders(res);
  });

  it('answers other errors as HTML too without Accept: application/json; data stays JSON', async () => {
    const { sim } = await simulator();
    const missing = await get(sim, '/api/v1/ticket/00000000', { authorization: 'Bearer sim-token' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^text\/html/);
    const list = await get(sim, '/api/v1/tickets', { authorization: 'Bearer sim-token' });
    expect(list.status).toBe(200);
    expect(list.headers.get('content-type')).toBe('application/json');
  });

  it('does not count requests with a bad token against the quota', async () => {
    const { sim } = await simulator();
    for (let i = 0; i < 5; i++) await get(sim, '/api/v1/tickets', { ...JSON_HEADERS, authorization: 'Bearer x' });
    const res = await get(sim, '/api/v1/tickets');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('59');
  });
});

describe('endpoints', () => {
  let sim: RunningSimulator;
  let clock: ManualClock;
  beforeAll(async () => {
    clock = new ManualClock();
    sim = await startSimulator({ clock, minuteLimit: 10_000 });
  });
  afterAll(() => sim.close());

  it.each([
    ['/api/v1/tickets', 'listOpen'],
    ['/api/v1/tickets/self', 'listSelf'],
    ['/api/v1/tickets/unassigned', 'listUnassigned'],
    ['/api/v1/tickets/resolved', 'listResolved'],
  ] as const)('GET %s lists the group newest first', async (path, method) => {
    const res = await get(sim, path);
    expect(res.status).toBe(200);
    const items = (await res.json()) as TicketListItem[];
    expect(items).toEqual(sim.model[method]());
    expect(items.length).toBeGreaterThan(0);
    const created = items.map((t) => t.created_at);
    expect(created).toEqual([...created].sort().reverse());
  });

  it('GET /api/v1/ticket/{id} returns the detail, singular `ticket`', async () => {
    const id = sim.model.groundTruth().find((t) => t.attachments.length > 0)!.id;
    const res = await get(sim, `/api/v1/ticket/${id}`);
    expect(res.status).toBe(200);
    const detail = (await res.json()) as TicketDetail;
    expect(detail).toEqual(sim.model.detail(id, clock.now()));
    expect(detail.attachments[0]!.url.startsWith(`${sim.storageUrl}/files/`)).toBe(true);
    expect((await get(sim, `/api/v1/tickets/${id}`)).status).toBe(404);
  });

  it('decodes the id in the path', async () => {
    const id = sim.model.listOpen()[0]!.id;
    const encoded = [...id].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('');
    expect(((await (await get(sim, `/api/v1/ticket/${encoded}`)).json()) as TicketDetail).id).toBe(id);
  });

  it('answers 404 {"error":"Ticket not found."} for an unknown or deleted ticket', async () => {
    const id = sim.model.listResolved()[5]!.id;
    sim.model.deleteTicket(id);
    for (const target of [id, 'zzzzzzzz', 'a%2Fb']) {
      const res = await get(sim, `/api/v1/ticket/${target}`);
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: 'Ticket not found.' });
    }
  });

  it('answers 404 JSON for an unknown path and 405 for a wrong method', async () => {
    const unknown = await get(sim, '/api/v1/users');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: expect.stringContaining('could not be found') });
    const wrong = await fetch(`${sim.url}/api/v1/tickets`, { method: 'DELETE', headers: JSON_HEADERS });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
  });

  it('POST /api/v1/ticket/{id}/reply answers 201 {id, created_at}; the reply shows in the detail', async () => {
    const id = sim.model.listOpen()[0]!.id;
    const res = await postReply(sim, id, JSON.stringify({ message: '  Thanks — we’re on it 🚀\nBest, Alex  ' }));
    expect(res.status).toBe(201);
    const result = (await res.json()) as { id: string; created_at: string };
    expect(Object.keys(result)).toEqual(['id', 'created_at']);
    expect(result.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    const detail = (await (await get(sim, `/api/v1/ticket/${id}`)).json()) as TicketDetail;
    expect(detail.messages.at(-1)).toMatchObject({
      id: result.id,
      created_at: result.created_at,
      message_type: 'outbound',
      message: 'Thanks — we’re on it 🚀\nBest, Alex',
      user: sim.model.self,
      ticket_status: detail.status,
      outbound_sent: true,
    });
    expect(detail.replied_to_customer).toBe(true);
  });

  it('validates the reply: 422 under 3 characters or missing, 400 for a body that is not JSON, 404 first', async () => {
    const id = sim.model.listOpen()[1]!.id;
    const before = sim.model.detail(id)!.messages.length;
    const short = await postReply(sim, id, JSON.stringify({ message: ' ab ' }));
    expect(short.status).toBe(422);
    expect(await short.json()).toEqual({ error: 'The message field must be at least 3 characters.' });
    expect((await postReply(sim, id, '{}')).status).toBe(422);
    const invalid = await postReply(sim, id, '{"message": ');
    expect(invalid.status).toBe(400);
    expect(await invalid.json()).toEqual({ error: expect.any(String) });
    expect((await postReply(sim, 'zzzzzzzz', '{}')).status).toBe(404);
    expect(sim.model.detail(id)!.messages).toHaveLength(before);
  });

  it('encodes JSON as PHP does (\\u escapes, \\/), which parses to the same text', async () => {
    const res = await get(sim, '/api/v1/tickets/resolved');
    const text = await res.text();
    expect(text).not.toMatch(/[^\x00-\x7f]/);
    expect(JSON.parse(text)).toEqual(sim.model.listResolved());
  });
});

describe('rate limits', () => {
  it('carries x-ratelimit-limit and -remaining on every response, counting down', async () => {
    const { sim } = await simulator();
    const id = sim.model.listOpen()[0]!.id;
    const responses = [
      await get(sim, '/api/v1/tickets'),
      await get(sim, `/api/v1/ticket/${id}`),
      await postReply(sim, id, '{"message":"Hello"}'),
      await postReply(sim, id, '{"message":"x"}'),
      await get(sim, '/api/v1/ticket/missing0'),
      await get(sim, '/nope'),
    ];
    responses.forEach((res, i) => {
      expectApiHeaders(res);
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(59 - i));
    });
  });

  it('answers 429 Too Many Attempts with retry-after past the minute limit; rejects cost nothing', async () => {
    const { sim, clock } = await simulator();
    for (let i = 0; i < 60; i++) expect((await get(sim, '/api/v1/tickets')).status).toBe(200);
    clock.advance(20_000);
    for (let i = 0; i < 3; i++) {
      const res = await get(sim, '/api/v1/tickets/self');
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('40');
      expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
      expect(await res.json()).toEqual({ error: 'Too Many Attempts.' });
    }
    clock.advance(40_000);
    const res = await get(sim, '/api/v1/tickets/self');
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('answers 429 past the daily limit of 1,440 requests in a rolling 24 h', async () => {
    const { sim, clock } = await simulator({ openTickets: 2, resolvedTickets: 2 });
    // One request a minute for 24 virtual hours: the minute limit never bites.
    for (let i = 0; i < 1_440; i++) {
      expect((await get(sim, '/api/v1/tickets')).status).toBe(200);
      clock.advance(60_000);
    }
    // The first request has just aged out of the rolling window, freeing one slot; the next frees in a minute.
    expect((await get(sim, '/api/v1/tickets')).status).toBe(200);
    const rejected = await get(sim, '/api/v1/tickets');
    expect(rejected.status).toBe(429);
    expect(rejected.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(rejected.headers.get('retry-after')).toBe('60');
  });
});

describe('attachment storage', () => {
  it('serves the file while the link is valid, 403 after 10 minutes, and fresh links work again', async () => {
    const { sim, clock } = await simulator({ resolvedTickets: 300 });
    const ticket = sim.model.groundTruth().find((t) => t.attachments.some((a) => a.name.includes(' ')))!;
    const detail = (await (await get(sim, `/api/v1/ticket/${ticket.id}`)).json()) as TicketDetail;
    const attachment = detail.attachments.find((a) => a.name.includes(' '))!;

    const file = await fetch(attachment.url);
    expect(file.status).toBe(200);
    const firstBytes = Buffer.from(await file.arrayBuffer());
    expect(firstBytes).toHaveLength(attachment.size);
    const types: Record<string, RegExp> = { pdf: /pdf/, png: /png/, jpg: /jpeg/, txt: /text\/plain/, csv: /text\/csv/ };
    expect(file.headers.get('content-type')).toMatch(types[attachment.mime_type]!);
    expect((await fetch(attachment.url)).status).toBe(200);

    clock.advance(9 * 60_000 + 59_000);
    expect((await fetch(attachment.url)).status).toBe(200);
    clock.advance(1_000);
    expect((await fetch(attachment.url)).status).toBe(403);

    const tampered = new URL(attachment.url);
    tampered.searchParams.set('expires', String(Number(tampered.searchParams.get('expires')) + 3600));
    expect((await fetch(tampered)).status).toBe(403);

    const fresh = (await (await get(sim, `/api/v1/ticket/${ticket.id}`)).json()) as TicketDetail;
    const again = await fetch(fresh.attachments.find((a) => a.id === attachment.id)!.url);
    expect(again.status).toBe(200);
    // Same bytes on every download.
    expect(Buffer.from(await again.arrayBuffer()).equals(firstBytes)).toBe(true);
  });
});

describe('faults', () => {
  it('status500 and status503 answer JSON errors and count against the quota', async () => {
    const { sim } = await simulator();
    sim.faults.inject({ kind: 'status500', match: '/tickets/self' });
    sim.faults.inject({ kind: 'status503', match: /resolved$/ });
    const first = await get(sim, '/api/v1/tickets/self');
    expect(first.status).toBe(500);
    expect(await first.json()).toEqual({ error: 'Server Error' });
    expectApiHeaders(first);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('59');
    expect((await get(sim, '/api/v1/tickets/self')).status).toBe(200);
    expect((await get(sim, '/api/v1/tickets/resolved')).status).toBe(503);
  });

  it('status500 on a reply stores nothing', async () => {
    const { sim } = await simulator();
    const id = sim.model.listOpen()[0]!.id;
    const before = sim.model.detail(id)!.messages.length;
    sim.faults.inject({ kind: 'status500', match: '/reply' });
    expect((await postReply(sim, id, '{"message":"Hello"}')).status).toBe(500);
    expect(sim.model.detail(id)!.messages).toHaveLength(before);
  });

  it('html answers a 200 login page despite Accept: application/json', async () => {
    const { sim } = await simulator();
    sim.faults.inject({ kind: 'html' });
    const res = await get(sim, '/api/v1/tickets');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('<form');
  });

  it('truncated answers a 200 JSON with half the real body', async () => {
    const { sim } = await simulator();
    sim.faults.inject({ kind: 'truncated', match: '/tickets/resolved' });
    const whole = await (await get(sim, '/api/v1/tickets/resolved')).text();
    sim.faults.inject({ kind: 'truncated', match: '/tickets/resolved' });
    const res = await get(sim, '/api/v1/tickets/resolved');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const half = await res.text();
    expect(whole.startsWith(half)).toBe(true);
    expect(() => JSON.parse(half)).toThrow();
    expect(half.length).toBe(Math.floor((await (await get(sim, '/api/v1/tickets/resolved')).text()).length / 2));
  });

  it('status429 answers 429 with retry-after and costs no quota', async () => {
    const { sim } = await simulator();
    sim.faults.inject({ kind: 'status429', retryAfterSec: 7 });
    const res = await get(sim, '/api/v1/tickets');
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('7');
    expect(await res.json()).toEqual({ error: 'Too Many Attempts.' });
    expect((await get(sim, '/api/v1/tickets')).headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('reset destroys the connection; slow answers normally after its delay', async () => {
    const { sim } = await simulator();
    sim.faults.inject({ kind: 'reset', match: '/tickets/self' });
    await expect(get(sim, '/api/v1/tickets/self')).rejects.toThrow();
    sim.faults.inject({ kind: 'slow', delayMs: 40 });
    const begun = performance.now();
    const res = await get(sim, '/api/v1/tickets/self');
    expect(res.status).toBe(200);
    expect(performance.now() - begun).toBeGreaterThanOrEqual(35);
    expect(sim.log.map((e) => e.status)).toEqual([0, 200]);
  });
});

describe('request log', () => {
  it('records every API request with clock time, method, path and status; control routes are not logged', async () => {
    const { sim, clock } = await simulator();
    await get(sim, '/api/v1/tickets?x=1');
    clock.advance(5_000);
    await get(sim, '/api/v1/ticket/zzzzzzzz', { accept: 'application/json' });
    await fetch(`${sim.url}/__sim/truth`);
    expect(sim.log).toEqual([
      { at: clock.now() - 5_000, method: 'GET', path: '/api/v1/tickets?x=1', status: 200 },
      { at: clock.now(), method: 'GET', path: '/api/v1/ticket/zzzzzzzz', status: 401 },
    ]);
  });
});

describe('control routes', () => {
  const post = (sim: RunningSimulator, path: string, body: unknown) =>
    fetch(`${sim.url}${path}`, { method: 'POST', body: JSON.stringify(body) });

  it('mutate calls a model method; truth and log mirror the model', async () => {
    const { sim } = await simulator();
    const args = [{ name: 'Ana Ünal', message: 'Hi there' }];
    const res = await post(sim, '/__sim/mutate', { op: 'newTicket', args });
    expect(res.status).toBe(200);
    const created = (await res.json()) as { id: string; name: string };
    expect(created.name).toBe('Ana Ünal');
    const listed = (await (await get(sim, '/api/v1/tickets/unassigned')).json()) as TicketListItem[];
    expect(listed[0]!.id).toBe(created.id);
    expect(await (await fetch(`${sim.url}/__sim/truth`)).json()).toEqual(sim.model.groundTruth());
    expect(await (await fetch(`${sim.url}/__sim/log`)).json()).toEqual(sim.log);
    expect((await post(sim, '/__sim/mutate', { op: 'resolve', args: ['zzzzzzzz'] })).status).toBe(404);
    expect((await post(sim, '/__sim/mutate', { op: 'constructor', args: [] })).status).toBe(400);
    expect((await post(sim, '/__sim/mutate', { op: 'randomTicketId', args: ['resolved'] })).status).toBe(200);
  });

  it('faults and clock', async () => {
    const { sim, clock } = await simulator();
    expect((await post(sim, '/__sim/faults', { kind: 'status503', matchRegex: 'self$', times: 2 })).status).toBe(204);
    expect(sim.faults.pending).toBe(2);
    expect((await get(sim, '/api/v1/tickets/self')).status).toBe(503);
    expect((await fetch(`${sim.url}/__sim/faults`, { method: 'DELETE' })).status).toBe(204);
    expect(sim.faults.pending).toBe(0);
    const start = clock.now();
    expect(await (await post(sim, '/__sim/clock', { advanceMs: 60_000 })).json()).toEqual({ now: start + 60_000 });
    expect(clock.now()).toBe(start + 60_000);
    expect((await post(sim, '/__sim/faults', { kind: 'bogus' })).status).toBe(400);
  });

  it('refuses to move the system clock', async () => {
    const sim = await startSimulator({ openTickets: 1, resolvedTickets: 1 });
    started.push(sim);
    expect((await post(sim, '/__sim/clock', { advanceMs: 1 })).status).toBe(409);
  });
});

describe('lifecycle', () => {
  it('serves on the given host, and close() is idempotent', async () => {
    const sim = await startSimulator({ openTickets: 1, resolvedTickets: 1, token: 'other' });
    expect(sim.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(sim.storageUrl).not.toBe(sim.url);
    expect((await get(sim, '/api/v1/tickets', { ...JSON_HEADERS, authorization: 'Bearer other' })).status).toBe(200);
    await Promise.all([sim.close(), sim.close()]);
    await expect(get(sim, '/api/v1/tickets')).rejects.toThrow();
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiClient, type ApiClientOptions, type LedgerEntry, type LedgerStart } from '../../src/api/client.ts';
import { ManualClock } from '../../src/clock.ts';
import {
  AuthError,
  InvalidResponseError,
  NotApiAnswerError,
  NotFoundError,
  RateLimitedError,
  RequestRejectedError,
  ResponseTooLargeError,
  TransientError,
} from '../../src/errors.ts';
import { startSimulator, type FaultSpec, type RunningSimulator, type ScriptedAnswer } from '../../src/simulator/index.ts';
import { BudgetGate } from '../../src/sync/gate.ts';

/**
 * The API client against the simulator over real HTTP, with answers no well-behaved API gives: each must end in a
 * named error after a bounded number of requests (never a retry storm), and only the API's own word may say that a
 * ticket is gone or that the token is refused. Time is a ManualClock that the client's back-off sleeps advance.
 */

const MIN = 60_000;
const JSON_TYPE = { 'content-type': 'application/json' };
const HTML_TYPE = { 'content-type': 'text/html; charset=UTF-8' };
const HTML_PAGE = '<!DOCTYPE html>\n<html><head><title>Log in</title></head><body><form></form></body></html>\n';

interface Harness {
  client: ApiClient;
  clock: ManualClock;
  opened: LedgerStart[];
  settled: LedgerEntry[];
}

function harness(sim: RunningSimulator, clock: ManualClock, options: Partial<ApiClientOptions> = {}): Harness {
  const opened: LedgerStart[] = [];
  const settled: LedgerEntry[] = [];
  const gate = new BudgetGate({ limits: { daily: 100_000, minute: 100_000, reserve: 0 }, clock, samples: [], realTimeInterval: false });
  const client = new ApiClient({
    baseUrl: sim.url,
    token: sim.token,
    clock,
    gate,
    record: async (start) => {
      opened.push(start);
      return async (entry) => {
        settled.push(entry);
      };
    },
    sleep: async (ms) => {
      clock.advance(ms);
    },
    random: () => 0,
    ...options,
  });
  return { client, clock, opened, settled };
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected the request to fail');
}

describe('the API client facing hostile answers, over real HTTP', () => {
  let sim: RunningSimulator;
  let clock: ManualClock;
  let h: Harness;
  let ticket: string;
  const apiRequests = () => sim.log.filter((r) => r.path.startsWith('/api/'));

  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
    sim = await startSimulator({ seed: 3, openTickets: 3, resolvedTickets: 2, clock, minuteLimit: 1000, dailyLimit: 100_000 });
    h = harness(sim, clock);
    ticket = sim.model.randomTicketId('open')!;
  });
  afterEach(() => sim.close());

  const answer = (a: ScriptedAnswer, times = 3): FaultSpec => ({ kind: 'answer', match: '/api/v1/ticket/', answer: a, times });

  // Every fault is offered 3 times, as many as the client's attempts: `requests` says how many it took.
  const detailCases: Array<[string, FaultSpec, new (...args: never[]) => Error, number]> = [
    ["a gateway's 404 {message}", answer({ status: 404, headers: JSON_TYPE, body: '{"message":"Not Found"}' }), TransientError, 3],
    ['an HTML 404 page', answer({ status: 404, headers: HTML_TYPE, body: HTML_PAGE }), TransientError, 3],
    ['an empty 404', answer({ status: 404, body: '' }), TransientError, 3],
    ['a 404 whose error is not a string', answer({ status: 404, headers: JSON_TYPE, body: '{"error":{"code":404}}' }), TransientError, 3],
    ['a 200 login page before the token has worked', { kind: 'html', times: 3 }, AuthError, 1],
    ['a 302 to another host before the token has worked', answer({ status: 302, headers: { location: 'https://sso.example.com/login?next=x' } }), AuthError, 1],
    ['a 200 text/plain "OK"', answer({ status: 200, headers: { 'content-type': 'text/plain' }, body: 'OK' }), InvalidResponseError, 1],
    ['a 200 JSON cut in half', { kind: 'truncated', match: '/api/v1/ticket/', times: 3 }, InvalidResponseError, 1],
    ['a 200 with an empty body', answer({ status: 200, headers: JSON_TYPE, body: '' }), InvalidResponseError, 1],
    ['a 200 JSON array for a detail', answer({ status: 200, headers: JSON_TYPE, body: '[]' }), InvalidResponseError, 1],
    ['a 200 JSON null', answer({ status: 200, headers: JSON_TYPE, body: 'null' }), InvalidResponseError, 1],
    ['a 204 No Content', answer({ status: 204 }), InvalidResponseError, 1],
    ['a 207 Multi-Status', answer({ status: 207, headers: JSON_TYPE, body: '{}' }), InvalidResponseError, 1],
    ['a 101 Switching Protocols', answer({ status: 101 }), InvalidResponseError, 1],
    ["a 418 I'm a teapot", answer({ status: 418, headers: JSON_TYPE, body: '{"error":"teapot"}' }), RequestRejectedError, 1],
    ['a 400 HTML page before the token has worked', answer({ status: 400, headers: HTML_TYPE, body: HTML_PAGE }), AuthError, 1],
    ['a 401 {error}', answer({ status: 401, headers: JSON_TYPE, body: '{"error":"Unauthenticated."}' }), AuthError, 1],
    ['a 403 HTML page', answer({ status: 403, headers: HTML_TYPE, body: HTML_PAGE }), AuthError, 1],
    ['a 500', { kind: 'status500', times: 3 }, TransientError, 3],
    ["a gateway's 502 HTML page", answer({ status: 502, headers: HTML_TYPE, body: HTML_PAGE }), TransientError, 3],
    ['a 408 Request Timeout', answer({ status: 408 }), TransientError, 3],
    ['a dropped connection', { kind: 'reset', times: 3 }, TransientError, 3],
  ];

  it.each(detailCases)('a detail answered with %s', async (_, fault, errorClass, requests) => {
    sim.faults.inject(fault);
    const error = await failure(h.client.detail(ticket));
    expect(error).toBeInstanceOf(errorClass);
    expect(error).not.toBeInstanceOf(NotFoundError);
    expect(apiRequests()).toHaveLength(requests);
    // Each request was recorded once before it went out and settled once.
    expect(h.opened).toHaveLength(requests);
    expect(h.settled).toHaveLength(requests);
  });

  it("only the API's own 404 {error} says a ticket is gone, after one request", async () => {
    const error = await failure(h.client.detail('Nope1234'));
    expect(error).toBeInstanceOf(NotFoundError);
    expect(apiRequests()).toHaveLength(1);
  });

  it('a list answered with a JSON object, or an HTML page of status 200, is refused by name', async () => {
    sim.faults.inject({ kind: 'answer', match: '/api/v1/tickets', answer: { status: 200, headers: JSON_TYPE, body: '{"data":[]}' } });
    expect(await failure(h.client.list('open'))).toBeInstanceOf(InvalidResponseError);
    expect(await h.client.list('open')).toMatchObject({ status: 200 });
    sim.faults.inject({ kind: 'answer', match: '/api/v1/tickets', answer: { status: 200, headers: JSON_TYPE, body: HTML_PAGE } });
    // Labelled JSON, but a page: after the token worked, a hiccup, retried at once.
    await expect(h.client.list('open')).resolves.toMatchObject({ status: 200 });
    expect(apiRequests()).toHaveLength(4);
  });

  it('a 429 with an absurd Retry-After waits at most a day', async () => {
    sim.faults.inject({ kind: 'answer', match: '/api/v1/tickets', answer: { status: 429, headers: { ...JSON_TYPE, 'retry-after': '999999999' }, body: '{"error":"Too Many Attempts."}' } });
    const error = await failure(h.client.list('open'));
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAt).toBe(clock.now() + 24 * 60 * MIN);
    expect(apiRequests()).toHaveLength(1);
  });

  it('a 1xx without a final answer is a timeout, retried a bounded number of times', async () => {
    const quick = harness(sim, clock, { timeoutMs: 200 });
    sim.faults.inject(answer({ status: 103 }));
    expect(await failure(quick.client.detail(ticket))).toBeInstanceOf(TransientError);
    expect(apiRequests()).toHaveLength(3);
  });

  it('never follows a redirect: another host never sees the token, before or after the token has worked', async () => {
    const elsewhere = await startSimulator({ seed: 4, openTickets: 1, resolvedTickets: 0, clock });
    try {
      const location = `${elsewhere.url}/collect?from=ticket-mirror`;
      for (const status of [301, 302, 307, 308]) {
        sim.faults.inject({ kind: 'answer', match: '/api/v1/tickets', answer: { status, headers: { location } } });
        await failure(h.client.list('open'));
      }
      expect((await h.client.list('open')).status).toBe(200);
      sim.faults.inject({ kind: 'answer', match: '/api/v1/tickets', answer: { status: 302, headers: { location } }, times: 3 });
      const error = await failure(h.client.list('open'));
      expect(error).toBeInstanceOf(NotApiAnswerError);
      expect(error.message).toContain(new URL(elsewhere.url).origin);
      expect(error.message).not.toContain('collect');
      expect(elsewhere.log).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });
});

describe('an HTML page after the token has worked (a proxy hiccup), over real HTTP', () => {
  let sim: RunningSimulator;
  let clock: ManualClock;
  let h: Harness;
  let ticket: string;

  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
    sim = await startSimulator({ seed: 3, openTickets: 3, resolvedTickets: 2, clock, minuteLimit: 1000, dailyLimit: 100_000 });
    h = harness(sim, clock);
    ticket = sim.model.randomTicketId('open')!;
  });
  afterEach(() => sim.close());

  it('at start-up, before any JSON, one login page is a rejected token: one request, AuthError', async () => {
    sim.faults.inject({ kind: 'html', times: 5 });
    expect(await failure(h.client.list('open'))).toBeInstanceOf(AuthError);
    expect(sim.log).toHaveLength(1);
  });

  it('a client told the token worked before (an earlier term, an earlier pass) retries a first login page', async () => {
    const told = harness(sim, clock, { tokenWorked: true });
    sim.faults.inject({ kind: 'html' });
    await expect(told.client.list('open')).resolves.toMatchObject({ status: 200 });
    expect(sim.log.map((r) => r.status)).toEqual([200, 200]);
    expect(told.client.tokenWorked).toBe(true);
    expect(h.client.tokenWorked).toBe(false);
  });

  it('once JSON has come back, a single login page is retried at once and the request succeeds', async () => {
    await h.client.list('open');
    sim.faults.inject({ kind: 'html' });
    const started = clock.now();
    await expect(h.client.detail(ticket)).resolves.toMatchObject({ status: 200 });
    expect(sim.log.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(clock.now() - started).toBeLessThan(MIN);
  });

  it('becomes an AuthError only after 3 pages in a row spread over at least 2 minutes', async () => {
    await h.client.list('open');
    sim.faults.inject({ kind: 'html', times: 100 });
    // 3 pages within seconds: transient.
    expect(await failure(h.client.detail(ticket))).toBeInstanceOf(NotApiAnswerError);
    expect(sim.log).toHaveLength(4);
    clock.advance(MIN);
    expect(await failure(h.client.detail(ticket))).toBeInstanceOf(NotApiAnswerError);
    expect(sim.log).toHaveLength(7);
    clock.advance(MIN);
    // The 7th page in a row, more than 2 minutes after the first: the token (or the URL) is the problem; not retried.
    const error = await failure(h.client.detail(ticket));
    expect(error).toBeInstanceOf(AuthError);
    expect(error.message).toMatch(/7 times in a row over 1\d\d s/);
    expect(sim.log).toHaveLength(8);
  });

  it('a JSON answer in between starts the count again', async () => {
    await h.client.list('open');
    for (let round = 0; round < 4; round++) {
      sim.faults.inject({ kind: 'html', times: 2 });
      await expect(h.client.detail(ticket)).resolves.toMatchObject({ status: 200 });
      clock.advance(MIN);
    }
    expect(sim.log.filter((r) => r.status === 200 && r.path.startsWith('/api/v1/ticket/'))).toHaveLength(12);
  });
});

describe('the response size cap, over real HTTP', () => {
  let sim: RunningSimulator;
  let clock: ManualClock;

  beforeEach(async () => {
    clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
    sim = await startSimulator({ seed: 3, openTickets: 3, resolvedTickets: 2, clock });
  });
  afterEach(() => sim.close());

  it('an answer over the cap with a Content-Length fails that request, named with its size, without a retry', async () => {
    const h = harness(sim, clock, { maxResponseBytes: 64 * 1024 });
    sim.faults.inject({ kind: 'oversized', bytes: 300_000, times: 3 });
    const error = await failure(h.client.list('open'));
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error).toBeInstanceOf(TransientError);
    expect(error.message).toContain('Content-Length 300000 bytes');
    expect(error.message).toContain('65536-byte cap of API_MAX_RESPONSE_BYTES');
    expect((error as ResponseTooLargeError).bytes).toBe(300_000);
    expect(sim.log).toHaveLength(1);
    expect(h.settled).toEqual([expect.objectContaining({ status: 200, path: '/api/v1/tickets' })]);
  });

  it('a streamed answer without a Content-Length is cut off once past the cap', async () => {
    const h = harness(sim, clock, { maxResponseBytes: 64 * 1024 });
    sim.faults.inject({ kind: 'oversized', bytes: 4_000_000, chunked: true });
    const error = await failure(h.client.list('open'));
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(error.message).toMatch(/more than \d+ bytes read without a Content-Length; reading stopped/);
    const read = (error as ResponseTooLargeError).bytes;
    expect(read).toBeGreaterThan(64 * 1024);
    // Stopped within a few of the simulator's 64 KiB pieces, far from the 4 MB sent.
    expect(read).toBeLessThan(512 * 1024);
    expect(sim.log).toHaveLength(1);
  });

  it('an answer just under the cap is read', async () => {
    const h = harness(sim, clock, { maxResponseBytes: 64 * 1024 });
    sim.faults.inject({ kind: 'oversized', bytes: 64 * 1024, chunked: true });
    await expect(h.client.list('open')).resolves.toMatchObject({ body: { length: 0 } });
  });
});

describe('path segments are sent as one segment, exactly, over real HTTP', () => {
  let sim: RunningSimulator;
  let h: Harness;

  beforeEach(async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
    sim = await startSimulator({ seed: 3, openTickets: 1, resolvedTickets: 0, clock });
    h = harness(sim, clock);
  });
  afterEach(() => sim.close());

  it.each([
    ['..', '/api/v1/ticket/%2E%2E'],
    ['.', '/api/v1/ticket/%2E'],
    ['...', '/api/v1/ticket/...'],
    ['a/b', '/api/v1/ticket/a%2Fb'],
    ['../tickets', '/api/v1/ticket/..%2Ftickets'],
    ['%2F', '/api/v1/ticket/%252F'],
    ['?x', '/api/v1/ticket/%3Fx'],
    ['#', '/api/v1/ticket/%23'],
    ['é ü', '/api/v1/ticket/%C3%A9%20%C3%BC'],
  ])('the id %j is requested as %s, and is not found', async (id, target) => {
    expect(await failure(h.client.detail(id))).toEqual(new NotFoundError(id));
    expect(sim.log.map((r) => r.path)).toEqual([target]);
    expect(h.settled.map((e) => e.path)).toEqual([target]);
  });

  it('a reply to the id ".." goes to that ticket, never to another path', async () => {
    expect(await failure(h.client.reply('..', 'Hello there'))).toBeInstanceOf(NotFoundError);
    expect(sim.log.map((r) => `${r.method} ${r.path}`)).toEqual(['POST /api/v1/ticket/%2E%2E/reply']);
  });
});

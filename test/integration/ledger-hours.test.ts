import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertRequest, openRequest, settleRequest } from '../../src/db/repos/ledger.ts';
import { requestsPerHour } from '../../src/daemon/statusData.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';

/**
 * The status page's hourly chart from the ledger: a request still in flight (its row written before it was sent,
 * no outcome yet) is not a failure; a row its process never settled is; so are 429s, 5xx and unanswered requests.
 */

const MIN = 60_000;
const NOW = Date.UTC(2026, 0, 5, 12, 30);
const entry = (at: number, status: number | null, durationMs = 120) => ({
  at,
  method: 'GET',
  path: '/api/v1/tickets',
  kind: 'list_open' as const,
  status,
  durationMs,
  ratelimitRemaining: null,
  ratelimitLimit: null,
});

describe.each(backends)('requests per hour on $name', ({ open }) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await open();
    const { db } = database;
    for (const status of [200, 200, 429, 503]) await insertRequest(db, entry(NOW - 20 * MIN, status));
    // Sent, no answer (a timeout): failed.
    await insertRequest(db, entry(NOW - 20 * MIN, null, 30_000));
    // Opened 10 minutes ago and never settled: its process died mid-request.
    await openRequest(db, { at: NOW - 10 * MIN, method: 'GET', path: '/api/v1/tickets/unassigned', kind: 'list_unassigned' });
    // Opened seconds ago, in flight.
    await openRequest(db, { at: NOW - 5_000, method: 'GET', path: '/api/v1/ticket/T1', kind: 'detail' });
    // Opened and settled with a success.
    const id = await openRequest(db, { at: NOW - 4_000, method: 'GET', path: '/api/v1/ticket/T2', kind: 'detail' });
    await settleRequest(db, id, { ...entry(NOW - 4_000, 200), path: '/api/v1/ticket/T2', kind: 'detail' });
  });
  afterAll(() => database.destroy());

  it('counts 429, 5xx, unanswered and abandoned requests as failed, and the one in flight as not', async () => {
    const hours = await requestsPerHour(database.db, NOW);
    expect(hours).toHaveLength(24);
    expect(hours.at(-1)).toEqual({ start: Date.UTC(2026, 0, 5, 12), requests: 8, failed: 4 });
    expect(hours.slice(0, -1).every((h) => h.requests === 0 && h.failed === 0)).toBe(true);
  });
});

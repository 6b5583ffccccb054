import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { runCli } from '../helpers/runProcess.ts';

/**
 * `ticket-mirror sync` as a child process, configured by its environment alone, against answers the API would not
 * give: what it exits with, what it says, and what it spent.
 */
describe.skipIf(!postgresUrl)('ticket-mirror sync facing answers that are not the API’s', () => {
  let sim: RunningSimulator;
  let dir: string;
  let database: TestDatabase;
  let env: Record<string, string>;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 6, openTickets: 3, resolvedTickets: 2 });
    dir = mkdtempSync(join(tmpdir(), 'tm-cli-answers-'));
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });
  beforeEach(async () => {
    database = await freshPostgres('tm_cli');
    sim.log.length = 0;
    sim.faults.clear();
    env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema, LOG_LEVEL: 'silent' };
  });
  afterEach(() => database.destroy());

  it('a login page on the very first request is a configuration error: exit 2, one request, one clear line', async () => {
    sim.faults.inject({ kind: 'html', times: 10 });
    const result = await runCli(['sync'], env, dir);
    expect(result.code).toBe(2);
    // Its first line; the lines after it are the hints of cli/explainFailure.ts.
    expect(result.stderr).toMatch(/^ticket-mirror: the API answered \/api\/v1\/tickets\S* with an HTML page \(HTTP 200\), not JSON: check TICKETS_API_URL and the token/);
    expect(result.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    expect(sim.log).toHaveLength(1);
  }, 60_000);

  it('a 429 is no ok sync (exit 1, until when), and the next sync, a process of its own, waits for it without a request', async () => {
    sim.faults.inject({ kind: 'status429', retryAfterSec: 30, times: 1 });
    const first = await runCli(['sync'], env, dir);
    expect(first.code).toBe(1);
    expect(first.stderr).toMatch(/^ticket-mirror: the API answered 429 \(too many requests\): no request before \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);
    expect(sim.log.map((r) => r.status)).toEqual([429]);
    // Before: each process kept the 429's wait in memory only, and a sync run right after asked again at once.
    const second = await runCli(['sync'], env, dir);
    expect(second.code).toBe(1);
    expect(second.stderr).toMatch(/the API answered 429 \(too many requests\): no request before/);
    expect(sim.log).toHaveLength(1);
  }, 60_000);

  it("an API error that quotes the token or a signed link: neither reaches stderr, the log or sync_runs", async () => {
    const quoting = (status: number) => ({
      status,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ error: `bad token ${sim.token}; see ${sim.storageUrl}/f/1?expires=1&signature=SIGSECRET1 or\nexpires=1&signature=SIGSECRET2` }),
    });
    sim.faults.inject({ match: /^\/api\/v1\/tickets\/resolved/, kind: 'answer', answer: quoting(400), times: 5 });
    sim.faults.inject({ match: /^\/api\/v1\/ticket\//, kind: 'answer', answer: quoting(500), times: 100 });
    const result = await runCli(['sync'], { ...env, LOG_LEVEL: 'info' }, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^ticket-mirror: .*bad token \[redacted\]/m);
    const [runs] = await queryRows<{ errors: string }>(database.db, sql`select string_agg(error, ' ') as errors from sync_runs`);
    expect(runs!.errors).toContain('bad token [redacted]');
    for (const secret of [sim.token, 'SIGSECRET']) {
      expect(result.stderr + result.stdout).not.toContain(secret);
      expect(runs!.errors).not.toContain(secret);
    }
  }, 60_000);

  it('a list the API refuses (a 404 of its route alone) is no ok sync: the other lists are written, exit 1 naming it', async () => {
    sim.faults.inject({ match: /^\/api\/v1\/tickets\/resolved/, kind: 'answer', answer: { status: 404, headers: { 'content-type': 'application/json' }, body: '{"error":"Not found."}' }, times: 5 });
    const result = await runCli(['sync'], env, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^ticket-mirror: a list could not be read: resolved list: /);
    expect(result.stdout).toMatch(/^sync: \d+ requests, lists open, self, unassigned, /);
    const written = await queryRows<{ n: number }>(database.db, sql`select count(*)::int as n from tickets where in_open`);
    expect(written[0]!.n).toBe(3);
  }, 60_000);

  it('an answer over API_MAX_RESPONSE_BYTES fails the pass with its size, once, and is in the ledger', async () => {
    sim.faults.inject({ kind: 'oversized', bytes: 200_000, chunked: true, times: 10 });
    const result = await runCli(['sync'], { ...env, API_MAX_RESPONSE_BYTES: '65536' }, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/larger than the 65536-byte cap of API_MAX_RESPONSE_BYTES \(more than \d+ bytes read without a Content-Length; reading stopped\)/);
    expect(sim.log).toHaveLength(1);
    const rows = await queryRows<{ status: number | null }>(database.db, sql`select status from api_requests`);
    expect(rows).toEqual([{ status: 200 }]);
  }, 60_000);
});

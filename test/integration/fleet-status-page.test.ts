import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock, systemClock } from '../../src/clock.ts';
import { sql } from '../../src/db/connect.ts';
import { insertRequest } from '../../src/db/repos/ledger.ts';
import type { FleetStatus } from '../../src/fleet/fleetStatus.ts';
import { startFleetHttpServer, type FleetHttpServer } from '../../src/fleet/httpServer.ts';
import { fleetStatusRoutes } from '../../src/fleet/statusRoutes.ts';
import type { FleetWorker } from '../../src/fleet/worker.ts';
import type { FleetWorkerEventMap } from '../../src/fleet/workerEvents.ts';
import { createLogger } from '../../src/logger.ts';
import { postgresUrl } from '../helpers/db.ts';
import { fleetFixture, type FleetFixture } from '../helpers/fleetFixture.ts';

/**
 * The routes `fleet run` adds to its HTTP server (/metrics, /status, /status.json), served by the worker's own server
 * (httpServer.ts) in this process, over the five-account fleet of fleetFixture. The worker is a stand-in that emits
 * the events a worker emits: what is tested here is what the routes make of the database and of those events.
 */
describe.skipIf(!postgresUrl)("fleet run's status routes", () => {
  let f: FleetFixture;
  let http: FleetHttpServer;
  const events = new EventEmitter<FleetWorkerEventMap>();
  const worker = { workerId: 'host-b:77', concurrency: 4, events, accounts: () => ['acme'], stop: async () => {} } as unknown as FleetWorker;

  beforeAll(async () => {
    f = await fleetFixture(postgresUrl!);
    // Two labelled accounts: acme and broken are the oldest; locked, fresh and resting are folded into _other.
    const { routes } = fleetStatusRoutes({ worker, fleet: f.fleet, metricsAccounts: 2, clock: systemClock, logger: createLogger('silent'), maxAgeMs: 0 });
    http = await startFleetHttpServer({ host: '127.0.0.1', port: 0, worker, db: f.fleet.db, logger: createLogger('silent'), routes });
  });
  afterAll(async () => {
    await http?.close();
    await f?.destroy();
  });

  const get = async (path: string) => {
    const response = await fetch(`${http.url}${path}`, { redirect: 'manual' });
    return { status: response.status, headers: response.headers, body: await response.text() };
  };

  it('/status: the account table worst first, hostile error text escaped, no script, strict policy', async () => {
    const page = await get('/status');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(page.body).not.toMatch(/<script|<img|onerror=alert\(1\)>/i);
    expect(page.body).toContain('HTTP 401 &#60;script&#62;alert(&#34;owned&#34;)&#60;/script&#62; &#60;img src=x onerror=alert(1)&#62; &#38;amp;');
    expect(page.body).not.toContain('sekrit');
    const table = page.body.slice(page.body.indexOf('<table class="accounts">'));
    const order = [...table.matchAll(/<tr><td>([a-z]+)<\/td>/g)].map((m) => m[1]);
    expect(order).toEqual(['locked', 'broken', 'acme', 'fresh', 'resting']);
    expect(page.body).toContain('served by worker host-b:77');
    expect(page.body).toMatch(/<td>account-pass<\/td><td>2<\/td><td>1<\/td>/);
    expect((await get('/')).headers.get('location')).toBe('/status');
  });

  it('/metrics: account labels only for the oldest FLEET_METRICS_ACCOUNTS, the rest summed as _other, and the totals', async () => {
    const entry = (account: string, status: number | null) => ({
      account,
      entry: { at: Date.now(), method: 'GET', path: '/api/v1/tickets', status, durationMs: 5, kind: 'list_open', ratelimitRemaining: 50 },
    });
    events.emit('request:sent', entry('acme', 200) as never);
    events.emit('request:sent', entry('acme', 200) as never);
    events.emit('request:sent', entry('locked', 401) as never);
    events.emit('request:sent', entry('fresh', null) as never);
    const report = (account: string, stoppedBy: string | null, state: string) =>
      ({ account, worker: 'host-b:77', jobId: 'j', startedAt: 0, finishedAt: 1, summary: { stoppedBy }, outcome: { state }, nextPassAt: 0, handedBack: false, interrupted: false }) as never;
    events.emit('pass:finished', report('acme', null, 'ok'));
    events.emit('pass:finished', report('broken', 'server_error', 'failing'));
    events.emit('pass:finished', report('locked', 'auth_failed', 'auth_failed'));
    events.emit('job:started', { account: 'acme', jobId: 'j', lateMs: 1_500, live: true, retryCount: 0, manual: false });
    events.emit('job:started', { account: 'acme', jobId: 'k', lateMs: 90_000, live: false, retryCount: 0, manual: false });
    events.emit('jobs:live', { promoted: 3, waiting: 7 });
    events.emit('jobs:live', { promoted: 0, waiting: 2 });

    const { status, body } = await get('/metrics');
    expect(status).toBe(200);
    const labels = new Set([...body.matchAll(/account="([^"]*)"/g)].map((m) => m[1]));
    expect(labels).toEqual(new Set(['acme', 'broken', '_other']));
    const series = (name: string) => body.split('\n').filter((l) => l.startsWith(`${name}{`) || l.startsWith(`${name} `));
    expect(series('ticket_mirror_fleet_account_api_requests_total')).toEqual([
      'ticket_mirror_fleet_account_api_requests_total{account="acme"} 2',
      'ticket_mirror_fleet_account_api_requests_total{account="broken"} 0',
      'ticket_mirror_fleet_account_api_requests_total{account="_other"} 2',
    ]);
    expect(body).toContain('ticket_mirror_fleet_account_errors_total{account="broken",kind="server_error"} 1');
    expect(body).toContain('ticket_mirror_fleet_account_errors_total{account="_other",kind="auth_failed"} 1');
    expect(body).toContain('ticket_mirror_fleet_account_passes_total{account="_other"} 1');
    expect(body).toContain('ticket_mirror_fleet_account_state{account="broken",state="failing"} 1');
    expect(series('ticket_mirror_fleet_account_state')).toHaveLength(2);
    expect(body).toContain('ticket_mirror_fleet_metrics_folded_accounts 3');
    expect(body).toContain('ticket_mirror_fleet_api_requests_total{status="none"} 1');
    expect(body).toContain('ticket_mirror_fleet_passes_total{result="ok"} 1');
    expect(body).toContain('ticket_mirror_fleet_job_start_delay_seconds_bucket{le="2",work="live"} 1');
    expect(body).toContain('ticket_mirror_fleet_job_start_delay_seconds_bucket{le="60",work="background"} 0');
    expect(body).toContain('ticket_mirror_fleet_job_start_delay_seconds_bucket{le="120",work="background"} 1');
    expect(body).toContain('ticket_mirror_fleet_live_jobs_waiting 2');
    expect(body).toContain('ticket_mirror_fleet_jobs_promoted_total 3');
    for (const state of ['auth_failed', 'failing', 'new', 'ok', 'paused']) expect(body).toContain(`ticket_mirror_fleet_accounts{state="${state}"} 1`);
    expect(body).toContain('ticket_mirror_fleet_jobs{queue="account-pass",state="active"} 1');
    expect(body).toContain('ticket_mirror_fleet_jobs{queue="account-pass",state="due"} 1');
    expect(body).toMatch(/^ticket_mirror_fleet_requests_24h [1-9]\d*$/m);
    // At most 9 series per labelled account and as many for _other.
    const perAccount = body.split('\n').filter((l) => /^ticket_mirror_fleet_account_\w+\{account=/.test(l));
    expect(perAccount.length).toBeLessThanOrEqual(9 * 3);
  });

  it('reads the mirrors at most once a minute, the rest at most every 15 s, on its clock', async () => {
    const clock = new ManualClock(Date.now());
    const { routes } = fleetStatusRoutes({ worker, fleet: f.fleet, clock, logger: createLogger('silent') });
    const acme = async () => {
      const answer = await routes['/status.json']!({} as never, new URL('http://x/status.json'));
      return (JSON.parse(answer.body) as FleetStatus).accounts.find((a) => a.name === 'acme')!;
    };
    const first = await acme();
    const request = { at: clock.now(), method: 'GET', path: '/api/v1/tickets', status: 200, durationMs: 3, kind: 'list_open', ratelimitRemaining: 50 };
    await insertRequest(f.mirrors.acme.db, request as never);
    await f.fleet.db.execute(sql`update accounts set last_pass_requests = 99 where name = 'acme'`);

    clock.advance(14_000);
    expect((await acme()).lastPass!.requests).toBe(7);
    clock.advance(2_000);
    const second = await acme();
    expect(second.lastPass!.requests).toBe(99);
    expect(second.budget!.dailyUsed).toBe(first.budget!.dailyUsed);
    clock.advance(45_000);
    expect((await acme()).budget!.dailyUsed).toBe(first.budget!.dailyUsed + 1);
  });

  it('/status.json: what fleet status --json prints, and the worker serving it', async () => {
    const { status, body } = await get('/status.json');
    expect(status).toBe(200);
    const json = JSON.parse(body) as Record<string, unknown> & { accounts: Array<{ name: string }> };
    expect(Object.keys(json).sort()).toEqual(['accounts', 'jobs', 'now', 'schema', 'totals', 'worker']);
    expect(json.worker).toEqual({ pid: process.pid, id: 'host-b:77', concurrency: 4, running: ['acme'] });
    expect(json.accounts.map((a) => a.name)).toEqual(['locked', 'broken', 'acme', 'fresh', 'resting']);
    expect(body).not.toContain('sekrit');
  });
});

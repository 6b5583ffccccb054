import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetStatus } from '../../src/fleet/fleetStatus.ts';
import { postgresUrl } from '../helpers/db.ts';
import { testFleet, type TestFleet } from '../helpers/fleet.ts';
import { freePort, get, runCli, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * The status of a fleet that a real `fleet run` process syncs: its HTTP server's /readyz, /status, /status.json and
 * /metrics, and `fleet status` beside it — three accounts, one synced, one with a token the API refuses, one paused.
 */
describe.skipIf(!postgresUrl)('the status of a running fleet', () => {
  let t: TestFleet;
  let worker: RunProcess;
  let httpUrl: string;
  let cwd: string;

  beforeAll(async () => {
    t = await testFleet(postgresUrl!);
    await t.addAccount('alpha');
    await t.addAccount('beta', { token: 'not-the-token' });
    await t.addAccount('gamma', { paused: true });
    const port = await freePort();
    httpUrl = `http://127.0.0.1:${port}`;
    worker = t.startWorker(['--concurrency', '2'], { HTTP_PORT: String(port), FLEET_METRICS_ACCOUNTS: '1', LOG_LEVEL: 'info' });
    await waitUntil(
      'alpha has passed and beta is refused',
      async () => (await t.row('alpha')).state === 'ok' && (await t.row('beta')).state === 'auth_failed',
      90_000,
      worker,
    );
    cwd = mkdtempSync(join(tmpdir(), 'tm-fleet-run-status-'));
  });
  afterAll(async () => {
    await t?.close();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('serves /readyz, the page, /status.json and /metrics with its accounts', async () => {
    expect((await get(`${httpUrl}/readyz`))?.status).toBe(200);

    const json = JSON.parse((await get(`${httpUrl}/status.json`))!.body) as FleetStatus & { worker: { id: string } };
    expect(json.worker.id).toBe(t.workerId(worker));
    expect(json.accounts.map((a) => [a.name, a.state])).toEqual([
      ['beta', 'auth_failed'],
      ['alpha', 'ok'],
      ['gamma', 'paused'],
    ]);
    const alpha = json.accounts.find((a) => a.name === 'alpha')!;
    expect(alpha.lastPass!.worker).toBe(t.workerId(worker));
    // Its ledger: every request it sent (the worker may have sent more since this read).
    expect(alpha.budget!.dailyUsed).toBeGreaterThan(0);
    expect(alpha.budget!.dailyUsed).toBeLessThanOrEqual(t.sims.get('alpha')!.log.length);
    expect(alpha.backfill!.total).toBe(12);
    expect(json.jobs.queues![0]!.name).toBe('account-pass');
    expect(t.sims.get('gamma')!.log).toHaveLength(0);

    const page = (await get(`${httpUrl}/status`))!.body;
    const order = [...page.matchAll(/<tr><td>([a-z]+)<\/td>/g)].map((m) => m[1]);
    expect(order).toEqual(['beta', 'alpha', 'gamma']);
    expect(page).not.toContain('not-the-token');

    // FLEET_METRICS_ACCOUNTS=1: alpha (the oldest) has its label; beta's refused requests are counted under _other.
    const metrics = (await get(`${httpUrl}/metrics`))!.body;
    expect(new Set([...metrics.matchAll(/account="([^"]+)"/g)].map((m) => m[1]))).toEqual(new Set(['alpha', '_other']));
    const count = (series: string) => Number(new RegExp(`^${series.replace(/[{}"]/g, '\\$&')} (\\d+)$`, 'm').exec(metrics)?.[1]);
    expect(count('ticket_mirror_fleet_account_api_requests_total{account="alpha"}')).toBeGreaterThan(0);
    expect(count('ticket_mirror_fleet_account_errors_total{account="_other",kind="auth_failed"}')).toBeGreaterThanOrEqual(1);
    expect(count('ticket_mirror_fleet_accounts{state="auth_failed"}')).toBe(1);
  });

  it('fleet status beside the running worker says the same', async () => {
    const result = await runCli(['fleet', 'status', '--json'], { DATABASE_URL: t.url, FLEET_SCHEMA: t.schema, LOG_FORMAT: 'json' }, cwd);
    expect(result.code).toBe(0);
    const s = JSON.parse(result.stdout) as FleetStatus;
    expect(s.accounts.map((a) => a.state)).toEqual(['auth_failed', 'ok', 'paused']);
    expect(s.accounts[0]!.lastError).toMatch(/401|token/i);
    expect(s.accounts[1]!.lastPass!.worker).toBe(t.workerId(worker));
  });

  it('stops on SIGTERM with exit 0', async () => {
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toEqual({ code: 0, signal: null });
  });
});

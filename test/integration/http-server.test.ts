import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { startService, type Service, type ServiceOptions } from '../../src/daemon/service.ts';
import { ConfigError } from '../../src/errors.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import type { MirrorStatus } from '../../src/sync/status.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/runProcess.ts';

/** The daemon's HTTP server in this process, on the embedded database, against the simulator in real time. */
describe('the HTTP server of run', () => {
  let sim: RunningSimulator | undefined;
  let database: TestDatabase | undefined;
  let service: Service | undefined;

  afterEach(async () => {
    await service?.stop();
    await sim?.close();
    await database?.destroy();
    service = sim = database = undefined;
  });

  const start = async (token?: string, afterPass?: ServiceOptions['afterPass']) => {
    sim = await startSimulator({ seed: 51, openTickets: 5, resolvedTickets: 7 });
    database = await freshPglite();
    const config = loadConfig(
      { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: token ?? sim.token, HTTP_PORT: String(await freePort()), PGLITE_PORT: '0' },
      { dotenv: false },
    );
    service = await startService({ config, database, logger: createLogger('silent'), clock: systemClock, afterPass });
    await once(service.replica.events, 'pass:finished');
    return `${service.http!.url}`;
  };

  it('answers /healthz, /readyz, /metrics and /status', async () => {
    const url = await start();
    const healthz = await fetch(`${url}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, 'ok\n']);
    const readyz = await fetch(`${url}/readyz`);
    expect([readyz.status, await readyz.text()]).toEqual([200, 'ready: leader: syncing\n']);

    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await metrics.text();
    for (const series of [
      'ticket_mirror_leader 1',
      'ticket_mirror_api_requests_total{kind="list_open",status="200"} 1',
      'ticket_mirror_api_rate_limited_total 0',
      'ticket_mirror_sync_pass_duration_seconds_count 1',
      'ticket_mirror_sync_passes_total{result="ok"} 1',
      'ticket_mirror_budget_remaining_requests{window="24h"} 1292',
      'ticket_mirror_budget_remaining_requests{window="1m"}',
      'ticket_mirror_change_lag_seconds',
      'ticket_mirror_list_age_seconds{list="resolved"}',
      'ticket_mirror_tickets{group="open"} 5',
      'ticket_mirror_tickets{group="resolved"} 7',
      'ticket_mirror_backfill_remaining 12',
      'ticket_mirror_detail_queue_size 0',
      'ticket_mirror_outbox_pending 0',
      'ticket_mirror_outbox_failed 0',
      'ticket_mirror_last_sync_timestamp_seconds',
      'process_cpu_user_seconds_total',
      'nodejs_heap_size_used_bytes',
    ]) {
      expect(text).toContain(series);
    }
    // Every request the simulator saw is counted once.
    const counted = [...text.matchAll(/^ticket_mirror_api_requests_total\{[^}]*\} (\d+)$/gm)].reduce((sum, m) => sum + Number(m[1]), 0);
    expect(counted).toBe(sim!.log.length);

    const status = await fetch(`${url}/status`);
    expect(status.status).toBe(200);
    expect(status.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(status.headers.get('content-security-policy')).toContain("default-src 'none'");
    const page = await status.text();
    expect(page).toContain('<svg class="chart"');
    expect(page).toContain('leader: syncing');

    const root = await fetch(`${url}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/status']);
    expect((await fetch(`${url}/nothing`)).status).toBe(404);
    expect((await fetch(`${url}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('serves /status.json (what `status --json` prints, and who serves it) and the build info among the metrics', async () => {
    const url = await start();
    const response = await fetch(`${url}/status.json`);
    expect([response.status, response.headers.get('content-type')]).toEqual([200, 'application/json; charset=utf-8']);
    const status = (await response.json()) as MirrorStatus & { daemon: unknown };
    expect(status.daemon).toEqual({ pid: process.pid, role: 'leader' });
    expect(status.counts).toMatchObject({ tickets: 12, open: 5, resolved: 7 });
    expect(status.budget).toMatchObject({ dailyAllowed: 1296, dailyUsed: sim!.log.length });
    expect(status.lastSync).toMatchObject({ requests: sim!.log.length, error: null });

    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default as { version: string };
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(text).toContain(`ticket_mirror_build_info{version="${version}",node_version="${process.versions.node}",backend="pglite"} 1`);
  });

  it("runs each term's after-pass work with the term's engine and the daemon's database handle", async () => {
    let ran!: (seen: { leader: boolean; aborted: boolean; requests: number }) => void;
    const afterPassRan = new Promise<{ leader: boolean; aborted: boolean; requests: number }>((resolve) => (ran = resolve));
    await start(undefined, ({ db, engine }) => async (signal) => {
      const [row] = await queryRows<{ n: number }>(db, sql`select count(*)::int as n from api_requests`);
      ran({ leader: service!.replica.role === 'leader', aborted: signal.aborted, requests: row!.n - engine.gate.snapshot().dailyUsed });
    });
    // After the first pass, as the leader, while the term lasts; the ledger the handle reads is the engine's.
    expect(await afterPassRan).toEqual({ leader: true, aborted: false, requests: 0 });
  });

  it('is not ready when the API rejects the token, and says why', async () => {
    const url = await start('not-the-token');
    const readyz = await fetch(`${url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toMatch(/^not ready: token rejected: the API rejected the token \(HTTP 401/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${url}/metrics`)).text()).toContain('ticket_mirror_sync_passes_total{result="auth_failed"} 1');
  });

  it('reports a busy HTTP_PORT with its variable', async () => {
    const url = await start();
    const port = new URL(url).port;
    const config = loadConfig({ TICKETS_API_URL: sim!.url, TICKETS_API_TOKEN: sim!.token, HTTP_PORT: port, PGLITE_PORT: '0' }, { dotenv: false });
    const second = startService({ config, database: database!, logger: createLogger('silent'), clock: systemClock });
    await expect(second).rejects.toBeInstanceOf(ConfigError);
    await expect(second).rejects.toThrow(`HTTP_PORT=${port} is in use`);
  });
});

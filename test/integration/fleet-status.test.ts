import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import type { FleetStatus } from '../../src/fleet/fleetStatus.ts';
import { mirrorStatus } from '../../src/sync/status.ts';
import { postgresUrl } from '../helpers/db.ts';
import { fleetFixture, LIMITS, type FleetFixture } from '../helpers/fleetFixture.ts';
import { runCli } from '../helpers/runProcess.ts';

/**
 * `ticket-mirror fleet status` through the real command line, on a fleet of five accounts in five states (see
 * fleetFixture: real mirrors filled by the engine, rows as workers leave them, pg-boss with a running and a queued
 * job) — no worker runs. What it must show: each state, the worst first, every account's budget and backfill equal to
 * what `status` says of the same mirror, safe error text, pg-boss's queues; and that it sends nothing to any API.
 */
describe.skipIf(!postgresUrl)('fleet status', () => {
  let f: FleetFixture;
  let cwd: string;
  const cli = (args: string[], env: Record<string, string> = {}) =>
    runCli(['fleet', 'status', ...args], { DATABASE_URL: f.databaseUrl, FLEET_SCHEMA: f.schema, LOG_FORMAT: 'json', ...env }, cwd);

  beforeAll(async () => {
    f = await fleetFixture(postgresUrl!);
    cwd = mkdtempSync(join(tmpdir(), 'tm-fleet-status-'));
  });
  afterAll(async () => {
    await f?.destroy();
    if (cwd) rmSync(cwd, { recursive: true, force: true });
  });

  it('--json: every account in its state, worst first, with the totals and the queues', async () => {
    const before = f.requests();
    const result = await cli(['--json']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const s = JSON.parse(result.stdout) as FleetStatus;
    expect(f.requests()).toBe(before);

    expect(Object.keys(s).sort()).toEqual(['accounts', 'jobs', 'now', 'schema', 'totals']);
    expect(s.schema).toBe(f.schema);
    expect(s.accounts.map((a) => [a.name, a.state])).toEqual([
      ['locked', 'auth_failed'],
      ['broken', 'failing'],
      ['acme', 'ok'],
      ['fresh', 'new'],
      ['resting', 'paused'],
    ]);
    const byName = Object.fromEntries(s.accounts.map((a) => [a.name, a]));
    expect(Object.keys(byName.acme!).sort()).toEqual(
      ['backfill', 'budget', 'createdAt', 'failures', 'lagSeconds', 'lastCleanPassAt', 'lastError', 'lastPass', 'name', 'nextPassAt', 'overdueSeconds', 'pausedAt', 'runningSince', 'schema', 'state'].sort(),
    );
    expect(byName.acme!.lastPass).toEqual({ at: expect.any(String), worker: 'host-a:4242', requests: 7 });

    // The budget and the backfill of each migrated account are what `status` says of its mirror.
    for (const name of ['acme', 'broken', 'locked'] as const) {
      const single = await mirrorStatus(f.mirrors[name].db, { dailyLimit: LIMITS.daily, minuteLimit: LIMITS.minute, reserve: LIMITS.reserve }, Date.parse(s.now));
      const a = byName[name]!;
      expect(a.budget).toEqual({
        dailyAllowed: single.budget.dailyAllowed,
        dailyUsed: single.budget.dailyUsed,
        dailyLeft: single.budget.dailyLeft,
        minuteAllowed: single.budget.minuteAllowed,
        minuteUsed: single.budget.minuteUsed,
      });
      expect(a.backfill).toEqual({ fetched: single.backfill.fetched, total: single.backfill.total });
    }
    expect(byName.acme!.budget!.dailyUsed).toBeGreaterThan(0);
    expect(byName.acme!.backfill!.total).toBe(36);
    expect(byName.locked!.budget!.dailyUsed).toBe(0);
    // Not migrated yet: nothing to read, and nothing created by reading.
    expect(byName.fresh!.budget).toBeNull();
    expect(byName.fresh!.backfill).toBeNull();

    // Lag runs from the last clean pass: broken's failed pass does not count; fresh has had none since it was added.
    expect(Date.parse(byName.broken!.lastCleanPassAt!)).toBeLessThan(Date.parse(byName.broken!.lastPass!.at));
    expect(byName.acme!.lagSeconds).toBeGreaterThan(25 * 60);
    expect(byName.fresh!.lagSeconds).toBeLessThan(25 * 60);

    // Safe text only: no bearer token, no terminal escape.
    expect(byName.broken!.lastError).toBe('server error: HTTP 500 for GET /api/v1/tickets (Authorization: Bearer [redacted] [31mred');
    expect(result.stdout).not.toContain('sekrit');
    expect(result.stdout).not.toContain('token-of-');

    // pg-boss: acme's job queued for later; broken's running, its successor due.
    expect(s.jobs.queues).toEqual([{ name: 'account-pass', policy: 'stately', queued: 2, due: 1, retry: 0, active: 1, oldestDueWaitSeconds: expect.any(Number) }]);
    expect(byName.broken!.runningSince).not.toBeNull();
    expect(byName.broken!.overdueSeconds).toBe(0);
    expect(byName.acme!.runningSince).toBeNull();

    expect(s.totals).toEqual({
      accounts: 5,
      states: { auth_failed: 1, failing: 1, new: 1, ok: 1, paused: 1 },
      requests24h: s.accounts.reduce((n, a) => n + (a.budget?.dailyUsed ?? 0), 0),
      budgetLeft24h: s.accounts.reduce((n, a) => n + (a.state === 'paused' ? 0 : (a.budget?.dailyLeft ?? 0)), 0),
      fetched: s.accounts.reduce((n, a) => n + (a.backfill?.fetched ?? 0), 0),
      total: s.accounts.reduce((n, a) => n + (a.backfill?.total ?? 0), 0),
      overdue: 0,
      maxLagSeconds: Math.max(...s.accounts.filter((a) => a.state !== 'paused').map((a) => a.lagSeconds)),
    });
  });

  it('as text: the totals, the queues, then one line per account, worst first', async () => {
    const before = f.requests();
    const result = await cli([]);
    expect(result.code).toBe(0);
    expect(f.requests()).toBe(before);
    const lines = result.stdout.split('\n');
    expect(lines[0]).toBe(`fleet     5 accounts in ${f.schema}: 1 auth_failed, 1 failing, 1 new, 1 ok, 1 paused`);
    expect(lines[4]).toMatch(/^jobs {6}account-pass \(stately\): 2 queued, 1 due \(oldest waiting \d+ s\), 0 retry, 1 active$/);
    const table = lines.slice(lines.indexOf('') + 1).filter((l) => l !== '');
    expect(table[0]).toMatch(/^ACCOUNT +STATE +LAST PASS +WORKER +REQ +LAG +NEXT PASS +BUDGET LEFT +BACKFILL +LAST ERROR$/);
    expect(table.slice(1).map((l) => l.split(/ +/)[0])).toEqual(['locked', 'broken', 'acme', 'fresh', 'resting']);
    expect(table[2]).toMatch(/^broken +failing ×3 +\d+ min ago +host-a:4242 +7 .* running \d+ (s|min) /);
    expect(table[4]).toMatch(/^fresh +new +never +- +- +\d+ (s|min) +- +- +not migrated$/);
    expect(table[5]).toMatch(/ paused /);
    expect(result.stdout).not.toContain('sekrit');
  });

  it('says where no fleet is (exit 1), and refuses without PostgreSQL (exit 2), creating nothing', async () => {
    const none = await cli([], { FLEET_SCHEMA: `${f.schema}_none` });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(`there is no fleet in schema ${f.schema}_none yet (FLEET_SCHEMA)`);
    const [created] = await queryRows<{ n: number }>(f.fleet.db, sql`select count(*)::int as n from pg_namespace where nspname = ${`${f.schema}_none`}`);
    expect(created!.n).toBe(0);

    const embedded = await runCli(['fleet', 'status'], { FLEET_SCHEMA: f.schema, PGLITE_DIR: join(cwd, 'pglite') }, cwd);
    expect(embedded.code).toBe(2);
    expect(embedded.stderr).toContain('fleet status needs DATABASE_URL');
  });
});

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { announceAccount } from '../../src/db/repos/accounts.ts';
import { fleetTiming, takeoverBoundMs } from '../../src/fleet/timing.ts';
import { connectionsPerWorker } from '../../src/fleet/worker.ts';
import { postgresUrl } from '../helpers/db.ts';
import { overlaps, testFleet, type TestFleet } from '../helpers/fleet.ts';
import { runCli, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * Real `fleet run` processes on the real PostgreSQL, each account served by a simulator of its own over HTTP, on the
 * system clock. The fleet's clockwork is shrunk through the hidden flags (slice 1 s, expiry 4 s, maintenance 1 s,
 * reconciliation 2 s) so that what takes up to a minute with the defaults takes seconds; the bounds asserted are
 * derived from the same timing (takeoverBoundMs).
 */

const FAST = ['--slice-seconds', '1', '--expire-seconds', '4', '--maintenance-seconds', '1', '--reconcile-seconds', '2', '--poll-seconds', '0.5'];
const FAST_TIMING = fleetTiming({ sliceMs: 1_000, expireInSeconds: 4, maintenanceIntervalSeconds: 1, reconcileMs: 2_000, pollIntervalMs: 500 });
/** Generous limits and a slow API: each account has minutes of backfill, in passes that the slice cuts. */
const BUSY = { openTickets: 30, resolvedTickets: 120, latencyMs: 120, dailyLimit: 100_000, minuteLimit: 600 };

describe.skipIf(!postgresUrl)('fleet run: workers on one PostgreSQL', { timeout: 240_000 }, () => {
  let f: TestFleet;

  beforeEach(async () => {
    f = await testFleet(postgresUrl!);
  });
  afterEach(async ({ task }) => {
    // The workers' logs outlive a failed test: where to look is printed.
    if (task.result?.state === 'fail') console.error(`fleet workers' logs: ${f.dumpLogs()}`);
    await f.close();
  });

  const passesOf = async (account: string) => (await f.syncRuns(account)).length;
  const requestsTo = (account: string) => f.sims.get(account)!.log.length;

  it('two workers share the accounts and never run one account at once', async ({ annotate }) => {
    for (const name of ['a', 'b', 'c']) await f.addAccount(name, { sim: BUSY });
    // One slot each for three busy accounts: every account's passes move between the workers.
    const w1 = f.startWorker(['--concurrency', '1', ...FAST]);
    const w2 = f.startWorker(['--concurrency', '1', ...FAST]);
    // The workers' sessions, sampled while they run: at most 7 + concurrency each (worker.ts).
    let maxConnections = 0;
    const sampler = setInterval(() => {
      void connections(f, [f.workerId(w1), f.workerId(w2)]).then((n) => (maxConnections = Math.max(maxConnections, n)), () => {});
    }, 250);
    await waitUntil(
      'every account has had 6 passes',
      async () => (await passesOf('a')) >= 6 && (await passesOf('b')) >= 6 && (await passesOf('c')) >= 6,
      150_000,
      w1,
    );
    const passes = f.passes();
    for (const name of ['a', 'b', 'c']) {
      // The account's database: the passes that sent requests (sync_runs) never overlap ...
      expect(overlaps(await f.syncRuns(name))).toEqual([]);
      // ... nor do the workers' jobs, lock held from start to end, as their logs tell.
      expect(overlaps(passes.filter((p) => p.account === name))).toEqual([]);
      expect(f.sims.get(name)!.log.filter((r) => r.status === 429)).toEqual([]);
    }
    const ids = [f.workerId(w1), f.workerId(w2)];
    const byWorker = ids.map((id) => passes.filter((p) => p.worker === id).length);
    const moved = ['a', 'b', 'c'].filter((name) => ids.every((id) => passes.some((p) => p.account === name && p.worker === id)));
    clearInterval(sampler);
    await annotate(`passes by worker: ${byWorker.join(' and ')}; accounts run by both: ${moved.join(', ')}; connections at most ${maxConnections}`);
    expect(byWorker.every((n) => n > 0)).toBe(true);
    expect(moved.length).toBeGreaterThan(0);
    expect(w1.child.exitCode).toBeNull();
    expect(w2.child.exitCode).toBeNull();
    expect(maxConnections).toBeGreaterThan(0);
    expect(maxConnections).toBeLessThanOrEqual(2 * connectionsPerWorker(1));
  });

  it("no pass starts while another process (a `run` on the same schema) holds the account's lock; it resumes once let go", async () => {
    for (const name of ['a', 'b']) await f.addAccount(name, { sim: BUSY });
    const w = f.startWorker(['--concurrency', '2', ...FAST]);
    await waitUntil('both accounts sync', async () => (await passesOf('a')) >= 1 && (await passesOf('b')) >= 1, 90_000, w);
    // What `run` takes for the schema (daemon/leader.ts), held by this test's session.
    await f.admin.query('select pg_advisory_lock(hashtext($1))', [`ticket-mirror:sync:${f.schemaOf('a')}`]);
    const held = requestsTo('a');
    const bBefore = await passesOf('b');
    await waitUntil('b has 4 more passes', async () => (await passesOf('b')) >= bBefore + 4, 90_000, w);
    expect(requestsTo('a')).toBe(held);
    await f.admin.query('select pg_advisory_unlock(hashtext($1))', [`ticket-mirror:sync:${f.schemaOf('a')}`]);
    await waitUntil('a syncs again', () => requestsTo('a') > held, 30_000, w);
  });

  it("kill -9 of a worker: the accounts it was running resume on the other within the derived bound (< 60 s)", async ({ annotate }) => {
    for (const name of ['a', 'b', 'c', 'd']) await f.addAccount(name, { sim: BUSY });
    const w1 = f.startWorker(['--concurrency', '2', ...FAST]);
    const w2 = f.startWorker(['--concurrency', '2', ...FAST]);
    const victim = f.workerId(w1);
    let held: string[] = [];
    await waitUntil(
      'the first worker runs an account',
      async () => {
        held = [...(await f.holders())].filter(([account, worker]) => worker === victim && f.sims.has(account)).map(([account]) => account);
        return held.length > 0;
      },
      90_000,
      w1,
    );
    w1.child.kill('SIGKILL');
    await w1.exited;
    const killedAt = Date.now();
    const bound = takeoverBoundMs(FAST_TIMING);
    const took: number[] = [];
    for (const account of held) {
      await waitUntil(
        `${account} has a pass after the kill`,
        async () => (await f.syncRuns(account)).some((r) => r.start > killedAt),
        60_000,
        w2,
      );
      const first = (await f.syncRuns(account)).find((r) => r.start > killedAt)!;
      took.push(first.start - killedAt);
    }
    await annotate(`accounts of the killed worker: ${held.join(', ')}; resumed after ${took.map((ms) => (ms / 1000).toFixed(1)).join(', ')} s (bound ${bound / 1000} s)`);
    // A pass that sent requests starts within the bound; the 5 s: the lock, opening and checking the account's schema (not
    // cached by this worker yet), the plan, its first request.
    for (const ms of took) expect(ms).toBeLessThan(Math.min(bound + 5_000, 60_000));
    // The row is written when the pass's job ends, just after its sync_runs row.
    for (const account of held) await waitUntil(`${account}'s row names the other worker`, async () => (await f.row(account)).worker === f.workerId(w2), 30_000, w2);
    for (const name of ['a', 'b', 'c', 'd']) expect(overlaps(await f.syncRuns(name))).toEqual([]);
  });

  it('a paused account gets no request; one paused mid-run stops; resume and announce start it at once', async () => {
    await f.addAccount('p', { sim: BUSY, paused: true });
    await f.addAccount('q', { sim: BUSY });
    await f.addAccount('r', { sim: BUSY });
    // Reconciliation only at start and after 150 s at the earliest: what starts `p` below is its announcement.
    const w = f.startWorker(['--concurrency', '2', ...FAST.slice(0, 6), '--reconcile-seconds', '300', '--poll-seconds', '0.5']);
    await waitUntil('q and r have had 2 passes', async () => (await passesOf('q')) >= 2 && (await passesOf('r')) >= 2, 90_000, w);
    expect(requestsTo('p')).toBe(0);
    expect(await f.row('p')).toMatchObject({ state: 'new', worker: null, lastPassAt: null });

    await f.admin.query(`update accounts set paused_at = now() where name = 'q'`);
    await waitUntil('q has no pass running', async () => !(await f.openJobs('q')).some((j) => j.state === 'active'), 30_000, w);
    const stoppedAt = requestsTo('q');
    const rBefore = await passesOf('r');
    await waitUntil('r has 4 more passes', async () => (await passesOf('r')) >= rBefore + 4, 90_000, w);
    expect(requestsTo('q')).toBe(stoppedAt);

    const resumedAt = Date.now();
    await f.admin.query(`update accounts set paused_at = null where name = 'p'`);
    await announceAccount(f.fleet.db, f.fleet.schema, 'p');
    const tookMs = await waitUntil('p gets its first request', () => requestsTo('p') > 0, 20_000, w);
    expect(Date.now() - resumedAt).toBeLessThan(10_000);
    expect(tookMs).toBeLessThan(10_000);
  });

  it('a token the API refuses, or that does not open, backs that account off (15 min) while the others sync', async () => {
    await f.addAccount('good', { sim: BUSY });
    await f.addAccount('bad', { sim: BUSY, token: 'not-the-token' });
    await f.addAccount('sealed', { sim: BUSY, otherKey: true });
    const w = f.startWorker(['--concurrency', '2', ...FAST]);
    await waitUntil(
      'both bad accounts are marked',
      async () => (await f.row('bad')).state === 'auth_failed' && (await f.row('sealed')).state === 'auth_failed',
      60_000,
      w,
    );
    const goodBefore = await passesOf('good');
    await waitUntil('good has 3 more passes', async () => (await passesOf('good')) >= goodBefore + 3, 60_000, w);

    const bad = await f.row('bad');
    expect(bad).toMatchObject({ state: 'auth_failed', failures: 1 });
    expect(Date.parse(bad.notBefore!) - Date.parse(bad.lastPassAt!)).toBeGreaterThan(14.9 * 60_000);
    expect(Date.parse(bad.notBefore!) - Date.parse(bad.lastPassAt!)).toBeLessThan(15.1 * 60_000);
    // One request, refused; its next job waits for the back-off.
    expect(f.sims.get('bad')!.log.map((r) => r.status)).toEqual([401]);
    const [next] = await f.openJobs('bad');
    expect(next!.state).toBe('created');
    expect(next!.dueInMs).toBeGreaterThan(14 * 60_000);

    const sealed = await f.row('sealed');
    expect(sealed).toMatchObject({ state: 'auth_failed', failures: 1 });
    expect(sealed.lastError).toMatch(/sealed with key [0-9a-f]{8}, but FLEET_KEY is key [0-9a-f]{8}/);
    expect(requestsTo('sealed')).toBe(0);

    expect(await f.row('good')).toMatchObject({ state: 'ok', failures: 0, lastError: null });
    expect(w.child.exitCode).toBeNull();
    expect(w.output()).not.toContain('not-the-token');
    expect(w.output()).not.toContain('token-sealed');
  });

  it('a reply is posted exactly once when the worker sending it is killed mid-POST', async ({ annotate }) => {
    const sim = await f.addAccount('r', { sim: { openTickets: 4, resolvedTickets: 4 } });
    const w1 = f.startWorker(['--concurrency', '1', ...FAST]);
    const w2 = f.startWorker(['--concurrency', '1', ...FAST]);
    await waitUntil('r has synced', async () => (await passesOf('r')) >= 1, 90_000, w1);
    const ticket = sim.model.listOpen()[0]!.id;
    const text = 'Sent by a fleet worker, then it was killed.';
    // The service stores the reply, and its answer never comes.
    sim.faults.inject({ kind: 'hang', afterApplication: true, match: `/ticket/${ticket}/reply` });
    const schema = `"${f.schemaOf('r')}"`;
    const { rows } = await f.admin.query(`insert into ${schema}.reply_outbox (ticket_id, message) values ($1, $2) returning id`, [ticket, text]);
    const id = Number(rows[0].id);
    const state = async () => (await f.admin.query(`select state, message_id from ${schema}.reply_outbox where id = $1`, [id])).rows[0];
    const posts = () => sim.log.filter((r) => r.method === 'POST').length;
    await waitUntil('the POST is in flight', async () => posts() === 1 && (await state()).state === 'sending', 30_000);
    const holder = (await f.holders()).get('r');
    const [dying, other] = holder === f.workerId(w1) ? [w1, w2] : [w2, w1];
    expect(holder).toBe(f.workerId(dying));
    dying.child.kill('SIGKILL');
    await dying.exited;
    const tookMs = await waitUntil('the reply is settled', async () => ['sent', 'failed'].includes((await state()).state), 90_000, other);
    await annotate(`settled ${(tookMs / 1000).toFixed(1)} s after the kill`);
    expect(tookMs).toBeLessThan(60_000);
    const stored = sim.model.detail(ticket)!.messages.filter((m) => m.message === text);
    expect(stored).toHaveLength(1);
    expect(await state()).toEqual({ state: 'sent', message_id: stored[0]!.id });
    expect(posts()).toBe(1);
  });

  it('SIGTERM: the running pass stops at its next request, its account is handed back due at once, exit 0 within 10 s', async ({ annotate }) => {
    await f.addAccount('s', { sim: { ...BUSY, latencyMs: 300 } });
    // A slice of a minute: the pass is still running when the signal comes.
    const w = f.startWorker(['--concurrency', '1', ...FAST, '--slice-seconds', '60']);
    await waitUntil('a long pass runs', async () => (await f.holders()).get('s') === f.workerId(w) && requestsTo('s') > 10, 90_000, w);
    const exit = await sigterm(w);
    await annotate(`exited ${exit.code} after ${(exit.ms / 1000).toFixed(2)} s`);
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(10_000);
    expect(w.output()).toMatch(/"handedBack":true/);
    expect((await f.holders()).has('s')).toBe(false);
    const jobs = await f.openJobs('s');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({ state: 'created' });
    expect(jobs[0]!.dueInMs).toBeLessThanOrEqual(0);
  });

  it('SIGTERM while a request hangs: cut off after the grace, exit 0 within 10 s', async ({ annotate }) => {
    const sim = await f.addAccount('h', { sim: BUSY });
    const w = f.startWorker(['--concurrency', '1', ...FAST, '--slice-seconds', '60']);
    await waitUntil('h syncs', () => requestsTo('h') > 5, 90_000, w);
    sim.faults.inject({ kind: 'hang', times: 1000 });
    const hung = requestsTo('h');
    await waitUntil('a request hangs', () => requestsTo('h') > hung, 30_000, w);
    const exit = await sigterm(w);
    await annotate(`exited ${exit.code} after ${(exit.ms / 1000).toFixed(2)} s`);
    expect(exit.code).toBe(0);
    expect(exit.ms).toBeLessThan(10_000);
    expect(w.output()).toContain('cutting their requests off');
    const jobs = await f.openJobs('h');
    expect(jobs.map((j) => j.state)).toEqual(['created']);
    expect(jobs[0]!.dueInMs).toBeLessThanOrEqual(0);
  });

  it('a reply inserted for an idle account wakes it: sent within seconds, not at its next planned pass', async ({ annotate }) => {
    const sim = await f.addAccount('idle', { sim: { openTickets: 3, resolvedTickets: 3 } });
    const w = f.startWorker(['--concurrency', '1', ...FAST.slice(0, 6), '--reconcile-seconds', '300', '--poll-seconds', '0.5']);
    await waitUntil(
      'the account is idle, its next pass a minute away or more',
      async () => {
        const row = await f.row('idle');
        return row.lastPassAt !== null && row.nextPassAt !== null && Date.parse(row.nextPassAt) - Date.now() > 60_000;
      },
      90_000,
      w,
    );
    const ticket = sim.model.listOpen()[0]!.id;
    const schema = `"${f.schemaOf('idle')}"`;
    const { rows } = await f.admin.query(`insert into ${schema}.reply_outbox (ticket_id, message) values ($1, $2) returning id`, [ticket, 'Woken by the trigger.']);
    const tookMs = await waitUntil(
      'the reply is sent',
      async () => (await f.admin.query(`select state from ${schema}.reply_outbox where id = $1`, [rows[0].id])).rows[0].state === 'sent',
      30_000,
      w,
    );
    await annotate(`sent ${(tookMs / 1000).toFixed(1)} s after the insert`);
    expect(tookMs).toBeLessThan(10_000);
    expect(sim.log.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it("an account whose schema does not exist yet: its first pass migrates it, and the views across the fleet show it", async () => {
    await f.addAccount('fresh', { unmigrated: true });
    const w = f.startWorker(['--concurrency', '1', ...FAST]);
    await waitUntil('fresh has synced', async () => (await f.row('fresh')).lastPassAt !== null && (await f.row('fresh')).state === 'ok', 90_000, w);
    const { rows } = await f.admin.query(`select count(*)::int as n from fleet_tickets where account = 'fresh'`);
    expect(rows[0].n).toBeGreaterThan(0);
    const trigger = await f.admin.query(`select tgname from pg_trigger where tgrelid = to_regclass($1)`, [`"${f.schemaOf('fresh')}".reply_outbox`]);
    expect(trigger.rows.map((r) => r.tgname)).toContain('ticket_mirror_fleet_reply');
  });

  it('fleet run refuses without DATABASE_URL or FLEET_KEY: one line each, exit 2', async () => {
    const cwd = (await import('node:os')).tmpdir();
    const noUrl = await runCli(['fleet', 'run'], { FLEET_KEY: 'a'.repeat(64), LOG_FORMAT: 'json' }, cwd);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stderr.trim().split('\n')).toEqual([expect.stringContaining('fleet run needs DATABASE_URL (PostgreSQL)')]);
    const noKey = await runCli(['fleet', 'run'], { DATABASE_URL: f.url, LOG_FORMAT: 'json' }, cwd);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr.trim().split('\n')).toEqual([expect.stringContaining('fleet run needs FLEET_KEY')]);
  });
});

/** Sessions of these workers (each names itself in its sessions' application_name: `tm … <worker id>`). */
async function connections(f: TestFleet, workers: string[]): Promise<number> {
  const { rows } = await f.admin.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
     where application_name like 'tm %' and exists (select 1 from unnest($1::text[]) w where right(application_name, length(w) + 1) = ' ' || w)`,
    [workers],
  );
  return rows[0]!.n;
}

async function sigterm(run: RunProcess): Promise<{ code: number | null; ms: number }> {
  const started = performance.now();
  run.child.kill('SIGTERM');
  const { code } = await run.exited;
  return { code, ms: performance.now() - started };
}

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { postgresUrl } from '../helpers/db.ts';
import { freePort, get, startRun, startRunOnPostgres, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * Several `run` processes on one PostgreSQL schema: one syncs, the others stand by, and a standby takes over within
 * 30 s when the leader is killed with SIGKILL. Real processes against the simulator on the system clock.
 */

const readyz = async (run: RunProcess) => (await get(`${run.httpUrl}/readyz`))?.body ?? '';
const metric = async (run: RunProcess, name: string) => {
  const text = (await get(`${run.httpUrl}/metrics`))?.body ?? '';
  return text.split('\n').filter((line) => line.startsWith(name));
};

describe.skipIf(!postgresUrl)('standby replicas on one PostgreSQL', { timeout: 180_000 }, () => {
  let sim: RunningSimulator;
  let schema: string;
  const runs: RunProcess[] = [];

  beforeEach(async () => {
    sim = await startSimulator({ seed: 11, openTickets: 6, resolvedTickets: 10 });
    schema = `tm_replica_${randomBytes(4).toString('hex')}`;
  });
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()));
    await sim.close();
    const client = new pg.Client({ connectionString: postgresUrl! });
    await client.connect();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  });

  const replica = async () => {
    const run = await startRunOnPostgres(sim, postgresUrl!, schema);
    runs.push(run);
    return run;
  };

  it('one syncs; after a kill -9 of it, the standby takes over within 30 s', async ({ annotate }) => {
    const a = await replica();
    await waitUntil('the first process leads', async () => (await readyz(a)).includes('leader: syncing'), 90_000, a);
    const b = await replica();
    await waitUntil('the second stands by', async () => (await readyz(b)).includes('standby'), 90_000, b);

    // The standby has sent nothing: exactly one process syncs.
    expect(await metric(b, 'ticket_mirror_leader ')).toEqual(['ticket_mirror_leader 0']);
    expect(await metric(b, 'ticket_mirror_api_requests_total{')).toEqual([]);
    expect(await metric(a, 'ticket_mirror_leader ')).toEqual(['ticket_mirror_leader 1']);

    a.child.kill('SIGKILL');
    await a.exited;
    const tookMs = await waitUntil('the standby leads', async () => (await readyz(b)).includes('leader: syncing'), 30_000, b);
    await annotate(`standby took over ${(tookMs / 1000).toFixed(1)} s after the leader was killed`);
    expect(tookMs).toBeLessThan(30_000);
    expect(await metric(b, 'ticket_mirror_leader ')).toEqual(['ticket_mirror_leader 1']);
    expect(b.output()).toContain('leading: this process syncs');
  }, 200_000);
});

describe('one process per embedded database', () => {
  const runs: RunProcess[] = [];
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()));
  });

  it('a second `run` on the same data folder refuses to start', async () => {
    const sim = await startSimulator({ seed: 12, openTickets: 2, resolvedTickets: 2 });
    try {
      const env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_PORT: '0', LOG_LEVEL: 'info' };
      const first = startRun({ ...env, HTTP_PORT: String(await freePort()) });
      runs.push(first);
      await waitUntil('the first process leads', async () => (await readyz(first)).includes('leader'), 90_000, first);
      const second = startRun({ ...env, HTTP_PORT: String(await freePort()), PGLITE_DIR: `${first.cwd}/pglite` });
      runs.push(second);
      const { code } = await second.exited;
      expect(code).not.toBe(0);
      expect(second.output()).toContain(`in use by process ${first.pid}`);
    } finally {
      await sim.close();
    }
  }, 150_000);
});

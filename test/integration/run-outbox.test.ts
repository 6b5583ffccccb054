import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { postgresUrl } from '../helpers/db.ts';
import { freePort, get, startRun, startRunOnPostgres, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * End to end: a reply INSERTed with SQL reaches the service exactly once through a running daemon, and appears in
 * `messages` — also when the daemon is killed with SIGKILL and started again in the middle.
 */
// Each test starts `run` children and waits on them (up to 240 s when the machine is busy): the test's own time limit
// must not cut those waits short, or a slow start reads as a failure without the children's logs.
describe.skipIf(!postgresUrl)('run delivers the reply outbox', { timeout: 300_000 }, () => {
  let sim: RunningSimulator;
  let schema: string;
  let client: pg.Client;
  const runs: RunProcess[] = [];

  beforeEach(async () => {
    sim = await startSimulator({ seed: 5, openTickets: 4, resolvedTickets: 4 });
    schema = `tm_run_outbox_${randomBytes(4).toString('hex')}`;
    client = new pg.Client({ connectionString: postgresUrl!, options: `-c search_path=${schema}` });
    await client.connect();
  });
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()));
    await sim.close();
    await client.query(`drop schema if exists "${schema}" cascade`);
    await client.end();
  });

  const daemon = async () => {
    const run = await startRunOnPostgres(sim, postgresUrl!, schema);
    runs.push(run);
    await waitUntil('the daemon leads', async () => ((await get(`${run.httpUrl}/readyz`))?.body ?? '').includes('leader'), 90_000, run);
    return run;
  };
  const posts = () => sim.log.filter((r) => r.method === 'POST').length;
  const state = async (id: number) => (await client.query('select state, message_id from reply_outbox where id = $1', [id])).rows[0];

  it('sends an inserted reply once, and records it in messages', async () => {
    await daemon();
    const ticket = sim.model.listOpen()[0]!.id;
    const { rows } = await client.query('insert into reply_outbox (ticket_id, message) values ($1, $2) returning id', [ticket, 'Thanks — fixed in 4.2.']);
    await waitUntil('the reply is sent', async () => (await state(rows[0].id))?.state === 'sent', 60_000);
    const { message_id } = await state(rows[0].id);
    expect(posts()).toBe(1);
    const message = await client.query('select ticket_id, message from messages where id = $1', [message_id]);
    expect(message.rows).toEqual([{ ticket_id: ticket, message: 'Thanks — fixed in 4.2.' }]);
    expect(sim.model.detail(ticket)!.messages.filter((m) => m.message === 'Thanks — fixed in 4.2.')).toHaveLength(1);
  });

  it('sends each reply exactly once across a kill -9 and a restart', async () => {
    const first = await daemon();
    const ticket = sim.model.listOpen()[1]!.id;
    const ids: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { rows } = await client.query('insert into reply_outbox (ticket_id, message) values ($1, $2) returning id', [ticket, `Reply number ${i}`]);
      ids.push(rows[0].id);
    }
    await waitUntil('a first reply is sent', async () => (await state(ids[0]!))?.state === 'sent', 60_000);
    first.child.kill('SIGKILL');
    await first.exited;
    await daemon();
    await waitUntil('every reply is settled', async () => {
      const { rows } = await client.query("select count(*)::int as n from reply_outbox where state in ('sent', 'failed')");
      return rows[0].n === ids.length;
    }, 240_000);
    const { rows } = await client.query('select state, count(*)::int as n from reply_outbox group by state');
    expect(rows).toEqual([{ state: 'sent', n: 5 }]);
    expect(posts()).toBe(5);
    const texts = sim.model.detail(ticket)!.messages.map((m) => m.message).filter((t) => t.startsWith('Reply number'));
    expect(texts.sort()).toEqual(['Reply number 0', 'Reply number 1', 'Reply number 2', 'Reply number 3', 'Reply number 4']);
  });

  it('a row left sending by a kill -9 mid-POST is settled by its ticket within 60 s of the restart, with one POST', async () => {
    const first = await daemon();
    const ticket = sim.model.listOpen()[2]!.id;
    const text = 'Killed while this was in flight.';
    // The service stores the reply and its answer never comes: the row stays sending while the daemon waits for it.
    sim.faults.inject({ kind: 'hang', afterApplication: true, match: `/ticket/${ticket}/reply` });
    const { rows } = await client.query('insert into reply_outbox (ticket_id, message) values ($1, $2) returning id', [ticket, text]);
    const id: number = rows[0].id;
    await waitUntil('the POST is in flight', async () => posts() === 1 && (await state(id))?.state === 'sending', 60_000, first);
    first.child.kill('SIGKILL');
    await first.exited;

    const restartedAt = performance.now();
    await daemon();
    await waitUntil('the row is settled', async () => ['sent', 'failed'].includes((await state(id))?.state), 90_000);
    const settledAfterMs = performance.now() - restartedAt;
    expect(settledAfterMs).toBeLessThan(60_000);
    const stored = sim.model.detail(ticket)!.messages.filter((m) => m.message === text);
    expect(stored).toHaveLength(1);
    expect(await state(id)).toEqual({ state: 'sent', message_id: stored[0]!.id });
    expect(posts()).toBe(1);
  });
});

describe('run on the embedded database settles a reply a kill -9 left sending', { timeout: 300_000 }, () => {
  let sim: RunningSimulator;
  let dir: string;
  const runs: RunProcess[] = [];
  const password = 'outbox-crash-test';

  beforeEach(async () => {
    sim = await startSimulator({ seed: 6, openTickets: 4, resolvedTickets: 4 });
    dir = mkdtempSync(join(tmpdir(), 'tm-run-outbox-'));
  });
  afterEach(async () => {
    await Promise.all(runs.splice(0).map((run) => run.dispose()));
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `run` on the same data folder each time, its SQL socket on a port of its own; and a session through it. */
  const daemon = async () => {
    const sqlPort = await freePort();
    const run = startRun({
      TICKETS_API_URL: sim.url,
      TICKETS_API_TOKEN: sim.token,
      PGLITE_DIR: join(dir, 'pglite'),
      PGLITE_PORT: String(sqlPort),
      PGLITE_PASSWORD: password,
      HTTP_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
    });
    runs.push(run);
    await waitUntil('the daemon leads', async () => ((await get(`${run.httpUrl}/readyz`))?.body ?? '').includes('leader'), 90_000, run);
    const session = new pg.Client({ host: '127.0.0.1', port: sqlPort, user: 'postgres', database: 'postgres', password });
    await session.connect();
    return { run, session };
  };

  it('the restarted process, holding the folder, knows the first is dead: settled within 60 s, one POST', async () => {
    const first = await daemon();
    const ticket = sim.model.listOpen()[0]!.id;
    const text = 'Sent from the embedded database, then killed.';
    sim.faults.inject({ kind: 'hang', afterApplication: true, match: `/ticket/${ticket}/reply` });
    const { rows } = await first.session.query('insert into reply_outbox (ticket_id, message) values ($1, $2) returning id', [ticket, text]);
    const id = Number(rows[0].id);
    const state = async (session: pg.Client) => (await session.query('select state, message_id, claimed_via from reply_outbox where id = $1', [id])).rows[0];
    await waitUntil(
      'the POST is in flight',
      async () => sim.log.some((r) => r.method === 'POST') && (await state(first.session))?.state === 'sending',
      60_000,
      first.run,
    );
    expect(await state(first.session)).toMatchObject({ claimed_via: 'embedded' });
    await first.session.end().catch(() => {});
    first.run.child.kill('SIGKILL');
    await first.run.exited;

    const restartedAt = performance.now();
    const second = await daemon();
    try {
      await waitUntil('the row is settled', async () => ['sent', 'failed'].includes((await state(second.session))?.state), 90_000, second.run);
      expect(performance.now() - restartedAt).toBeLessThan(60_000);
      const stored = sim.model.detail(ticket)!.messages.filter((m) => m.message === text);
      expect(stored).toHaveLength(1);
      expect(await state(second.session)).toEqual({ state: 'sent', message_id: stored[0]!.id, claimed_via: null });
      expect(sim.log.filter((r) => r.method === 'POST')).toHaveLength(1);
    } finally {
      await second.session.end();
    }
  });
});

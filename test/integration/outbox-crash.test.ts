import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import type { Claimer } from '../../src/db/repos/outbox.ts';
import { createLogger } from '../../src/logger.ts';
import { deliverOutbox, newClaimer, type OutboxHooks } from '../../src/outbox/deliver.ts';
import { backends, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * A row left `sending` by a deliverer that died (issue 11, "Replies interrupted by a crash"): settled by its ticket's
 * detail 30 s after its claim when its claimer is provably gone, instead of waiting out the 2-minute lease — and never
 * while its claimer may still be sending. Real HTTP to the simulator, a real database, virtual time; the same through
 * real `run` processes and kill -9 is in run-outbox.test.ts.
 */

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const logger = createLogger('silent');

/** A simulated kill: the deliverer's process is gone at that point. */
class Killed extends Error {}

/** Waits (at most 10 s) until PostgreSQL no longer lists a backend that was told to end: it exits on its own time. */
async function sessionGone(pid: number): Promise<void> {
  const observer = new pg.Client({ connectionString: postgresUrl! });
  await observer.connect();
  try {
    for (let i = 0; i < 200; i++) {
      const { rows } = await observer.query('select 1 from pg_stat_activity where pid = $1', [pid]);
      if (rows.length === 0) return;
      await new Promise((done) => setTimeout(done, 50));
    }
    throw new Error(`backend ${pid} still listed after 10 s`);
  } finally {
    await observer.end();
  }
}

describe.each(backends)('a reply left sending by a crash, on $name', ({ name, open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  let ticketId: string;

  const deliver = (claimer: Claimer, hooks?: OutboxHooks) =>
    deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger, claimer, ...(hooks ? { hooks } : {}) });
  const enqueue = async (message: string) => {
    const [row] = await queryRows<{ id: number }>(m.db, sql`insert into reply_outbox (ticket_id, message) values (${ticketId}, ${message}) returning id`);
    return Number(row!.id);
  };
  const row = async (id: number) => {
    const [r] = await queryRows<{ state: string; message_id: string | null; claimed_by: string | null; claimed_via: string | null; attempts: number }>(
      m.db,
      sql`select state, message_id, claimed_by, claimed_via, attempts from reply_outbox where id = ${id}`,
    );
    return r!;
  };
  const posts = () => m.sim.log.filter((r) => r.method === 'POST');
  /** Kills the deliverer right after its POST reached the service, before it recorded the answer. */
  const killedAfterPost = async (claimer: Claimer): Promise<string> => {
    let posted = '';
    const afterPost: OutboxHooks['afterPost'] = (_row, reply) => {
      posted = reply.id;
      throw new Killed();
    };
    await expect(deliver(claimer, { afterPost })).rejects.toBeInstanceOf(Killed);
    return posted;
  };

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
    ticketId = m.sim.model.randomTicketId('open')!;
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it.runIf(name === 'pglite')('the embedded database: a process that has it open knows the one before is dead, and settles its row 30 s after the claim', async () => {
    const text = 'Settled after the crash.';
    const id = await enqueue(text);
    const posted = await killedAfterPost(newClaimer({ embedded: true }));
    expect(await row(id)).toMatchObject({ state: 'sending', claimed_via: 'embedded', claimed_by: expect.any(String) });
    await m.restart();
    const restarted = newClaimer({ embedded: true });
    m.clock.advance(29 * SECOND);
    expect(await deliver(restarted)).toEqual({ sent: 0, failed: 0, waiting: 0 });
    expect(m.sim.log.map((r) => r.method)).toEqual(['POST']);
    m.clock.advance(SECOND);
    expect(await deliver(restarted)).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sent', message_id: posted, claimed_by: null, claimed_via: null, attempts: 1 });
    expect(m.sim.log.map((r) => r.method)).toEqual(['POST', 'GET']);
    expect(m.sim.model.detail(ticketId)!.messages.filter((msg) => msg.message === text)).toHaveLength(1);
  });

  it('a claimer nothing can prove gone (a sync on PostgreSQL) keeps its lease: the row waits the full 2 minutes', async () => {
    const id = await enqueue('Claimed by a command.');
    const posted = await killedAfterPost(newClaimer({ embedded: false }));
    await m.restart();
    const restarted = newClaimer({ embedded: name === 'pglite' });
    m.clock.advance(MINUTE);
    expect(await deliver(restarted)).toEqual({ sent: 0, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sending' });
    m.clock.advance(MINUTE + 1);
    expect(await deliver(restarted)).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sent', message_id: posted });
    expect(posts()).toHaveLength(1);
  });

  it.runIf(name === 'postgres')(
    "the leader's lock session: its row is left alone while the session lives, settled once it is gone, and the old claimer, waking up late, posts nothing",
    async () => {
      // The leader lock's session of a first process, as pg_stat_activity shows it.
      const lockSession = new pg.Client({ connectionString: postgresUrl! });
      await lockSession.connect();
      const { rows } = await lockSession.query<{ pid: number; started: string }>(
        `select pid, to_char(backend_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as started from pg_stat_activity where pid = pg_backend_pid()`,
      );
      const first = newClaimer({ embedded: false, session: { pid: rows[0]!.pid, startedAt: rows[0]!.started } });
      expect(first.via).toBe('leader');
      const text = 'Posted once, by whoever holds the row.';
      const id = await enqueue(text);
      // The first process claims the row and stalls before its POST (a frozen VM) …
      let resume!: () => void;
      const stalled = new Promise<void>((done) => (resume = done));
      let claimed!: () => void;
      const hasClaimed = new Promise<void>((done) => (claimed = done));
      const firstRun = deliver(first, {
        afterMarkSending: async () => {
          claimed();
          await stalled;
        },
      });
      await hasClaimed;
      const second = newClaimer({ embedded: false });
      // … while its session lives, another deliverer leaves the row alone, however late it is …
      m.clock.advance(MINUTE + 30 * SECOND);
      expect(await deliver(second)).toEqual({ sent: 0, failed: 0, waiting: 0 });
      expect(await row(id)).toMatchObject({ state: 'sending', claimed_by: first.id, claimed_via: 'leader' });
      // … and once the session is gone, it settles the row: no trace at the service, so it posts it.
      await lockSession.end();
      await sessionGone(rows[0]!.pid);
      expect(await deliver(second)).toEqual({ sent: 1, failed: 0, waiting: 0 });
      expect(await row(id)).toMatchObject({ state: 'sent', attempts: 2 });
      // The first process wakes up: the row is no longer its own, and it sends nothing.
      resume();
      expect(await firstRun).toEqual({ sent: 0, failed: 0, waiting: 1 });
      expect(posts()).toHaveLength(1);
      expect(await row(id)).toMatchObject({ state: 'sent' });
      expect(m.sim.model.detail(ticketId)!.messages.filter((msg) => msg.message === text)).toHaveLength(1);
    },
  );
});

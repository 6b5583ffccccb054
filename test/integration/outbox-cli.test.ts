import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { runCli } from '../helpers/runProcess.ts';

describe('ticket-mirror sync delivers the reply outbox, as a child process on the embedded database', () => {
  let sim: RunningSimulator;
  let dir: string;

  beforeAll(async () => {
    sim = await startSimulator({ seed: 5, openTickets: 3, resolvedTickets: 2 });
    dir = mkdtempSync(join(tmpdir(), 'tm-outbox-cli-'));
  });
  afterAll(async () => {
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends a row any SQL client inserted, after the pass, and records it', async () => {
    const pgliteDir = join(dir, 'pglite');
    const ticketId = sim.model.randomTicketId('open')!;
    const before = await openDatabase({ pgliteDir });
    try {
      await before.migrate();
      await before.db.execute(sql`insert into reply_outbox (ticket_id, message) values (${ticketId}, 'Sent from SQL.')`);
    } finally {
      await before.close();
    }

    const env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: pgliteDir, LOG_LEVEL: 'silent' };
    const result = await runCli(['sync'], env, dir);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    expect(result.stdout).toMatch(/^sync: .*\noutbox: 1 sent, 0 failed, 0 waiting\n$/);

    const truth = sim.model.detail(ticketId)!.messages.filter((msg) => msg.message === 'Sent from SQL.');
    expect(truth).toHaveLength(1);
    const after = await openDatabase({ pgliteDir });
    try {
      const rows = await queryRows<{ state: string; message_id: string }>(after.db, sql`select state, message_id from reply_outbox`);
      expect(rows).toEqual([{ state: 'sent', message_id: truth[0]!.id }]);
    } finally {
      await after.close();
    }
  }, 60_000);
});

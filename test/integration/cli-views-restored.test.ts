import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { runCli } from '../helpers/runProcess.ts';

/**
 * Every command that migrates makes a dropped BI view again (db/repos/views.ts), and says so: `sync` from cron made
 * the view again without a line, so whoever dropped it never learnt that it was back, nor which ones could not be.
 */

let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 23, openTickets: 3, resolvedTickets: 2 });
  dir = mkdtempSync(join(tmpdir(), 'tm-cli-views-'));
});
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

async function viewNames(pgliteDir: string): Promise<string[]> {
  const database = await openDatabase({ pgliteDir });
  try {
    const rows = await queryRows<{ name: string }>(database.db, sql`select viewname as name from pg_views where schemaname = 'public'`);
    return rows.map((r) => r.name);
  } finally {
    await database.close();
  }
}

describe('a command that migrates, after a user dropped BI views', () => {
  it('`sync` makes them again and logs which', async () => {
    const pgliteDir = join(dir, 'pglite');
    const env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: pgliteDir };
    const first = await runCli(['sync'], env, dir);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr).not.toMatch(/BI view/);
    const shipped = await viewNames(pgliteDir);
    expect(shipped).toContain('agents');

    const database = await openDatabase({ pgliteDir });
    await database.db.execute(sql`drop view agents`);
    await database.db.execute(sql`drop view open_backlog_daily`);
    await database.close();

    const second = await runCli(['sync'], env, dir);
    expect(second.code, second.stderr).toBe(0);
    const logged = second.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string; views?: string[] })
      .filter((l) => /BI view/.test(l.msg));
    expect(logged).toEqual([expect.objectContaining({ level: 30, views: ['agents', 'open_backlog_daily'].sort() })]);
    expect((await viewNames(pgliteDir)).sort()).toEqual(shipped.sort());
  }, 120_000);
});

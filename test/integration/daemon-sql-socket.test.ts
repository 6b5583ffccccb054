import { execFile } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freePort, get, startRun, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

const execFileAsync = promisify(execFile);

/**
 * psql, as `ticket-mirror status` tells a person to type it: `PGPASSWORD="$(cat PGLITE_DIR/sql-password)" psql -h
 * 127.0.0.1 -p PORT …` (run keeps the password it generated in its data folder, readable by its owner alone).
 */
// -w: never prompt. Polled while run starts, a psql whose `cat` ran just before the password file was written would
// otherwise ask for a password on its stdin, a pipe nobody writes to, and hang the test.
async function psql(port: number, query: string, dataDir: string, password?: string): Promise<string> {
  const { stdout } = await execFileAsync('sh', ['-c', `PGPASSWORD="${password ?? '$(cat "$PASSWORD_FILE")'}" psql -w -h 127.0.0.1 -p ${port} -U postgres -d postgres -XAtc "$QUERY"`], {
    env: { ...process.env, PGCONNECT_TIMEOUT: '5', PASSWORD_FILE: join(dataDir, 'sql-password'), QUERY: query },
  });
  return stdout.trim();
}

describe('run serves the embedded database over the PostgreSQL protocol', { timeout: 180_000 }, () => {
  let sim: RunningSimulator;
  let run: RunProcess | undefined;

  beforeEach(async () => {
    sim = await startSimulator({ seed: 31, openTickets: 8, resolvedTickets: 12 });
  });
  afterEach(async () => {
    await run?.dispose();
    await sim.close();
  });

  it('psql reads the mirror while `run` writes to it', async () => {
    const sqlPort = await freePort();
    run = startRun({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_PORT: String(sqlPort), HTTP_PORT: String(await freePort()), LOG_LEVEL: 'info' });
    const r = run;
    const dataDir = join(r.cwd, 'pglite');
    const count = async (port: number, query: string) => Number(await psql(port, query, dataDir).catch(() => '-1'));
    await waitUntil('psql sees the polled lists', async () => (await count(sqlPort, 'select count(*) from tickets')) === 20, 90_000, r);

    // The daemon fetches the details on its next ticks, while psql keeps reading.
    const seen: number[] = [];
    await waitUntil(
      'details are written',
      async () => {
        seen.push(await count(sqlPort, 'select count(*) from tickets where detail_synced_at is not null'));
        return seen.at(-1)! > 0;
      },
      90_000,
      r,
    );
    expect(seen.every((n) => n >= 0)).toBe(true);
    expect(await count(sqlPort, 'select count(*) from api_requests')).toBeGreaterThanOrEqual(5);
    expect(await psql(sqlPort, `select current_setting('TimeZone')`, dataDir)).toBe('UTC');
    expect(statSync(join(dataDir, 'sql-password')).mode & 0o777).toBe(0o600);
    // Without the password, nothing.
    await expect(psql(sqlPort, 'select 1', dataDir, 'not-the-password')).rejects.toThrow(/password authentication failed/);
    // The daemon is unharmed by its readers.
    expect((await get(`${r.httpUrl}/readyz`))?.body).toContain('leader: syncing');
  }, 200_000);
});

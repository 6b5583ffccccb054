import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { freePort, get, startRun, waitUntil } from '../helpers/runProcess.ts';

/**
 * Standard output or error whose reader has gone: `ticket-mirror status | head -1` (head exits after its line), a
 * supervisor or a log shipper that closed the daemon's pipe. The next write there fails with EPIPE: what was written is
 * lost, and nothing else — a command that did its work exits as it would have, a daemon keeps syncing.
 */

const BIN = resolve(import.meta.dirname, '../../bin/ticket-mirror.js');

describe.runIf(postgresUrl)('output whose reader has gone', { timeout: 120_000 }, () => {
  let database: TestDatabase;
  let cwd: string;
  beforeAll(async () => {
    database = await freshPostgres('tm_closed');
    cwd = mkdtempSync(join(tmpdir(), 'tm-closed-'));
  });
  afterAll(async () => {
    await database.destroy();
    rmSync(cwd, { recursive: true, force: true });
  });

  it('status with its standard output closed before it writes: exit 0, no "uncaught exception"', async () => {
    const child = spawn(process.execPath, [BIN, 'status'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema, LOG_FORMAT: 'json' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader goes at once, long before the status is read from the database (as `| head -1` after its line).
    child.stdout!.destroy();
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const code = await new Promise<number | null>((done) => child.once('close', done));
    expect(stderr).not.toContain('uncaught exception');
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it.runIf(existsSync('/dev/full'))('status whose standard output is a full disk: exit 1, and a line on stderr saying the output is incomplete', async () => {
    const full = openSync('/dev/full', 'w');
    try {
      const child = spawn(process.execPath, [BIN, 'status'], {
        cwd,
        env: { PATH: process.env.PATH ?? '', DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema, LOG_FORMAT: 'json' },
        stdio: ['ignore', full, 'pipe'],
      });
      let stderr = '';
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((done) => child.once('close', done));
      // Before: exit 1 and nothing said, read as a failed command (`reply` posted, then a script sent it again).
      expect(code).toBe(1);
      expect(stderr).toBe('ticket-mirror: could not write to standard output (ENOSPC): what the command printed there is incomplete, but what it did is done\n');
    } finally {
      closeSync(full);
    }
  });

  it('run logging pretty lines to a standard error that was closed: keeps syncing, and stops gracefully on SIGTERM', async () => {
    const sim: RunningSimulator = await startSimulator({ seed: 5, openTickets: 3, resolvedTickets: 2 });
    const run = startRun({
      TICKETS_API_URL: sim.url,
      TICKETS_API_TOKEN: sim.token,
      DATABASE_URL: postgresUrl!,
      DB_SCHEMA: database.schema,
      HTTP_PORT: String(await freePort()),
      LOG_LEVEL: 'info',
      LOG_FORMAT: 'pretty',
    });
    try {
      // Its supervisor closed the pipe before the daemon wrote its first line.
      run.child.stderr!.destroy();
      // Ready as the leader: a standby is ready too (waiting is its job), and a daemon is one for a moment while the
      // lock of a process just gone on the same schema lingers, before any request (this test failed so, 2 runs in 6).
      await waitUntil(
        'a pass has run and /readyz says ready, as the leader',
        async () => {
          const answer = await get(`${run.httpUrl}/readyz`);
          return answer?.status === 200 && answer.body.includes('leader') && sim.log.length > 0;
        },
        90_000,
        run,
      );
      expect(sim.log.length).toBeGreaterThan(0);
      run.child.kill('SIGTERM');
      expect(await run.exited).toEqual({ code: 0, signal: null });
    } finally {
      await run.dispose();
      await sim.close();
    }
  });
});

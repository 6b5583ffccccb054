import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createCliLogger } from '../../src/logger.ts';
import { PENDING_LOG_LIMIT } from '../../src/logOutput.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { freshPostgres, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count } from '../helpers/mirror.ts';
import { freePort, get, waitUntil } from '../helpers/runProcess.ts';

/**
 * Standard error whose reader has stopped reading, without going: a log shipper that hangs, `| less` left at its first
 * screen. The pipe fills at 64 KiB. The process must go on as if it were read, hold at most PENDING_LOG_LIMIT of log in
 * memory, and say how many lines it dropped once the reader reads again.
 *
 * The reader is a real `cat`, stopped with SIGSTOP and woken with SIGCONT, copying the pipe to a file.
 */

const BIN = resolve(import.meta.dirname, '../../bin/ticket-mirror.js');

type Reader = ChildProcessByStdio<Writable, null, null>;

describe('a log whose reader has stopped reading', { timeout: 120_000 }, () => {
  let folder: string;
  beforeAll(() => {
    folder = mkdtempSync(join(tmpdir(), 'tm-unread-'));
  });
  afterAll(() => rmSync(folder, { recursive: true, force: true }));

  /** `cat > file`, stopped: its stdin is a pipe nobody reads until `wake`. */
  function stoppedReader(file: string): { cat: Reader; wake: () => Promise<string> } {
    const cat = spawn('sh', ['-c', `exec cat > '${file}'`], { stdio: ['pipe', 'ignore', 'ignore'] });
    cat.kill('SIGSTOP');
    const closed = new Promise<void>((done) => cat.once('close', () => done()));
    return {
      cat,
      async wake() {
        cat.kill('SIGCONT');
        cat.stdin.end();
        await closed;
        return readFileSync(file, 'utf8');
      },
    };
  }

  const TOTAL = 3_000;

  /**
   * TOTAL lines of 1 KB logged in `format` to a stopped reader; then the reader is woken and what it got is returned,
   * as lines: those kept, then the logger's own line about the drops.
   */
  async function flood(format: 'json' | 'pretty'): Promise<string[]> {
    const { cat, wake } = stoppedReader(join(folder, `${format}.log`));
    const logger = createCliLogger('info', format, cat.stdin);
    for (let i = 0; i < TOTAL; i++) logger.info({ i, filler: 'x'.repeat(1_000) }, 'a line');
    // Before: every line queued in the process, 3 MB here and without end in a daemon.
    expect(cat.stdin.writableLength).toBeLessThan(PENDING_LOG_LIMIT + 2_000);
    // The logger's own 'drain' listener came first, so its line about the drops is queued when this one runs.
    const drained = new Promise((done) => cat.stdin.once('drain', done));
    cat.kill('SIGCONT');
    await drained;
    const lines = (await wake()).split('\n');
    expect(lines.pop()).toBe('');
    return lines;
  }

  it('the logger drops whole lines beyond its limit instead of queueing them all, and says how many', async () => {
    const entries = (await flood('json')).map((line) => JSON.parse(line) as { msg: string; i?: number; dropped?: number });
    const report = entries.pop()!;
    expect(report).toMatchObject({ level: 40, msg: `standard error was not read for a while: ${report.dropped} log lines were dropped` });
    expect(entries.length + report.dropped!).toBe(TOTAL);
    // The first lines went through in order; the ones dropped are the last, whole.
    expect(entries.map((e) => e.i)).toEqual([...Array(entries.length).keys()]);
  });

  it('pretty lines (LOG_FORMAT=pretty on a pipe) are bounded the same way', async () => {
    const lines = await flood('pretty');
    const report = lines.pop()!;
    expect(report).toMatch(/WARN.*standard error was not read for a while: \d+ log lines were dropped/);
    expect(lines.length + Number(/(\d+) log lines/.exec(report)![1])).toBe(TOTAL);
    expect(lines.map((line) => Number(/ i=(\d+) /.exec(line)?.[1]))).toEqual([...Array(lines.length).keys()]);
  });

  it('a reader that went away (EPIPE) is no uncaught error: the lines after it are dropped', async () => {
    // A reader that closes its end and says so (one that exits would have Node destroy the stream first).
    const gone = spawn('sh', ['-c', 'exec 0<&-; echo closed; exec sleep 60'], { stdio: ['pipe', 'pipe', 'ignore'] });
    onTestFinished(() => void gone.kill('SIGKILL'));
    await new Promise((done) => gone.stdout.once('data', done));
    const logger = createCliLogger('info', 'json', gone.stdin);
    // No 'error' listener here: the logger's must be the one that hears EPIPE. Before, nobody did, and it was an
    // uncaught exception (vitest fails the run on it). The stream closes after its error.
    const closed = new Promise((done) => gone.stdin.once('close', done));
    for (let i = 0; i < 100; i++) logger.info({ i }, 'a line');
    await closed;
    expect(gone.stdin.errored).toMatchObject({ code: 'EPIPE' });
    for (let i = 0; i < 100; i++) logger.info({ i }, 'a line after');
    expect(gone.stdin.writableLength).toBe(0);
  });

  describe.runIf(postgresUrl)('the daemon', () => {
    let database: TestDatabase;
    beforeAll(async () => {
      database = await freshPostgres('tm_unread');
    });
    afterAll(() => database.destroy());

    it('run with a full standard error keeps syncing, answers /readyz, and stops on SIGTERM', async () => {
      const sim = await startSimulator({ seed: 8, openTickets: 3, resolvedTickets: 2 });
      const { cat, wake } = stoppedReader(join(folder, 'daemon.log'));
      // The reader stopped long ago: the pipe is full before the daemon writes its first line.
      const filler = Buffer.from(`${'-'.repeat(1023)}\n`);
      while (cat.stdin.write(filler));
      const port = await freePort();
      const run = spawn(process.execPath, [BIN, 'run'], {
        cwd: folder,
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          TICKETS_API_URL: sim.url,
          TICKETS_API_TOKEN: sim.token,
          DATABASE_URL: postgresUrl!,
          DB_SCHEMA: database.schema,
          HTTP_PORT: String(port),
          LOG_LEVEL: 'debug',
          LOG_FORMAT: 'json',
          // Every source compiled anew, as on the first run after an install: tsx starts esbuild with this stderr,
          // which makes the shared pipe blocking again (see BoundedLogOutput).
          TSX_DISABLE_CACHE: '1',
        },
        stdio: ['ignore', 'ignore', cat.stdin],
      });
      const exited = new Promise<number | null>((done) => run.once('exit', (code) => done(code)));
      try {
        // Before: blocked in its first write to stderr, it never answered, never synced.
        await waitUntil('a pass has run and /readyz says ready, as the leader', async () => {
          const answer = await get(`http://127.0.0.1:${port}/readyz`);
          return answer?.status === 200 && answer.body.includes('leader') && sim.log.length > 0;
        }, 90_000);
        expect(await count(database.db, sql`select count(*)::int as n from tickets`)).toBeGreaterThan(0);
        // Its pipe still full, it ends: what waits for the reader is left, as at any exit.
        run.kill('SIGTERM');
        expect(await exited).toBe(0);
      } finally {
        if (run.exitCode === null && run.signalCode === null) run.kill('SIGKILL');
        await sim.close();
      }
      // What it wrote once the pipe had room again is whole JSON lines.
      const daemonLines = (await wake()).split('\n').filter((line) => line !== '' && !line.startsWith('-'));
      for (const line of daemonLines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    });
  });
});

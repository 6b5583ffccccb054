import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { PGLITE_SETTINGS } from '../../src/db/pgliteOpen.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freePort, startRun, waitUntil, type RunProcess } from '../helpers/runProcess.ts';

/**
 * The embedded database's data folder: created by initdb in a child process, opened with small memory settings, and
 * never left looking like a database when its first start is interrupted. The memory itself is measured on the real
 * daemon: `run` on a fresh folder peaked at ~940 MB resident (VmHWM) before, the README's limit while it backfills is
 * 400 MB. (`npm run bench:memory` measures the rest: the resting figures, a reopened folder.)
 */

const scratchOf = (dir: string) => readdirSync(dir).filter((name) => name.startsWith('.initdb-'));

/** VmHWM and VmRSS of a live process, in MB. */
function residentMb(pid: number): { hwm: number; rss: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { hwm: kb('VmHWM') / 1024, rss: kb('VmRSS') / 1024 };
}

describe('embedded data folder', { timeout: 120_000 }, () => {
  const dirs: string[] = [];
  const freshDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'tm-embedded-'));
    dirs.push(dir);
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('creates a database in a fresh folder, leaves no scratch behind, and runs it with the small settings on every start', async () => {
    const dir = freshDir();
    for (let start = 0; start < 2; start++) {
      const database = await openDatabase({ pgliteDir: dir });
      try {
        await database.migrate();
        const settings: Record<string, string> = {};
        for (const name of Object.keys(PGLITE_SETTINGS)) {
          const [row] = await queryRows<{ value: string }>(database.db, sql`select current_setting(${name}) as value`);
          settings[name] = row!.value;
        }
        expect(settings).toEqual(PGLITE_SETTINGS);
        expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
        expect(scratchOf(dir)).toEqual([]);
      } finally {
        await database.close();
      }
    }
  });

  it('replaces what an interrupted first start left: a scratch folder, and database files without PG_VERSION', async () => {
    const dir = freshDir();
    mkdirSync(join(dir, '.initdb-99999', 'base'), { recursive: true });
    writeFileSync(join(dir, '.initdb-99999', 'base', 'half'), 'x');
    // Entries already moved into place before the crash; PG_VERSION, moved last, is missing.
    mkdirSync(join(dir, 'global'));
    writeFileSync(join(dir, 'global', 'half'), 'x');
    const database = await openDatabase({ pgliteDir: dir });
    try {
      await database.migrate();
      await database.db.execute(sql`create table probe (n int)`);
      await database.db.execute(sql`insert into probe values (1)`);
      expect(await queryRows(database.db, sql`select n from probe`)).toEqual([{ n: 1 }]);
      expect(scratchOf(dir)).toEqual([]);
      expect(existsSync(join(dir, 'global', 'half'))).toBe(false);
    } finally {
      await database.close();
    }
  });
});

describe('run on a fresh embedded database', { timeout: 240_000 }, () => {
  const TICKETS = 50;
  let sim: RunningSimulator;
  let run: RunProcess | undefined;
  let orphans: number[] = [];

  beforeAll(async () => {
    sim = await startSimulator({ seed: 42, openTickets: 17, resolvedTickets: TICKETS - 17, dailyLimit: 200_000, minuteLimit: 600 });
  });
  afterAll(async () => {
    // The orphaned initdb first: alive, it goes on writing into the folder dispose() removes (ENOTEMPTY under load).
    for (const pid of orphans) killQuietly(pid);
    await run?.dispose();
    await sim.close();
  });

  const env = async (): Promise<Record<string, string>> => ({
    TICKETS_API_URL: sim.url,
    TICKETS_API_TOKEN: sim.token,
    API_DAILY_LIMIT: '200000',
    API_MINUTE_LIMIT: '600',
    PGLITE_PORT: String(await freePort()),
    HTTP_PORT: String(await freePort()),
    LOG_LEVEL: 'info',
  });
  const detailsServed = () => new Set(sim.log.filter((r) => r.status === 200 && r.path.startsWith('/api/v1/ticket/')).map((r) => r.path)).size;

  it('backfills with its resident memory under 400 MB at its peak (initdb ran in a child process)', async ({ annotate }) => {
    run = startRun(await env());
    await waitUntil('every detail is fetched', () => detailsServed() >= TICKETS, 180_000, run);
    await waitUntil('the pass that fetched them is logged', () => /"details":[1-9]/.test(run!.output()), 30_000, run);
    const memory = residentMb(run.pid);
    await annotate(`VmHWM ${Math.round(memory.hwm)} MB, VmRSS ${Math.round(memory.rss)} MB after the backfill of ${TICKETS} tickets`);
    expect(memory.hwm).toBeLessThan(400);
    await run.dispose();
  });

  it('a first start killed during initdb: the next start creates the database', async () => {
    run = startRun(await env());
    const dir = join(run.cwd, 'pglite');
    await waitUntil('initdb runs', () => existsSync(dir) && scratchOf(dir).length > 0, 60_000, run);
    await waitUntil('it says so', () => run!.output().includes('creating the embedded database'), 10_000, run);
    run.child.kill('SIGKILL');
    await run.exited;
    // Its initdb child outlives it, writing into its own scratch folder, named after it. Stopped here, so that it is
    // still there at the next start however fast its initdb would have ended (as one that hangs, or a slow machine's).
    orphans = processesMentioning(JSON.stringify(join(dir, '.initdb-')));
    expect(orphans).toHaveLength(1);
    expect(scratchOf(dir)).toEqual([`.initdb-${orphans[0]}`]);
    process.kill(orphans[0]!, 'SIGSTOP');
    expect(existsSync(join(dir, 'PG_VERSION'))).toBe(false);

    const database = await openDatabase({ pgliteDir: dir });
    try {
      await database.migrate();
      expect(await queryRows(database.db, sql`select count(*)::int as n from tickets`)).toEqual([{ n: 0 }]);
      expect(existsSync(join(dir, 'PG_VERSION'))).toBe(true);
      expect(scratchOf(dir)).toEqual([]);
      // The next start killed the orphan before removing its folder.
      await waitUntil('the orphaned initdb is gone', () => !alive(orphans[0]!), 10_000);
    } finally {
      await database.close();
    }
  });
});

/** Pids whose command line contains `text` (the orphaned initdb child names its scratch folder). */
function processesMentioning(text: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** Whether a process runs (a zombie, killed and not yet reaped by whoever adopted it, does not). */
function alive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { postgresUrl } from '../helpers/db.ts';
import { freePort, get, runCli, startRun, startRunOnPostgres, waitUntil, type CliResult, type RunProcess } from '../helpers/runProcess.ts';

/**
 * The command line beside a running daemon, through real processes: `status` reads `run` while it holds the embedded
 * database (its /status.json, else its SQL socket) and reads PostgreSQL directly, never creating or migrating a
 * database; the commands that must write say that the daemon holds the data and what to do instead.
 */

let sim: RunningSimulator;
let dir: string;
const TICKETS = 5;

beforeAll(async () => {
  sim = await startSimulator({ seed: 17, openTickets: 3, resolvedTickets: 2 });
  dir = mkdtempSync(join(tmpdir(), 'tm-beside-run-'));
});
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

const messageLines = (r: CliResult) => r.stderr.split('\n').filter((l) => l && !l.startsWith('{'));
const readyz = async (run: RunProcess) => (await get(`${run.httpUrl}/readyz`))?.body ?? '';
const runtimeOf = (folder: string) => {
  try {
    return JSON.parse(readFileSync(join(folder, 'ticket-mirror.run.json'), 'utf8')) as { pid: number; state: string; http: string | null; sql: { port: number } | null };
  } catch {
    return null;
  }
};

describe('beside `run` on the embedded database', () => {
  let run: RunProcess;
  let folder: string;
  let sqlPort: number;

  beforeAll(async () => {
    sqlPort = await freePort();
    run = startRun({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: String(await freePort()), PGLITE_PORT: String(sqlPort), LOG_LEVEL: 'info' });
    folder = join(run.cwd, 'pglite');
    await waitUntil('the daemon has finished its first pass', async () => (await readyz(run)) === 'ready: leader: syncing\n', 90_000, run);
  }, 120_000);
  afterAll(() => run.dispose());

  it('records where it serves, in its data folder, for the other commands', () => {
    expect(runtimeOf(folder)).toMatchObject({ pid: run.pid, state: 'running', http: run.httpUrl, sql: { host: '127.0.0.1', port: sqlPort } });
  });

  it('`status --json` reads the daemon through /status.json: exit 0, its fields, the daemon named, nothing opened', async () => {
    const r = await runCli(['status', '--json'], { PGLITE_DIR: folder }, dir);
    expect(messageLines(r)).toEqual([]);
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.daemon).toEqual({ pid: run.pid, role: 'leader', via: 'http', url: run.httpUrl });
    expect(status.counts).toMatchObject({ tickets: TICKETS, open: 3, resolved: 2, deleted: 0 });
    expect(status.lastSync).toMatchObject({ requests: expect.any(Number), error: null });
    expect(status.budget).toMatchObject({ dailyAllowed: 1296, dailyUsed: expect.any(Number), minuteAllowed: expect.any(Number) });
    expect(status.budget.dailyUsed).toBeGreaterThanOrEqual(4);
    expect(status.backfill).toMatchObject({ total: TICKETS });
    expect(Object.keys(status.lastPolls).sort()).toEqual(['open', 'resolved', 'self', 'unassigned']);
    expect(status.sql).toMatchObject({ host: '127.0.0.1', port: sqlPort, passwordFile: join(folder, 'sql-password') });
    // The daemon still holds its folder: status took nothing from it.
    expect(readFileSync(join(folder, 'ticket-mirror.lock'), 'utf8')).toBe(String(run.pid));
    expect(run.child.exitCode).toBeNull();
  }, 60_000);

  it('`status` as text says which daemon it read, and how', async () => {
    const r = await runCli(['status'], { PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^tickets   ${TICKETS} mirrored: 3 open`, 'm'));
    expect(r.stdout).toContain(`daemon    ticket-mirror run, pid ${run.pid}; read through its HTTP server (${run.httpUrl}/status.json)`);
    expect(r.stdout).toContain(`sql       PGPASSWORD="$(cat ${folder}/sql-password)" psql -h 127.0.0.1 -p ${sqlPort} -U postgres -d postgres`);
  }, 60_000);

  it('`check` goes through its SQL socket: migrated, and its one request recorded in the daemon\'s ledger; exit 0', async () => {
    const password = readFileSync(join(folder, 'sql-password'), 'utf8').trim();
    const client = new pg.Client({ host: '127.0.0.1', port: sqlPort, user: 'postgres', database: 'postgres', password });
    await client.connect();
    try {
      const selfPolls = async () => (await client.query<{ n: number }>("select count(*)::int as n from api_requests where kind = 'list_self' and status = 200")).rows[0]!.n;
      const before = await selfPolls();
      const r = await runCli(['check'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: folder }, dir);
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`✓ database {6}the embedded database in ${folder} \\(through the SQL socket of ticket-mirror run, pid ${run.pid}\\): reachable, migrated`));
      expect(r.stdout).toContain('(1 request, recorded in api_requests)');
      // The daemon may poll its lists meanwhile: at least check's request is there.
      expect(await selfPolls()).toBeGreaterThanOrEqual(before + 1);
    } finally {
      await client.end();
    }
  }, 60_000);

  it('`sync` stops before it starts: the daemon holds the data, it syncs by itself, or stop it; exit 1', async () => {
    const r = await runCli(['sync'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(1);
    expect(messageLines(r)).toEqual([
      `ticket-mirror: the daemon (ticket-mirror run, pid ${run.pid}) holds the embedded database in ${folder}: \`ticket-mirror sync\` cannot open it while it runs — It syncs by itself (whenever a list or a detail falls due, within the budget) and sends the reply outbox; to sync by hand, stop it first (kill ${run.pid}, or Ctrl-C where it runs).`,
    ]);
  }, 60_000);

  it('`reply` says how to send it through the SQL socket instead, and that way works', async () => {
    const ticket = sim.model.randomTicketId('open')!;
    const r = await runCli(['reply', ticket, 'Thanks, on it.'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(1);
    const psql = `PGPASSWORD="$(cat ${folder}/sql-password)" psql -h 127.0.0.1 -p ${sqlPort} -U postgres -d postgres`;
    expect(messageLines(r)).toEqual([
      `ticket-mirror: the daemon (ticket-mirror run, pid ${run.pid}) holds the embedded database in ${folder}: \`ticket-mirror reply\` cannot open it while it runs — To send a reply while it runs, insert it into reply_outbox through its SQL socket and it posts it after its next pass: ${psql} -c "insert into reply_outbox (ticket_id, message) values ('<ticket-id>', '<message>')"; or stop it first (kill ${run.pid}, or Ctrl-C where it runs).`,
    ]);
    // What the hint says, done with a PostgreSQL client: the daemon posts the reply.
    const client = new pg.Client({ host: '127.0.0.1', port: sqlPort, user: 'postgres', database: 'postgres', password: readFileSync(join(folder, 'sql-password'), 'utf8').trim() });
    await client.connect();
    try {
      await client.query('insert into reply_outbox (ticket_id, message) values ($1, $2)', [ticket, 'Thanks, on it (via the outbox).']);
      await waitUntil(
        'the daemon has posted the reply',
        async () => (await client.query<{ state: string }>('select state from reply_outbox where ticket_id = $1', [ticket])).rows[0]?.state === 'sent',
        60_000,
        run,
      );
    } finally {
      await client.end();
    }
  }, 90_000);

  it.each([
    ['migrate', 'It applied every migration it knows when it started; to migrate by hand (after an upgrade, say), stop it first (kill PID, or Ctrl-C where it runs), or restart it.'],
    ['rebuild', 'Stop it first (kill PID, or Ctrl-C where it runs), then rebuild, then start it again.'],
  ])('`%s` says the daemon holds the data and what to do; exit 1', async (command, advice) => {
    const r = await runCli([command], { PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(1);
    expect(messageLines(r)).toEqual([
      `ticket-mirror: the daemon (ticket-mirror run, pid ${run.pid}) holds the embedded database in ${folder}: \`ticket-mirror ${command}\` cannot open it while it runs — ${advice.replace('PID', String(run.pid))}`,
    ]);
  }, 60_000);
});

describe('beside `run` on the embedded database, its HTTP server off', () => {
  let run: RunProcess | undefined;
  afterEach(async () => {
    await run?.dispose();
    run = undefined;
  });

  it('`status --json` reads the daemon through its SQL socket', async () => {
    const sqlPort = await freePort();
    run = startRun({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: '0', PGLITE_PORT: String(sqlPort), LOG_LEVEL: 'info' });
    const folder = join(run.cwd, 'pglite');
    await waitUntil('the daemon serves', () => runtimeOf(folder)?.state === 'running', 90_000, run);
    expect(runtimeOf(folder)).toMatchObject({ pid: run.pid, http: null, sql: { port: sqlPort } });
    const r = await runCli(['status', '--json'], { PGLITE_DIR: folder }, dir);
    expect(messageLines(r)).toEqual([]);
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.daemon).toEqual({ pid: run.pid, via: 'sql', url: null });
    expect(status.budget).toMatchObject({ dailyAllowed: expect.any(Number), dailyUsed: expect.any(Number) });
    expect(status.counts).toMatchObject({ tickets: expect.any(Number) });
  }, 120_000);

  it('with neither server, `status` says so; exit 1', async () => {
    run = startRun({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, HTTP_PORT: '0', PGLITE_PORT: '0', LOG_LEVEL: 'info' });
    const folder = join(run.cwd, 'pglite');
    await waitUntil('the daemon runs', () => runtimeOf(folder)?.state === 'running', 90_000, run);
    const r = await runCli(['status'], { PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(1);
    expect(messageLines(r)).toEqual([
      `ticket-mirror: ticket-mirror run (pid ${run.pid}) holds the embedded database in ${folder}, and could not be read: its HTTP server is off (HTTP_PORT=0); its SQL socket is off (PGLITE_PORT=0)`,
    ]);
  }, 120_000);
});

describe('`status` where there is no database', () => {
  it('on a folder that does not exist: the empty status of a mirror not started, saying so; exit 0, and creates nothing', async () => {
    const folder = join(dir, `none-${randomBytes(4).toString('hex')}`);
    const r = await runCli(['status'], { PGLITE_DIR: folder }, dir);
    // The contract's `status` exits 0: before, a fresh machine's first `status` was a failure (exit 1).
    expect(r.code).toBe(0);
    expect(messageLines(r)).toEqual([]);
    expect(r.stdout).toContain(
      `mirror    none yet: there is no embedded database in ${folder} yet (PGLITE_DIR): \`ticket-mirror run\` creates it, and so does \`ticket-mirror migrate\`\n`,
    );
    expect(r.stdout).toMatch(/^budget {4}0 of 1296 requests used in the last 24 h \(0%\), 0 of 54 in the last minute$/m);
    expect(r.stdout).toMatch(/^last sync never$/m);
    expect(r.stdout).toMatch(/^tickets {3}0 mirrored: /m);
    // No database was made: PGlite creates its folder before its initdb.
    expect(existsSync(folder)).toBe(false);
  }, 30_000);

  it('on an empty folder, `status --json` too: the folder stays empty', async () => {
    const folder = join(dir, `empty-${randomBytes(4).toString('hex')}`);
    mkdirSync(folder);
    const r = await runCli(['status', '--json'], { PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.none).toMatch(/^there is no embedded database in /);
    expect(status).toMatchObject({ lastSync: null, counts: { tickets: 0, messages: 0 }, budget: { dailyUsed: 0, dailyAllowed: 1296 } });
    expect(readdirSync(folder)).toEqual([]);
  }, 30_000);
});

describe.skipIf(!postgresUrl)('beside `run` on PostgreSQL', () => {
  let run: RunProcess;
  const schema = `tm_beside_${randomBytes(4).toString('hex')}`;
  const admin = () => new pg.Client({ connectionString: postgresUrl! });

  beforeAll(async () => {
    run = await startRunOnPostgres(sim, postgresUrl!, schema);
    await waitUntil('the daemon has finished its first pass', async () => (await readyz(run)) === 'ready: leader: syncing\n', 90_000, run);
  }, 120_000);
  afterAll(async () => {
    await run.dispose();
    const c = admin();
    await c.connect();
    await c.query(`drop schema if exists "${schema}" cascade`);
    await c.end();
  });

  it('`status --json` reads the database directly: exit 0, the same fields', async () => {
    const r = await runCli(['status', '--json'], { DATABASE_URL: postgresUrl!, DB_SCHEMA: schema }, dir);
    expect(messageLines(r)).toEqual([]);
    expect(r.code).toBe(0);
    const status = JSON.parse(r.stdout);
    expect(status.daemon).toBeUndefined();
    expect(status.sql).toBeUndefined();
    expect(status.counts).toMatchObject({ tickets: TICKETS, open: 3, resolved: 2 });
    // Other clients of the simulator's token (the daemons before) may have lowered what is allowed: not asserted.
    expect(status.budget).toMatchObject({ dailyAllowed: expect.any(Number) });
    expect(status.budget.dailyUsed).toBeGreaterThanOrEqual(4);
  }, 60_000);

  it('on a schema nothing has migrated, `status` shows an empty mirror saying so, exit 0, and migrates nothing', async () => {
    const empty = `tm_unmigrated_${randomBytes(4).toString('hex')}`;
    const r = await runCli(['status'], { DATABASE_URL: postgresUrl!, DB_SCHEMA: empty }, dir);
    expect(r.code).toBe(0);
    expect(messageLines(r)).toEqual([]);
    expect(r.stdout).toMatch(
      new RegExp(`^mirror {4}none yet: the database at DATABASE_URL=postgres://.* \\(DB_SCHEMA=${empty}\\) is not migrated yet \\(no table of ticket-mirror in it\\): \`ticket-mirror run\` creates the tables, and so does \`ticket-mirror migrate\`$`, 'm'),
    );
    expect(r.stdout).toMatch(/^tickets {3}0 mirrored: /m);
    const c = admin();
    await c.connect();
    try {
      const { rows } = await c.query('select count(*)::int as n from information_schema.schemata where schema_name = $1', [empty]);
      expect(rows[0].n).toBe(0);
    } finally {
      await c.end();
    }
  }, 60_000);
});

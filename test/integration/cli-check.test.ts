import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { freshPostgres, postgresUrl } from '../helpers/db.ts';
import { freePort, runCli } from '../helpers/runProcess.ts';

/**
 * `ticket-mirror check` through the real command line against the simulator: one line per check, at most one API
 * request (counted in the simulator's own log, and recorded in the ledger when the database can be written), and the
 * exit codes the README documents — 0 all good, 2 a setting to change (the token), 1 something unreachable.
 */

let sim: RunningSimulator;
let dir: string;
let folder: string;
const apiRequests = () => sim.log.filter((r) => r.path.startsWith('/api/'));

const ledger = async (pgliteDir: string) => {
  const database = await openDatabase({ pgliteDir });
  try {
    return await queryRows<{ method: string; path: string; status: number | null; kind: string }>(database.db, sql`select method, path, status, kind from api_requests order by id`);
  } finally {
    await database.close();
  }
};

beforeAll(async () => {
  sim = await startSimulator({ seed: 21, openTickets: 3, resolvedTickets: 2 });
  dir = mkdtempSync(join(tmpdir(), 'tm-check-'));
  folder = join(dir, 'pglite');
  const migrated = await runCli(['migrate'], { PGLITE_DIR: folder }, dir);
  expect(migrated.code).toBe(0);
}, 120_000);
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('check on the embedded database', () => {
  it('a good set-up: a ✓ per check, one request, recorded in the ledger; exit 0', async () => {
    const before = apiRequests().length;
    const r = await runCli(['check'], { TICKETS_API_URL: `${sim.url}/api/v1/`, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: folder }, dir);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(apiRequests().slice(before)).toEqual([expect.objectContaining({ method: 'GET', path: '/api/v1/tickets/self', status: 200 })]);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines).toEqual([
      `✓ configuration TICKETS_API_URL=${sim.url}, the token from TICKETS_API_TOKEN, PGLITE_DIR=${folder}`,
      `  TICKETS_API_URL ends in /api/v1, which ticket-mirror adds to every request itself: using ${sim.url}`,
      expect.stringMatching(new RegExp(`^✓ database {6}the embedded database in ${folder}: reachable, migrated \\(\\d+ migrations\\)$`)),
      expect.stringMatching(/^✓ API {11}reachable: GET \/api\/v1\/tickets\/self answered HTTP 200 in \d+ ms \(1 request, recorded in api_requests\)$/),
      `✓ token         accepted: ${sim.model.listSelf().length} tickets assigned to its user`,
      '✓ minute limit  the API allows 60 requests a minute (x-ratelimit-limit); API_MINUTE_LIMIT=60',
    ]);
    expect(await ledger(folder)).toEqual([{ method: 'GET', path: '/api/v1/tickets/self', status: 200, kind: 'list_self' }]);
    expect(r.stdout).not.toContain(sim.token);
  }, 60_000);

  it('a wrong token: the API reachable, the token refused with the fix, one request; exit 2', async () => {
    const before = apiRequests().length;
    const wrong = `wrong-${randomBytes(6).toString('hex')}`;
    const r = await runCli(['check'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: wrong, PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(2);
    expect(apiRequests().slice(before)).toEqual([expect.objectContaining({ path: '/api/v1/tickets/self', status: 401 })]);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines.slice(2)).toEqual([
      '✓ API           reachable: GET /api/v1/tickets/self answered HTTP 401 (1 request, recorded in api_requests)',
      `✗ token         the API rejected the token (HTTP 401: Unauthenticated.): check TICKETS_API_TOKEN (TICKETS_API_URL=${sim.url})`,
      expect.stringMatching(/^ {2}Set a valid token in TICKETS_API_TOKEN or the file TICKETS_API_TOKEN_FILE names/),
      '  (1 request, recorded in api_requests)',
    ]);
    expect(r.stdout + r.stderr).not.toContain(wrong);
    expect((await ledger(folder)).map((row) => row.status)).toEqual([200, 401]);
  }, 60_000);

  it('the API unreachable (a closed port): said with its fix, nothing charged; exit 1', async () => {
    const port = await freePort();
    const r = await runCli(['check'], { TICKETS_API_URL: `http://127.0.0.1:${port}`, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: folder }, dir);
    expect(r.code).toBe(1);
    expect(r.stdout.trimEnd().split('\n').slice(2)).toEqual([
      `✗ API           cannot reach the API at 127.0.0.1:${port}: connection refused (TICKETS_API_URL=http://127.0.0.1:${port})`,
      expect.stringMatching(/^ {2}Check TICKETS_API_URL — the helpdesk's base address/),
      '  (no request reached it)',
    ]);
    expect((await ledger(folder)).map((row) => row.status)).toEqual([200, 401]);
  }, 60_000);

  it('a minute limit set above the one the API announces is a setting to change; exit 2', async () => {
    const r = await runCli(['check'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: folder, API_MINUTE_LIMIT: '100' }, dir);
    expect(r.code).toBe(2);
    expect(r.stdout.trimEnd().split('\n').slice(-2)).toEqual([
      '✗ minute limit  the API allows 60 requests a minute (x-ratelimit-limit), fewer than API_MINUTE_LIMIT=100',
      '  Set API_MINUTE_LIMIT=60, or the mirror will meet 429 answers.',
    ]);
  }, 60_000);

  it('no database yet: said, and created by nobody; the API is still checked; exit 1', async () => {
    const none = join(dir, `none-${randomBytes(4).toString('hex')}`);
    const before = apiRequests().length;
    const r = await runCli(['check'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: none }, dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`✗ database      there is no embedded database in ${none} yet (PGLITE_DIR)\n  \`ticket-mirror migrate\` creates and migrates it`);
    expect(r.stdout).toContain('(1 request, not recorded: the database cannot be written from here)');
    expect(apiRequests().length - before).toBe(1);
    expect(existsSync(none)).toBe(false);
  }, 60_000);

  it('configuration problems: each on its line, no request; exit 2', async () => {
    const before = apiRequests().length;
    const r = await runCli(['check'], { PGLITE_DIR: folder, API_DAILY_LIMIT: 'lots' }, dir);
    expect(r.code).toBe(2);
    expect(r.stdout.trimEnd().split('\n')).toEqual([
      '✗ configuration TICKETS_API_URL is not set: point it at your helpdesk, or run `npm run demo` for a first look',
      expect.stringMatching(/^✗ configuration API_DAILY_LIMIT="lots" /),
    ]);
    expect(apiRequests().length).toBe(before);
  }, 60_000);
});

describe.skipIf(!postgresUrl)('check on PostgreSQL', () => {
  it('migrated: the request recorded there; not migrated: said, and nothing created; exit 0 / 1', async () => {
    const database = await freshPostgres('tm_check');
    try {
      const ok = await runCli(['check'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema }, dir);
      expect(ok.code).toBe(0);
      expect(ok.stdout).toMatch(new RegExp(`✓ database {6}the database at DATABASE_URL=postgres://\\S+ \\(DB_SCHEMA=${database.schema}\\): reachable, migrated`));
      expect(await queryRows(database.db, sql`select path, status from api_requests`)).toEqual([{ path: '/api/v1/tickets/self', status: 200 }]);
    } finally {
      await database.destroy();
    }
    const empty = `tm_check_empty_${randomBytes(4).toString('hex')}`;
    const r = await runCli(['check'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, DATABASE_URL: postgresUrl!, DB_SCHEMA: empty }, dir);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`(DB_SCHEMA=${empty}) is not migrated yet (no table of ticket-mirror in it)\n  \`ticket-mirror migrate\` applies the migrations`);
    expect(r.stdout).toContain('(1 request, not recorded: the database cannot be written from here)');
  }, 60_000);
});

describe('--version', () => {
  it("prints package.json's version; exit 0", async () => {
    const { version } = JSON.parse(readFileSync(resolve(import.meta.dirname, '../../package.json'), 'utf8')) as { version: string };
    const r = await runCli(['--version'], {}, dir);
    expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });
});

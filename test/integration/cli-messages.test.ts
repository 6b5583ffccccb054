import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { postgresUrl } from '../helpers/db.ts';
import { freePort, runCli, type CliResult } from '../helpers/runProcess.ts';

/**
 * Every failure a new user meets first, from the real command line in a child process against the real thing: what
 * the message says (the setting, what was tried, the fix), that it keeps secrets out, and the exit code the README
 * documents. Each child runs in an empty folder of its own (no `.env`), with its stderr a pipe: JSON logs.
 */

let sim: RunningSimulator;
let dir: string;

beforeAll(async () => {
  sim = await startSimulator({ seed: 16, openTickets: 3, resolvedTickets: 2 });
  dir = mkdtempSync(join(tmpdir(), 'tm-cli-messages-'));
});
afterAll(async () => {
  await sim.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh embedded database folder for one command. */
const pgliteDir = () => join(dir, `pglite-${randomBytes(4).toString('hex')}`);
const messageLines = (r: CliResult) => r.stderr.split('\n').filter((l) => l && !l.startsWith('{'));

describe('the database', () => {
  it('unreachable: names DATABASE_URL without its password, the address tried, the fix; exit 1', async () => {
    const port = await freePort();
    const r = await runCli(['migrate'], { DATABASE_URL: `postgres://mirror:s3cret-pw@127.0.0.1:${port}/mirror` }, dir);
    expect(r.code).toBe(1);
    expect(messageLines(r)).toEqual([
      `ticket-mirror: cannot connect to the database at 127.0.0.1:${port}: connection refused (DATABASE_URL=postgres://mirror:***@127.0.0.1:${port}/mirror) — Is PostgreSQL running there, on that port? Fix the host or port in DATABASE_URL, or unset it to use the embedded database.`,
    ]);
    expect(r.stderr).not.toContain('s3cret-pw');
  });

  it.skipIf(!postgresUrl)('a database that does not exist: its name, the server, how to create it; exit 2', async () => {
    const url = new URL(postgresUrl!);
    const name = `tm_missing_${randomBytes(4).toString('hex')}`;
    url.pathname = `/${name}`;
    const r = await runCli(['migrate'], { DATABASE_URL: url.toString() }, dir);
    expect(r.code).toBe(2);
    const lines = messageLines(r);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^ticket-mirror: database "${name}" does not exist on ${url.hostname}:${url.port || 5432} \\(DATABASE_URL=`));
    expect(lines[0]).toMatch(new RegExp(` — Create it \\(createdb -h ${url.hostname} -p ${url.port || 5432} -U \\S+ ${name}\\), or fix the database name`));
    if (url.password) expect(r.stderr).not.toContain(url.password);
  });
});

describe('the API', () => {
  it('the token refused: names TICKETS_API_TOKEN and the URL, never the token; exit 2', async () => {
    const wrong = `wrong-token-${randomBytes(6).toString('hex')}`;
    const r = await runCli(['sync'], { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: wrong, PGLITE_DIR: pgliteDir() }, dir);
    expect(r.code).toBe(2);
    // The contract's "one clear line": stderr holds nothing else, not even a log line of the pass.
    expect(r.stderr.split('\n').filter(Boolean)).toEqual([
      expect.stringMatching(
        new RegExp(
          `^ticket-mirror: the API rejected the token \\(HTTP 401: Unauthenticated\\.\\): check TICKETS_API_TOKEN \\(TICKETS_API_URL=${sim.url}\\) — Set a valid token in TICKETS_API_TOKEN or the file TICKETS_API_TOKEN_FILE names`,
        ),
      ),
    ]);
    expect(r.stderr).not.toContain(wrong);
  }, 60_000);

  it('unreachable: names TICKETS_API_URL and the address tried; exit 1', async () => {
    const port = await freePort();
    const r = await runCli(['sync'], { TICKETS_API_URL: `http://127.0.0.1:${port}`, TICKETS_API_TOKEN: 'x', PGLITE_DIR: pgliteDir() }, dir);
    expect(r.code).toBe(1);
    expect(messageLines(r)).toEqual([
      expect.stringMatching(
        new RegExp(`^ticket-mirror: cannot reach the API at 127\\.0\\.0\\.1:${port}: connection refused \\(TICKETS_API_URL=http://127\\.0\\.0\\.1:${port}\\) — Check TICKETS_API_URL — the helpdesk's base address`),
      ),
    ]);
  }, 60_000); // the client retries a refused connection, with real back-off
});

describe('what another process holds', () => {
  let held: Server | undefined;
  afterEach(async () => {
    await new Promise((done) => (held ? held.close(done) : done(undefined)));
    held = undefined;
  });

  async function holdPort(): Promise<number> {
    const port = await freePort();
    held = createServer();
    await new Promise<void>((done) => held!.listen(port, '127.0.0.1', done));
    return port;
  }

  it.each(['HTTP_PORT', 'PGLITE_PORT'])('%s in use: the variable, the address, the fix; exit 2', async (variable) => {
    const port = await holdPort();
    const other = variable === 'HTTP_PORT' ? 'PGLITE_PORT' : 'HTTP_PORT';
    const env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: pgliteDir(), [variable]: String(port), [other]: '0' };
    const r = await runCli(['run'], env, dir);
    expect(r.code).toBe(2);
    expect(messageLines(r)).toEqual([
      `ticket-mirror: ${variable}=${port} is in use by another program (127.0.0.1:${port}): stop it, or set ${variable} to another port (0 turns it off)`,
    ]);
  }, 60_000);

  // A host that does not resolve was blamed on DATABASE_URL ("cannot connect to the database at …: host not found"),
  // one that is not this machine's said only "listen EADDRNOTAVAIL".
  it.runIf(postgresUrl).each([
    ['no-such-host.invalid', 'host not found'],
    ['192.0.2.1', 'not an address of this machine'],
  ])('HTTP_HOST=%s: the variable, what is wrong, the fix; exit 2', async (host, what) => {
    const port = await freePort();
    const env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, DATABASE_URL: postgresUrl!, DB_SCHEMA: 'tm_http_host', HTTP_HOST: host, HTTP_PORT: String(port) };
    const said = `ticket-mirror: HTTP_HOST=${host} cannot be listened on: ${what}; set HTTP_HOST to an address of this machine (127.0.0.1, the default; 0.0.0.0 for every interface)`;
    const r = await runCli(['run'], env, dir);
    expect(messageLines(r)).toEqual([said]);
    expect(r.code).toBe(2);
    // A fleet's worker says it alike.
    const fleet = await runCli(['fleet', 'run'], { ...env, FLEET_KEY: randomBytes(32).toString('base64'), FLEET_SCHEMA: 'tm_http_host_fleet' }, dir);
    expect(messageLines(fleet)).toEqual([said]);
    expect(fleet.code).toBe(2);
  }, 60_000);

  it('a port the simulator is told to use: the address and the fix; exit 2', async () => {
    const port = await holdPort();
    const r = await runCli(['simulator', '--port', String(port)], {}, dir);
    expect(r.code).toBe(2);
    expect(messageLines(r)).toEqual([`ticket-mirror: 127.0.0.1:${port} is in use by another program — Stop that program, or choose another port.`]);
  });

  // Held by `run` itself, the daemon is named with what to do instead (cli-beside-run.test.ts); held by another
  // process (a `sync`, a `migrate` at work), the lock's own message.
  it('the embedded database locked by another process: the folder, the process, PGLITE_DIR; exit 1', async () => {
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const folder = pgliteDir();
      mkdirSync(folder, { mode: 0o700 });
      writeFileSync(join(folder, 'ticket-mirror.lock'), String(holder.pid));
      const r = await runCli(['migrate'], { PGLITE_DIR: folder }, dir);
      expect(r.code).toBe(1);
      expect(messageLines(r)).toEqual([
        `ticket-mirror: the embedded database in ${folder} is in use by process ${holder.pid}; stop it, or set PGLITE_DIR to another folder — Only one process may open the embedded database: for several processes or standby replicas, use PostgreSQL (DATABASE_URL).`,
      ]);
    } finally {
      holder.kill('SIGKILL');
    }
  }, 90_000);
});

// It said "EEXIST: file already exists, mkdir '…'" (migrate, run, sync), and status and check that `run` would create
// the database there.
describe('PGLITE_DIR naming a file', () => {
  it.each([
    ['is the file', (file: string) => file, (file: string) => `PGLITE_DIR=${file} is a file, not a folder: set PGLITE_DIR to a folder (created if missing)`],
    [
      'is under the file',
      (file: string) => join(file, 'pglite'),
      (file: string) => `PGLITE_DIR=${join(file, 'pglite')} cannot be a folder: ${file} is a file, not a folder`,
    ],
  ])('%s: migrate and status name the variable and the file; exit 2', async (_how, folderOf, message) => {
    const file = join(dir, `not-a-folder-${randomBytes(4).toString('hex')}`);
    writeFileSync(file, 'notes\n');
    for (const command of ['migrate', 'status']) {
      const r = await runCli([command], { PGLITE_DIR: folderOf(file) }, dir);
      expect({ command, code: r.code, lines: messageLines(r) }).toEqual({ command, code: 2, lines: [`ticket-mirror: ${message(file)}`] });
    }
  }, 60_000);
});

describe('the configuration', () => {
  it('reports every configuration problem at once, each with its variable; exit 2', async () => {
    const r = await runCli(['run'], { API_DAILY_LIMIT: 'lots', HTTP_PORT: '99999', LOG_FORMAT: 'yaml' }, dir);
    expect(r.code).toBe(2);
    expect(messageLines(r)).toEqual([
      'ticket-mirror: TICKETS_API_URL is not set: point it at your helpdesk, or run `npm run demo` for a first look',
      expect.stringMatching(/^ticket-mirror: API_DAILY_LIMIT="lots" /),
      expect.stringMatching(/^ticket-mirror: HTTP_PORT="99999" /),
      'ticket-mirror: LOG_FORMAT="yaml" must be one of json, pretty',
    ]);
  });
});

describe('logs when stderr is not a terminal', () => {
  it('JSON lines and no progress line; LOG_FORMAT=pretty gives readable lines, still without progress', async () => {
    const env = { TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: sim.token, PGLITE_DIR: pgliteDir(), LOG_LEVEL: 'debug' };
    const json = await runCli(['sync'], env, dir);
    expect(json.code).toBe(0);
    const lines = json.stderr.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(lines.map((l) => JSON.parse(l).msg)).toContain('sync pass');

    const pretty = await runCli(['sync'], { ...env, LOG_FORMAT: 'pretty' }, dir);
    expect(pretty.code).toBe(0);
    expect(pretty.stderr).toMatch(/^\[\d\d:\d\d:\d\d\] DEBUG: sync pass started {2}polls=/m);
    for (const r of [json, pretty]) {
      expect(r.stderr).not.toContain('\r');
      expect(r.stderr).not.toContain('\x1b');
      expect(r.stderr).not.toContain('backfill █');
    }
  }, 60_000);
});

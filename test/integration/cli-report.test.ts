import { execFileSync, spawn } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillSupportData } from '../../bench/supportData.ts';
import { openDatabase, queryRows, sql } from '../../src/db/connect.ts';
import { DAY_MS } from '../../src/time.ts';
import { freshPostgres, postgresUrl } from '../helpers/db.ts';
import { runCli } from '../helpers/runProcess.ts';

/**
 * `ticket-mirror report` through the real command line: the page /report serves, written to a file from an embedded
 * database or PostgreSQL without creating or migrating anything; bad dates are exit 2 before the database is opened.
 */

let dir: string;
let pgliteDir: string;
const now = Date.now();
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const from = day(now - 20 * DAY_MS);
const to = day(now - DAY_MS);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'tm-cli-report-'));
  pgliteDir = join(dir, 'pglite');
  const database = await openDatabase({ pgliteDir });
  try {
    await database.migrate();
    await fillSupportData(database.db, { tickets: 600, days: 40, end: now });
  } finally {
    await database.close();
  }
}, 60_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Tickets created from `from` to `to` included, days in UTC (the default REPORT_TIMEZONE). */
async function createdIn(databaseUrl?: string, schema?: string): Promise<number> {
  const database = await openDatabase(databaseUrl ? { databaseUrl, schema } : { pgliteDir });
  try {
    const [row] = await queryRows<{ n: number }>(
      database.db,
      sql`select count(*)::int as n from ticket_first_response where created_at >= ${from}::date and created_at < ${to}::date + 1`,
    );
    return row!.n;
  } finally {
    await database.close();
  }
}

function checkPage(html: string, created: number): void {
  expect(html).toContain(`<title>Support report ${from} – ${to}</title>`);
  // A file has no server to send the policy: it carries it; nothing in it loads or runs anything.
  expect(html).toContain(`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">`);
  expect(html).not.toMatch(/<script|<form|<link|<img|src=|url\(/i);
  expect(html).toContain(`<div class="value">${created.toLocaleString('en-US')}</div>`);
  expect(html.match(/<svg class="chart"/g)).toHaveLength(4);
}

describe('ticket-mirror report', () => {
  it('writes the page for the period from the embedded database, and to stdout with --out -', async () => {
    const out = join(dir, 'report.html');
    const r = await runCli(['report', '--out', out, '--from', from, '--to', to], { PGLITE_DIR: pgliteDir, LOG_FORMAT: 'json' }, dir);
    expect(r.stderr).not.toContain('"level":50');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${out}: support report ${from} – ${to}, days in UTC\n`);
    const created = await createdIn();
    expect(created).toBeGreaterThan(200);
    checkPage(readFileSync(out, 'utf8'), created);
    expect(existsSync(`${out}.partial`)).toBe(false);

    const piped = await runCli(['report', '--out', '-', '--from', from, '--to', to], { PGLITE_DIR: pgliteDir, LOG_FORMAT: 'json' }, dir);
    expect(piped.code).toBe(0);
    checkPage(piped.stdout, created);
  });

  it.each([
    [['--from', '2026-02-30'], '--from must be a date as YYYY-MM-DD, e.g. '],
    [['--to', 'yesterday'], '--to must be a date as YYYY-MM-DD, e.g. '],
    [['--from', '2026-11-02', '--to', '2026-11-01'], '--from must not be after --to'],
    [['--from', '2024-01-01', '--to', '2026-01-01'], 'the period may be at most 366 days long; this one has 732'],
  ])('%j is exit 2 with one line, and no file', async (args, message) => {
    const out = join(dir, 'refused.html');
    const r = await runCli(['report', '--out', out, ...args], { PGLITE_DIR: pgliteDir, LOG_FORMAT: 'json' }, dir);
    expect(r.code).toBe(2);
    expect(r.stderr.startsWith(`ticket-mirror: ${message}`)).toBe(true);
    expect(existsSync(out)).toBe(false);
  });

  it('--out: a pipe is written into, a link followed, neither replaced; a folder or a missing folder refused, exit 2', async () => {
    const env = { PGLITE_DIR: pgliteDir, LOG_FORMAT: 'json' };
    // A FIFO and its reader (as /dev/stdout would be): before, renamed over and replaced by a plain file.
    const fifo = join(dir, 'pipe.html');
    execFileSync('mkfifo', [fifo]);
    const reader = spawn('sh', ['-c', `cat "${fifo}" > "${join(dir, 'from-pipe.html')}"`]);
    const read = new Promise((resolve) => reader.once('exit', resolve));
    const piped = await runCli(['report', '--out', fifo, '--from', from, '--to', to], env, dir);
    expect(piped.code).toBe(0);
    expect(await read).toBe(0);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    checkPage(readFileSync(join(dir, 'from-pipe.html'), 'utf8'), await createdIn());
    // A symbolic link stays one; its target gets the page.
    const target = join(dir, 'target.html');
    const link = join(dir, 'link.html');
    symlinkSync(target, link);
    expect((await runCli(['report', '--out', link, '--from', from, '--to', to], env, dir)).code).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    checkPage(readFileSync(target, 'utf8'), await createdIn());
    // Refused before the database is read.
    const folder = await runCli(['report', '--out', dir], env, dir);
    expect([folder.code, folder.stderr]).toEqual([2, `ticket-mirror: --out ${dir} is a folder: name a file in it\n`]);
    const missing = await runCli(['report', '--out', join(dir, 'no', 'x.html')], env, dir);
    expect([missing.code, missing.stderr]).toEqual([2, `ticket-mirror: --out ${join(dir, 'no', 'x.html')}: there is no folder ${join(dir, 'no')}\n`]);
  });

  it('a bad date is refused before the database is opened; a missing database is not created', async () => {
    const nowhere = join(dir, 'nowhere');
    const bad = await runCli(['report', '--out', join(dir, 'x.html'), '--from', 'x'], { PGLITE_DIR: nowhere }, dir);
    expect(bad.code).toBe(2);
    const absent = await runCli(['report', '--out', join(dir, 'x.html')], { PGLITE_DIR: nowhere }, dir);
    expect(absent.code).toBe(1);
    expect(absent.stderr).toContain(`there is no embedded database in ${nowhere} yet`);
    expect(existsSync(nowhere)).toBe(false);
    const noOut = await runCli(['report'], { PGLITE_DIR: pgliteDir }, dir);
    expect([noOut.code, noOut.stderr]).toEqual([1, expect.stringContaining("required option '--out <file>' not specified")]);
  });

  it.runIf(postgresUrl)('reads PostgreSQL in DB_SCHEMA, and refuses a schema that is not migrated', async () => {
    const database = await freshPostgres('tm_report');
    try {
      await fillSupportData(database.db, { tickets: 300, days: 30, end: now });
      const out = join(dir, 'postgres.html');
      const env = { DATABASE_URL: postgresUrl!, DB_SCHEMA: database.schema, LOG_FORMAT: 'json' };
      const r = await runCli(['report', '--out', out, '--from', from, '--to', to], env, dir);
      expect(r.code).toBe(0);
      checkPage(readFileSync(out, 'utf8'), await createdIn(postgresUrl!, database.schema));
      const empty = await runCli(['report', '--out', out], { ...env, DB_SCHEMA: `${database.schema}_none` }, dir);
      expect(empty.code).toBe(1);
      expect(empty.stderr).toContain('not migrated yet');
    } finally {
      await database.destroy();
    }
  }, 60_000);
});

import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, sql } from '../../src/db/connect.ts';
import { openFleetDatabase, type FleetDatabase } from '../../src/db/fleet.ts';
import { getAccount } from '../../src/db/repos/accounts.ts';
import { openToken, parseFleetKey } from '../../src/fleet/tokenSeal.ts';
import { postgresUrl } from '../helpers/db.ts';
import { runCli, type CliResult } from '../helpers/runProcess.ts';

/**
 * `ticket-mirror accounts …` through the real command line, in child processes, against a real PostgreSQL: tokens from
 * stdin, a file or a variable and never from an argument, no token text in any output or anywhere in the row, pause,
 * resume, remove (and --drop-data), seal for SQL inserts, rekey, and the refusals with their exit codes.
 */

const suffix = randomBytes(4).toString('hex');
const FLEET = `fleet_cli_${suffix}`;
const KEY = randomBytes(32).toString('base64');
const key = parseFleetKey(KEY);
const TOKEN = `SeCrEt-${randomBytes(12).toString('hex')}`;
const name = (n: string) => `${n}${suffix}`;

// Each command is a process of its own (tsx compiles on load): on two busy cores a test of a dozen may take minutes.
describe.skipIf(!postgresUrl)('accounts on the command line', { timeout: 600_000 }, () => {
  let cwd: string;
  let fleet: FleetDatabase;
  let env: Record<string, string>;
  const outputs: CliResult[] = [];
  const cli = async (args: string[], stdin = '', extra: Record<string, string> = {}): Promise<CliResult> => {
    const result = await runCli(args, { ...env, ...extra }, cwd, stdin);
    outputs.push(result);
    return result;
  };
  const row = (n: string) => getAccount(fleet.db, n);

  beforeAll(async () => {
    cwd = mkdtempSync(join(tmpdir(), 'tm-accounts-'));
    env = { DATABASE_URL: postgresUrl!, FLEET_SCHEMA: FLEET, FLEET_KEY: KEY, LOG_LEVEL: 'warn', LOG_FORMAT: 'json', HOME: cwd };
    fleet = await openFleetDatabase({ databaseUrl: postgresUrl!, schema: FLEET, poolSize: 1 });
    await fleet.migrate();
  });
  afterAll(async () => {
    await fleet?.close();
    rmSync(cwd, { recursive: true, force: true });
    const client = new pg.Client({ connectionString: postgresUrl! });
    await client.connect();
    try {
      const { rows } = await client.query<{ s: string }>(`select nspname as s from pg_namespace where nspname = $1 or nspname like $2`, [FLEET, `tm\\_%${suffix}`]);
      for (const { s } of rows) await client.query(`drop schema "${s}" cascade`);
    } finally {
      await client.end();
    }
  });

  it('adds from stdin, a file and a variable; the token is in no output and nowhere in the row', async () => {
    const viaStdin = await cli(['accounts', 'add', name('stdin'), '--api-url', 'https://help.example.com/api/v1/', '--token-stdin'], `${TOKEN}\n`);
    expect(viaStdin).toMatchObject({ code: 0 });
    expect(viaStdin.stdout).toContain(`added account ${name('stdin')}: https://help.example.com, schema tm_${name('stdin')}`);
    expect(viaStdin.stdout).toContain(`key ${key.id}`);
    writeFileSync(join(cwd, 'token'), `  ${TOKEN}\n`, { mode: 0o600 });
    expect(await cli(['accounts', 'add', name('file'), '--api-url', 'https://files.example.com', '--token-file', 'token', '--daily-limit', '500', '--minute-limit', '10', '--reserve', '0.2'])).toMatchObject({ code: 0 });
    expect(await cli(['accounts', 'add', name('env'), '--api-url', 'http://127.0.0.1:9', '--token-env', 'MY_TOKEN', '--schema', `tm_other_${suffix}`, '--paused'], '', { MY_TOKEN: TOKEN })).toMatchObject({ code: 0 });

    const stdinRow = await row(name('stdin'));
    expect(stdinRow).toMatchObject({ apiUrl: 'https://help.example.com', dailyLimit: 1440, minuteLimit: 60, reserve: 0.1, pausedAt: null, state: 'new' });
    expect(await row(name('file'))).toMatchObject({ apiUrl: 'https://files.example.com', dailyLimit: 500, minuteLimit: 10, reserve: 0.2 });
    expect(await row(name('env'))).toMatchObject({ schemaName: `tm_other_${suffix}`, pausedAt: expect.any(String) });
    for (const n of [name('stdin'), name('file'), name('env')]) expect(openToken(key, n, (await row(n))!.tokenSealed)).toBe(TOKEN);

    // Scan every column of every row, as text and the sealed bytes as hex and as escaped text.
    const client = new pg.Client({ connectionString: postgresUrl! });
    await client.connect();
    try {
      const { rows } = await client.query<{ t: string; hex: string; esc: string }>(
        `select a::text as t, encode(token_sealed, 'hex') as hex, encode(token_sealed, 'escape') as esc from "${FLEET}".accounts a`,
      );
      expect(rows).toHaveLength(3);
      for (const r of rows) {
        expect(r.t).not.toContain(TOKEN);
        expect(r.esc).not.toContain('SeCrEt');
        expect(r.hex).not.toContain(Buffer.from(TOKEN).toString('hex'));
      }
    } finally {
      await client.end();
    }

    const list = await cli(['accounts', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`${name('stdin')}\\s+tm_${name('stdin')}\\s+new\\s+1440/d 60/m r0.1\\s+${key.id}`));
    expect(list.stdout).toMatch(new RegExp(`${name('env')}\\s+tm_other_${suffix}\\s+paused`));
    const json = await cli(['accounts', 'list', '--json']);
    const listed = JSON.parse(json.stdout) as Array<Record<string, unknown>>;
    expect(listed.map((a) => a.name)).toEqual([name('env'), name('file'), name('stdin')]);
    for (const a of listed) {
      expect(a).not.toHaveProperty('tokenSealed');
      expect(a).toMatchObject({ keyId: key.id, keyIsFleetKey: true });
    }
    // Without FLEET_KEY the list still works, and says nothing of which key is current.
    const noKey = await cli(['accounts', 'list', '--json'], '', { FLEET_KEY: '' });
    expect(JSON.parse(noKey.stdout)[0]).toMatchObject({ keyId: key.id, keyIsFleetKey: null });
    // With another key, the tokens it does not open are marked.
    const other = await cli(['accounts', 'list'], '', { FLEET_KEY: randomBytes(32).toString('hex') });
    expect(other.stdout).toContain(`${key.id} (not FLEET_KEY)`);

    // Text written into the row by hand reaches the terminal as fleet status shows it: no escape, no token.
    await fleet.db.execute(sql`update accounts set
      last_error = ${'boom \x1b[2J\x1b]0;pwned\x07 Authorization: Bearer sk_live_SECRET123 \u009b31m'},
      api_url = ${'http://h/\x1b]8;;http://evil/\x07click\x1b]8;;\x07'}
      where name = ${name('file')}`);
    for (const args of [['accounts', 'list'], ['accounts', 'list', '--json']]) {
      const shown = await cli(args);
      expect(shown.code).toBe(0);
      expect(shown.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]|\\u001b|\\u009b/);
      expect(shown.stdout).not.toContain('sk_live_SECRET123');
      expect(shown.stdout).toContain('Bearer [redacted]');
    }
  });

  it('never takes the token from an argument, and never echoes one given there', async () => {
    const positional = await cli(['accounts', 'add', name('arg'), TOKEN, '--api-url', 'https://x.example.com']);
    const option = await cli(['accounts', 'add', name('arg'), '--api-url', 'https://x.example.com', '--token', TOKEN]);
    // Commander would echo an unknown `--option=value` whole: the value is cut from its message.
    const equals = await cli(['accounts', 'add', name('arg'), '--api-url', 'https://x.example.com', `--token=${TOKEN}`]);
    const flagEquals = await cli(['accounts', 'add', name('arg'), '--api-url', 'https://x.example.com', `--token-stdin=${TOKEN}`]);
    expect(equals.stderr).toContain("unknown option '--token=…'");
    for (const r of [positional, option, equals, flagEquals]) {
      expect(r.code).toBe(1);
      expect(r.stderr).not.toContain('SeCrEt');
    }
    expect(option.stderr).toContain("unknown option '--token'");
    expect(await row(name('arg'))).toBeUndefined();
    const help = await cli(['accounts', 'add', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('The token is never an argument');
    expect(help.stdout).toContain('FLEET_KEY');
    expect(help.stdout).toMatch(/\nExit codes:\n {2}0 /);
  });

  it('refuses bad input with exit 2 and one line each, adding nothing', async () => {
    execFileSync('mkfifo', [join(cwd, 'silent-pipe')]);
    const cases: Array<[string[], string, RegExp]> = [
      [['accounts', 'add', 'Acme', '--api-url', 'https://x.example.com', '--token-stdin'], TOKEN, /account name "Acme" must be/],
      [['accounts', 'add', '1acme', '--api-url', 'https://x.example.com', '--token-stdin'], TOKEN, /account name/],
      [['accounts', 'add', 'ac-me', '--api-url', 'https://x.example.com', '--token-stdin'], TOKEN, /account name/],
      [['accounts', 'add', 'a'.repeat(41), '--api-url', 'https://x.example.com', '--token-stdin'], TOKEN, /at most 40/],
      [['accounts', 'add', name('bad'), '--api-url', 'ftp://x.example.com', '--token-stdin'], TOKEN, /--api-url="ftp:\/\/x.example.com" must be an http\(s\) URL/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://u:hunter2@x.example.com:99999', '--token-stdin'], TOKEN, /--api-url="https:\/\/u:\*\*\*@/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin', '--daily-limit', '0'], TOKEN, /--daily-limit "0" must be a whole number above 0/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin', '--minute-limit', '1.5'], TOKEN, /--minute-limit/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin', '--reserve', '1'], TOKEN, /--reserve "1" must be between 0 and 0.9/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin', '--schema', 'pg_x'], TOKEN, /--schema "pg_x"/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin', '--schema', FLEET], TOKEN, /the fleet's own/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com'], '', /the token is needed, from one of --token-stdin/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin', '--token-env', 'HOME'], TOKEN, /only one of/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin'], '\n', /the token from standard input is empty/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-stdin'], `${TOKEN} second`, /holds a space/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-file', 'missing'], '', /--token-file missing cannot be read \(ENOENT\)/],
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-env', 'NOT_SET_HERE'], '', /the environment has no NOT_SET_HERE/],
      // A named pipe nothing writes to: 10 s, then one line (it waited in open(2) for ever).
      [['accounts', 'add', name('bad'), '--api-url', 'https://x.example.com', '--token-file', 'silent-pipe'], '', /--token-file silent-pipe cannot be read \(ETIMEDOUT: a pipe nothing wrote to within 10 s\)/],
      [['accounts', 'pause', 'No'], '', /account name "No"/],
    ];
    const results = [];
    for (const [args, stdin, message] of cases) results.push({ args: args.join(' '), result: await cli(args, stdin), message });
    for (const { args, result, message } of results) {
      expect({ args, code: result.code }).toEqual({ args, code: 2 });
      expect(result.stderr).toMatch(message);
      expect(result.stderr.trim().split('\n')).toHaveLength(1);
      expect(result.stderr).not.toContain('SeCrEt');
      expect(result.stderr).not.toContain('hunter2');
    }
    expect(await row(name('bad'))).toBeUndefined();
  });

  it('refuses without DATABASE_URL or FLEET_KEY in one line, exit 2; a bad FLEET_KEY is named, never shown', async () => {
    for (const args of [['accounts', 'list'], ['accounts', 'pause', name('stdin')], ['accounts', 'remove', name('stdin')]]) {
      const r = await cli(args, '', { DATABASE_URL: '' });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/^ticket-mirror: accounts \w+ needs DATABASE_URL \(PostgreSQL\)[^\n]*\n$/);
    }
    const noKey = await cli(['accounts', 'add', name('nokey'), '--api-url', 'https://x.example.com', '--token-stdin'], TOKEN, { FLEET_KEY: '' });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/^ticket-mirror: accounts add needs FLEET_KEY, which is not set: .*openssl rand -base64 32`\n$/);
    const seal = await cli(['accounts', 'seal', name('nokey')], TOKEN, { FLEET_KEY: '' });
    expect(seal.code).toBe(2);
    const badKey = await cli(['accounts', 'list'], '', { FLEET_KEY: 'a passphrase of mine' });
    expect(badKey.code).toBe(2);
    expect(badKey.stderr).toContain('openssl rand -base64 32');
    expect(badKey.stderr).not.toContain('passphrase');
  });

  it('refuses a taken name or schema with exit 1, changing nothing', async () => {
    const before = await row(name('stdin'));
    const again = await cli(['accounts', 'add', name('stdin'), '--api-url', 'https://elsewhere.example.com', '--token-stdin'], 'other-token');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`account ${name('stdin')} exists already`);
    const schema = await cli(['accounts', 'add', name('dup'), '--api-url', 'https://x.example.com', '--token-stdin', '--schema', `tm_${name('stdin')}`], TOKEN);
    expect(schema.code).toBe(1);
    expect(schema.stderr).toContain(`schema tm_${name('stdin')} holds the mirror of account ${name('stdin')} already`);
    expect(await row(name('stdin'))).toEqual(before);
    expect(await row(name('dup'))).toBeUndefined();
  });

  it('pauses and resumes (each twice), and names an unknown account with exit 1', async () => {
    const n = name('stdin');
    expect((await cli(['accounts', 'pause', n])).stdout).toContain(`paused account ${n}`);
    const pausedAt = (await row(n))!.pausedAt;
    expect(pausedAt).not.toBeNull();
    expect((await cli(['accounts', 'pause', n])).stdout).toContain(`is paused already (since ${pausedAt})`);
    expect((await row(n))!.pausedAt).toBe(pausedAt);
    expect((await cli(['accounts', 'resume', n])).stdout).toContain(`resumed account ${n}`);
    expect((await row(n))!.pausedAt).toBeNull();
    expect((await cli(['accounts', 'resume', n])).stdout).toContain('is not paused');
    for (const verb of ['pause', 'resume', 'remove']) {
      const r = await cli(['accounts', verb, name('ghost')]);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain(`no account ${name('ghost')} in this fleet`);
    }
  });

  it("announces an added or resumed account on its fleet's channel (the hook workers listen on), never on another fleet's", async () => {
    const listener = new pg.Client({ connectionString: postgresUrl! });
    await listener.connect();
    const heard: Array<[string, string]> = [];
    listener.on('notification', (m) => void heard.push([m.channel, m.payload ?? '']));
    try {
      // This fleet's channel is named as its schema; the default fleet's (ticket_mirror_fleet) is another fleet's.
      await listener.query(`listen ${FLEET}; listen ticket_mirror_fleet`);
      await cli(['accounts', 'add', name('hook'), '--api-url', 'https://x.example.com', '--token-stdin', '--paused'], TOKEN);
      await cli(['accounts', 'resume', name('hook')]);
      await cli(['accounts', 'pause', name('hook')]);
      // The CLI has exited, so its commits are done; one round trip on the listener delivers what is queued for it.
      await listener.query('select 1');
      expect(heard).toEqual([[FLEET, name('hook')]]);
    } finally {
      await listener.end();
    }
  });

  it('removes an account, keeping or dropping its schema; never drops public, nor while a pass holds the schema', async () => {
    const keep = name('file');
    const drop = name('hook');
    for (const schema of [`tm_${keep}`, `tm_${drop}`]) {
      const database = await openDatabase({ databaseUrl: postgresUrl!, schema, poolSize: 1 });
      await database.migrate();
      await database.close();
    }
    const kept = await cli(['accounts', 'remove', keep]);
    expect(kept.stdout).toContain(`its data stays in schema tm_${keep}`);
    expect(await schemaExists(`tm_${keep}`)).toBe(true);

    // A pass under way holds the schema's sync lock (as `run` and a fleet worker do): --drop-data waits for nothing, refuses.
    const holder = new pg.Client({ connectionString: postgresUrl! });
    await holder.connect();
    try {
      await holder.query('select pg_advisory_lock(hashtext($1))', [`ticket-mirror:sync:tm_${drop}`]);
      const busy = await cli(['accounts', 'remove', drop, '--drop-data']);
      expect(busy.code).toBe(1);
      expect(busy.stderr).toContain('is being synced right now');
      expect(await row(drop)).toBeDefined();
      expect(await schemaExists(`tm_${drop}`)).toBe(true);
    } finally {
      await holder.end();
    }
    const dropped = await cli(['accounts', 'remove', drop, '--drop-data']);
    expect(dropped).toMatchObject({ code: 0 });
    expect(dropped.stdout).toContain(`dropped schema tm_${drop}`);
    expect(await row(drop)).toBeUndefined();
    expect(await schemaExists(`tm_${drop}`)).toBe(false);

    // An adopted single-account mirror in public: its account can go, its data cannot go with it.
    expect((await cli(['accounts', 'add', name('pub'), '--api-url', 'https://x.example.com', '--token-stdin', '--schema', 'public'], TOKEN)).code).toBe(0);
    const pub = await cli(['accounts', 'remove', name('pub'), '--drop-data']);
    expect(pub.code).toBe(2);
    expect(pub.stderr).toContain('which --drop-data does not drop');
    expect(await row(name('pub'))).toBeDefined();
    expect((await cli(['accounts', 'remove', name('pub')])).code).toBe(0);
    expect(await schemaExists('public')).toBe(true);
  });

  it('seals a token for an SQL insert that a worker can open, for that account only', async () => {
    const n = name('sql');
    const sealed = await cli(['accounts', 'seal', n], `${TOKEN}\n`);
    expect(sealed.code).toBe(0);
    expect(sealed.stdout).toMatch(/^\\x01[0-9a-f]+\n$/);
    expect(sealed.stdout).not.toContain(Buffer.from(TOKEN).toString('hex'));
    const blob = sealed.stdout.trim();
    await fleet.db.execute(
      // As the README shows it: a plain INSERT, defaults for the rest.
      sql.raw(
        `insert into "${FLEET}".accounts (name, schema_name, api_url, token_sealed) values ('${n}', 'tm_${n}', 'https://sql.example.com', '${blob}'::bytea)`,
      ),
    );
    expect(openToken(key, n, (await row(n))!.tokenSealed)).toBe(TOKEN);
    // The same blob in another account's row does not open there.
    await fleet.db.execute(
      sql.raw(
        `insert into "${FLEET}".accounts (name, schema_name, api_url, token_sealed) values ('${name('copy')}', 'tm_${name('copy')}', 'https://sql.example.com', '${blob}'::bytea)`,
      ),
    );
    const copied = (await row(name('copy')))!.tokenSealed;
    expect(() => openToken(key, name('copy'), copied)).toThrow(/does not open/);
  });

  it('rekey seals every token again with the new FLEET_KEY, opening them with the old one', async () => {
    const NEW = randomBytes(32).toString('hex');
    const newKey = parseFleetKey(NEW);
    // The copied blob of the last test opens with no key under its own name: rekey stops, changing nothing.
    const stuck = await cli(['accounts', 'rekey', '--old-key-env', 'OLD_FLEET_KEY'], '', { FLEET_KEY: NEW, OLD_FLEET_KEY: KEY });
    expect(stuck.code).toBe(1);
    expect(stuck.stderr).toContain(`account ${name('copy')}`);
    expect(stuck.stderr).toContain('nothing was changed');
    expect(openToken(key, name('stdin'), (await row(name('stdin')))!.tokenSealed)).toBe(TOKEN);

    expect((await cli(['accounts', 'remove', name('copy')])).code).toBe(0);
    const done = await cli(['accounts', 'rekey', '--old-key-env', 'OLD_FLEET_KEY'], '', { FLEET_KEY: NEW, OLD_FLEET_KEY: KEY });
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(`from key ${key.id} to key ${newKey.id}`);
    for (const n of [name('stdin'), name('env'), name('sql')]) expect(openToken(newKey, n, (await row(n))!.tokenSealed)).toBe(TOKEN);
    // Again: nothing left to do.
    expect((await cli(['accounts', 'rekey', '--old-key-env', 'OLD_FLEET_KEY'], '', { FLEET_KEY: NEW, OLD_FLEET_KEY: KEY })).stdout).toContain('sealed 0 token(s)');
    const bad = await cli(['accounts', 'rekey', '--old-key-env', 'OLD_FLEET_KEY'], '', { FLEET_KEY: NEW, OLD_FLEET_KEY: 'nope' });
    expect(bad.code).toBe(2);
  });

  // statSync said 0 bytes, then readFileSync waited in open(2) for a writer: a pipe no one wrote to held it for ever.
  it('reads --token-file from a named pipe (a secret agent, a process substitution)', async () => {
    execFileSync('mkfifo', [join(cwd, 'token-pipe')]);
    const writer = spawn('sh', ['-c', `printf '%s\\n' "$T" > token-pipe`], { cwd, env: { ...process.env, T: TOKEN } });
    const written = new Promise((resolve) => writer.once('exit', resolve));
    expect(await cli(['accounts', 'add', name('pipe'), '--api-url', 'https://pipe.example.com', '--token-file', 'token-pipe'])).toMatchObject({ code: 0 });
    expect(await written).toBe(0);
    expect(openToken(key, name('pipe'), (await row(name('pipe')))!.tokenSealed)).toBe(TOKEN);
  });

  it('wrote no token text in any output of any command above', () => {
    expect(outputs.length).toBeGreaterThan(10);
    for (const { stdout, stderr } of outputs) {
      expect(stdout).not.toContain('SeCrEt');
      expect(stderr).not.toContain('SeCrEt');
    }
  });

  async function schemaExists(schema: string): Promise<boolean> {
    const client = new pg.Client({ connectionString: postgresUrl! });
    await client.connect();
    try {
      return (await client.query('select 1 from pg_namespace where nspname = $1', [schema])).rowCount === 1;
    } finally {
      await client.end();
    }
  }
});

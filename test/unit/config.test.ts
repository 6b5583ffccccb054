import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { configWarnings, loadConfig, maskSecrets, parseApiUrl, redactedConfig, requireApi } from '../../src/config/loadConfig.ts';
import { createEngine } from '../../src/daemon/compose.ts';
import type { Database } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { ConfigError } from '../../src/errors.ts';

const emptyDir = () => mkdtempSync(join(tmpdir(), 'tm-config-'));

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies the contract defaults', () => {
    const cwd = emptyDir();
    const config = loadConfig({}, { cwd });
    expect(config).toEqual({
      apiUrl: undefined,
      apiToken: undefined,
      databaseUrl: undefined,
      pgliteDir: join(cwd, 'data/pglite'),
      pglitePort: 5433,
      dbSchema: 'public',
      fleetKey: undefined,
      fleetSchema: 'ticket_mirror_fleet',
      fleetMetricsAccounts: 200,
      dailyLimit: 1440,
      minuteLimit: 60,
      reserve: 0.1,
      maxResponseBytes: 64 * 1024 * 1024,
      httpPort: 9464,
      httpHost: '127.0.0.1',
      logLevel: 'info',
      report: { timeZone: 'UTC', businessHours: null, businessWindows: null, slaFirstResponseSeconds: null, slaResolutionSeconds: null },
      notes: [],
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  // `API_RESERVE=` in .env (as .env.example writes TICKETS_API_URL=), or `API_RESERVE: ${API_RESERVE}` in a compose file
  // with the variable unset, gives an empty value: it read as 0 — no reserve left to the token's other clients, the
  // status server or the SQL socket silently off — where an empty text variable keeps its default.
  it('takes an empty or blank number variable as unset: its default, as for every other variable', () => {
    const cwd = emptyDir();
    const names = ['PGLITE_PORT', 'HTTP_PORT', 'API_RESERVE', 'API_DAILY_LIMIT', 'API_MINUTE_LIMIT', 'API_MAX_RESPONSE_BYTES', 'FLEET_METRICS_ACCOUNTS'];
    const defaults = loadConfig({}, { cwd });
    for (const blank of ['', ' ']) {
      expect(loadConfig(Object.fromEntries(names.map((name) => [name, blank])), { cwd })).toEqual(defaults);
    }
    writeFileSync(join(cwd, '.env'), names.map((name) => `${name}=`).join('\n'));
    expect(loadConfig({}, { cwd })).toEqual(defaults);
  });

  it('reads every variable and strips a trailing slash from the URL', () => {
    const config = loadConfig(
      {
        TICKETS_API_URL: 'https://help.example.com/',
        TICKETS_API_TOKEN: ' secret ',
        DATABASE_URL: 'postgres://u:p@db:5432/mirror',
        PGLITE_DIR: '/var/lib/tm',
        PGLITE_PORT: '0',
        DB_SCHEMA: 'support',
        API_DAILY_LIMIT: '1000',
        API_MINUTE_LIMIT: '30',
        API_RESERVE: '0.25',
        API_MAX_RESPONSE_BYTES: '1048576',
        HTTP_PORT: '0',
        HTTP_HOST: '0.0.0.0',
        LOG_LEVEL: 'debug',
      },
      { cwd: emptyDir() },
    );
    expect(config).toMatchObject({
      apiUrl: 'https://help.example.com',
      apiToken: 'secret',
      databaseUrl: 'postgres://u:p@db:5432/mirror',
      pgliteDir: '/var/lib/tm',
      pglitePort: 0,
      dbSchema: 'support',
      dailyLimit: 1000,
      minuteLimit: 30,
      reserve: 0.25,
      maxResponseBytes: 1048576,
      httpPort: 0,
      httpHost: '0.0.0.0',
      logLevel: 'debug',
    });
  });

  it('refuses a DATABASE_URL node-postgres cannot read, by name, its password hidden; takes the forms it reads', () => {
    for (const url of ['postgres://u:hunter2@[zz/x', 'postgres://u@host:99999/db', 'postgresql://u:hunter2@host:port/db']) {
      const problems = problemsOf(() => loadConfig({ DATABASE_URL: url }, { cwd: emptyDir() }));
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^DATABASE_URL=".*" is not a URL \(check the host, the port and any \[ \] or % in it\)$/);
      expect(problems[0]).not.toContain('hunter2');
    }
    for (const url of ['postgres://u:pw@/db?host=/var/run/postgresql', 'postgres:///db?host=/tmp', 'postgres://u:p w@host/db', 'postgres://[::1]:5432/x']) {
      expect(loadConfig({ DATABASE_URL: url }, { cwd: emptyDir() }).databaseUrl).toBe(url);
    }
  });

  it('reads numbers written in decimals only, and shows at most 200 characters of a bad value', () => {
    for (const [value, problem] of [
      ['0x10', 'HTTP_PORT="0x10" must be a port number'],
      ['1e3', 'HTTP_PORT="1e3" must be a port number'],
      ['Infinity', 'HTTP_PORT="Infinity" must be a port number'],
    ]) {
      expect(problemsOf(() => loadConfig({ HTTP_PORT: value! }, { cwd: emptyDir() }))).toEqual([problem]);
    }
    expect(loadConfig({ HTTP_PORT: ' 9464 ', API_RESERVE: '.25' }, { cwd: emptyDir() })).toMatchObject({ httpPort: 9464, reserve: 0.25 });
    const [long] = problemsOf(() => loadConfig({ LOG_LEVEL: 'x'.repeat(1_000_000) }, { cwd: emptyDir() }));
    expect(long!.length).toBeLessThan(400);
    expect(long).toMatch(/^LOG_LEVEL="x{199}…" /);
  });

  it('reports every bad variable at once, by name', () => {
    const problems = problemsOf(() =>
      loadConfig(
        {
          TICKETS_API_URL: 'ftp://nope',
          DATABASE_URL: 'mysql://x',
          PGLITE_PORT: '70000',
          DB_SCHEMA: 'Drop Table',
          API_DAILY_LIMIT: 'lots',
          API_MINUTE_LIMIT: '0',
          API_RESERVE: '1.5',
          API_MAX_RESPONSE_BYTES: '64MB',
          HTTP_PORT: '-1',
          LOG_LEVEL: 'chatty',
        },
        { cwd: emptyDir() },
      ),
    );
    const named = problems.map((p) => p.split('=')[0]).sort();
    expect(named).toEqual(
      [
        'API_DAILY_LIMIT',
        'API_MAX_RESPONSE_BYTES',
        'API_MINUTE_LIMIT',
        'API_RESERVE',
        'DATABASE_URL',
        'DB_SCHEMA',
        'HTTP_PORT',
        'LOG_LEVEL',
        'PGLITE_PORT',
        'TICKETS_API_URL',
      ].sort(),
    );
  });

  it('DB_SCHEMA may be a reserved word, but not a name PostgreSQL keeps (pg_…): named here, not by a failed migration', () => {
    const cwd = emptyDir();
    expect(loadConfig({ DB_SCHEMA: 'select' }, { cwd }).dbSchema).toBe('select');
    expect(problemsOf(() => loadConfig({ DB_SCHEMA: 'pg_mirror' }, { cwd }))).toEqual([expect.stringMatching(/^DB_SCHEMA=.*pg_/)]);
  });

  it('refuses information_schema as DB_SCHEMA, and one port for both of the embedded database\'s servers', () => {
    const cwd = emptyDir();
    expect(problemsOf(() => loadConfig({ DB_SCHEMA: 'information_schema' }, { cwd }))).toEqual([expect.stringMatching(/^DB_SCHEMA=.*information_schema/)]);
    expect(problemsOf(() => loadConfig({ HTTP_PORT: '5433' }, { cwd }))).toEqual([
      'HTTP_PORT=5433 and PGLITE_PORT=5433 are the same port: the daemon serves both (set one to another port, or 0 to turn it off)',
    ]);
    expect(loadConfig({ HTTP_PORT: '5433', DATABASE_URL: 'postgres://localhost/x' }, { cwd }).httpPort).toBe(5433);
    expect(loadConfig({ HTTP_PORT: '0', PGLITE_PORT: '0' }, { cwd }).httpPort).toBe(0);
  });

  it('reads .env, with the environment taking precedence', () => {
    const cwd = emptyDir();
    writeFileSync(join(cwd, '.env'), 'TICKETS_API_URL=http://from-dotenv\nAPI_RESERVE=0.3\nLOG_LEVEL=warn\n');
    const config = loadConfig({ LOG_LEVEL: 'error' }, { cwd });
    expect(config.apiUrl).toBe('http://from-dotenv');
    expect(config.reserve).toBe(0.3);
    expect(config.logLevel).toBe('error');
  });

  it('takes the token from the environment, given either way, over a token in .env given the other way', () => {
    const cwd = emptyDir();
    writeFileSync(join(cwd, 'token'), 'from-file\n');
    writeFileSync(join(cwd, '.env'), 'TICKETS_API_TOKEN=from-dotenv\n');
    expect(loadConfig({ TICKETS_API_TOKEN_FILE: 'token' }, { cwd }).apiToken).toBe('from-file');
    writeFileSync(join(cwd, '.env'), 'TICKETS_API_TOKEN_FILE=token\n');
    expect(loadConfig({ TICKETS_API_TOKEN: 'from-env' }, { cwd }).apiToken).toBe('from-env');
    expect(loadConfig({}, { cwd }).apiToken).toBe('from-file');
  });

  it('reads the token from TICKETS_API_TOKEN_FILE and rejects ambiguity or an unreadable file', () => {
    const cwd = emptyDir();
    writeFileSync(join(cwd, 'token'), 'from-file\n');
    expect(loadConfig({ TICKETS_API_TOKEN_FILE: 'token' }, { cwd }).apiToken).toBe('from-file');
    expect(problemsOf(() => loadConfig({ TICKETS_API_TOKEN_FILE: 'token', TICKETS_API_TOKEN: 't' }, { cwd }))[0]).toMatch(
      /^TICKETS_API_TOKEN_FILE is set together with TICKETS_API_TOKEN/,
    );
    expect(problemsOf(() => loadConfig({ TICKETS_API_TOKEN_FILE: 'missing' }, { cwd }))[0]).toMatch(
      /^TICKETS_API_TOKEN_FILE="missing" cannot be read \(ENOENT\)/,
    );
  });

  it('takes a token file with CRLF, a byte order mark or surrounding blanks as the token it holds', () => {
    const cwd = emptyDir();
    for (const [name, text] of [['crlf', 'tok-123\r\n'], ['bom', '\uFEFFtok-123\n'], ['blanks', '  tok-123 \n\n']]) {
      writeFileSync(join(cwd, name!), text!);
      expect(loadConfig({ TICKETS_API_TOKEN_FILE: name }, { cwd }).apiToken).toBe('tok-123');
    }
  });

  // It was read whole, whatever its size: a file named by mistake (a log, a disk image) became a token of megabytes, and
  // /dev/zero or a pipe nobody writes to held the start for ever.
  it('refuses a token file larger than 64 KiB without reading it whole or showing it', () => {
    const cwd = emptyDir();
    writeFileSync(join(cwd, 'big'), `tok-secret${'a'.repeat(70 * 1024)}\n`);
    const problems = problemsOf(() => loadConfig({ TICKETS_API_TOKEN_FILE: 'big' }, { cwd }));
    expect(problems).toEqual(['TICKETS_API_TOKEN_FILE="big" holds more than 65536 bytes: not a token file']);
  });

  // Opened as a plain file, a named pipe no one wrote to held the start for ever, silent (open(2) waits for a writer).
  it('reads a named pipe once its writer has written and closed it, and gives up on one nothing writes to', async () => {
    const cwd = emptyDir();
    execFileSync('mkfifo', [join(cwd, 'silent')]);
    const problems = problemsOf(() => loadConfig({ TICKETS_API_TOKEN_FILE: 'silent' }, { cwd, pipeWaitMs: 200 }));
    expect(problems).toEqual(['TICKETS_API_TOKEN_FILE="silent" cannot be read (ETIMEDOUT: a pipe nothing wrote to within 0.2 s)']);
    // Asked again in this process (a command loads its configuration more than once), it is not waited for again.
    const again = problemsOf(() => loadConfig({ TICKETS_API_TOKEN_FILE: 'silent' }, { cwd, pipeWaitMs: 30_000 }));
    expect(again).toEqual(problems);
    // A secret agent's writer blocks in open(2) until the mirror opens the pipe to read it.
    execFileSync('mkfifo', [join(cwd, 'fifo')]);
    const writer = spawn('sh', ['-c', 'printf "tok-from-pipe\\n" > fifo'], { cwd });
    const done = new Promise((resolve) => writer.once('exit', resolve));
    expect(loadConfig({ TICKETS_API_TOKEN_FILE: 'fifo' }, { cwd, pipeWaitMs: 30_000 }).apiToken).toBe('tok-from-pipe');
    expect(await done).toBe(0);
    // Read again, with its writer gone: the same token (a process substitution, <(pass show api), is written once; the
    // second of a command's reads waited 10 s for it, then failed the command).
    expect(loadConfig({ TICKETS_API_TOKEN_FILE: 'fifo' }, { cwd, pipeWaitMs: 30_000 }).apiToken).toBe('tok-from-pipe');
  });

  // A writer that keeps the pipe open after writing, or never stops writing slowly: the wait bounds it too.
  it('gives a pipe whose writer trickles bytes and never closes it no more than its wait: what came by then', async () => {
    const cwd = emptyDir();
    execFileSync('mkfifo', [join(cwd, 'fifo')]);
    const writer = spawn('sh', ['-c', 'exec > fifo; while :; do printf a; sleep 0.05; done'], { cwd });
    try {
      const token = loadConfig({ TICKETS_API_TOKEN_FILE: 'fifo' }, { cwd, pipeWaitMs: 500 }).apiToken!;
      expect(token).toMatch(/^a+$/);
      expect(token.length).toBeLessThan(100);
    } finally {
      writer.kill();
    }
  });

  // Node refuses such a header at every request (ERR_INVALID_CHAR): `sync` failed each pass on "GET /api/v1/tickets:
  // ERR_INVALID_CHAR", its requests counted against the budget, and `run` retried it forever.
  it.each([
    ['a line break', 'tok-secret\nmore'],
    ['a space', 'tok-secret more'],
    ['a character outside Latin-1', 'tok-secret\u20ac'],
    ['a character outside ASCII', 'tok-secret\u00e9'],
    ['a control character', 'tok-secret\u0007'],
  ])('refuses a token holding %s, from TICKETS_API_TOKEN or its file, without showing it', (_what, token) => {
    const cwd = emptyDir();
    writeFileSync(join(cwd, 'token'), `${token}\n`);
    const direct = problemsOf(() => loadConfig({ TICKETS_API_TOKEN: token }, { cwd }));
    expect(direct).toEqual([expect.stringMatching(/^TICKETS_API_TOKEN holds a space, a line break, a control character or a character outside ASCII/)]);
    const file = problemsOf(() => loadConfig({ TICKETS_API_TOKEN_FILE: 'token' }, { cwd }));
    expect(file).toEqual([expect.stringMatching(/^TICKETS_API_TOKEN_FILE="token" holds a space, a line break, a control character or a character outside ASCII/)]);
    expect(JSON.stringify([direct, file])).not.toContain('tok-secret');
  });

  it('requireApi names what run/sync/reply miss, in one line, with the demo hint', () => {
    expect(problemsOf(() => requireApi(loadConfig({}, { cwd: emptyDir() })))).toEqual([
      expect.stringMatching(/^TICKETS_API_URL is not set: .*npm run demo/),
    ]);
    expect(problemsOf(() => requireApi(loadConfig({ TICKETS_API_URL: 'http://x' }, { cwd: emptyDir() })))).toEqual([
      expect.stringMatching(/^TICKETS_API_TOKEN/),
    ]);
  });

  it('with requireApi, a missing URL or token is reported together with every other problem', () => {
    const cwd = emptyDir();
    expect(problemsOf(() => loadConfig({ API_DAILY_LIMIT: 'lots', HTTP_PORT: '99999' }, { cwd, requireApi: true }))).toEqual([
      expect.stringMatching(/^TICKETS_API_URL is not set: .*npm run demo/),
      expect.stringMatching(/^API_DAILY_LIMIT="lots" /),
      expect.stringMatching(/^HTTP_PORT="99999" /),
    ]);
    expect(problemsOf(() => loadConfig({ TICKETS_API_URL: 'http://x', LOG_LEVEL: 'chatty' }, { cwd, requireApi: true }))).toEqual([
      expect.stringMatching(/^TICKETS_API_TOKEN \(or TICKETS_API_TOKEN_FILE\) is not set/),
      expect.stringMatching(/^LOG_LEVEL="chatty" /),
    ]);
    // A bad URL or an unreadable token file is its own problem, not also a missing one.
    expect(problemsOf(() => loadConfig({ TICKETS_API_URL: 'ftp://x', TICKETS_API_TOKEN_FILE: 'missing' }, { cwd, requireApi: true }))).toEqual([
      expect.stringMatching(/^TICKETS_API_URL="ftp:\/\/x" must be an http\(s\) URL/),
      expect.stringMatching(/^TICKETS_API_TOKEN_FILE="missing" cannot be read/),
    ]);
    expect(loadConfig({ TICKETS_API_URL: 'http://x', TICKETS_API_TOKEN: 't' }, { cwd, requireApi: true }).apiToken).toBe('t');
  });

  it('LOG_FORMAT is json, pretty, or unset (the CLI then looks at the terminal)', () => {
    const cwd = emptyDir();
    expect(loadConfig({}, { cwd }).logFormat).toBeUndefined();
    expect(loadConfig({ LOG_FORMAT: 'json' }, { cwd }).logFormat).toBe('json');
    expect(loadConfig({ LOG_FORMAT: ' pretty ' }, { cwd }).logFormat).toBe('pretty');
    expect(problemsOf(() => loadConfig({ LOG_FORMAT: 'yaml' }, { cwd }))).toEqual(['LOG_FORMAT="yaml" must be one of json, pretty']);
  });

  it('never shows the token or a database password in the redacted form', () => {
    const config = loadConfig(
      { TICKETS_API_TOKEN: 'very-secret', DATABASE_URL: 'postgres://me:hunter2@db/x' },
      { cwd: emptyDir() },
    );
    const text = JSON.stringify(redactedConfig(config));
    expect(text).not.toContain('very-secret');
    expect(text).not.toContain('hunter2');
  });

  it.each([
    ['0', /must be at least 1024 bytes/],
    ['1.5', /must be a whole number of bytes/],
    ['1073741824', /must be at most 536870912/],
  ])('API_MAX_RESPONSE_BYTES=%s is refused by name', (value, message) => {
    const [problem] = problemsOf(() => loadConfig({ API_MAX_RESPONSE_BYTES: value }, { cwd: emptyDir() }));
    expect(problem).toMatch(/^API_MAX_RESPONSE_BYTES=/);
    expect(problem).toMatch(message);
  });

  it('checks FLEET_KEY and FLEET_SCHEMA with the other variables, never showing the key', () => {
    const cwd = emptyDir();
    const key = Buffer.alloc(32, 7).toString('base64');
    expect(loadConfig({ FLEET_KEY: ` ${key} `, FLEET_SCHEMA: 'fleet_a' }, { cwd })).toMatchObject({ fleetKey: key, fleetSchema: 'fleet_a' });
    expect(loadConfig({ FLEET_KEY: Buffer.alloc(32, 7).toString('hex') }, { cwd }).fleetKey).toHaveLength(64);
    const problems = problemsOf(() =>
      loadConfig({ FLEET_KEY: 'my fleet passphrase', FLEET_SCHEMA: 'Fleet-1', API_DAILY_LIMIT: '0' }, { cwd }),
    );
    expect(problems).toHaveLength(3);
    expect(problems.find((p) => p.startsWith('FLEET_KEY'))).toMatch(/openssl rand -base64 32/);
    expect(problems.join('\n')).not.toContain('passphrase');
    expect(problems.find((p) => p.startsWith('FLEET_SCHEMA'))).toMatch(/lower-case SQL identifier/);
    // 57 characters at most: pg-boss lives in `<FLEET_SCHEMA>_jobs`, and an identifier has 63.
    expect(problemsOf(() => loadConfig({ FLEET_SCHEMA: 'f'.repeat(58) }, { cwd }))[0]).toMatch(/^FLEET_SCHEMA=/);
    expect(problemsOf(() => loadConfig({ FLEET_SCHEMA: 'pg_fleet' }, { cwd }))[0]).toMatch(/pg_/);
    expect(JSON.stringify(redactedConfig(loadConfig({ FLEET_KEY: key }, { cwd })))).not.toContain(key);
  });

  it('never echoes a password from a URL in a configuration error', () => {
    const problems = problemsOf(() =>
      loadConfig(
        { DATABASE_URL: 'mysql://mirror:hunter2@db.example.com/x', TICKETS_API_URL: 'ftp://agent:s3cr%40t@help.example.com/' },
        { cwd: emptyDir() },
      ),
    );
    expect(problems).toHaveLength(2);
    const text = problems.join('\n');
    expect(text).not.toContain('hunter2');
    expect(text).not.toContain('s3cr');
    expect(text).toContain('DATABASE_URL="mysql://mirror:***@db.example.com/x"');
    expect(text).toContain('TICKETS_API_URL="ftp://agent:***@help.example.com/"');
  });
});

describe('maskSecrets', () => {
  it.each([
    ['postgres://me:hunter2@db:5432/x', 'postgres://me:***@db:5432/x'],
    ['postgres://me:p@ss/w@rd@db/x', 'postgres://me:***@db/x'],
    ['postgresql://db/x?user=me&password=hunter2&sslmode=require', 'postgresql://db/x?user=me&password=***&sslmode=require'],
    ['me:hunter2@db/x', 'me:***@db/x'],
    ['postgres://me@db:5432/x', 'postgres://me@db:5432/x'],
    ['postgres://db:5432/x', 'postgres://db:5432/x'],
    ['not a url', 'not a url'],
  ])('%s → %s', (value, masked) => {
    expect(maskSecrets(value)).toBe(masked);
  });
});

describe('configWarnings: the token in clear text', () => {
  it.each([
    ['http://helpdesk.example.com', true],
    ['http://10.0.0.7:8080/helpdesk', true],
    ['http://127.0.0.1.example.com', true],
    ['https://helpdesk.example.com', false],
    ['http://127.0.0.1:4010', false],
    ['http://127.8.9.10', false],
    ['http://localhost:4010', false],
    ['http://api.localhost', false],
    ['http://[::1]:4010', false],
    [undefined, false],
  ])('TICKETS_API_URL=%s warns: %s', (apiUrl, warns) => {
    const warnings = configWarnings({ apiUrl });
    if (!warns) return expect(warnings).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(/^TICKETS_API_URL=http:\/\/.* clear text/)]);
  });

  it('is logged as a warning when the engine that will send the token is composed', () => {
    let log = '';
    const logger = createLogger('info', { write: (line: string) => void (log += line) });
    const config = loadConfig({ TICKETS_API_URL: 'http://helpdesk.example.com', TICKETS_API_TOKEN: 'secret-token' }, { cwd: emptyDir(), dotenv: false });
    // Composing touches no database: the engine opens nothing until it runs.
    createEngine(config, { db: null } as unknown as Database, logger, new ManualClock());
    const lines = log.trim().split('\n').map((line) => JSON.parse(line) as { level: number; msg: string; variable?: string });
    expect(lines).toContainEqual(expect.objectContaining({ level: 40, variable: 'TICKETS_API_URL', msg: expect.stringContaining('clear text') }));
    expect(log).not.toContain('secret-token');
  });
});

describe('TICKETS_API_URL given with /api/v1', () => {
  const load = (url: string) => loadConfig({ TICKETS_API_URL: url, TICKETS_API_TOKEN: 'secret-token' }, { cwd: emptyDir(), dotenv: false });

  it.each([
    ['https://help.example.com/api/v1', 'https://help.example.com'],
    ['https://help.example.com/api/v1/', 'https://help.example.com'],
    ['https://help.example.com/api/v1//', 'https://help.example.com'],
    ['https://help.example.com/API/V1', 'https://help.example.com'],
    ['http://127.0.0.1:4010/helpdesk/api/v1/', 'http://127.0.0.1:4010/helpdesk'],
  ])('%s is accepted as %s, with a note', (given, base) => {
    const config = load(given);
    expect(config.apiUrl).toBe(base);
    expect(config.notes).toEqual([`TICKETS_API_URL ends in /api/v1, which ticket-mirror adds to every request itself: using ${base}`]);
  });

  it.each([
    'https://help.example.com',
    'https://help.example.com/helpdesk/',
    'https://help.example.com/api/v2',
    'https://help.example.com/api/v1/tickets',
    'https://help.example.com/my-api/v10',
    'https://api/v1',
  ])('%s is left as it is, without a note', (given) => {
    const config = load(given);
    expect(config.apiUrl).toBe(given.replace(/\/+$/, ''));
    expect(config.notes).toEqual([]);
  });

  it('refuses a URL holding a user name or password, never showing the password: got would send them as Basic auth in place of the token', () => {
    for (const url of ['https://user:pa55word@help.example.com/api/v1', 'https://user@help.example.com', 'https://:pa55word@help.example.com']) {
      let error: unknown;
      try {
        load(url);
      } catch (e) {
        error = e;
      }
      expect(error, url).toBeInstanceOf(ConfigError);
      const message = (error as ConfigError).message;
      expect(message).toContain('TICKETS_API_URL=');
      expect(message).toContain('must not hold a user name or password');
      expect(message).not.toContain('pa55word');
    }
    expect(() => parseApiUrl('https://user:pa55word@help.example.com', '--api-url')).toThrow(/--api-url=.*must not hold a user name or password/);
    // One that does not parse is refused as such, once, its password masked too.
    expect(() => parseApiUrl('https://user:pa55word@help.example.com:99999', '--api-url')).toThrow(ConfigError);
    expect(() => parseApiUrl('https://user:pa55word@help.example.com:99999', '--api-url')).toThrow(/^--api-url="https:\/\/user:\*\*\*@help.example.com:99999" must be an http\(s\) URL/);
  });

  it.each([
    'https://help.example.com/?key=s3cret',
    'https://help.example.com/api/v1?x=1',
    'https://help.example.com/helpdesk?',
    'https://help.example.com/#s3cret',
    'https://help.example.com/helpdesk#',
  ])('refuses %s: every request appends its path to the base, which would land in the query or the fragment', (given) => {
    let error: unknown;
    try {
      load(given);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toMatch(/^TICKETS_API_URL="https:\/\/help\.example\.com\/[a-z0-9/]*[?#]…" must not hold a query \(\?…\) or a fragment \(#…\)/);
    // What followed the ? or the # is not shown: a key may ride in it.
    expect(message).not.toContain('s3cret');
    expect(() => parseApiUrl(given, '--api-url')).toThrow(/^--api-url="[^"]*…" must not hold a query/);
  });

  it('the note is logged, at info, where the engine that uses the URL is composed', () => {
    let log = '';
    const logger = createLogger('info', { write: (line: string) => void (log += line) });
    createEngine(load('https://help.example.com/api/v1/'), { db: null } as unknown as Database, logger, new ManualClock());
    const lines = log.trim().split('\n').map((line) => JSON.parse(line) as { level: number; msg: string; variable?: string });
    expect(lines).toContainEqual({
      ...lines[0],
      level: 30,
      variable: 'TICKETS_API_URL',
      msg: 'TICKETS_API_URL ends in /api/v1, which ticket-mirror adds to every request itself: using https://help.example.com',
    });
  });
});

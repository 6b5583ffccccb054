import { describe, expect, it } from 'vitest';
import { cliOutput } from '../../src/cli/context.ts';
import { chooseLogFormat, createCliLogger, scrubSecrets } from '../../src/logger.ts';
import { rememberSecret } from '../../src/secrets.ts';

/** A stand-in for stderr: a terminal or not, recording what is written. */
function fakeStream(isTTY: boolean, colors = false) {
  const chunks: string[] = [];
  return {
    chunks,
    text: () => chunks.join(''),
    isTTY,
    columns: 200,
    hasColors: () => colors,
    write: (chunk: string) => void chunks.push(chunk),
  };
}

const PRETTY_LINE = /^\[\d\d:\d\d:\d\d\] INFO: sync pass {2}requests=8 polls=open,self details=5\n$/;

describe('log format', () => {
  it.each([
    [undefined, true, 'pretty'],
    [undefined, false, 'json'],
    ['json', true, 'json'],
    ['pretty', false, 'pretty'],
  ] as const)('LOG_FORMAT=%s, terminal %s: %s', (configured, isTTY, format) => {
    expect(chooseLogFormat(configured, { isTTY })).toBe(format);
  });

  it('on a terminal, the CLI writes readable lines and keeps a progress line', () => {
    const stderr = fakeStream(true);
    const { logger, terminal } = cliOutput({ logLevel: 'info', logFormat: undefined }, stderr);
    logger.info({ requests: 8, polls: ['open', 'self'], details: 5 }, 'sync pass');
    expect(stderr.text()).toMatch(PRETTY_LINE);
    expect(terminal).toBeDefined();
  });

  it('elsewhere, the CLI writes JSON lines and no progress line', () => {
    const stderr = fakeStream(false);
    const { logger, terminal } = cliOutput({ logLevel: 'info', logFormat: undefined }, stderr);
    logger.info({ requests: 8 }, 'sync pass');
    expect(JSON.parse(stderr.text())).toMatchObject({ level: 30, msg: 'sync pass', requests: 8 });
    expect(terminal).toBeUndefined();
  });

  it('LOG_FORMAT=json on a terminal: JSON, no progress line', () => {
    const stderr = fakeStream(true);
    const { logger, terminal } = cliOutput({ logLevel: 'info', logFormat: 'json' }, stderr);
    logger.info('hello');
    expect(JSON.parse(stderr.text())).toMatchObject({ msg: 'hello' });
    expect(terminal).toBeUndefined();
  });

  it('LOG_FORMAT=pretty into a file: pretty lines, without colours or a progress line', () => {
    const stderr = fakeStream(false);
    const { logger, terminal } = cliOutput({ logLevel: 'info', logFormat: 'pretty' }, stderr);
    logger.info({ requests: 8, polls: ['open', 'self'], details: 5 }, 'sync pass');
    expect(stderr.text()).toMatch(PRETTY_LINE);
    expect(terminal).toBeUndefined();
  });

  it('colours only when the terminal wants them', () => {
    const stderr = fakeStream(true, true);
    cliOutput({ logLevel: 'info', logFormat: undefined }, stderr).logger.info('hello');
    expect(stderr.text()).toContain('\x1b[32mINFO\x1b[39m');
  });

  it('honours the level', () => {
    const stderr = fakeStream(true);
    const { logger } = cliOutput({ logLevel: 'warn', logFormat: undefined }, stderr);
    logger.info('not shown');
    logger.warn('shown');
    expect(stderr.text()).toMatch(/^\[\d\d:\d\d:\d\d\] WARN: shown\n$/);
  });
});

describe('the pretty format', () => {
  it('shows an error by its code and message, and its stack only at debug', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5999'), { code: 'ECONNREFUSED' });
    const info = fakeStream(true);
    createCliLogger('info', 'pretty', info).error({ err: error }, 'could not connect');
    expect(info.text()).toMatch(/ERROR: could not connect {2}err="ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5999"\n$/);
    const debug = fakeStream(true);
    createCliLogger('debug', 'pretty', debug).error({ err: error }, 'could not connect');
    expect(debug.text()).toMatch(/err="ECONNREFUSED: connect ECONNREFUSED 127.0.0.1:5999"\n {4}at /);
  });

  it('keeps a hostile text from moving the cursor or forging a line', () => {
    const stderr = fakeStream(true);
    createCliLogger('info', 'pretty', stderr).warn({ ticket: 'a\x1b[2Jb', subject: 'x\ny' }, 'odd\x07 ticket\n[12:00:00] INFO: forged');
    const text = stderr.text();
    expect(text).not.toContain('\x1b');
    expect(text).not.toContain('\x07');
    expect(text).toContain('odd ticket\n    [12:00:00] INFO: forged');
    expect(text).toContain('ticket=a[2Jb subject="x\\ny"');
    expect(text.split('\n').filter((l) => /^\[/.test(l))).toHaveLength(1);
  });
});

/** The pretty format is made from the redacted, scrubbed line: the same secrets stay out as in JSON. */
describe('no secret in either format', () => {
  const token = 'tm-secret-0123456789abcdef';
  const signed = 'https://files.example/f/1/a.png?expires=1&signature=ff00deadbeef';
  const password = 's3cretPassw0rd';

  it.each(['pretty', 'json'] as const)('%s', (format) => {
    const stderr = fakeStream(true);
    const logger = createCliLogger('trace', format, stderr);
    logger.info({ token, apiToken: token, headers: { authorization: `Bearer ${token}` }, url: signed }, 'by field name');
    logger.warn(`GET ${signed} with Bearer ${token} failed`);
    logger.error({ err: new Error(`download of ${signed} failed; db postgres://mirror:${password}@db:5432/x`) }, 'in an error');
    logger.info({ config: { databaseUrl: `postgres://mirror:${password}@db/x`, token } }, 'nested');
    const text = stderr.text();
    expect(text).not.toContain(token);
    expect(text).not.toContain('ff00deadbeef');
    expect(text).not.toContain('signature=ff');
    expect(text).not.toContain(password);
    expect(text).toContain('https://files.example/f/1/a.png?[redacted]');
    expect(text).toContain('[redacted]');
    expect(text.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(4);
  });
});

describe('secrets known by value', () => {
  it('are cut wherever they appear, regular-expression characters and all; values too short to be a token are not', () => {
    const token = 'tk.(secret)+42$';
    expect(scrubSecrets(`bad token ${token}!`)).toBe(`bad token ${token}!`);
    rememberSecret(token);
    rememberSecret('abc');
    expect(scrubSecrets(`bad token ${token}! again:${token}`)).toBe('bad token [redacted]! again:[redacted]');
    expect(scrubSecrets('abc abc')).toBe('abc abc');
  });
});

import { describe, expect, it } from 'vitest';
import { explainFailure, maskUrl } from '../../src/cli/explainFailure.ts';
import { AuthError, TransientError } from '../../src/errors.ts';

/** Failures the integration tests cannot provoke cheaply (a DNS miss, a wrong password), explained from their codes. */

const systemError = (code: string, extra: Record<string, unknown> = {}) => Object.assign(new Error(`${code} somewhere`), { code, syscall: 'connect', ...extra });
const postgresError = (code: string, message: string) => Object.assign(new Error(message), { code, severity: 'FATAL' });
const settings = { databaseUrl: 'postgres://mirror:hunter2@db.example:6543/mirror?sslmode=require', apiUrl: 'https://help.example.com' };

describe('explainFailure', () => {
  it('a database host that does not resolve: exit 1, the host from DATABASE_URL', () => {
    expect(explainFailure(systemError('ENOTFOUND', { hostname: 'db.example' }), settings)).toEqual({
      code: 1,
      lines: [
        'cannot connect to the database at db.example:6543: host not found (DATABASE_URL=postgres://mirror:***@db.example:6543/mirror?sslmode=require)',
        '  Check the host name in DATABASE_URL.',
      ],
    });
  });

  it('a wrong password (28P01): exit 2, the user, never the password', () => {
    const explained = explainFailure(postgresError('28P01', 'password authentication failed for user "mirror"'), settings)!;
    expect(explained.code).toBe(2);
    expect(explained.lines[0]).toBe(
      'the database at db.example:6543 refused the login of user "mirror": password authentication failed for user "mirror" (DATABASE_URL=postgres://mirror:***@db.example:6543/mirror?sslmode=require)',
    );
    expect(explained.lines.join('\n')).not.toContain('hunter2');
  });

  it('the API host that does not resolve, through the client’s error: TICKETS_API_URL', () => {
    const got = Object.assign(new Error('getaddrinfo ENOTFOUND help.example.com'), { name: 'RequestError', code: 'ENOTFOUND' });
    const error = new TransientError('GET /api/v1/tickets/open: ENOTFOUND', undefined, { cause: got });
    expect(explainFailure(error, settings)?.lines[0]).toBe(
      'cannot reach the API at help.example.com:443: host not found (TICKETS_API_URL=https://help.example.com)',
    );
  });

  it('a login page instead of JSON points at TICKETS_API_URL, a 401 at the token', () => {
    const page = explainFailure(new AuthError('the API answered /api/v1/tickets/open with an HTML page (HTTP 200), not JSON: check TICKETS_API_URL and the token', 200), settings)!;
    expect(page.code).toBe(2);
    expect(page.lines[1]).toMatch(/^ {2}TICKETS_API_URL must be the helpdesk's base address/);
    const rejected = explainFailure(new AuthError('the API rejected the token (HTTP 401): check TICKETS_API_TOKEN', 401), settings)!;
    expect(rejected.lines[1]).toMatch(/^ {2}Set a valid token in TICKETS_API_TOKEN/);
  });

  it('leaves alone what the table does not know, or a network error with no setting to name', () => {
    expect(explainFailure(new Error('something else'), settings)).toBeNull();
    expect(explainFailure(postgresError('42P01', 'relation "tickets" does not exist'), settings)).toBeNull();
    expect(explainFailure(systemError('ECONNREFUSED'), { apiUrl: settings.apiUrl })).toBeNull();
  });
});

describe('maskUrl', () => {
  it.each([
    ['postgres://u:p@ss@db/x', 'postgres://u:***@db/x'],
    ['postgres://u@db:5432/x', 'postgres://u@db:5432/x'],
    ['postgres://db/x?user=u&password=pw', 'postgres://db/x?user=u&password=***'],
    ['http://127.0.0.1:8080', 'http://127.0.0.1:8080'],
    ['https://help.example.com/', 'https://help.example.com/'],
  ])('%s', (url, masked) => {
    expect(maskUrl(url)).toBe(masked);
  });
});

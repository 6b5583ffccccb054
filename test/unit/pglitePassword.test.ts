import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqlAccess } from '../../src/cli/sqlAccess.ts';
import { loadConfig, redactedConfig } from '../../src/config/loadConfig.ts';
import { ConfigError } from '../../src/errors.ts';

/** PGLITE_PASSWORD: read like every variable, never shown; and how `status` tells where the password is. */
describe('PGLITE_PASSWORD', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'tm-pglite-password-'));

  it('is read, and masked in the redacted config', () => {
    const config = loadConfig({ PGLITE_PASSWORD: 'a good password' }, { cwd });
    expect(config.pglitePassword).toBe('a good password');
    expect(redactedConfig(config).pglitePassword).toBe('[set]');
    expect(JSON.stringify(redactedConfig(config))).not.toContain('a good password');
    // Empty or blank counts as unset, as for every variable: a compose file's ${PGLITE_PASSWORD} with nothing behind it.
    for (const blank of ['', '  ', '          ', '\t\n']) expect(loadConfig({ PGLITE_PASSWORD: blank }, { cwd }).pglitePassword).toBeUndefined();
  });

  it('must be 8 printable ASCII characters or more, and a refusal never shows it', () => {
    for (const bad of ['short', 'naïve-password', 'tab\there-password']) {
      let problems: readonly string[] = [];
      try {
        loadConfig({ PGLITE_PASSWORD: bad }, { cwd });
      } catch (error) {
        problems = (error as ConfigError).problems;
      }
      expect(problems).toEqual(['PGLITE_PASSWORD must be at least 8 printable ASCII characters (its value is not shown)']);
    }
  });
});

describe('sqlAccess', () => {
  const base = { databaseUrl: undefined, pglitePort: 5433, pglitePassword: undefined, pgliteDir: '/srv/mirror/data/pglite' };

  it('names the password file in a psql command line', () => {
    expect(sqlAccess(base)).toEqual({
      host: '127.0.0.1',
      port: 5433,
      user: 'postgres',
      database: 'postgres',
      passwordFile: '/srv/mirror/data/pglite/sql-password',
      psql: 'PGPASSWORD="$(cat /srv/mirror/data/pglite/sql-password)" psql -h 127.0.0.1 -p 5433 -U postgres -d postgres',
    });
    expect(sqlAccess({ ...base, pgliteDir: "/home/o'neil/my data" })?.psql).toBe(
      `PGPASSWORD="$(cat '/home/o'\\''neil/my data/sql-password')" psql -h 127.0.0.1 -p 5433 -U postgres -d postgres`,
    );
  });

  it('names the variable, not its value, when PGLITE_PASSWORD is set', () => {
    const access = sqlAccess({ ...base, pglitePassword: 'secret-value' });
    expect(access?.psql).toBe('PGPASSWORD="$PGLITE_PASSWORD" psql -h 127.0.0.1 -p 5433 -U postgres -d postgres');
    expect(JSON.stringify(access)).not.toContain('secret-value');
  });

  it('is null when nothing is served', () => {
    expect(sqlAccess({ ...base, pglitePort: 0 })).toBeNull();
    expect(sqlAccess({ ...base, databaseUrl: 'postgres://x/y' })).toBeNull();
  });
});

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.ts';
import { readReportSettings } from '../../src/db/repos/reportSettings.ts';
import { runCli } from '../helpers/runProcess.ts';

/** REPORT_* through the real command line: refused at start-up with the variable's name, or written by migrate. */

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'tm-cli-report-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the REPORT_* settings on the command line', { timeout: 120_000 }, () => {
  it('bad values stop migrate before the database is touched, each named; exit 2', async () => {
    const pgliteDir = join(dir, 'refused');
    const r = await runCli(['migrate'], {
      PGLITE_DIR: pgliteDir,
      LOG_FORMAT: 'json',
      REPORT_TIMEZONE: 'Mars/Olympus',
      REPORT_BUSINESS_HOURS: 'Mon-Fri 17:00-09:00',
      REPORT_SLA_FIRST_RESPONSE: '4 hours',
      REPORT_SLA_RESOLUTION: '2x',
    }, dir);
    expect(r.code).toBe(2);
    for (const name of ['REPORT_TIMEZONE="Mars/Olympus"', 'REPORT_BUSINESS_HOURS="Mon-Fri 17:00-09:00"', 'REPORT_SLA_FIRST_RESPONSE="4 hours"', 'REPORT_SLA_RESOLUTION="2x"']) {
      expect(r.stderr).toContain(name);
    }
    expect(existsSync(pgliteDir)).toBe(false);
  });

  it('migrate writes them into report_settings, where the views read them', async () => {
    const pgliteDir = join(dir, 'written');
    const r = await runCli(['migrate'], {
      PGLITE_DIR: pgliteDir,
      LOG_FORMAT: 'json',
      REPORT_TIMEZONE: 'europe/berlin',
      REPORT_BUSINESS_HOURS: 'Mon-Thu 08:00-17:00, Fri 08:00-12:00',
      REPORT_SLA_FIRST_RESPONSE: '1h30m',
      REPORT_SLA_RESOLUTION: '3d',
    }, dir);
    expect(r.stderr).not.toContain('"level":50');
    expect(r.code).toBe(0);
    const database = await openDatabase({ pgliteDir });
    try {
      expect(await readReportSettings(database.db)).toEqual({
        timeZone: 'Europe/Berlin',
        businessHours: 'Mon-Thu 08:00-17:00, Fri 08:00-12:00',
        businessWindows: [
          ...[1, 2, 3, 4].map((isodow) => ({ isodow, opens: '08:00', closes: '17:00' })),
          { isodow: 5, opens: '08:00', closes: '12:00' },
        ],
        slaFirstResponseSeconds: 5400,
        slaResolutionSeconds: 3 * 86400,
        updatedAt: expect.any(String),
      });
    } finally {
      await database.close();
    }
  });
});

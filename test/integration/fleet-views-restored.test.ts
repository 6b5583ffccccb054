import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { openFleetDatabase } from '../../src/db/fleet.ts';
import { getAccount, insertAccount } from '../../src/db/repos/accounts.ts';
import { RuntimeCache } from '../../src/fleet/accountRuntime.ts';
import { parseFleetKey, sealToken } from '../../src/fleet/tokenSeal.ts';
import { createLogger } from '../../src/logger.ts';
import { postgresUrl } from '../helpers/db.ts';

/**
 * A fleet worker leaves a current account schema as it is (no migrate at each start of thousands of accounts), so a
 * BI view a user dropped from an account's schema stayed gone for good, where `run` makes it again at each start. A
 * worker that opens an account now looks (one catalog query) and migrates when a view is missing, and says so.
 */
describe.skipIf(!postgresUrl)('a fleet account whose BI views a user dropped', { timeout: 120_000 }, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of cleanups.splice(0).reverse()) await close().catch(() => {});
  });

  it('gets them back when a worker opens it, with a log line naming them', async () => {
    const schema = `tm_fv_${randomBytes(3).toString('hex')}`;
    const accountSchema = `${schema}_acme`;
    const admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
    cleanups.push(async () => {
      for (const s of [schema, accountSchema]) await admin.query(`drop schema if exists "${s}" cascade`);
      await admin.end();
    });
    const fleet = await openFleetDatabase({ databaseUrl: postgresUrl!, schema, poolSize: 2 });
    cleanups.push(() => fleet.close());
    await fleet.migrate();
    const key = parseFleetKey(randomBytes(32).toString('base64'));
    // Never asked: opening an account's runtime sends nothing.
    await insertAccount(fleet.db, { name: 'acme', schemaName: accountSchema, apiUrl: 'http://127.0.0.1:9', tokenSealed: sealToken(key, 'acme', 't'), dailyLimit: 1440, minuteLimit: 60, reserve: 0.1 });
    const account = (await getAccount(fleet.db, 'acme'))!;
    const views = async () =>
      (await admin.query<{ name: string }>('select viewname as name from pg_views where schemaname = $1 order by 1', [accountSchema])).rows.map((r) => r.name);

    const lines: string[] = [];
    const worker = async () => {
      const hardStop = new AbortController();
      const cache = new RuntimeCache({
        fleet,
        key,
        clock: systemClock,
        logger: createLogger('info', { write: (line: string) => void lines.push(line) }),
        capacity: 1,
        workerId: 'test:1',
        hardStop: hardStop.signal,
      });
      cache.release(await cache.acquire(account));
      await cache.closeAll();
    };

    await worker(); // The first: makes the schema.
    const shipped = await views();
    expect(shipped).toContain('agents');
    await admin.query(`drop view "${accountSchema}".agents`);
    await admin.query(`drop view "${accountSchema}".ticket_sla cascade`);
    lines.length = 0;

    await worker(); // A worker started later.
    expect(await views()).toEqual(shipped);
    const told = lines.map((l) => JSON.parse(l) as { msg: string; account?: string; views?: string[] }).filter((l) => /BI view/.test(l.msg));
    expect(told).toEqual([expect.objectContaining({ account: 'acme', views: expect.arrayContaining(['agents', 'ticket_sla', 'sla_breaches']) })]);
    expect(told[0]!.views).toHaveLength(3);

    lines.length = 0;
    await worker(); // Nothing missing: nothing said.
    expect(lines.filter((l) => /BI view/.test(l))).toEqual([]);
  });
});

import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.ts';
import { ConfigError } from '../../src/errors.ts';
import { openFleetDatabase } from '../../src/db/fleet.ts';
import { getAccount, insertAccount } from '../../src/db/repos/accounts.ts';
import { RuntimeCache } from '../../src/fleet/accountRuntime.ts';
import { parseFleetKey, sealToken } from '../../src/fleet/tokenSeal.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator } from '../../src/simulator/index.ts';
import { postgresUrl } from '../helpers/db.ts';

/**
 * An account row written through SQL, not by `accounts add`: the table's check only asks for http(s)://, so its API URL
 * may hold a query or a fragment, after which every request's path (/api/v1/...) would be part of them and every
 * request would go to the base itself. The runtime refuses it as `accounts add` refuses --api-url, before any request,
 * naming the account; a URL it accepts keeps working, a trailing /api/v1 taken off as everywhere.
 */
describe.skipIf(!postgresUrl)('a fleet account whose api_url was written through SQL', { timeout: 60_000 }, () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of cleanups.splice(0).reverse()) await close().catch(() => {});
  });

  async function setUp() {
    const schema = `tm_fu_${randomBytes(3).toString('hex')}`;
    const admin = new pg.Client({ connectionString: postgresUrl! });
    await admin.connect();
    cleanups.push(async () => {
      for (const s of [schema, `${schema}_bad`, `${schema}_good`]) await admin.query(`drop schema if exists "${s}" cascade`);
      await admin.end();
    });
    const fleet = await openFleetDatabase({ databaseUrl: postgresUrl!, schema, poolSize: 2 });
    cleanups.push(() => fleet.close());
    await fleet.migrate();
    const sim = await startSimulator({ seed: 7, openTickets: 3, resolvedTickets: 3, token: 'token-of-acme' });
    cleanups.push(() => sim.close());
    const key = parseFleetKey(randomBytes(32).toString('base64'));
    const add = (name: string, apiUrl: string) =>
      insertAccount(fleet.db, {
        name,
        schemaName: `${schema}_${name}`,
        apiUrl,
        tokenSealed: sealToken(key, name, 'token-of-acme'),
        dailyLimit: 1440,
        minuteLimit: 60,
        reserve: 0.1,
      });
    const cache = new RuntimeCache({ fleet, key, clock: systemClock, logger: createLogger('silent'), capacity: 2, workerId: 'test:1', hardStop: new AbortController().signal });
    cleanups.push(() => cache.closeAll());
    return { fleet, sim, add, cache };
  }

  it.each(['?key=s3cret', '#s3cret'])('one ending in %s is refused before any request, the account named, the rest not shown', async (tail) => {
    const { fleet, sim, add, cache } = await setUp();
    await add('bad', `${sim.url}/${tail}`);
    const error = await cache.acquire((await getAccount(fleet.db, 'bad'))!).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^api_url of account bad="http:\/\/127\.0\.0\.1:\d+\/[?#]…" must not hold a query/);
    expect((error as Error).message).not.toContain('s3cret');
    expect(sim.log).toEqual([]);
  });

  it('one ending in /api/v1 is used without it', async () => {
    const { fleet, sim, add, cache } = await setUp();
    await add('good', `${sim.url}/api/v1`);
    const runtime = await cache.acquire((await getAccount(fleet.db, 'good'))!);
    await runtime.engine.pass();
    cache.release(runtime);
    expect(sim.log.length).toBeGreaterThan(0);
    expect(sim.log.every((r) => r.status === 200 && r.path.startsWith('/api/v1/') && !r.path.startsWith('/api/v1/api/v1'))).toBe(true);
  });
});

import { randomBytes } from 'node:crypto';
import got from 'got';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { logPasses } from '../../src/daemon/compose.ts';
import { createLogger, scrubSecrets } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { freshPglite, type TestDatabase } from '../helpers/db.ts';
import { count } from '../helpers/mirror.ts';
import { sql } from '../../src/db/connect.ts';
import { freePort } from '../helpers/runProcess.ts';

describe('scrubSecrets', () => {
  it.each([
    ['"authorization":"Bearer abc.def-123"', '"authorization":"Bearer [redacted]"'],
    ['GET http://files.example/f/1/a.png?expires=1&signature=ff00 failed', 'GET http://files.example/f/1/a.png?[redacted] failed'],
    ['"url":"https://x.example/a#frag"', '"url":"https://x.example/a?[redacted]"'],
    ['postgres://mirror:s3cret@db:5432/x', 'postgres://mirror:***@db:5432/x'],
    ['/files/1/a.png?expires=1&signature=ff00', '/files/1/a.png?expires=1&signature=[redacted]'],
    ['"path":"/api/v1/ticket/abc"', '"path":"/api/v1/ticket/abc"'],
  ])('%s', (line, scrubbed) => {
    expect(scrubSecrets(line)).toBe(scrubbed);
  });
});

/**
 * A whole sync at `trace`, the most talkative level, with the log captured: neither the token nor any part of a
 * signed attachment URL may appear. On top of what the sync logs by itself, the test logs what a careless change
 * might: a raw detail body, a got error of a request that carried the token to a signed URL, the configuration.
 */
describe('no secret in the log', () => {
  const token = `tm-secret-${randomBytes(8).toString('hex')}`;
  let sim: RunningSimulator;
  let database: TestDatabase;

  beforeEach(async () => {
    database = await freshPglite();
  });
  afterEach(async () => {
    await sim.close();
    await database.destroy();
  });

  it('a full sync at trace level logs neither the token nor a signed URL', async () => {
    const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
    sim = await startSimulator({ seed: 61, token, openTickets: 6, resolvedTickets: 6, clock });
    let log = '';
    const logger = createLogger('trace', { write: (line: string) => void (log += line) });
    const engine = new SyncEngine({
      db: database.db,
      apiUrl: sim.url,
      apiToken: token,
      clock,
      limits: { daily: 1440, minute: 60, reserve: 0.1 },
      logger,
      realTime: false,
      sleep: async (ms) => void clock.advance(ms),
    });
    logPasses(engine, logger);
    // Failures log too: a cut connection (retried) and a truncated body on ticket details.
    sim.faults.inject({ match: '/api/v1/ticket/', kind: 'reset', times: 1 });
    sim.faults.inject({ match: '/api/v1/ticket/', kind: 'truncated', times: 1 });

    for (let pass = 0; pass < 400; pass++) {
      await engine.pass();
      if ((await count(database.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`)) === 0) break;
      clock.advance(15_000);
    }
    expect(await count(database.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`)).toBe(0);

    const withAttachments = sim.model.groundTruth().find((t) => t.attachments.length > 0)!;
    const detail = await engine.client.detail(withAttachments.id);
    const signedUrl = (detail.body.attachments as Array<{ url: string }>)[0]!.url;
    expect(signedUrl).toMatch(/signature=/);
    logger.trace({ body: detail.body }, 'a raw detail body');
    const gotError = await got(signedUrl.replace(sim.storageUrl, `http://127.0.0.1:${await freePort()}`), {
      headers: { authorization: `Bearer ${token}` },
      retry: { limit: 0 },
    }).catch((error: unknown) => error);
    logger.error({ err: gotError, error: gotError, request: { url: signedUrl, headers: { authorization: `Bearer ${token}` } } }, 'a got error');
    logger.info({ config: loadConfig({ TICKETS_API_URL: sim.url, TICKETS_API_TOKEN: token }, { dotenv: false }) }, 'the configuration');
    logger.warn(`retrying GET ${signedUrl} with Authorization: Bearer ${token}`);

    expect(log).toContain('"msg":"request"');
    expect(log).toContain('"msg":"a raw detail body"');
    expect(log).toContain('"msg":"a got error"');
    expect(log).toContain('ECONNREFUSED');
    expect(log).not.toContain(token);
    expect(log).not.toMatch(/signature=(?!\[redacted\])/);
    expect(log).not.toMatch(/expires=/);
    // Links may show where they pointed, never their query string.
    expect(log).toContain(`${sim.storageUrl}/files/`);
    expect(log).not.toMatch(new RegExp(`${sim.storageUrl}[^"\\s]*\\?(?!\\[redacted\\])`));
  }, 60_000);
});

import { randomBytes } from 'node:crypto';
import got from 'got';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.ts';
import { loadConfig } from '../../src/config/loadConfig.ts';
import { logPasses } from '../../src/daemon/compose.ts';
import { createLogger, scrubSecrets } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import { backends, freshPglite, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';
import { queryRows, sql, type Db } from '../../src/db/connect.ts';
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

/** Every text, varchar and json(b) column of every table of the mirror's schema, as one string. */
async function everyText(db: Db): Promise<string> {
  const columns = await queryRows<{ table_name: string; column_name: string }>(
    db,
    sql`select table_name, column_name from information_schema.columns
      where table_schema = current_schema() and data_type in ('text', 'character varying', 'json', 'jsonb')
        and table_name in (select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE')`,
  );
  expect(columns.map((c) => `${c.table_name}.${c.column_name}`)).toEqual(expect.arrayContaining(['tickets.raw', 'messages.message', 'sync_runs.error']));
  const parts = await Promise.all(
    columns.map(async ({ table_name: t, column_name: c }) => {
      const [row] = await queryRows<{ text: string | null }>(db, sql.raw(`select string_agg("${c}"::text, ' ') as text from "${t}"`));
      return row?.text ?? '';
    }),
  );
  return parts.join(' ');
}

/**
 * A signed link leaves the mirror in no form: copies a customer or an agent quotes in their message (as is,
 * percent-encoded, HTML-escaped, JSON-escaped, another file's link on the storage host) and links the API puts in
 * attachment fields the spec does not name (`thumbnail_url`). Scanned: every text and json column of every table.
 */
describe.each(backends)('no signed link in any encoding is stored, on $name', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('strips every form of a storage URL from raw and message text, and keeps attachments to their spec fields', { timeout: 120_000 }, async () => {
    const { model } = m.sim;
    const ticket = model.newTicket({ attachments: 2 });
    const [first, second] = ticket.attachments.map((a) => model.attachment(a.id)!);
    const url = model.signer.url(first!, m.clock.now());
    const otherUrl = model.signer.url(second!, m.clock.now() - 3_600_000);
    const html = (s: string) => s.replace(/&/g, '&amp;');
    expect(url).toMatch(/signature=/);
    model.inboundMessage(ticket.id, {
      attachments: 0,
      message: [
        'marker-exact: ' + url,
        'marker-percent: https://mail.example/redirect?to=' + encodeURIComponent(url),
        'marker-percent-twice: ' + encodeURIComponent(encodeURIComponent(url)),
        'marker-json: {"link":"' + url.replace(/\//g, '\\/') + '"}',
        'marker-other-file: ' + otherUrl,
        'marker-unsigned: ' + otherUrl.replace(/\?.*$/, ''),
      ].join('\n'),
    });
    model.agentReply(ticket.id, { message: `marker-html: <a href="${html(url)}">your file</a>, &lt;a href=&quot;${html(html(otherUrl))}&quot;&gt;` });

    // The API adds a link the spec does not name to every attachment of this ticket's detail.
    const detail = model.detail(ticket.id, m.clock.now()) as unknown as Record<string, unknown> & {
      attachments: Array<Record<string, unknown>>;
      messages: Array<{ attachments: Array<Record<string, unknown>> }>;
    };
    for (const a of [...detail.attachments, ...detail.messages.flatMap((msg) => msg.attachments)]) {
      a.thumbnail_url = `${String(a.url).replace('/files/', '/thumbs/')}&w=128`;
      a.download = { href: String(a.url), expires_in: 600 };
    }
    m.sim.faults.inject({
      match: `/api/v1/ticket/${ticket.id}`,
      kind: 'answer',
      times: 1000,
      answer: { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(detail) },
    });

    await m.runUntil(
      async () =>
        (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 &&
        (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`)) === 0,
    );
    expect(m.sim.log.some((r) => r.path === `/api/v1/ticket/${ticket.id}` && r.status === 200)).toBe(true);

    const text = await everyText(m.db);
    // What was written is there, minus the links.
    for (const marker of ['marker-exact', 'marker-percent', 'marker-percent-twice', 'marker-json', 'marker-other-file', 'marker-unsigned', 'marker-html']) {
      expect(text).toContain(marker);
    }
    expect(text).toContain('[attachment link removed]');
    const lower = text.toLowerCase();
    const storageHost = new URL(m.sim.storageUrl).host;
    expect(lower).not.toMatch(/signature|expires=|thumbnail_url/);
    for (const form of [storageHost, encodeURIComponent(storageHost), `/files/${first!.id}`, `/thumbs/${first!.id}`, `%2ffiles%2f${first!.id}`]) {
      expect(lower).not.toContain(form.toLowerCase());
    }
    const [raw] = await queryRows<{ attachments: unknown }>(m.db, sql`select raw->'attachments' as attachments from tickets where id = ${ticket.id}`);
    expect(raw!.attachments).toEqual(ticket.attachments.map((a) => ({ id: a.id, name: a.name, mime_type: a.mime_type, size: a.size })));
  });

  it('a signed link in a list item\'s name, e-mail or status is not stored by the list polls', { timeout: 120_000 }, async () => {
    await m.runFor(10 * 60_000);
    const signed = 'https://cdn.example/f/report.pdf?X-Amz-Signature=SIGSECRET1&X-Amz-Expires=600';
    const target = m.sim.model.list('open')[0]!.id;
    // Every list that shows the ticket shows it so (each poll writes the item's fields as its list gives them).
    const paths = { open: '', self: '/self', unassigned: '/unassigned', resolved: '/resolved' } as const;
    for (const [list, suffix] of Object.entries(paths) as Array<[keyof typeof paths, string]>) {
      const items = m.sim.model.list(list).map((i) => (i.id === target ? { ...i, name: `Ann ${signed}`, email: `ann@example.com ${signed}`, status: `open ${signed}` } : i));
      m.sim.faults.inject({
        kind: 'answer',
        match: new RegExp(`^/api/v1/tickets${suffix}(\\?|$)`),
        times: 1000,
        answer: { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(items) },
      });
    }
    // Its detail is refused (a 403 backs that ticket off alone), so no detail rewrites what the list polls wrote.
    m.sim.faults.inject({
      kind: 'answer',
      match: new RegExp(`^/api/v1/ticket/${target}$`),
      times: 1000,
      answer: { status: 403, headers: { 'content-type': 'application/json' }, body: '{"error":"Forbidden."}' },
    });
    await m.runFor(30 * 60_000);
    expect(m.sim.log.filter((r) => r.path === '/api/v1/tickets').length).toBeGreaterThan(1);
    const text = await everyText(m.db);
    expect(text).not.toContain('SIGSECRET1');
    // Cut out where it was, the rest of the text kept.
    expect(text).toContain('open [attachment link removed]');
  });
});

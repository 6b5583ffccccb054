import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExitError } from '../../src/cli/exit.ts';
import { freshAttachmentLink } from '../../src/cli/commands/attachment.ts';
import { queryRows, sql } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { backends, postgresUrl, type TestDatabase } from '../helpers/db.ts';
import { count, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';
import { runCli } from '../helpers/runProcess.ts';

const logger = createLogger('silent');

/** Every text column where a link could have been written: payloads, messages, the ledger, run errors, the outbox. */
async function textDump(m: VirtualMirror): Promise<string> {
  const [row] = await queryRows<{ text: string }>(
    m.db,
    sql`select concat_ws(' ',
      (select string_agg(raw::text, ' ') from tickets),
      (select string_agg(concat_ws(' ', message, author::text, outbound_error), ' ') from messages),
      (select string_agg(concat_ws(' ', id, name, mime_type), ' ') from attachments),
      (select string_agg(concat_ws(' ', method, path, kind), ' ') from api_requests),
      (select string_agg(error, ' ') from sync_runs),
      (select string_agg(concat_ws(' ', message, error), ' ') from reply_outbox)) as text`,
  );
  return row!.text;
}

async function synced(m: VirtualMirror): Promise<boolean> {
  const tickets = await count(m.db, sql`select count(*)::int as n from tickets`);
  const pending = await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null`);
  return tickets > 0 && pending === 0;
}

describe.each(backends)('fresh attachment links on $name', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const deps = () => ({ db: m.db, client: m.engine.client, clock: m.clock, logger });

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
    await m.runUntil(() => synced(m));
    // Past the minute whose budget the backfill may have spent.
    m.clock.advance(61_000);
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('fetches one detail (kind lookup) and returns a working link, of which nothing is stored', async () => {
    const [attachment] = await queryRows<{ id: string; ticket_id: string; size: string }>(
      m.db,
      sql`select id, ticket_id, size from attachments where message_id is not null order by id limit 1`,
    );
    const before = m.sim.log.length;
    const link = await freshAttachmentLink(deps(), attachment!.id);
    expect(m.sim.log.slice(before).map((r) => `${r.method} ${r.path}`)).toEqual([`GET /api/v1/ticket/${attachment!.ticket_id}`]);
    expect(link).toMatchObject({ attachmentId: attachment!.id, ticketId: attachment!.ticket_id });
    expect(link.url.startsWith(`${m.sim.storageUrl}/files/${attachment!.id}/`)).toBe(true);
    const file = await fetch(link.url);
    expect(file.status).toBe(200);
    expect((await file.arrayBuffer()).byteLength).toBe(Number(attachment!.size));

    const [ledger] = await queryRows<{ kind: string }>(m.db, sql`select kind from api_requests order by id desc limit 1`);
    expect(ledger!.kind).toBe('lookup');
    const dump = await textDump(m);
    expect(dump).toContain(attachment!.id);
    expect(dump).not.toContain(m.sim.storageUrl);
    expect(dump).not.toMatch(/signature=|expires=/);
  });

  it('an unknown attachment id fails with exit 1 and a clear message, without a request', async () => {
    const before = m.sim.log.length;
    const failure = await freshAttachmentLink(deps(), 'no-such-attachment').catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(ExitError);
    expect(failure).toMatchObject({ code: 1, message: expect.stringMatching(/attachment no-such-attachment is not in the mirror/) });
    expect(m.sim.log.length).toBe(before);
  });
});

describe.runIf(postgresUrl)('ticket-mirror attachment --download, as a child process on PostgreSQL', () => {
  let database: TestDatabase;
  let m: VirtualMirror;
  let dir: string;

  beforeEach(async () => {
    database = await backends.find((b) => b.name === 'postgres')!.open();
    m = await virtualMirror(database);
    await m.runUntil(() => synced(m));
    dir = mkdtempSync(join(tmpdir(), 'tm-attachment-cli-'));
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('saves the file under its own name in the folder given and prints the path', async () => {
    const [attachment] = await queryRows<{ id: string; name: string; size: string }>(m.db, sql`select id, name, size from attachments order by id limit 1`);
    const env = {
      TICKETS_API_URL: m.sim.url,
      TICKETS_API_TOKEN: m.sim.token,
      DATABASE_URL: postgresUrl!,
      DB_SCHEMA: database.schema,
      LOG_LEVEL: 'silent',
    };
    const result = await runCli(['attachment', attachment!.id, '--download', dir], env, dir);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const path = join(dir, attachment!.name);
    expect(result.stdout).toBe(`${path}\n`);
    expect(readFileSync(path).length).toBe(Number(attachment!.size));
    expect(await textDump(m)).not.toContain(m.sim.storageUrl);
  }, 60_000);
});

import { createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import got from 'got';
import { isObject, type ApiClient, type JsonObject } from '../../api/client.ts';
import { systemClock, type Clock } from '../../clock.ts';
import { createEngine } from '../../daemon/compose.ts';
import type { Db } from '../../db/connect.ts';
import { attachmentTicketId, writeDetail } from '../../db/repos/details.ts';
import { logViewsRestored } from '../../db/repos/views.ts';
import type { Logger } from '../../logger.ts';
import { mapDetail, UnstorableError } from '../../sync/mapping.ts';
import { isoMicros } from '../../time.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';

/**
 * `ticket-mirror attachment <attachment-id> [--download PATH]`: a fresh signed link to an attachment, or the file.
 *
 * The mirror stores no attachment URL (they are signed and expire after 10 minutes), so a link costs one request: the
 * ticket's detail, which carries fresh links. The link is printed, never stored; the detail itself refreshes the
 * mirror through writeDetail, which strips every URL.
 */
export async function attachmentCommand({ config, logger }: CommandContext, attachmentId: string, options: { download?: string }): Promise<void> {
  await withDatabase(config, async (database) => {
    logViewsRestored(logger, await database.migrate());
    const engine = createEngine(config, database, logger, systemClock);
    await engine.init();
    const link = await freshAttachmentLink({ db: database.db, client: engine.client, clock: systemClock, logger }, attachmentId);
    if (options.download === undefined) {
      process.stdout.write(`${link.url}\n`);
      return;
    }
    process.stdout.write(`${await downloadFile(link, options.download)}\n`);
  });
}

export interface AttachmentLink {
  attachmentId: string;
  ticketId: string;
  name: string | null;
  /** Signed; valid for about 10 minutes. A secret: print it or use it, never store or log it. */
  url: string;
}

export interface AttachmentDeps {
  db: Db;
  /** The sync engine's client: the request counts against the same budget and ledger. */
  client: ApiClient;
  clock: Clock;
  logger: Logger;
}

/** Looks up the attachment's ticket in the mirror and fetches its detail (one request, kind `lookup`). */
export async function freshAttachmentLink(deps: AttachmentDeps, attachmentId: string): Promise<AttachmentLink> {
  const ticketId = await attachmentTicketId(deps.db, attachmentId);
  if (ticketId === null) {
    throw new ExitError(`attachment ${attachmentId} is not in the mirror: check the id (see the attachments table)`, EXIT.failure);
  }
  const requestedAt = isoMicros(deps.clock.now());
  const response = await deps.client.detail(ticketId, 'lookup');
  await refreshMirror(deps, response.body, ticketId, isoMicros(response.at), requestedAt);
  const found = findAttachment(response.body, attachmentId);
  if (!found) throw new ExitError(`attachment ${attachmentId} is no longer listed in ticket ${ticketId}`, EXIT.failure);
  return { attachmentId, ticketId, ...found };
}

/** The detail was paid for: store it (URLs stripped). A detail the mirror cannot store still yields its link. */
async function refreshMirror(deps: AttachmentDeps, body: JsonObject, ticketId: string, at: string, requestedAt: string): Promise<void> {
  let mapped;
  try {
    mapped = mapDetail(body, ticketId);
  } catch (error) {
    if (!(error instanceof UnstorableError)) throw error;
    deps.logger.warn({ ticket: ticketId, err: error.message }, 'ticket detail not stored');
    return;
  }
  await deps.db.transaction((tx) => writeDetail(tx, mapped, at, requestedAt));
}

/** The attachment, at ticket level or inside a message, with its link; null when the detail does not list it. */
function findAttachment(body: JsonObject, attachmentId: string): { name: string | null; url: string } | null {
  const lists = [body.attachments, ...(Array.isArray(body.messages) ? body.messages.map((m) => (isObject(m) ? m.attachments : [])) : [])];
  for (const list of lists) {
    if (!Array.isArray(list)) continue;
    for (const a of list) {
      if (isObject(a) && String(a.id) === attachmentId && typeof a.url === 'string') {
        return { name: typeof a.name === 'string' ? a.name : null, url: a.url };
      }
    }
  }
  return null;
}

/**
 * Saves the file to `target` (a folder: under the attachment's own name) and returns the path. The file goes to the
 * storage origin the link names, which is not the API: no token, no quota. Written to `.part` and renamed when
 * complete, so a failed download leaves nothing that looks like the file.
 */
async function downloadFile(link: AttachmentLink, target: string): Promise<string> {
  const isFolder = await stat(target).then((s) => s.isDirectory(), () => false);
  const path = isFolder ? join(target, safeFileName(link)) : target;
  const partial = `${path}.part`;
  try {
    await pipeline(got.stream(link.url, { timeout: { request: 120_000 }, retry: { limit: 0 } }), createWriteStream(partial));
    await rename(partial, path);
  } catch (error) {
    await rm(partial, { force: true });
    throw new ExitError(`could not download attachment ${link.attachmentId}: ${error instanceof Error ? error.message : String(error)}`, EXIT.failure);
  }
  return path;
}

/** The service's file name, without any folder part it may carry; the id when nothing usable is left. */
function safeFileName(link: AttachmentLink): string {
  const name = link.name === null ? '' : basename(link.name.replaceAll('\\', '/'));
  return name === '' || name === '.' || name === '..' ? link.attachmentId : name;
}

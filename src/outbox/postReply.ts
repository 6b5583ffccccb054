import type { ApiClient } from '../api/client.ts';
import type { Clock } from '../clock.ts';
import type { Db, Tx } from '../db/connect.ts';
import { isWriteDataError, safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { MAX_ID_BYTES } from '../sync/mapping.ts';
import { recordPostedReply, type PostedReply } from '../db/repos/messages.ts';
import { tokenUser } from '../db/repos/outbox.ts';
import { isoMicros } from '../time.ts';

export interface PostReplyDeps {
  db: Db;
  /** The sync engine's client (`engine.client`): the reply counts against the same budget and ledger as the sync. */
  client: ApiClient;
  clock: Clock;
}

/**
 * Posts one reply now (endpoint 6) and records it in `messages` at once; for `ticket-mirror reply`. The caller checks
 * the text first (replyTextProblem), so a reply the service would refuse costs no request.
 *
 * Not retried: a POST whose answer is lost may have posted the reply, and only the person at the terminal can tell
 * whether to send it again. Throws the client's named errors (see ApiClient.reply): NotFoundError, AuthError and
 * RequestRejectedError when the API refused it, ReplyNotSentError when nothing left, RateLimitedError when the budget
 * said no, and ReplyOutcomeUnknownError for every answer that proves nothing — the reply may have been posted.
 */
export async function postReply(deps: PostReplyDeps, ticketId: string, message: string): Promise<PostedReply> {
  const reply = (await deps.client.reply(ticketId, message)).body;
  const at = isoMicros(deps.clock.now());
  const unstorable = unstorableId(reply.id);
  if (unstorable) throw new ReplyPostedError(reply.id, ticketId, unstorable);
  try {
    return await deps.db.transaction(async (tx) => {
      const posted: PostedReply = { ticketId, messageId: reply.id, text: message, createdAt: reply.created_at, author: await tokenUser(tx) };
      await recordPostedReply(tx, posted, at);
      return posted;
    });
  } catch (error) {
    // Posted, whatever the mirror's copy: said so, or the person at the terminal would send it again. Told safely: the
    // database's error quotes the bound values, the reply's text among them.
    throw new ReplyPostedError(reply.id, ticketId, safeErrorMessage(error));
  }
}

/** Why the mirror cannot store a message id the service gave (longer than MAX_ID_BYTES), or null when it can. */
export function unstorableId(id: string): string | null {
  const bytes = Buffer.byteLength(id);
  return bytes > MAX_ID_BYTES ? `the service's message id is ${bytes} bytes, longer than the ${MAX_ID_BYTES} the mirror stores` : null;
}

/** The service took the reply (it has an id), but the mirror could not record it. */
export class ReplyPostedError extends Error {
  override name = 'ReplyPostedError';
  constructor(
    readonly messageId: string,
    ticketId: string,
    reason: string,
  ) {
    super(`the reply to ticket ${ticketId} was posted (message ${messageId}), but the mirror could not record it (${reason}): do not send it again`);
  }
}

/**
 * Records a reply the service took, in the transaction that marks its outbox row sent, under a savepoint: the mirror's
 * copy of the message is the lesser fact. A write the database refuses for its data (an id longer than an index
 * holds, a constraint) is told and left to the ticket's next detail; undoing that the row was sent with it had the
 * row checked later against a detail that could not show the reply, and posted again. Returns whether it was recorded.
 */
export async function recordPostedCopy(tx: Tx, posted: PostedReply, at: string, logger: Logger): Promise<boolean> {
  try {
    await tx.transaction((savepoint) => recordPostedReply(savepoint, posted, at));
    return true;
  } catch (error) {
    if (!isWriteDataError(error)) throw error;
    logger.warn({ ticket: posted.ticketId, err: safeErrorMessage(error) }, 'reply posted, but its message could not be recorded: the ticket\'s next detail brings it');
    return false;
  }
}

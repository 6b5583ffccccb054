import type { ApiClient } from '../api/client.ts';
import type { Clock } from '../clock.ts';
import type { Db } from '../db/connect.ts';
import { recordPostedReply, type PostedReply } from '../db/repos/messages.ts';
import { tokenUser } from '../db/repos/outbox.ts';
import { isoMicros } from '../time.ts';
import { replyText } from './states.ts';

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
  const text = replyText(message);
  const reply = (await deps.client.reply(ticketId, text)).body;
  const at = isoMicros(deps.clock.now());
  return deps.db.transaction(async (tx) => {
    const posted: PostedReply = { ticketId, messageId: reply.id, text, createdAt: reply.created_at, author: await tokenUser(tx) };
    await recordPostedReply(tx, posted, at);
    return posted;
  });
}

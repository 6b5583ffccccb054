import { constants } from 'node:os';
import { systemClock } from '../../clock.ts';
import { createEngine } from '../../daemon/compose.ts';
import { logViewsRestored } from '../../db/repos/views.ts';
import { ReplyNotSentError, ReplyOutcomeUnknownError } from '../../errors.ts';
import { postReply, ReplyPostedError } from '../../outbox/postReply.ts';
import { replyTextProblem } from '../../outbox/states.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';

/**
 * `ticket-mirror reply <ticket-id> <message>`: posts a reply now, writes it into `messages`, prints the new message id.
 * Exit 2 when the ticket id is blank or the message too short (checked before anything is opened or sent) or the API refused the token
 * (its own 401/403: nothing was posted); exit 1 when the ticket does not exist, nothing could be sent, or the outcome
 * is unknown — any other answer (an HTML page, a 5xx, a timeout …) may have posted the reply, and says so.
 */
export async function replyCommand(
  { config, logger }: CommandContext,
  ticketId: string,
  messageArg: string,
  stdin: AsyncIterable<Buffer | string> = process.stdin,
): Promise<void> {
  const message = messageArg === '-' ? await readAll(stdin) : messageArg;
  // As reply_outbox's CHECK: a blank id names no ticket, and its POST (to /ticket//reply) spent a request for a 404.
  if (ticketId.trim() === '') throw new ExitError('the ticket id is empty; nothing was sent', EXIT.usage);
  const problem = replyTextProblem(message);
  if (problem) throw new ExitError(`${problem}; nothing was sent`, EXIT.usage);
  await withDatabase(config, async (database) => {
    logViewsRestored(logger, await database.migrate());
    const engine = createEngine(config, database, logger, systemClock);
    await engine.init();
    // Ctrl-C (or a supervisor's SIGTERM) while the POST is out ended the process without a word: the reply may be there.
    const interrupted = (signal: NodeJS.Signals) => {
      process.stderr.write(`ticket-mirror: interrupted (${signal}) while posting: the reply may have been posted; check ticket ${ticketId} before sending again\n`);
      process.exit(128 + constants.signals[signal]);
    };
    process.once('SIGINT', interrupted).once('SIGTERM', interrupted);
    try {
      const posted = await postReply({ db: database.db, client: engine.client, clock: systemClock }, ticketId, message);
      process.stdout.write(`${posted.messageId}\n`);
    } catch (error) {
      if (error instanceof ReplyOutcomeUnknownError) {
        // Said as it is (no `cause` for the report to explain away as "cannot reach the API"): the reply may be there.
        throw new ExitError(`the reply may have been posted (${error.message}); check ticket ${ticketId} before sending again`, EXIT.failure);
      }
      if (error instanceof ReplyPostedError) throw new ExitError(error.message, EXIT.failure);
      if (error instanceof ReplyNotSentError) {
        // The report explains the cause (connection refused, host not found) with TICKETS_API_URL.
        throw new ExitError(`the reply was not sent (${error.message}): the API could not be reached`, EXIT.failure, { cause: error });
      }
      throw error;
    } finally {
      process.off('SIGINT', interrupted).off('SIGTERM', interrupted);
    }
  });
}

/** Standard input as text, without the one line break that ends it (`echo`'s, an editor's): the rest is sent as given. */
async function readAll(stream: AsyncIterable<Buffer | string>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

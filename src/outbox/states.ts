import { DAY_MS, HOUR_MS, MINUTE_MS } from '../time.ts';

/** The service's minimum length of a reply (spec, Endpoint 6: "Minimum length 3 characters"). */
const MIN_REPLY_LENGTH = 3;

/**
 * Why the service would reject this text, or null when it is long enough: the spec's rule to the letter, on the text
 * as given (it is sent as given), counted in characters (code points, as PostgreSQL's char_length and the table's CHECK
 * count them), not UTF-16 units. Nothing is trimmed: "  ab  " has six characters. A service that trims before its
 * rule may still refuse such a text, and says so (a 4xx: the row ends `failed` with its words).
 */
export function replyTextProblem(message: string): string | null {
  const length = [...message].length;
  if (length >= MIN_REPLY_LENGTH) return null;
  return `the reply must be at least ${MIN_REPLY_LENGTH} characters long (it has ${length})`;
}

/**
 * Whether a message of the ticket has the reply's text, as the check after an unknown outcome compares them: blanks
 * at either end do not count, since a service may trim what it stores (the simulator does, as Laravel trims input).
 */
export function sameReplyText(stored: string, sent: string): boolean {
  return stored.trim() === sent.trim();
}

/** POSTs tried per row before it ends `failed`. */
export const MAX_ATTEMPTS = 5;

/**
 * How long after a failure whose outcome is unknown the row is checked against the ticket's detail: 1 min, doubling,
 * at most 30 min. The wait also gives a service that lists a new message late the time to show it.
 */
export function recheckDelayMs(attempts: number): number {
  return Math.min(30 * MINUTE_MS, MINUTE_MS * 2 ** Math.max(0, attempts - 1));
}

/**
 * How long a row whose POST's outcome is unknown may wait for a detail of its ticket that can be read (each check
 * failing: a 5xx, a timeout, an answer that is not the API's) before it ends `failed`, not sent again.
 */
export const MAX_UNKNOWN_MS = DAY_MS;

/**
 * How long after a check that could not read the ticket's detail the row is checked again, its outcome unknown for
 * `unknownForMs` (since it entered `sending`): as long again — the wait doubles from check to check, since attempts do
 * not grow with checks — at least recheckDelayMs(attempts), at most an hour. A ticket the service never answers for
 * costs about 30 checks before MAX_UNKNOWN_MS, not one a minute for ever.
 */
export function checkAgainDelayMs(attempts: number, unknownForMs: number): number {
  return Math.min(HOUR_MS, Math.max(recheckDelayMs(attempts), unknownForMs));
}

import { isObject } from '../api/client.ts';
import { msOption } from '../options.ts';
import type { MessageRow } from '../model/detail.ts';
import { toEpochMicros } from '../time.ts';
import { sameReplyText } from './states.ts';

/**
 * Did a POST whose answer was lost reach the service? Decided from the ticket's detail alone, as a pure function.
 *
 * The reply is found when the detail holds a message by the token's user with the same text (both trimmed), created
 * no earlier than the row entered `sending` (less a margin for clock skew between us and the service), that no other
 * outbox row has claimed. When the token's user is not known yet, any agent's message counts — which can only make
 * the answer "ambiguous" more often, never "absent" wrongly.
 *
 * "Absent" is only said when no such recent message exists at all; a recent message by the user with another text
 * (the service may alter or cut the text, or someone else posted as the same user) — unless that text is another
 * unmatched outbox row's of the ticket, whose reply it is — is "ambiguous": the row then ends
 * `failed` rather than risk posting the reply twice. So is a message with this very text that the rules above do not
 * take for it, created up to a day before the POST: one without a user (the service need not name it), by another
 * user, or earlier than the margin allows (the service's clock behind ours by more than a minute). Each was said
 * "absent", and the reply posted again, though the customer may already have had it.
 */

export type Reconciliation =
  | { outcome: 'posted'; message: MessageRow }
  | { outcome: 'absent' }
  | { outcome: 'ambiguous'; reason: string };

export interface ReconcileInput {
  /** The ticket's messages, as mapped from a detail fetched after the POST could have happened. */
  messages: readonly MessageRow[];
  /** The row's message. */
  text: string;
  /** When the row entered `sending`: the POST cannot have been made before. */
  sendingSince: string;
  /** Message ids other outbox rows were matched with. */
  claimed: ReadonlySet<string>;
  /**
   * The texts of the ticket's other outbox rows not matched with a message (pending, sending, failed): a message with
   * one of those texts, and not this row's, is theirs, not this one altered. @default none
   */
  others?: readonly string[];
  /** The token's user (the API's `user` object), or null when not known yet. */
  self: unknown;
  /** Tolerated clock skew between this host and the service. @default 60000 */
  marginMs?: number;
}

/** How far before the POST a message with the reply's very text still counts as maybe this reply (see above). */
const ECHO_WINDOW_MS = 24 * 60 * 60 * 1000;

export function reconcile(input: ReconcileInput): Reconciliation {
  const since = toEpochMicros(input.sendingSince);
  if (since === null) throw new TypeError(`sendingSince is not a timestamp: ${input.sendingSince}`);
  const earliest = since - BigInt(Math.round(msOption('marginMs', input.marginMs, 60_000))) * 1000n;
  const recent = input.messages
    .filter((m) => isAuthoredBy(m.author, input.self) && !input.claimed.has(m.id) && !createdBefore(m, earliest))
    .sort(byCreatedAt);
  const same = recent.find((m) => m.message !== null && sameReplyText(m.message, input.text));
  if (same) return { outcome: 'posted', message: same };
  const echoSince = since - BigInt(ECHO_WINDOW_MS) * 1000n;
  const echo = input.messages.find(
    (m) => !input.claimed.has(m.id) && m.message !== null && sameReplyText(m.message, input.text) && !createdBefore(m, echoSince),
  );
  if (echo) {
    return {
      outcome: 'ambiguous',
      reason:
        `the POST's outcome is unknown, and message ${echo.id} at ${echo.createdAt ?? 'an unknown time'} has this very text ` +
        `(${echo.author === null || echo.author === undefined ? 'without a user' : "by a user other than the token's, or earlier than a minute before the POST"}): ` +
        'it may be this reply. Not sent again, to rule out a duplicate; check the ticket, and set state back to pending to send it anyway',
    };
  }
  // Several rows of one ticket whose answers were lost: the message of the one that was posted made every other
  // "ambiguous", and they ended failed, never sent (a helper's probe: two POSTs the service never stored, one it did).
  const others = input.others ?? [];
  const other = recent.find((m) => m.message === null || !others.some((text) => sameReplyText(m.message!, text)));
  if (!other) return { outcome: 'absent' };
  const who = input.self === null ? 'an agent' : "the token's user";
  return {
    outcome: 'ambiguous',
    reason:
      `the POST's outcome is unknown, and ${who} posted message ${other.id} at ${other.createdAt ?? 'an unknown time'} ` +
      'with a different text: it may be this reply, altered by the service. Not sent again, to rule out a duplicate; ' +
      'check the ticket, and set state back to pending to send it anyway',
  };
}

/** Whether a message's `user` is the token's user; any user when that is not known. Inbound messages have none. */
function isAuthoredBy(author: unknown, self: unknown): boolean {
  if (author === null || author === undefined) return false;
  if (self === null || self === undefined) return true;
  if (isObject(author) && isObject(self) && author.id !== undefined && self.id !== undefined) {
    return String(author.id) === String(self.id);
  }
  return JSON.stringify(author) === JSON.stringify(self);
}

/** A message without a usable time cannot be ruled out: it counts as recent. */
function createdBefore(m: MessageRow, earliest: bigint): boolean {
  const at = m.createdAt === null ? null : toEpochMicros(m.createdAt);
  return at !== null && at < earliest;
}

function byCreatedAt(a: MessageRow, b: MessageRow): number {
  const x = a.createdAt === null ? null : toEpochMicros(a.createdAt);
  const y = b.createdAt === null ? null : toEpochMicros(b.createdAt);
  if (x === y) return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
  if (x === null) return 1;
  if (y === null) return -1;
  return x < y ? -1 : 1;
}

import { describe, expect, it } from 'vitest';
import { canTransition, OUTBOX_TRANSITIONS } from '../../src/db/repos/outbox.ts';
import { reconcile, type ReconcileInput } from '../../src/outbox/reconcile.ts';
import { checkAgainDelayMs, recheckDelayMs, replyTextProblem } from '../../src/outbox/states.ts';
import type { MessageRow } from '../../src/model/detail.ts';

const SELF = { id: 'agent-self', name: 'Me', email: 'me@example.com' };
const OTHER = { id: 'agent-2', name: 'Other', email: 'other@example.com' };
const SINCE = '2026-01-05T09:00:00.000000Z';

function message(id: string, text: string, createdAt: string | null, author: unknown = SELF): MessageRow {
  return {
    id,
    ticketId: 't1',
    messageType: author === null ? 'inbound' : 'outbound',
    ticketStatus: 'open',
    message: text,
    outboundSent: author !== null,
    outboundDeliveredAt: null,
    outboundBounced: false,
    outboundSpamComplaint: false,
    outboundError: null,
    createdAt,
    author,
  };
}

const input = (messages: MessageRow[], over: Partial<ReconcileInput> = {}): ReconcileInput => ({
  messages,
  text: '  Thanks, fixed now.\n',
  sendingSince: SINCE,
  claimed: new Set(),
  self: SELF,
  ...over,
});

describe('reconcile', () => {
  it('finds the reply by text (trimmed), author and time', () => {
    const found = message('m2', 'Thanks, fixed now.', '2026-01-05T09:00:01.123456Z');
    const verdict = reconcile(input([message('m1', 'Hello', '2026-01-04T10:00:00.000000Z', null), found]));
    expect(verdict).toEqual({ outcome: 'posted', message: found });
  });

  it('tolerates a minute of clock skew; the same text earlier that day is ambiguous, a day before it absent', () => {
    const skewed = message('m2', 'Thanks, fixed now.', '2026-01-05T08:59:30.000000Z');
    expect(reconcile(input([skewed])).outcome).toBe('posted');
    // The service's clock two minutes behind ours: it may be this reply. Before, "absent", and posted twice.
    const older = message('m3', 'Thanks, fixed now.', '2026-01-05T08:58:00.000000Z');
    const verdict = reconcile(input([older]));
    expect(verdict.outcome).toBe('ambiguous');
    expect(verdict.outcome === 'ambiguous' && verdict.reason).toMatch(/message m3 .* has this very text/);
    const yesterday = message('m4', 'Thanks, fixed now.', '2026-01-04T08:00:00.000000Z');
    expect(reconcile(input([yesterday])).outcome).toBe('absent');
  });

  it('skips messages claimed by other rows and takes the earliest unclaimed one', () => {
    const a = message('a', 'Thanks, fixed now.', '2026-01-05T09:00:01.000000Z');
    const b = message('b', 'Thanks, fixed now.', '2026-01-05T09:00:02.000000Z');
    expect(reconcile(input([b, a]))).toEqual({ outcome: 'posted', message: a });
    expect(reconcile(input([b, a], { claimed: new Set(['a']) }))).toEqual({ outcome: 'posted', message: b });
    expect(reconcile(input([b, a], { claimed: new Set(['a', 'b']) })).outcome).toBe('absent');
  });

  it('ignores inbound messages and, when the token user is known, other agents, unless one has the very text', () => {
    const inbound = message('i', 'Hello, any news?', '2026-01-05T09:00:01.000000Z', null);
    const other = message('o', 'Something else', '2026-01-05T09:00:02.000000Z', OTHER);
    expect(reconcile(input([inbound, other])).outcome).toBe('absent');
    // The reply's text without a user (the service need not name it) or by another: it may be this reply.
    for (const author of [null, OTHER]) {
      const echo = message('e', 'Thanks, fixed now.', '2026-01-05T09:00:01.000000Z', author);
      expect(reconcile(input([inbound, echo, other])).outcome).toBe('ambiguous');
    }
  });

  it('calls a recent reply by the user with another text ambiguous, never absent', () => {
    const altered = message('x', 'Thanks, fixed n…', '2026-01-05T09:00:01.000000Z');
    const verdict = reconcile(input([altered]));
    expect(verdict.outcome).toBe('ambiguous');
    expect(verdict.outcome === 'ambiguous' && verdict.reason).toMatch(/message x .*different text/);
  });

  it("a recent reply whose text is another unmatched row's of the ticket is that row's: this one is absent, not ambiguous", () => {
    const theirs = message('c', 'sibling C', '2026-01-05T09:00:03.000000Z');
    expect(reconcile(input([theirs])).outcome).toBe('ambiguous');
    expect(reconcile(input([theirs], { others: ['  sibling C\n', 'sibling B'] }))).toEqual({ outcome: 'absent' });
    // Another text beside it still makes this row's outcome unknown.
    const altered = message('d', 'Thanks, fixed', '2026-01-05T09:00:04.000000Z');
    expect(reconcile(input([theirs, altered], { others: ['sibling C'] })).outcome).toBe('ambiguous');
    // And this row's own text is found first, whatever the others are.
    const mine = message('e', 'Thanks, fixed now.', '2026-01-05T09:00:05.000000Z');
    expect(reconcile(input([theirs, mine], { others: ['sibling C', 'Thanks, fixed now.'] }))).toEqual({ outcome: 'posted', message: mine });
  });

  it('with the token user unknown, any agent counts: more ambiguous, never wrongly absent', () => {
    const other = message('o', 'Something else', '2026-01-05T09:00:02.000000Z', OTHER);
    expect(reconcile(input([other], { self: null })).outcome).toBe('ambiguous');
    const same = message('s', 'Thanks, fixed now.', '2026-01-05T09:00:03.000000Z', OTHER);
    expect(reconcile(input([other, same], { self: null }))).toEqual({ outcome: 'posted', message: same });
  });

  it('counts a message without a time as recent', () => {
    expect(reconcile(input([message('n', 'Thanks, fixed now.', null)])).outcome).toBe('posted');
  });
});

describe('outbox states', () => {
  it('allows only the documented transitions; sent and failed are final', () => {
    expect(canTransition('pending', 'sending')).toBe(true);
    expect(canTransition('pending', 'sent')).toBe(false);
    expect(canTransition('sending', 'pending')).toBe(true);
    expect(OUTBOX_TRANSITIONS.sent).toEqual([]);
    expect(OUTBOX_TRANSITIONS.failed).toEqual([]);
  });

  it('checks the text by the spec\'s rule to the letter: three characters as given, counted as characters', () => {
    expect(replyTextProblem('ok')).toMatch(/at least 3 characters long \(it has 2\)/);
    expect(replyTextProblem('👍👍')).toMatch(/it has 2/);
    // Blanks are characters: nothing is trimmed before the rule, as nothing is before the text is sent.
    expect(replyTextProblem('  ok \n')).toBeNull();
    expect(replyTextProblem('\tab')).toBeNull();
    expect(replyTextProblem('👍👍👍')).toBeNull();
    expect(replyTextProblem('yes')).toBeNull();
  });

  it('backs off exponentially, capped at 30 minutes', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map(recheckDelayMs)).toEqual([60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000, 1_800_000]);
  });

  it('after a check that could not read the ticket, waits as long again as the outcome has been unknown: 1 min to 1 h', () => {
    const MIN = 60_000;
    expect([0, 1, 2, 4, 8, 32, 64, 600].map((m) => checkAgainDelayMs(1, m * MIN) / MIN)).toEqual([1, 1, 2, 4, 8, 32, 60, 60]);
    expect(checkAgainDelayMs(3, MIN)).toBe(recheckDelayMs(3));
    // A clock set back makes the time unknown negative: the usual wait.
    expect(checkAgainDelayMs(1, -5 * MIN)).toBe(MIN);
  });
});

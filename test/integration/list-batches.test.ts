import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ListBody, scanListBody } from '../../src/api/listBody.ts';
import { queryRows, sql, type Db } from '../../src/db/connect.ts';
import { applyListDiff, loadMirrorForList, previousPolls } from '../../src/db/repos/lists.ts';
import { InvalidResponseError } from '../../src/errors.ts';
import { confirmShrink, diffList } from '../../src/sync/differ.ts';
import { LIST_BATCH, writeListPoll } from '../../src/sync/listPoll.ts';
import { parseListItems, Problems, UnstorableError } from '../../src/sync/mapping.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, virtualMirror } from '../helpers/mirror.ts';

/**
 * A list read and written a batch at a time (sync/listPoll.ts) leaves the very rows the whole-list diff leaves
 * (differ.ts diffList, confirmShrink, then applyListDiff: what a poll did before batches), and a body that turns out
 * unusable in a later batch changes nothing.
 */

const BATCH = 3;
const at = (minute: number) => `2026-01-05T12:${String(minute).padStart(2, '0')}:00.000001Z`;
const item = (n: number, extra: Record<string, unknown> = {}) => ({
  id: `T${String(n).padStart(4, '0')}`,
  name: `Customer ${n}`,
  email: `c${n}@example.com`,
  status: 'open',
  has_unread_messages: n % 2 === 0,
  created_at: `2026-01-01T00:00:${String(n % 60).padStart(2, '0')}.100000Z`,
  ...extra,
});
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => item(from + i));

/** The list's successive answers: first poll, changes in every batch, repeats across batches, leaves, a shrink twice. */
const POLLS: unknown[][] = [
  range(0, 20),
  [...range(0, 20).map((b, i) => (i % 4 === 1 ? { ...b, name: `${b.name} (renamed)` } : b)), item(21), item(22)],
  // A ticket listed twice in different batches, odd fields, and three that left (18, 19, 22).
  [item(5), ...range(0, 18), item(5, { name: 'second listing' }), item(21, { created_at: 'garbage', has_unread_messages: 'true' })],
  // Shrunk to 4: withheld once, applied when the next poll shows it again.
  range(0, 4),
  range(0, 4),
  [...range(0, 6), item(30)],
  // One ticket left.
  range(0, 6),
];

describe.each(backends)('a list in batches on $name', ({ open }) => {
  let whole: TestDatabase;
  let batched: TestDatabase;
  beforeAll(async () => {
    [whole, batched] = await Promise.all([open(), open()]);
  });
  afterAll(() => Promise.all([whole.destroy(), batched.destroy()]));

  /** The poll as the engine wrote it before batches: the whole list's diff in one go. */
  async function pollWhole(body: unknown[], minute: number) {
    const items = parseListItems(body, 'resolved', new Problems());
    return whole.db.transaction(async (tx) => {
      const before = await previousPolls(tx, 'resolved', at(minute));
      const mirror = await loadMirrorForList(tx, 'resolved', items);
      const diff = confirmShrink(diffList('resolved', items, mirror, at(minute), !before.polled), before.withheld);
      await applyListDiff(tx, diff);
      return diff;
    });
  }

  const bodyOf = (values: unknown[]) => scanListBody(Buffer.from(JSON.stringify(values)))!;

  it(`writes the rows, history and poll rows the whole-list diff writes (batches of ${BATCH})`, async () => {
    for (const [minute, body] of POLLS.entries()) {
      const diff = await pollWhole(body, minute);
      const poll = await batched.db.transaction((tx) => writeListPoll(tx, 'resolved', bodyOf(body), at(minute), new Problems(), BATCH));
      expect(poll, `poll ${minute}`).toEqual({
        listed: diff.unchanged.length + diff.writes.filter((w) => w.seen).length,
        written: diff.writes.length,
        writtenIds: expect.arrayContaining(diff.writes.map((w) => w.id)),
        changes: diff.changes,
        members: diff.members,
        withheld: diff.withheld,
      });
      expect(await dump(batched.db), `poll ${minute}`).toEqual(await dump(whole.db));
    }
    // The sequence did what it is meant to show.
    const polls = await queryRows<{ withheld: number }>(batched.db, sql`select withheld from list_polls order by id`);
    expect(polls.map((p) => p.withheld)).toEqual([0, 0, 0, 15, 0, 0, 0]);
  });

  it('changes nothing when a later batch is not JSON, or holds an item without an id', async () => {
    const before = await dump(batched.db);
    const good = JSON.stringify(range(0, 10)).slice(1, -1);
    const cases: Array<[ListBody, new (...args: never[]) => Error]> = [
      [scanListBody(Buffer.from(`[${good},{"id":"T0011","name":tru}]`))!, InvalidResponseError],
      [scanListBody(Buffer.from(`[${good},,{"id":"T0012"}]`))!, InvalidResponseError],
      [ListBody.of([...range(0, 10), { name: 'no id' }]), UnstorableError],
    ];
    for (const [body, error] of cases) {
      await expect(
        batched.db.transaction((tx) => writeListPoll(tx, 'resolved', body, at(40), new Problems(), BATCH)),
      ).rejects.toBeInstanceOf(error);
      expect(await dump(batched.db)).toEqual(before);
    }
  });
});

describe.each(backends)('the engine on $name, a list whose last batch is not JSON', { timeout: 180_000 }, ({ open }) => {
  it('writes none of the batches before it, and says the list failed', async () => {
    const database = await open();
    const m = await virtualMirror(database);
    try {
      // Backfilled first: the details fetched meanwhile change nothing after that.
      await m.runUntil(
        async () =>
          (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 &&
          (await count(m.db, sql`select count(*)::int as n from tickets where detail_synced_at is null and deleted_at is null`)) === 0,
      );
      const before = await mirrorAsTruth(m.db);
      const polls = () => count(m.db, sql`select count(*)::int as n from list_polls where list = 'resolved'`);
      const pollsBefore = await polls();
      // More than a batch of new tickets, then an element that is no JSON: complete brackets, so the client takes it.
      const filler = JSON.stringify(range(0, LIST_BATCH + 10)).slice(1, -1);
      m.sim.faults.inject({
        kind: 'answer',
        match: '/api/v1/tickets/resolved',
        answer: { status: 200, headers: { 'content-type': 'application/json' }, body: `[${filler},{"id":"Bad00001","name":nope}]` },
        times: 1000,
      });
      const failed: string[] = [];
      const polled: string[] = [];
      m.engine.events.on('list:failed', ({ list, error }) => failed.push(`${list}: ${error.name}`));
      m.engine.events.on('list:polled', ({ list }) => polled.push(list));
      await m.runUntil(async () => failed.length >= 2);
      for (const line of failed) expect(line).toBe('resolved: InvalidResponseError');
      expect(polled).not.toContain('resolved');
      expect(await polls()).toBe(pollsBefore);
      expect(await mirrorAsTruth(m.db)).toEqual(before);
    } finally {
      await m.close();
      await database.destroy();
    }
  });
});

async function dump(db: Db): Promise<unknown> {
  const ts = (c: string) => sql.raw(`to_char(${c} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ${c}`);
  return {
    tickets: await queryRows(
      db,
      sql`select id, name, email, status, has_unread_messages, ${ts('created_at')}, in_open, in_self, in_unassigned, in_resolved,
        ${ts('first_seen_at')}, ${ts('last_seen_at')}, ${ts('detail_due_since')}, ${ts('missing_since')}, ${ts('deleted_at')},
        ${ts('state_seen_at')} from tickets order by id`,
    ),
    history: await queryRows(
      db,
      sql`select ticket_id, status, in_resolved, ${ts('valid_from')}, ${ts('valid_to')}, ${ts('changed_after')}
        from ticket_history order by ticket_id, valid_from`,
    ),
    polls: await queryRows(db, sql`select list, ${ts('at')}, items, changes, withheld from list_polls order by at`),
  };
}

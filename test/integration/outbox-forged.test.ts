import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { claimedMessageIds, tokenUser } from '../../src/db/repos/outbox.ts';
import { createLogger } from '../../src/logger.ts';
import { deliverOutbox, type OutboxHooks } from '../../src/outbox/deliver.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * A row INSERTed with columns only the daemon writes (issue 11, defect 9): the grant-reader role cannot (see
 * grant-reader.test.ts), but the owner, or a tool with its login, can. Such a row is never delivered, and nothing in it
 * is trusted — not its message_id by reconciliation, nor its author as the token's user.
 */

const MINUTE = 60_000;
const logger = createLogger('silent');

/** A simulated kill: the deliverer's process is gone at that point. */
class Killed extends Error {}

describe.each(backends)('forged reply_outbox rows on $name', ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  let ticketId: string;

  const deliver = (hooks?: OutboxHooks) => deliverOutbox({ db: m.db, client: m.engine.client, clock: m.clock, logger, ...(hooks ? { hooks } : {}) });
  const row = async (id: number) => {
    const [r] = await queryRows<{ state: string; inserted_as: string; message_id: string | null; error: string | null; attempts: number; next_attempt_at: string | null }>(
      m.db,
      sql`select state, inserted_as, message_id, error, attempts, next_attempt_at from reply_outbox where id = ${id}`,
    );
    return r!;
  };
  const insert = async (columns: string, values: ReturnType<typeof sql>) => {
    const [r] = await queryRows<{ id: number }>(m.db, sql`insert into reply_outbox (${sql.raw(columns)}) values (${values}) returning id`);
    return Number(r!.id);
  };

  beforeEach(async () => {
    database = await open();
    m = await virtualMirror(database);
    ticketId = m.sim.model.randomTicketId('open')!;
  });
  afterEach(async () => {
    await m.close();
    await database.destroy();
  });

  it('a row inserted as sent, with a message_id and next_attempt_at = infinity, is kept as failed and forged, its columns cleared', async () => {
    const id = await insert(
      'ticket_id, message, state, message_id, sent_at, next_attempt_at',
      sql`${ticketId}, ${'Never asked for.'}, 'sent', 'M-forged', now(), 'infinity'`,
    );
    expect(await row(id)).toEqual({
      state: 'failed',
      inserted_as: 'forged',
      message_id: null,
      attempts: 0,
      next_attempt_at: null,
      error: expect.stringMatching(/^inserted with state, message_id, sent_at, next_attempt_at set, which only ticket-mirror writes.*never delivered/),
    });
    // A plain request, and one that names its own requested_at, are requests.
    const plain = await insert('ticket_id, message', sql`${ticketId}, ${'A real request.'}`);
    const dated = await insert('ticket_id, message, requested_at', sql`${ticketId}, ${'Another request.'}, now()`);
    expect(await row(plain)).toMatchObject({ state: 'pending', inserted_as: 'request', error: null });
    expect(await row(dated)).toMatchObject({ state: 'pending', inserted_as: 'request' });
    // Not even a row that claims to be a request.
    const claiming = await insert('ticket_id, message, inserted_as, attempts', sql`${ticketId}, ${'Trust me.'}, 'request', 3`);
    expect(await row(claiming)).toMatchObject({ state: 'failed', inserted_as: 'forged' });
  });

  it("a forged row's message_id does not hide a posted reply from reconciliation: the reply is found, not posted again", async () => {
    const text = 'Your refund is on its way.';
    const id = await insert('ticket_id, message', sql`${ticketId}, ${text}`);
    let posted = '';
    await expect(
      deliver({
        afterPost: (_row, reply) => {
          posted = reply.id;
          throw new Killed();
        },
      }),
    ).rejects.toBeInstanceOf(Killed);
    // The reply is at the service; its row is left sending. Someone inserts a row claiming that message for itself …
    const forged = await insert('ticket_id, message, state, message_id', sql`${ticketId}, ${'Not this one.'}, 'sent', ${posted}`);
    expect(await row(forged)).toMatchObject({ state: 'failed', inserted_as: 'forged', message_id: null });
    // Even were the message_id and the state put back with the owner's rights after the trigger, the row stays
    // untrusted (tried in a transaction that is rolled back: the unique message_id would stop the real row's update).
    class Rollback extends Error {}
    await expect(
      m.db.transaction(async (tx) => {
        await tx.execute(sql`update reply_outbox set state = 'sent', message_id = ${posted} where id = ${forged}`);
        await tx.execute(sql`insert into tickets (id, first_seen_at, last_seen_at) values (${ticketId}, now(), now()) on conflict do nothing`);
        await tx.execute(sql`insert into messages (id, ticket_id, message, author) values (${posted}, ${ticketId}, ${'Your refund is on its way.'}, '{"id":"customer"}')`);
        expect(await claimedMessageIds(tx, ticketId)).toEqual(new Set());
        // Nor is the author of the message a forged sent row names taken for the token's user.
        expect(await tokenUser(tx)).toBeNull();
        throw new Rollback();
      }),
    ).rejects.toBeInstanceOf(Rollback);

    await m.restart();
    m.clock.advance(2 * MINUTE + 1);
    expect(await deliver()).toEqual({ sent: 1, failed: 0, waiting: 0 });
    expect(await row(id)).toMatchObject({ state: 'sent', message_id: posted });
    expect(m.sim.log.filter((r) => r.method === 'POST')).toHaveLength(1);
    expect(m.sim.model.detail(ticketId)!.messages.filter((msg) => msg.message === text)).toHaveLength(1);
  });

  it('a row inserted in any state but pending is never posted, nor checked — not even once set back to pending', async () => {
    const sending = await insert('ticket_id, message, state, sending_since, next_attempt_at', sql`${ticketId}, ${'Due since an hour.'}, 'sending', now(), now() - interval '1 hour'`);
    const pendingWithId = await insert('ticket_id, message, message_id', sql`${ticketId}, ${'Pending, but claims a message.'}, 'M-1'`);
    const failed = await insert('ticket_id, message, state', sql`${ticketId}, ${'Failed from the start.'}, 'failed'`);
    for (const id of [sending, pendingWithId, failed]) expect(await row(id)).toMatchObject({ state: 'failed', inserted_as: 'forged' });
    await m.db.execute(sql`update reply_outbox set state = 'pending' where id in (${sending}, ${failed})`);
    for (let run = 0; run < 4; run++) {
      expect(await deliver()).toEqual({ sent: 0, failed: 0, waiting: 0 });
      m.clock.advance(31 * MINUTE);
    }
    expect(m.sim.log).toHaveLength(0);
  });
});

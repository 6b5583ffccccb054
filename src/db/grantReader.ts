import { queryRows, quoteIdent, sql, type Db } from './connect.ts';

/**
 * A read-only login for BI tools and people with psql: it may read every table and view of the mirror's schema, and
 * INSERT `(ticket_id, message)` into `reply_outbox` (the contract's way for a user or tool to ask for a reply), nothing
 * else — no other column, no UPDATE, no DELETE, no DDL. Tables and views the migrating user creates later are
 * readable too (default privileges), so a new migration needs no new grant.
 *
 * The role is created with LOGIN and no password: the operator sets one with `alter role <role> password '…'`
 * (or lets pg_hba's other methods decide). An existing role is left as it is, only granted to (a table-wide INSERT an
 * earlier version gave it is narrowed to the two columns).
 *
 * PostgreSQL only: the embedded database has a single superuser and no authentication, so a role there restricts
 * nothing.
 */

/** Lower-case SQL identifiers only, so the name needs no quoting in the operator's own `alter role` either. */
const ROLE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export class InvalidRoleNameError extends Error {
  override name = 'InvalidRoleNameError';
  constructor(readonly role: string) {
    super(
      `role name ${JSON.stringify(role)} is not a lower-case SQL identifier (letters, digits and _, at most 63, not starting with a digit or pg_)`,
    );
  }
}

export function assertRoleName(role: string): void {
  // pg_ is reserved for PostgreSQL's own roles; public is the pseudo-role every role belongs to.
  if (!ROLE_NAME.test(role) || role.startsWith('pg_') || role === 'public') throw new InvalidRoleNameError(role);
}

export interface GrantReaderResult {
  role: string;
  /** False when the role existed already. */
  created: boolean;
}

export async function grantReader(db: Db, schema: string, role: string): Promise<GrantReaderResult> {
  assertRoleName(role);
  const r = sql.raw(quoteIdent(role));
  const s = sql.raw(quoteIdent(schema));
  return db.transaction(async (tx) => {
    const [existing] = await queryRows<{ n: number }>(tx, sql`select count(*)::int as n from pg_roles where rolname = ${role}`);
    const created = existing!.n === 0;
    // A concurrent grant-reader may create it between the check and here; its duplicate_object error then aborts this
    // transaction, and running the command again finds the role.
    if (created) await tx.execute(sql`create role ${r} login`);
    // So that its queries name the tables alone (`select * from tickets`), as on `public`. A role that existed keeps
    // its own search_path: it may serve other schemas too.
    if (created && schema !== 'public') await tx.execute(sql`alter role ${r} set search_path = ${s}, public`);
    await tx.execute(sql`grant usage on schema ${s} to ${r}`);
    await tx.execute(sql`grant select on all tables in schema ${s} to ${r}`);
    // For the objects the current (migrating) user creates from now on in this schema.
    await tx.execute(sql`alter default privileges in schema ${s} grant select on tables to ${r}`);
    // The one write: asking for a reply, with its ticket and text alone — every other column is the daemon's (a
    // state, a message_id or a next_attempt_at would feed the deliverer and reconciliation). A table-wide INSERT that
    // an earlier version granted goes first. The id default calls nextval, which needs USAGE on the sequence.
    await tx.execute(sql`revoke insert on table ${s}.reply_outbox from ${r}`);
    await tx.execute(sql`grant insert (ticket_id, message) on table ${s}.reply_outbox to ${r}`);
    const [sequence] = await queryRows<{ name: string | null }>(
      tx,
      sql`select pg_get_serial_sequence(${`${quoteIdent(schema)}.reply_outbox`}, 'id') as name`,
    );
    if (!sequence?.name) throw new Error(`reply_outbox.id in schema ${schema} has no sequence; is the schema migrated?`);
    await tx.execute(sql`grant usage on sequence ${sql.raw(sequence.name)} to ${r}`);
    return { role, created };
  });
}

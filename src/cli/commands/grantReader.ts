import { openDatabase } from '../../db/connect.ts';
import { logViewsRestored } from '../../db/repos/views.ts';
import { ConfigError } from '../../errors.ts';
import { assertRoleName, grantReader, InvalidRoleNameError } from '../../db/grantReader.ts';
import { getAccount, refreshFleetViews } from '../../db/repos/accounts.ts';
import { checkAccountName } from './accounts.ts';
import { withDatabase, type CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';
import { withFleetDatabase } from '../fleetContext.ts';

/**
 * `grant-reader <role>`: migrate, then create (if missing) a login role that may read the mirror's tables and views
 * and insert (ticket_id, message) into reply_outbox, nothing more. Needs DATABASE_URL: the embedded database has no roles worth the name.
 */
export async function grantReaderCommand(ctx: CommandContext, role: string, options: { account?: string } = {}): Promise<void> {
  try {
    assertRoleName(role);
  } catch (error) {
    if (error instanceof InvalidRoleNameError) throw new ConfigError([error.message]);
    throw error;
  }
  if (options.account !== undefined) return grantAccountReader(ctx, role, checkAccountName(options.account));
  if (!ctx.config.databaseUrl) {
    throw new ConfigError([
      'grant-reader needs DATABASE_URL: the embedded database has a single superuser and no authentication, so a read-only role would restrict nothing',
    ]);
  }
  await withDatabase(ctx.config, async (database) => {
    logViewsRestored(ctx.logger, await database.migrate());
    const { created } = await grantReader(database.db, database.schema, role);
    ctx.logger.info({ role, schema: database.schema, created }, 'read-only role granted');
    process.stdout.write(
      `${created ? 'created' : 'updated'} role ${role}: it may SELECT every table and view of schema ${database.schema} and INSERT (ticket_id, message) into reply_outbox.\n` +
        (created ? `It has no password yet: alter role ${role} password '...';\n` : ''),
    );
  });
}

/**
 * `grant-reader ROLE --account NAME`: the same role on one fleet account's schema (migrated first, as above), and
 * nothing else — no privilege on the fleet's control schema (accounts, the views across accounts) nor on any other
 * account's schema: a reader of one client's helpdesk sees that client only.
 */
async function grantAccountReader(ctx: CommandContext, role: string, name: string): Promise<void> {
  const { config } = ctx;
  await withFleetDatabase(config, 'grant-reader --account', async (fleet) => {
    const account = await getAccount(fleet.db, name);
    if (!account) throw new ExitError(`no account ${name} in this fleet (ticket-mirror accounts list)`, EXIT.failure);
    const database = await openDatabase({ databaseUrl: fleet.databaseUrl, schema: account.schemaName, report: config.report, poolSize: 1 });
    try {
      logViewsRestored(ctx.logger.child({ account: name }), await database.migrate());
      const { created } = await grantReader(database.db, database.schema, role);
      ctx.logger.info({ role, account: name, schema: database.schema, created }, 'read-only role granted');
      process.stdout.write(
        `${created ? 'created' : 'updated'} role ${role}: it may SELECT every table and view of account ${name}'s schema ${database.schema} and INSERT (ticket_id, message) into its reply_outbox, nothing of any other account or of ${fleet.schema}.\n` +
          (created ? `It has no password yet: alter role ${role} password '...';\n` : ''),
      );
    } finally {
      await database.close();
    }
    // The schema may have been migrated just now: the views across the fleet take it in.
    await refreshFleetViews(fleet.db);
  });
}

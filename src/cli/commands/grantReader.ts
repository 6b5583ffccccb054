import { ConfigError } from '../../errors.ts';
import { assertRoleName, grantReader, InvalidRoleNameError } from '../../db/grantReader.ts';
import { withDatabase, type CommandContext } from '../context.ts';

/**
 * `grant-reader <role>`: migrate, then create (if missing) a login role that may read the mirror's tables and views
 * and insert (ticket_id, message) into reply_outbox, nothing more. Needs DATABASE_URL: the embedded database has no roles worth the name.
 */
export async function grantReaderCommand(ctx: CommandContext, role: string): Promise<void> {
  try {
    assertRoleName(role);
  } catch (error) {
    if (error instanceof InvalidRoleNameError) throw new ConfigError([error.message]);
    throw error;
  }
  if (!ctx.config.databaseUrl) {
    throw new ConfigError([
      'grant-reader needs DATABASE_URL: the embedded database has a single superuser and no authentication, so a read-only role would restrict nothing',
    ]);
  }
  await withDatabase(ctx.config, async (database) => {
    await database.migrate();
    const { created } = await grantReader(database.db, database.schema, role);
    ctx.logger.info({ role, schema: database.schema, created }, 'read-only role granted');
    process.stdout.write(
      `${created ? 'created' : 'updated'} role ${role}: it may SELECT every table and view of schema ${database.schema} and INSERT (ticket_id, message) into reply_outbox.\n` +
        (created ? `It has no password yet: alter role ${role} password '...';\n` : ''),
    );
  });
}

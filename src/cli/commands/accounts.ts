import { configWarnings, maskSecrets, parseApiUrl } from '../../config/loadConfig.ts';
import { decodeFleetKey } from '../../config/fleetKey.ts';
import type { Tx } from '../../db/connect.ts';
import { ACCOUNT_NAME_PATTERN, SCHEMA_NAME_PATTERN } from '../../db/fleetSchema.ts';
import {
  AccountExistsError,
  announceAccount,
  deleteAccount,
  dropAccountSchema,
  getAccount,
  insertAccount,
  listAccounts,
  replaceSealedToken,
  schemaExists,
  setPaused,
  tryLockAccountSchema,
  type Account,
} from '../../db/repos/accounts.ts';
import { ConfigError } from '../../errors.ts';
import { safeText, withoutControlCharacters } from '../../logger.ts';
import { keyIdOf, openToken, SealError, sealedKeyId, sealToken, type FleetKey } from '../../fleet/tokenSeal.ts';
import type { CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';
import { requireFleetDatabaseAndKey, requireFleetKey, withFleetDatabase } from '../fleetContext.ts';
import { readToken, type TokenSource } from '../tokenInput.ts';

/**
 * `ticket-mirror accounts add|list|pause|resume|remove|seal|rekey`: the fleet's accounts (the rows of
 * `<FLEET_SCHEMA>.accounts`, db/repos/accounts.ts). Everything here can be done through SQL as well; the commands add
 * what SQL cannot: a token sealed under FLEET_KEY, names and URLs checked, a schema dropped safely.
 * Exit codes: 0 done; 2 a bad name, URL, limit or token source, no DATABASE_URL, no FLEET_KEY where a token is sealed;
 * 1 an unknown account, a name or schema taken, an account being synced when its data would be dropped.
 */

export const DEFAULT_LIMITS = { dailyLimit: 1440, minuteLimit: 60, reserve: 0.1 } as const;

export function checkAccountName(name: string): string {
  if (!new RegExp(ACCOUNT_NAME_PATTERN).test(name)) {
    throw new ConfigError([
      `account name ${JSON.stringify(name)} must be lower-case letters, digits and _, start with a letter, and be at most 40 long`,
    ]);
  }
  return name;
}

function checkSchemaName(schema: string, fleetSchema: string): string {
  if (!new RegExp(SCHEMA_NAME_PATTERN).test(schema) || schema.startsWith('pg_') || schema === 'information_schema') {
    throw new ConfigError([`--schema ${JSON.stringify(schema)} must be a lower-case SQL identifier (letters, digits, _), not pg_…`]);
  }
  if (schema === fleetSchema || schema === `${fleetSchema}_jobs`) {
    throw new ConfigError([`--schema ${schema} is the fleet's own (FLEET_SCHEMA=${fleetSchema}): an account's mirror needs a schema of its own`]);
  }
  return schema;
}

function positiveInt(value: string | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\s*\d+\s*$/.test(value) || !Number.isSafeInteger(n) || n <= 0) throw new ConfigError([`${option} ${JSON.stringify(value)} must be a whole number above 0`]);
  return n;
}

function reserveOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LIMITS.reserve;
  const n = Number(value);
  // As API_RESERVE: a reserve of the whole quota would leave the account nothing.
  if (value.trim() === '' || !Number.isFinite(n) || n < 0 || n > 0.9) throw new ConfigError([`--reserve ${JSON.stringify(value)} must be between 0 and 0.9`]);
  return n;
}

export interface AddOptions extends TokenSource {
  apiUrl: string;
  dailyLimit?: string;
  minuteLimit?: string;
  reserve?: string;
  schema?: string;
  paused?: boolean;
}

export async function accountsAdd(ctx: CommandContext, name: string, options: AddOptions): Promise<void> {
  const { config, logger } = ctx;
  // Every check that needs no database and no token first, so that a mistake costs no prompt.
  checkAccountName(name);
  const api = parseApiUrl(options.apiUrl, '--api-url');
  const schema = checkSchemaName(options.schema ?? `tm_${name}`, config.fleetSchema);
  const limits = {
    dailyLimit: positiveInt(options.dailyLimit, '--daily-limit', DEFAULT_LIMITS.dailyLimit),
    minuteLimit: positiveInt(options.minuteLimit, '--minute-limit', DEFAULT_LIMITS.minuteLimit),
    reserve: reserveOf(options.reserve),
  };
  const { key } = requireFleetDatabaseAndKey(config, 'accounts add');
  const token = await readToken(options);
  const tokenSealed = sealToken(key, name, token);
  if (api.note) logger.info(api.note);
  for (const warning of configWarnings({ apiUrl: api.url }, '--api-url')) logger.warn(warning);

  const existed = await withFleetDatabase(config, 'accounts add', (fleet) =>
    fleet.db.transaction(async (tx) => {
      try {
        await insertAccount(tx, { name, schemaName: schema, apiUrl: api.url, tokenSealed, ...limits, pausedAt: options.paused ? new Date().toISOString() : null });
      } catch (error) {
        if (error instanceof AccountExistsError) throw new ExitError(error.message, EXIT.failure);
        throw error;
      }
      if (!options.paused) await announceAccount(tx, fleet.schema, name);
      return schemaExists(tx, schema);
    }),
  );
  process.stdout.write(
    `added account ${name}: ${maskSecrets(api.url)}, schema ${schema}${existed ? ' (it exists: its tables are used as they are)' : ''}, ` +
      `${limits.dailyLimit}/day, ${limits.minuteLimit}/min, reserve ${limits.reserve}, token sealed with key ${key.id}\n` +
      (options.paused ? `It is paused: ticket-mirror accounts resume ${name}\n` : 'A fleet worker (ticket-mirror fleet run) picks it up.\n'),
  );
}

/** What `accounts list --json` shows of an account: everything but the sealed token, and the key id it names. */
export function accountView(a: Account, key: Pick<FleetKey, 'id'> | undefined) {
  const { tokenSealed, apiUrl, ...rest } = a;
  const keyId = sealedKeyId(tokenSealed);
  // The row's text is anyone's with SQL on the fleet schema: shown as fleet status shows it, no control character (a
  // terminal's escapes, an OSC 8 link) and no secret (a bearer token in last_error).
  return {
    ...rest,
    apiUrl: withoutControlCharacters(maskSecrets(apiUrl)),
    lastError: rest.lastError === null ? null : safeText(rest.lastError),
    worker: rest.worker === null ? null : safeText(rest.worker),
    keyId,
    keyIsFleetKey: key ? keyId === key.id : null,
  };
}

export async function accountsList(ctx: CommandContext, options: { json?: boolean }): Promise<void> {
  const { config } = ctx;
  // The key is optional here: with it, the list says which tokens it opens.
  const key = config.fleetKey ? { id: keyIdOf(decodeFleetKey(config.fleetKey)!) } : undefined;
  const accounts = await withFleetDatabase(config, 'accounts list', (fleet) => listAccounts(fleet.db));
  const views = accounts.map((a) => accountView(a, key));
  if (options.json) {
    process.stdout.write(`${JSON.stringify(views, null, 2)}\n`);
    return;
  }
  if (views.length === 0) {
    process.stdout.write(`no accounts in ${config.fleetSchema}.accounts yet: ticket-mirror accounts add NAME --api-url URL --token-stdin\n`);
    return;
  }
  const rows = views.map((v) => [
    v.name,
    v.schemaName,
    v.pausedAt ? `paused` : v.state,
    `${v.dailyLimit}/d ${v.minuteLimit}/m r${v.reserve}`,
    `${v.keyId ?? '?'}${v.keyIsFleetKey === false ? ' (not FLEET_KEY)' : ''}`,
    v.lastPassAt ?? '-',
    v.apiUrl,
    v.lastError ? v.lastError.slice(0, 80) : '',
  ]);
  const header = ['NAME', 'SCHEMA', 'STATE', 'LIMITS', 'KEY', 'LAST PASS', 'API', 'LAST ERROR'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`${[line(header), ...rows.map(line)].join('\n')}\n`);
}

async function mustGet(tx: Tx, name: string): Promise<Account> {
  const account = await getAccount(tx, name);
  if (!account) throw new ExitError(`no account ${name} in this fleet (ticket-mirror accounts list)`, EXIT.failure);
  return account;
}

export async function accountsPause(ctx: CommandContext, name: string): Promise<void> {
  checkAccountName(name);
  const message = await withFleetDatabase(ctx.config, 'accounts pause', (fleet) =>
    fleet.db.transaction(async (tx) => {
      const account = await mustGet(tx, name);
      if (account.pausedAt) return `account ${name} is paused already (since ${account.pausedAt})`;
      await setPaused(tx, name, new Date().toISOString());
      return `paused account ${name}: no request is sent for it from its next pass on (a pass under way ends first)`;
    }),
  );
  process.stdout.write(`${message}\n`);
}

export async function accountsResume(ctx: CommandContext, name: string): Promise<void> {
  checkAccountName(name);
  const message = await withFleetDatabase(ctx.config, 'accounts resume', (fleet) =>
    fleet.db.transaction(async (tx) => {
      const account = await mustGet(tx, name);
      if (!account.pausedAt) return `account ${name} is not paused`;
      await setPaused(tx, name, null);
      await announceAccount(tx, fleet.schema, name);
      return `resumed account ${name}${account.state === 'auth_failed' ? ' (its token was refused last time: if it still is, accounts remove and add it with a new one)' : ''}`;
    }),
  );
  process.stdout.write(`${message}\n`);
}

export async function accountsRemove(ctx: CommandContext, name: string, options: { dropData?: boolean }): Promise<void> {
  const { config } = ctx;
  checkAccountName(name);
  const message = await withFleetDatabase(config, 'accounts remove', (fleet) =>
    fleet.db.transaction(async (tx) => {
      const account = await mustGet(tx, name);
      const schema = account.schemaName;
      if (options.dropData) {
        // An adopted single-account mirror lives in public, with whatever else is there; the fleet's own schemas are not an account's.
        if (schema === 'public' || schema === config.fleetSchema || schema === `${config.fleetSchema}_jobs`) {
          throw new ConfigError([
            `account ${name}'s mirror is in schema ${schema}, which --drop-data does not drop: remove the account without it, then drop what you want of ${schema} yourself`,
          ]);
        }
        // No pass of the account may be under way while its tables go: the lock a pass holds (as `run` does) is taken here until commit.
        if (!(await tryLockAccountSchema(tx, schema))) {
          throw new ExitError(
            `account ${name} is being synced right now (a worker or a run holds schema ${schema}): pause it (accounts pause ${name}), let the pass end, then remove it`,
            EXIT.failure,
          );
        }
      }
      await deleteAccount(tx, name);
      if (options.dropData) await dropAccountSchema(tx, schema);
      return options.dropData
        ? `removed account ${name} and dropped schema ${schema} with its data`
        : `removed account ${name}; its data stays in schema ${schema} (drop it with: drop schema ${schema} cascade)`;
    }),
  );
  process.stdout.write(`${message}\n`);
}

/** `accounts seal NAME`: the token from stdin, sealed for NAME, as `\x…` for `'\x…'::bytea` in an SQL insert. */
export async function accountsSeal(ctx: CommandContext, name: string): Promise<void> {
  checkAccountName(name);
  const key = requireFleetKey(ctx.config, 'accounts seal');
  const token = await readToken({ tokenStdin: true });
  process.stdout.write(`\\x${sealToken(key, name, token).toString('hex')}\n`);
}

/**
 * `accounts rekey --old-key-env VAR`: every token sealed with the key in $VAR sealed again with FLEET_KEY, in one
 * transaction. Tokens sealed with FLEET_KEY already are left; any other key stops it, nothing changed.
 */
export async function accountsRekey(ctx: CommandContext, options: { oldKeyEnv: string }): Promise<void> {
  const { config } = ctx;
  const key = requireFleetKey(config, 'accounts rekey');
  const oldText = /^[A-Za-z_][A-Za-z0-9_]*$/.test(options.oldKeyEnv) ? process.env[options.oldKeyEnv] : undefined;
  const oldBytes = oldText === undefined ? null : decodeFleetKey(oldText);
  if (!oldBytes) throw new ConfigError([`--old-key-env ${options.oldKeyEnv}: no such variable, or not a key (32 bytes as base64 or hex)`]);
  const old: FleetKey = { key: oldBytes, id: keyIdOf(oldBytes) };
  const counts = await withFleetDatabase(config, 'accounts rekey', (fleet) =>
    fleet.db.transaction(async (tx) => {
      let resealed = 0;
      let current = 0;
      for (const account of await listAccounts(tx)) {
        if (sealedKeyId(account.tokenSealed) === key.id) {
          current++;
          continue;
        }
        let token: string;
        try {
          token = openToken(old, account.name, account.tokenSealed);
        } catch (error) {
          if (error instanceof SealError) throw new ExitError(`${error.message}; nothing was changed`, EXIT.failure);
          throw error;
        }
        await replaceSealedToken(tx, account.name, sealToken(key, account.name, token));
        resealed++;
      }
      return { resealed, current };
    }),
  );
  process.stdout.write(`sealed ${counts.resealed} token(s) again from key ${old.id} to key ${key.id}; ${counts.current} had key ${key.id} already\n`);
}

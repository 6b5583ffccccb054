import { Command, InvalidArgumentError, Option } from 'commander';
import { loadConfig } from '../config/loadConfig.ts';
import { logViewsRestored } from '../db/repos/views.ts';
import { ConfigError, coerceError, safeErrorMessage } from '../errors.ts';
import { scrubSecrets, withoutControlCharacters } from '../logger.ts';
import { VERSION } from '../version.ts';
import { addCommandHelp } from './commandHelp.ts';
import type { AddOptions } from './commands/accounts.ts';
import { commandContext, withDatabase } from './context.ts';
import { EXIT, ExitError } from './exit.ts';
import { explainFailure, type FailureSettings } from './explainFailure.ts';
import { releaseHeldSignals, takeHeldSignals } from './heldSignals.ts';
import { refuseWhileHeld } from './whileHeld.ts';

/**
 * `ticket-mirror`: the command line of the public contract. Exit codes: 0 ok; 2 configuration or authentication
 * problems (one clear line, no stack trace, see explainFailure); 1 anything else, an unknown command or option too.
 */

function portNumber(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number (0-65535)');
  return n;
}

function positive(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a whole number from 1');
  return n;
}

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new InvalidArgumentError('must be a whole number');
  return n;
}

/** The commands that listen for SIGTERM and SIGINT themselves, and take those that came while the command line loaded. */
const LISTENING: ReadonlySet<string> = new Set(['run', 'demo', 'simulator', 'fleet run']);

/** `fleet run` for the command `run` under `fleet`: the names from the program's down to this one. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c?.parent; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

export function buildProgram(): Command {
  const program = new Command('ticket-mirror')
    .description('Mirror the Support Ticket API into PostgreSQL, within its request quota, for plain-SQL reporting.')
    .version(VERSION, '-V, --version', 'print the version')
    .showHelpAfterError('(run `ticket-mirror --help` for the commands)')
    .showSuggestionAfterError(true)
    // Commander echoes an unknown `--option=value` whole, and the value may be a secret typed where no option takes one
    // (`accounts add … --token=…`): it is cut from the message. Subcommands inherit this.
    .configureOutput({ outputError: (text, write) => write(withoutOptionValues(text)) })
    // Before the commands are added, so that they inherit it: a parse error throws (main sets the exit code to 1).
    .exitOverride()
    .hook('preAction', (_program, action) => {
      // A command that does not listen for SIGTERM and SIGINT gets their default action back (see heldSignals.ts).
      if (!LISTENING.has(commandPath(action))) releaseHeldSignals();
      // A command that must write stops before it starts, saying what to do, while `run` holds the embedded database.
      refuseWhileHeld(action.name());
    });

  program
    .command('migrate')
    .description('apply database migrations (a no-op when the schema is current)')
    .action(async () => {
      const { config, logger } = commandContext();
      await withDatabase(
        config,
        async (database) => {
          logViewsRestored(logger, await database.migrate());
          logger.info({ backend: database.kind, schema: database.schema }, 'database schema is current');
        },
        logger,
      );
    });

  program
    .command('run')
    .description('migrate, then keep the mirror in sync on a schedule until SIGTERM/SIGINT')
    .action(async () => {
      const { runCommand } = await import('./commands/run.ts');
      await runCommand(commandContext({ requireApi: true }));
    });

  program
    .command('sync')
    .description('one pass: poll the lists it needs, diff, fetch changed details within the budget, send pending replies')
    .action(async () => {
      const { syncCommand } = await import('./commands/sync.ts');
      await syncCommand(commandContext({ requireApi: true }));
    });

  program
    .command('rebuild')
    .description('re-derive tickets, messages and attachments from the stored raw payloads, without any request')
    .action(async () => {
      const { rebuildCommand } = await import('./commands/rebuild.ts');
      await rebuildCommand(commandContext());
    });

  program
    .command('reply')
    .description('post a reply to a ticket now, record it, and print the new message id (message "-" reads stdin)')
    .argument('<ticket-id>', 'the ticket to answer')
    .argument('<message>', 'the reply text, at least 3 characters; "-" reads it from standard input')
    .action(async (ticketId: string, message: string) => {
      const { replyCommand } = await import('./commands/reply.ts');
      await replyCommand(commandContext({ requireApi: true }), ticketId, message);
    });

  program
    .command('attachment')
    .description('print a fresh signed link to an attachment (one detail request), or download the file; the link is never stored')
    .argument('<attachment-id>', 'the attachment, as in attachments.id')
    .option('--download <path>', 'save the file there (into a folder: under its own name) instead of printing the link')
    .action(async (attachmentId: string, options: { download?: string }) => {
      const { attachmentCommand } = await import('./commands/attachment.ts');
      await attachmentCommand(commandContext({ requireApi: true }), attachmentId, options);
    });

  program
    .command('check')
    .description('check the configuration, the database, the API and the token, with one request at most')
    .action(async () => {
      const { checkCommand } = await import('./commands/check.ts');
      await checkCommand();
    });

  program
    .command('status')
    .description('budget used in the last 24 h and minute, last sync, counts, backfill progress and ETA, freshness')
    .option('--json', 'print JSON instead of text')
    .action(async (options: { json?: boolean }) => {
      const { statusCommand } = await import('./commands/status.ts');
      await statusCommand(commandContext(), options);
    });

  program
    .command('report')
    .description('write the support report (the page /report serves) for a period as one self-contained HTML file')
    .requiredOption('--out <file>', 'the HTML file to write ("-" for standard output)')
    .option('--from <date>', 'first day, YYYY-MM-DD (default: 27 days before --to)')
    .option('--to <date>', 'last day, YYYY-MM-DD (default: today in REPORT_TIMEZONE)')
    .action(async (options: { out: string; from?: string; to?: string }) => {
      const { reportCommand } = await import('./commands/report.ts');
      await reportCommand(commandContext(), options);
    });

  program
    .command('grant-reader')
    .description('create (if missing) a login role that may read every table and view and insert into reply_outbox')
    .argument('<role>', 'role name: a lower-case SQL identifier')
    .option('--account <name>', "a fleet account's schema instead of DB_SCHEMA (and nothing of the fleet's own schema)")
    .action(async (role: string, options: { account?: string }) => {
      const { grantReaderCommand } = await import('./commands/grantReader.ts');
      await grantReaderCommand(commandContext(), role, options);
    });

  addAccountsCommand(program);
  addFleetCommand(program);

  program
    .command('simulator')
    .description('serve the built-in fake Support Ticket API, for demos and tests')
    .option('--port <n>', 'port of the API', portNumber, 8080)
    .option('--seed <s>', 'seed of the generated data', integer, 1)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--accounts <n>', 'serve N accounts, tokens sim-token-1 … sim-token-N, each its own data and limits', integer)
    .action(async (options: { port: number; seed: number; host: string; accounts?: number }) => {
      const { runSimulatorCommand } = await import('../simulator/cli.ts');
      // A signal that came while the command line loaded stops it as soon as it has started (see heldSignals.ts).
      const held = takeHeldSignals().length > 0;
      await runSimulatorCommand({ ...options, signal: held ? AbortSignal.abort() : undefined });
    });

  program
    .command('demo')
    .description('simulator + daemon + embedded database in one process, printing where to look')
    .action(async () => {
      const { demoCommand } = await import('./commands/demo.ts');
      await demoCommand(commandContext());
    });

  addCommandHelp(program);
  return program;
}

/**
 * `fleet run`: a worker of the fleet (cli/commands/fleet.ts). Its hidden flags shrink the fleet's clockwork (see
 * src/fleet/timing.ts) for tests and the bench; the defaults are derived there.
 */
function addFleetCommand(program: Command): void {
  const fleet = program
    .command('fleet')
    .description("run a fleet's worker (DATABASE_URL, FLEET_KEY, FLEET_SCHEMA); see its accounts with `accounts list`");
  const seconds = (name: string) => (value: string) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive number of seconds`);
    return n;
  };
  const hidden = (flags: string, name: string) => new Option(flags).argParser(seconds(name)).hideHelp();
  fleet
    .command('run')
    .description('sync the accounts due, --concurrency at once, with the other workers, until SIGTERM/SIGINT (a graceful stop hands them back)')
    .option('--concurrency <n>', 'passes at once in this process (each takes 1 PostgreSQL connection, the worker 7 more)', positive, 4)
    .addOption(hidden('--slice-seconds <s>', 'slice'))
    .addOption(hidden('--expire-seconds <s>', 'expire'))
    .addOption(hidden('--maintenance-seconds <s>', 'maintenance'))
    .addOption(hidden('--reconcile-seconds <s>', 'reconcile'))
    .addOption(hidden('--poll-seconds <s>', 'poll'))
    .action(async (o: { concurrency: number; sliceSeconds?: number; expireSeconds?: number; maintenanceSeconds?: number; reconcileSeconds?: number; pollSeconds?: number }) => {
      const { fleetRunCommand } = await import('./commands/fleet.ts');
      const ms = (s: number | undefined) => (s === undefined ? undefined : Math.round(s * 1000));
      const whole = (s: number | undefined) => (s === undefined ? undefined : Math.max(1, Math.round(s)));
      const timing = Object.fromEntries(
        Object.entries({
          sliceMs: ms(o.sliceSeconds),
          deliverySliceMs: ms(o.sliceSeconds),
          expireInSeconds: whole(o.expireSeconds),
          maintenanceIntervalSeconds: whole(o.maintenanceSeconds),
          reconcileMs: ms(o.reconcileSeconds),
          pollIntervalMs: ms(o.pollSeconds),
        }).filter(([, v]) => v !== undefined),
      );
      // The account table, /metrics and /status.json join the worker's /healthz and /readyz (fleet/statusRoutes.ts).
      const { fleetStatusRoutesFactory } = await import('../fleet/statusRoutes.ts');
      await fleetRunCommand(commandContext(), { concurrency: o.concurrency, timing }, fleetStatusRoutesFactory);
    });
  fleet
    .command('status')
    .description("each account's state, last pass, lag, budget left, backfill and last error, the totals and pg-boss's queues, from PostgreSQL alone")
    .option('--json', 'print JSON instead of text')
    .action(async (options: { json?: boolean }) => {
      const { fleetStatusCommand } = await import('./commands/fleetStatus.ts');
      await fleetStatusCommand(commandContext(), options);
    });
}

/**
 * `accounts add|list|pause|resume|remove|seal|rekey`: the fleet's accounts (cli/commands/accounts.ts). There is no option
 * that takes a token as its value: a command line is visible to every user of the machine and kept in shell history,
 * so the token comes from stdin, a file, or a variable named here.
 */
function addAccountsCommand(program: Command): void {
  const accounts = program
    .command('accounts')
    .description("a fleet's accounts (DATABASE_URL, FLEET_SCHEMA): add, list, pause, resume, remove; seal a token for SQL")
    .configureHelp({ subcommandTerm: (c) => `${c.name()} ${c.usage()}` });
  const load = () => import('./commands/accounts.ts');

  accounts
    .command('add')
    .description('add an account; its token is read from stdin, a file or a variable (never an argument) and sealed with FLEET_KEY')
    .argument('<name>', 'lower-case letters, digits and _, starting with a letter, at most 40')
    .requiredOption('--api-url <url>', "the helpdesk's base URL, as TICKETS_API_URL")
    .option('--token-stdin', 'read the token from standard input (typed without echo on a terminal)')
    .option('--token-file <path>', 'read the token from a file')
    .option('--token-env <var>', 'read the token from the environment variable VAR, now')
    .option('--daily-limit <n>', 'requests per rolling 24 h (as API_DAILY_LIMIT)')
    .option('--minute-limit <n>', 'requests per minute (as API_MINUTE_LIMIT)')
    .option('--reserve <f>', 'fraction of both limits left unused, 0 to 0.9 (as API_RESERVE)')
    .option('--schema <s>', "the schema of the account's mirror (default tm_<name>; public adopts a single-account mirror)")
    .option('--paused', 'add it paused (accounts resume starts it)')
    .addHelpText(
      'after',
      '\nThe token is never an argument, and no option takes it as its value: a command line is visible to every user of\n' +
        'the machine (ps, /proc) and kept in shell history. It is sealed at once (AES-256-GCM, FLEET_KEY) and stored sealed.\n' +
        'Example: ticket-mirror accounts add acme --api-url https://acme.example.com --token-file /run/secrets/acme\n',
    )
    .action(async (name: string, options: AddOptions) => (await load()).accountsAdd(commandContext(), name, options));

  accounts
    .command('list')
    .description('the accounts, their state, limits and the key id their token is sealed with (never the token)')
    .option('--json', 'print JSON instead of text')
    .action(async (options: { json?: boolean }) => (await load()).accountsList(commandContext(), options));

  accounts
    .command('pause')
    .description('pause an account: no request is sent for it until it is resumed')
    .argument('<name>', 'the account')
    .action(async (name: string) => (await load()).accountsPause(commandContext(), name));

  accounts
    .command('resume')
    .description('resume a paused account')
    .argument('<name>', 'the account')
    .action(async (name: string) => (await load()).accountsResume(commandContext(), name));

  accounts
    .command('remove')
    .description("remove an account; its mirror's schema stays unless --drop-data")
    .argument('<name>', 'the account')
    .option('--drop-data', "also drop the account's schema and every table in it (never public)")
    .action(async (name: string, options: { dropData?: boolean }) => (await load()).accountsRemove(commandContext(), name, options));

  accounts
    .command('seal')
    .description("seal a token from standard input for account NAME, printed as \\x… for '\\x…'::bytea in an SQL insert")
    .argument('<name>', 'the account the token is for (it opens for that name only)')
    .action(async (name: string) => (await load()).accountsSeal(commandContext(), name));

  accounts
    .command('rekey')
    .description('seal every token again with FLEET_KEY, opening them with the previous key from the variable VAR')
    .requiredOption('--old-key-env <var>', 'the environment variable holding the previous FLEET_KEY')
    .action(async (options: { oldKeyEnv: string }) => (await load()).accountsRekey(commandContext(), options));
}

/** A commander error message with the value of any `--option=value` it quotes cut off. */
export function withoutOptionValues(text: string): string {
  return text.replace(/(unknown option '[^'=\s]*)=[^']*'/g, "$1=…'");
}

/**
 * The arguments as commander should see them. `ticket-mirror stauts --help` and `ticket-mirror help stauts` name a
 * command that does not exist: an error, with the closest command suggested — commander would show the general help
 * and exit 0. So an unknown command name is passed on alone. (The program's own options take no value, so the first
 * argument that is not an option is the command's name.)
 */
export function commandLine(program: Command, argv: readonly string[]): string[] {
  const [node = 'node', script = 'ticket-mirror', ...args] = argv;
  const operands = args.filter((a) => !a.startsWith('-'));
  const name = operands[0] === 'help' ? operands[1] : operands[0];
  if (name === undefined || program.commands.some((c) => c.name() === name || c.aliases().includes(name))) return [...argv];
  return [node, script, name];
}

/**
 * Maps a failure to its exit code and a line or two on stderr: every configuration problem; a failure the table of
 * explainFailure knows (the database or the API unreachable, a login, token or database refused, a port or the data
 * folder taken), with its setting and fix; else the error's message (and its stack at LOG_LEVEL debug or trace).
 */
export function reportFailure(error: unknown): number {
  const e = coerceError(error);
  if (e instanceof ConfigError) {
    for (const problem of e.problems) say(problem);
    return EXIT.usage;
  }
  // A command's own exit decision may carry the failure behind it (sync: what ended the pass).
  const explained = explainFailure(e instanceof ExitError && e.cause !== undefined ? e.cause : e, configuredSettings());
  if (explained) {
    // One line, the fix after what failed: the contract's "one clear line", and what a supervisor's log keeps whole.
    say(explained.lines.map((line) => line.trim()).join(' — '));
    return e instanceof ExitError ? e.code : explained.code;
  }
  if (e instanceof ExitError) {
    if (e.message) say(e.message);
    return e.code;
  }
  // A database error's message is its query and every bound value, on two lines: the database's own reason instead.
  say(safeErrorMessage(e));
  // The configuration may be what failed, so LOG_LEVEL is read here as it stands.
  if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace') process.stderr.write(`${e.stack}\n`);
  return EXIT.failure;
}

/** One line on stderr, whatever the failure quotes (an API's error text may hold a secret, or line breaks). */
function say(line: string): void {
  process.stderr.write(`ticket-mirror: ${withoutControlCharacters(scrubSecrets(line)).trim().replace(/\s*\n\s*/g, ' — ')}\n`);
}

/** The settings a failure may concern, when the configuration can be read at all. */
function configuredSettings(): FailureSettings {
  try {
    return loadConfig(process.env);
  } catch {
    return {};
  }
}

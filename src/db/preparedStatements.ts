import { createHash } from 'node:crypto';
import pg from 'pg';

/** What the log says when `onOff` is told. */
export const UNPREPARED_WARNING =
  'PostgreSQL refused a prepared statement (a pooler in transaction mode? a table altered by hand?): that statement failed and is tried again with its pass; from now on statements are sent unprepared';

/**
 * Named prepared statements for the texts the daemon sends again and again.
 *
 * Sent unnamed, as drizzle sends them, every statement is parsed, analysed and planned by PostgreSQL each time. The
 * daemon sends some thirty texts, each thousands of times a day (a plan's reading of the mirror is 2 KB of SQL, a
 * detail's write 3 KB), some ten statements a request. Named, a session parses each once and PostgreSQL may keep its
 * plan (`plan_cache_mode`, auto: a generic plan only when it costs no more than the custom ones did). In the quick
 * `abundant` bench run (58,600 statements) the run took 39-43 s instead of 53 (bench/README.md, "Prepared statements").
 *
 * A text is named the second time this process sends it, and only with parameters: migrations, DDL and the one-off
 * statements stay unnamed. A session holds at most `perSession` of them (the rest go unnamed), and the texts counted are
 * at most `texts` (then counted afresh), so a text that varied with its values could not fill the server's memory.
 *
 * Where named statements cannot work — a pooler in transaction mode (PgBouncer before 1.21, or without
 * `max_prepared_statements`) runs a transaction on a server session that never parsed the name; a table altered by hand
 * so that a statement's result changes type ("cached plan must not change result type") — PostgreSQL refuses the
 * statement. That statement fails as any database error does (its pass is rolled back and tried again), and from then
 * on this process sends every statement unnamed: `onOff` is told once, with the error.
 */
export class StatementNames {
  readonly #seen = new Map<string, string | null>();
  #off: Error | null = null;

  constructor(
    private readonly onOff: (error: Error) => void = () => {},
    readonly perSession = 200,
    private readonly texts = 1_000,
  ) {}

  /** The error that turned naming off, or null while it is on. */
  get off(): Error | null {
    return this.#off;
  }

  /** The name to send `text` under, or undefined to send it unnamed. */
  nameFor(text: string): string | undefined {
    if (this.#off) return undefined;
    const name = this.#seen.get(text);
    if (name) return name;
    if (name === null) {
      const named = `tm_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
      this.#seen.set(text, named);
      return named;
    }
    if (this.#seen.size >= this.texts) this.#seen.clear();
    this.#seen.set(text, null);
    return undefined;
  }

  /** Looks at a statement's failure: one that says named statements cannot work here turns them off. */
  failed(error: unknown): void {
    if (this.#off || !cannotPrepare(error)) return;
    this.#off = error as Error;
    this.onOff(this.#off);
  }
}

function cannotPrepare(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  // 26000: prepared statement "…" does not exist; 42P05: prepared statement "…" already exists (both: another
  // session's statements behind a pooler); 0A000: cached plan must not change result type (a table altered by hand).
  return code === '26000' || code === '42P05' || (code === '0A000' && /cached plan/i.test(error.message));
}

/** A pg.Client class (for pg.Pool's `Client` option) that names statements as `names` says. */
export function namingClient(names: StatementNames): typeof pg.Client {
  return class NamingClient extends pg.Client {
    readonly #named = new Set<string>();

    // pg.Client.query's overloads, all passed through as they are but for the name: (text | config, values?,
    // callback?) — pg.Pool's query calls it with a callback, drizzle on a pool client without.
    override query(...args: any[]): any {
      const [config, values] = args as unknown[];
      const text = typeof config === 'string' ? config : isUnnamed(config) ? config.text : undefined;
      if (text !== undefined && Array.isArray(values) && values.length > 0) {
        const name = names.nameFor(text);
        if (name && (this.#named.has(name) || this.#named.size < names.perSession)) {
          this.#named.add(name);
          args[0] = typeof config === 'string' ? { text, name } : { ...(config as object), name };
        }
      }
      const last = args.length - 1;
      const callback = args[last] as unknown;
      if (typeof callback === 'function') {
        args[last] = (error: unknown, ...rest: unknown[]) => {
          if (error) names.failed(error);
          return (callback as (...a: unknown[]) => unknown)(error, ...rest);
        };
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (result instanceof Promise) result.catch((error: unknown) => names.failed(error));
      return result;
    }
  };
}

function isUnnamed(config: unknown): config is { text: string } {
  return typeof config === 'object' && config !== null && typeof (config as { text?: unknown }).text === 'string' && (config as { name?: unknown }).name === undefined;
}

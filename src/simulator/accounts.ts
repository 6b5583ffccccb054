import type { Clock } from '../clock.ts';
import type { RequestLogEntry } from './api.ts';
import { FaultInjector, type Fault } from './faults.ts';
import { SimulatorModel } from './model.ts';
import { RateLimiter } from './rateLimiter.ts';
import { AttachmentSigner, signingSecret } from './signing.ts';

/**
 * The accounts one simulator serves: a token each, each with its own dataset, limits, faults and request log, all on
 * one API origin and one storage origin — so a fleet of a thousand accounts runs on one machine.
 *
 * Cheap until used: an account is a few numbers, a rate limiter and an empty log until a request needs its data; its
 * model is then built as of the instant the account was added (`historyEndsAt`), so when it is built changes nothing.
 * Accounts added this way keep a compact history (model.ts, `compactHistory`): a small account (40 open, 400 resolved)
 * costs about half a megabyte once built.
 */

export interface AccountSpec {
  /** The account's bearer token: 1–512 visible ASCII characters, unique among the simulator's accounts. */
  token: string;
  /** @default the simulator's seed + the account's ordinal − 1 (the first account has the simulator's seed) */
  seed?: number;
  /** @default the simulator's openTickets (40) */
  openTickets?: number;
  /** @default the simulator's resolvedTickets (120) */
  resolvedTickets?: number;
  /** Requests per rolling 24 h. @default the simulator's dailyLimit (1440) */
  dailyLimit?: number;
  /** Requests per minute window. @default the simulator's minuteLimit (60) */
  minuteLimit?: number;
}

/** What the simulator's options give every account that does not say otherwise. */
export interface AccountDefaults {
  seed: number;
  openTickets: number;
  resolvedTickets: number;
  dailyLimit: number;
  minuteLimit: number;
}

/** What `GET /__sim/accounts` shows of an account: everything but its token. */
export interface AccountSummary {
  ordinal: number;
  seed: number;
  openTickets: number;
  resolvedTickets: number;
  minuteLimit: number;
  dailyLimit: number;
  /** Whether its dataset has been built (by a request, the activity driver or an access to `model`). */
  built: boolean;
}

const TOKEN = /^[\x21-\x7e]{1,512}$/;

export class SimulatorAccount {
  readonly token: string;
  /** 1, 2, 3 …: the order in which the accounts were added. Names the account in its attachment links. */
  readonly ordinal: number;
  readonly seed: number;
  readonly openTickets: number;
  readonly resolvedTickets: number;
  /** Its two limits, counted for its token alone. */
  readonly limiter: RateLimiter;
  /** Every request its token made, in arrival order (the last `logLimit` of them at least: see appendLog). */
  readonly log: RequestLogEntry[] = [];
  /** Where its dataset's history ends: the instant it was added. */
  readonly addedAt: number;
  readonly #build: () => SimulatorModel;
  readonly #logLimit: number;
  #model: SimulatorModel | undefined;
  #faults: FaultInjector | undefined;

  constructor(spec: Required<AccountSpec>, ordinal: number, addedAt: number, logLimit: number, build: () => SimulatorModel) {
    this.token = spec.token;
    this.ordinal = ordinal;
    this.seed = spec.seed;
    this.openTickets = spec.openTickets;
    this.resolvedTickets = spec.resolvedTickets;
    this.limiter = new RateLimiter({ minuteLimit: spec.minuteLimit, dailyLimit: spec.dailyLimit });
    this.addedAt = addedAt;
    this.#logLimit = logLimit;
    this.#build = build;
  }

  /** Its helpdesk; built on first use. */
  get model(): SimulatorModel {
    return (this.#model ??= this.#build());
  }

  get built(): boolean {
    return this.#model !== undefined;
  }

  /** The model if it has been built: for the storage origin, which never serves a link of an unbuilt account. */
  builtModel(): SimulatorModel | undefined {
    return this.#model;
  }

  /** Faults for its requests only. */
  get faults(): FaultInjector {
    return (this.#faults ??= new FaultInjector());
  }

  get minuteLimit(): number {
    return this.limiter.minuteLimit;
  }

  /** The fault for its next request to `target`, if one is queued (without creating an injector). */
  takeFault(target: string): Fault | undefined {
    return this.#faults?.take(target);
  }

  record(entry: RequestLogEntry): void {
    appendLog(this.log, entry, this.#logLimit);
  }

  summary(): AccountSummary {
    const { ordinal, seed, openTickets, resolvedTickets, built } = this;
    const { minuteLimit, dailyLimit } = this.limiter;
    return { ordinal, seed, openTickets, resolvedTickets, minuteLimit, dailyLimit, built };
  }
}

export interface AccountRegistryOptions {
  clock: Clock;
  /** The storage origin every account's attachment links name. */
  storageUrl: string;
  defaults: AccountDefaults;
  /** @default Infinity */
  logLimit?: number;
  /**
   * A single-account simulator's account: links at the storage origin's root (`/files/…`, as they always were), and
   * a full history built at once. Every other account's links are under `/a/{ordinal}/files/…`.
   */
  rootAccount?: boolean;
}

/** The accounts by token and by ordinal. */
export class AccountRegistry {
  readonly #byToken = new Map<string, SimulatorAccount>();
  readonly #list: SimulatorAccount[] = [];
  readonly #opts: AccountRegistryOptions;

  constructor(opts: AccountRegistryOptions) {
    this.#opts = opts;
  }

  /** Adds an account (its dataset is built on first use). Throws RangeError for a bad or duplicate token or number. */
  add(spec: AccountSpec): SimulatorAccount {
    return this.addAll([spec])[0]!;
  }

  /** Adds accounts, all or none: each is checked (and their tokens against each other) before any is added. */
  addAll(specs: readonly AccountSpec[]): SimulatorAccount[] {
    const tokens = new Set<string>();
    const resolved = specs.map((spec, i) => {
      const full = this.#resolve(spec, this.#list.length + i + 1);
      if (tokens.has(full.token)) throw new RangeError('two of the accounts have the same token');
      tokens.add(full.token);
      return full;
    });
    return resolved.map((full) => this.#insert(full));
  }

  /** A spec with every default filled in, checked as a hostile input. */
  #resolve(spec: AccountSpec, ordinal: number): Required<AccountSpec> {
    const { defaults } = this.#opts;
    if (typeof spec !== 'object' || spec === null) throw new RangeError('an account is an object with a token');
    if (typeof spec.token !== 'string' || !TOKEN.test(spec.token)) {
      throw new RangeError('an account token must be 1–512 visible ASCII characters');
    }
    const taken = this.#byToken.get(spec.token);
    if (taken) throw new RangeError(`account ${taken.ordinal} has that token already`);
    const full: Required<AccountSpec> = {
      token: spec.token,
      seed: spec.seed ?? defaults.seed + ordinal - 1,
      openTickets: spec.openTickets ?? defaults.openTickets,
      resolvedTickets: spec.resolvedTickets ?? defaults.resolvedTickets,
      dailyLimit: spec.dailyLimit ?? defaults.dailyLimit,
      minuteLimit: spec.minuteLimit ?? defaults.minuteLimit,
    };
    if (!Number.isSafeInteger(full.seed)) throw new RangeError(`seed must be a whole number (${full.seed})`);
    for (const [name, min] of [['openTickets', 0], ['resolvedTickets', 0], ['dailyLimit', 1], ['minuteLimit', 1]] as const) {
      const value = full[name];
      if (!Number.isSafeInteger(value) || value < min) throw new RangeError(`${name} must be a whole number ≥ ${min} (${value})`);
    }
    return full;
  }

  #insert(full: Required<AccountSpec>): SimulatorAccount {
    const { clock, storageUrl, logLimit = Infinity } = this.#opts;
    const ordinal = this.#list.length + 1;
    const root = this.#opts.rootAccount === true && ordinal === 1;
    const addedAt = clock.now();
    const build = (): SimulatorModel =>
      new SimulatorModel({
        seed: full.seed,
        clock,
        openTickets: full.openTickets,
        resolvedTickets: full.resolvedTickets,
        signer: new AttachmentSigner(signingSecret(full.seed), root ? storageUrl : `${storageUrl}/a/${ordinal}`),
        historyEndsAt: addedAt,
        compactHistory: !root,
      });
    const account = new SimulatorAccount(full, ordinal, addedAt, logLimit, build);
    // A single-account simulator builds its dataset at once, as it always did.
    if (root) void account.model;
    this.#byToken.set(account.token, account);
    this.#list.push(account);
    return account;
  }

  get(token: string | undefined): SimulatorAccount | undefined {
    return token === undefined ? undefined : this.#byToken.get(token);
  }

  /** The account whose links are under `/a/{ordinal}/` — or, for null, at the root (a single-account simulator's). */
  byLinkPrefix(ordinal: number | null): SimulatorAccount | undefined {
    if (ordinal === null) return this.#opts.rootAccount ? this.#list[0] : undefined;
    const account = this.#list[ordinal - 1];
    return account && !(this.#opts.rootAccount && ordinal === 1) ? account : undefined;
  }

  first(): SimulatorAccount {
    return this.#list[0]!;
  }

  all(): readonly SimulatorAccount[] {
    return this.#list;
  }
}

/**
 * Appends to a log that keeps its last `limit` entries at least, twice that at most: trimmed in batches, so appending
 * stays O(1) amortised. The array is trimmed in place (whoever holds it sees the trimmed log).
 */
export function appendLog(log: RequestLogEntry[], entry: RequestLogEntry, limit: number): void {
  log.push(entry);
  if (log.length >= 2 * limit) log.splice(0, log.length - limit);
}

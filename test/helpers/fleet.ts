import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hostname } from 'node:os';
import pg from 'pg';
import type { Lease } from '../../src/daemon/leader.ts';
import { openDatabase } from '../../src/db/connect.ts';
import { openFleetDatabase, type FleetDatabase } from '../../src/db/fleet.ts';
import { getAccount, insertAccount, type Account } from '../../src/db/repos/accounts.ts';
import { parseFleetKey, sealToken, type FleetKey } from '../../src/fleet/tokenSeal.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import { startCommand, type RunProcess } from './runProcess.ts';

/**
 * A fleet of its own on the real PostgreSQL, for tests of real `fleet run` processes: a control schema, a FLEET_KEY,
 * accounts each served by a simulator of its own (its own token, dataset, limits and request log), and the workers.
 * Everything it made is dropped by close(): the workers killed, the simulators stopped, the schemas gone.
 */

export interface TestAccountOptions {
  sim?: SimulatorOptions;
  /** The token sealed into the row, when it is not the simulator's (a wrong one). */
  token?: string;
  /** Sealed with another FLEET_KEY (a blob that does not open). */
  otherKey?: boolean;
  paused?: boolean;
  /** Leave its schema to the worker's first pass (as an account inserted with SQL). */
  unmigrated?: boolean;
}

export interface FleetPass {
  account: string;
  worker: string;
  /** Epoch ms: the job's lock was held from `start` to `end` (the log line's time and tookMs). */
  start: number;
  end: number;
  requests: number;
}

export interface TestFleet {
  readonly url: string;
  readonly schema: string;
  readonly key: FleetKey;
  readonly fleet: FleetDatabase;
  readonly admin: pg.Client;
  readonly sims: Map<string, RunningSimulator>;
  addAccount(name: string, o?: TestAccountOptions): Promise<RunningSimulator>;
  schemaOf(account: string): string;
  row(account: string): Promise<Account>;
  /** A `fleet run` process; `flags` after `fleet run`. */
  startWorker(flags: string[], env?: Record<string, string>): RunProcess;
  /** The worker id a process shows (`<host>:<pid>`). */
  workerId(run: RunProcess): string;
  /** Which worker holds which account's lock now (pg_stat_activity). */
  holders(): Promise<Map<string, string>>;
  /** The account's passes that sent requests, from its sync_runs (start, end). */
  syncRuns(account: string): Promise<Array<{ start: number; end: number; requests: number }>>;
  /** Every pass the workers logged ("fleet pass" lines; LOG_LEVEL debug logs the ones without requests too). */
  passes(): FleetPass[];
  /** Writes every worker's log into a file of the temporary folder (for a failed test); returns its path. */
  dumpLogs(): string;
  /** The account's jobs in pg-boss that are not finished. */
  openJobs(account: string): Promise<Array<{ state: string; dueInMs: number }>>;
  close(): Promise<void>;
}

export async function testFleet(url: string): Promise<TestFleet> {
  const schema = `tmf_${randomBytes(4).toString('hex')}`;
  const keyText = randomBytes(32).toString('base64');
  const key = parseFleetKey(keyText);
  const fleet = await openFleetDatabase({ databaseUrl: url, schema, poolSize: 1 });
  await fleet.migrate();
  const admin = new pg.Client({ connectionString: url, options: `-c search_path=${schema}` });
  await admin.connect();
  const sims = new Map<string, RunningSimulator>();
  const workers: RunProcess[] = [];
  const schemaOf = (account: string) => `${schema}_${account}`;

  const t: TestFleet = {
    url,
    schema,
    key,
    fleet,
    admin,
    sims,
    schemaOf,
    async addAccount(name, o = {}) {
      const sim = await startSimulator({ seed: sims.size + 1, token: `token-${name}`, openTickets: 6, resolvedTickets: 6, ...o.sim });
      sims.set(name, sim);
      // Migrated here, as `accounts add` provisions it: a first pass is then a pass, not a migration.
      if (!o.unmigrated) {
        const database = await openDatabase({ databaseUrl: url, schema: schemaOf(name), poolSize: 1 });
        await database.migrate();
        await database.close();
      }
      const sealWith = o.otherKey ? parseFleetKey(randomBytes(32).toString('base64')) : key;
      await insertAccount(fleet.db, {
        name,
        schemaName: schemaOf(name),
        apiUrl: sim.url,
        tokenSealed: sealToken(sealWith, name, o.token ?? sim.token),
        dailyLimit: o.sim?.dailyLimit ?? 1440,
        minuteLimit: o.sim?.minuteLimit ?? 60,
        reserve: 0.1,
        pausedAt: o.paused ? new Date().toISOString() : null,
      });
      return sim;
    },
    async row(account) {
      return (await getAccount(fleet.db, account))!;
    },
    startWorker(flags, env = {}) {
      const run = startCommand(['fleet', 'run', ...flags], {
        DATABASE_URL: url,
        FLEET_KEY: keyText,
        FLEET_SCHEMA: schema,
        HTTP_PORT: '0',
        LOG_LEVEL: 'debug',
        LOG_FORMAT: 'json',
        ...env,
      });
      workers.push(run);
      return run;
    },
    workerId: (run) => `${hostname().slice(0, 20)}:${run.pid}`,
    async holders() {
      // The accounts whose lock a worker's lock session holds (an advisory lock on a bigint key: its low 32 bits in objid).
      const { rows } = await admin.query<{ account: string; app: string }>(
        `select acc.name as account, a.application_name as app from pg_stat_activity a
           join pg_locks l on l.pid = a.pid and l.locktype = 'advisory' and l.granted
           join "${schema}".accounts acc on l.objid::bigint = (hashtext('ticket-mirror:sync:' || acc.schema_name)::bigint & 4294967295)
         where a.application_name like 'tm fleet locks %'`,
      );
      return new Map(rows.map((r) => [r.account, r.app.slice('tm fleet locks '.length)]));
    },
    async syncRuns(account) {
      const { rows } = await admin.query<{ s: string; e: string; requests: number }>(
        `select (extract(epoch from started_at) * 1000)::bigint as s, (extract(epoch from finished_at) * 1000)::bigint as e, requests
         from "${schemaOf(account)}".sync_runs order by started_at`,
      );
      return rows.map((r) => ({ start: Number(r.s), end: Number(r.e), requests: r.requests }));
    },
    passes() {
      const out: FleetPass[] = [];
      for (const run of workers) {
        for (const line of run.output().split('\n')) {
          if (!line.includes('"fleet pass"')) continue;
          try {
            const l = JSON.parse(line) as { time: string; account: string; worker: string; tookMs: number; requests: number };
            const end = Date.parse(l.time);
            out.push({ account: l.account, worker: l.worker, start: end - l.tookMs, end, requests: l.requests });
          } catch {
            // a line cut in the middle of being written
          }
        }
      }
      return out.sort((a, b) => a.start - b.start);
    },
    dumpLogs() {
      const path = join(tmpdir(), `${schema}-workers.log`);
      writeFileSync(path, workers.map((w) => `===== worker ${w.pid} (exit ${w.child.exitCode})\n${w.output()}`).join('\n'));
      return path;
    },
    async openJobs(account) {
      const { rows } = await admin.query<{ state: string; due_in_ms: string }>(
        `select state::text as state, (extract(epoch from start_after - now()) * 1000)::bigint as due_in_ms
         from "${schema}_jobs".job where name = 'account-pass' and singleton_key = $1 and state <= 'active' order by created_on`,
        [account],
      );
      return rows.map((r) => ({ state: r.state, dueInMs: Number(r.due_in_ms) }));
    },
    async close() {
      await Promise.all(workers.map((w) => w.dispose()));
      await Promise.all([...sims.values()].map((s) => s.close()));
      await fleet.close();
      for (const s of [...[...sims.keys()].map(schemaOf), `${schema}_jobs`, schema]) await admin.query(`drop schema if exists "${s}" cascade`);
      await admin.end();
    },
  };
  return t;
}

/** Pairs of intervals of one key that overlap (each interval [start, end)). */
export function overlaps<T extends { start: number; end: number }>(intervals: T[]): Array<[T, T]> {
  const sorted = [...intervals].sort((a, b) => a.start - b.start);
  const found: Array<[T, T]> = [];
  for (let i = 1; i < sorted.length; i++) {
    for (let j = 0; j < i; j++) if (sorted[j]!.end > sorted[i]!.start) found.push([sorted[j]!, sorted[i]!]);
  }
  return found;
}

/** Settles when the lease is lost, whether that happened already or not (a listener added late would wait forever). */
export function lostOf(lease: Lease): Promise<void> {
  return new Promise((resolve) => (lease.lost.aborted ? resolve() : lease.lost.addEventListener('abort', () => resolve(), { once: true })));
}

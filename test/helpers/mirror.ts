import { ManualClock } from '../../src/clock.ts';
import { queryRows, sql, type Db } from '../../src/db/connect.ts';
import { createLogger } from '../../src/logger.ts';
import { startSimulator, type RunningSimulator, type SimulatorOptions } from '../../src/simulator/index.ts';
import { SyncEngine } from '../../src/sync/engine.ts';
import type { PassSummary } from '../../src/sync/events.ts';
import { canonicalTimestamp } from '../../src/time.ts';
import type { TestDatabase } from './db.ts';

/**
 * A mirror in virtual time: the simulator and the engine share one ManualClock; the engine's back-off sleeps advance
 * it instead of waiting. Nothing here waits on wall-clock time.
 */
export interface VirtualMirror {
  clock: ManualClock;
  sim: RunningSimulator;
  engine: SyncEngine;
  db: Db;
  /** Runs passes 15 s of virtual time apart until `done()` or `maxPasses`. */
  runUntil(done: () => boolean | Promise<boolean>, maxPasses?: number): Promise<PassSummary[]>;
  /** Runs passes for `ms` of virtual time. */
  runFor(ms: number): Promise<PassSummary[]>;
  /** A new engine on the same database and clock, as after a restart. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export const TICK_MS = 15_000;

export async function virtualMirror(database: TestDatabase, simOptions: SimulatorOptions = {}, limits = { daily: 1440, minute: 60, reserve: 0.1 }): Promise<VirtualMirror> {
  const clock = new ManualClock(Date.UTC(2026, 0, 5, 9, 0, 0));
  const sim = await startSimulator({ seed: 7, openTickets: 8, resolvedTickets: 12, ...simOptions, clock });
  const logger = createLogger('silent');
  const makeEngine = () =>
    new SyncEngine({
      db: database.db,
      apiUrl: sim.url,
      apiToken: sim.token,
      clock,
      limits,
      logger,
      realTime: false,
      sleep: async (ms) => {
        clock.advance(ms);
      },
    });
  const mirror: VirtualMirror = {
    clock,
    sim,
    engine: makeEngine(),
    db: database.db,
    async runUntil(done, maxPasses = 2_000) {
      const summaries: PassSummary[] = [];
      for (let i = 0; i < maxPasses && !(await done()); i++) {
        summaries.push(await mirror.engine.pass());
        clock.advance(TICK_MS);
      }
      return summaries;
    },
    async runFor(ms) {
      const end = clock.now() + ms;
      return mirror.runUntil(() => clock.now() >= end, Math.ceil(ms / TICK_MS) + 1);
    },
    async restart() {
      mirror.engine = makeEngine();
      await mirror.engine.init();
    },
    close: () => sim.close(),
  };
  await mirror.engine.init();
  return mirror;
}

/** The whole mirror, in the simulator's ground-truth shape, for an exact comparison. */
export async function mirrorAsTruth(db: Db): Promise<unknown[]> {
  const tickets = await queryRows<Record<string, unknown>>(db, sql`select * from tickets where deleted_at is null order by id`);
  const messages = await queryRows<Record<string, unknown>>(db, sql`select * from messages where removed_at is null order by created_at, id`);
  const attachments = await queryRows<Record<string, unknown>>(db, sql`select * from attachments where removed_at is null order by id`);
  const ts = (v: unknown) => (v === null ? null : canonicalTimestamp(String(v)));
  const att = (a: Record<string, unknown>) => ({ id: a.id, name: a.name, mime_type: a.mime_type, size: Number(a.size) });
  return tickets.map((t) => ({
    id: t.id,
    name: t.name,
    email: t.email,
    status: t.status,
    priority: t.priority,
    has_unread_messages: t.has_unread_messages,
    replied_to_customer: t.replied_to_customer,
    closed_at: ts(t.closed_at),
    last_contact_at: ts(t.last_contact_at),
    created_at: ts(t.created_at),
    updated_at: ts(t.updated_at),
    assigned_to: t.assigned_to,
    widget: { id: t.widget_id, name: t.widget_name },
    ai_summary: t.ai_summary,
    attachments: attachments.filter((a) => a.ticket_id === t.id).map(att),
    messages: messages
      .filter((m) => m.ticket_id === t.id)
      .map((m) => ({
        id: m.id,
        message_type: m.message_type,
        ticket_status: m.ticket_status,
        message: m.message,
        outbound_sent: m.outbound_sent,
        outbound_delivered_at: ts(m.outbound_delivered_at),
        outbound_bounced: m.outbound_bounced,
        outbound_spam_complaint: m.outbound_spam_complaint,
        outbound_error: m.outbound_error,
        created_at: ts(m.created_at),
        user: m.author,
        attachments: attachments.filter((a) => a.message_id === m.id).map(att),
      })),
  }));
}

/** The simulator's truth, normalised the same way (attachments sorted by id, messages by time). */
export function truthOf(sim: RunningSimulator): unknown[] {
  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  return (sim.model.groundTruth() as unknown as Array<Record<string, unknown> & { id: string }>)
    .map((t) => {
      const messages = (t.messages as Array<Record<string, unknown> & { id: string; created_at: string }>)
        .map((m) => ({ ...m, attachments: [...(m.attachments as Array<{ id: string }>)].map(stripUrl).sort(byId) }))
        .sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : byId(a, b)));
      return { ...t, attachments: [...(t.attachments as Array<{ id: string }>)].map(stripUrl).sort(byId), messages };
    })
    .sort(byId);
}

function stripUrl<T extends object>(a: T): T {
  const { url: _url, ...rest } = a as T & { url?: string };
  return rest as T;
}

export async function count(db: Db, query: ReturnType<typeof sql>): Promise<number> {
  const [row] = await queryRows<{ n: number }>(db, query);
  return Number(row?.n ?? 0);
}

import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { SyncEngine } from '../sync/engine.ts';
import type { MirrorStatus } from '../sync/status.ts';
import { VERSION } from '../version.ts';

/**
 * The Prometheus series of one daemon, in a registry of its own (never prom-client's global one), so that several
 * daemons — tests, or a demo next to a real one — can live in one process.
 *
 * Two kinds of series. Counters and the histogram count what *this process* did, from its engines' events; a standby
 * shows zeros. Gauges describe *the mirror*, whoever syncs it: they are set from `mirrorStatus` (the database alone)
 * just before each scrape, so a standby reports the same budget and counts as the leader. The README lists
 * every series with its meaning.
 */
export class DaemonMetrics {
  readonly registry = new Registry();

  readonly #requests = new Counter({
    name: 'ticket_mirror_api_requests_total',
    help: 'Requests this process sent to the Support Ticket API, by endpoint kind and HTTP status ("none": no answer).',
    labelNames: ['kind', 'status'] as const,
    registers: [this.registry],
  });
  readonly #rateLimited = new Counter({
    name: 'ticket_mirror_api_rate_limited_total',
    help: 'Answers with HTTP 429 (rate limit exceeded) this process received.',
    registers: [this.registry],
  });
  readonly #passDuration = new Histogram({
    name: 'ticket_mirror_sync_pass_duration_seconds',
    help: 'Duration of the sync passes of this process, idle ones included.',
    buckets: [0.05, 0.25, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [this.registry],
  });
  readonly #passes = new Counter({
    name: 'ticket_mirror_sync_passes_total',
    help: 'Sync passes of this process by outcome: ok, rate_limited, server_error, auth_failed, failed.',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });
  readonly #leader = new Gauge({
    name: 'ticket_mirror_leader',
    help: '1 when this process holds the sync lock and syncs, 0 on a standby.',
    registers: [this.registry],
  });
  readonly #budget = new Gauge({
    name: 'ticket_mirror_budget_remaining_requests',
    help: 'Requests the mirror may still send in the rolling window (24h or 1m), after the reserve for other clients.',
    labelNames: ['window'] as const,
    registers: [this.registry],
  });
  readonly #changeLag = new Gauge({
    name: 'ticket_mirror_change_lag_seconds',
    help: 'How long the oldest change a list showed has waited for its ticket detail; 0 when none waits.',
    registers: [this.registry],
  });
  readonly #listAge = new Gauge({
    name: 'ticket_mirror_list_age_seconds',
    help: 'Time since each list was last polled successfully (absent until the first poll).',
    labelNames: ['list'] as const,
    registers: [this.registry],
  });
  readonly #tickets = new Gauge({
    name: 'ticket_mirror_tickets',
    help: 'Mirrored tickets by group: open, self, unassigned, resolved (list membership as last seen), missing, deleted.',
    labelNames: ['group'] as const,
    registers: [this.registry],
  });
  readonly #backfill = new Gauge({
    name: 'ticket_mirror_backfill_remaining',
    help: 'Tickets whose detail has never been fetched.',
    registers: [this.registry],
  });
  readonly #detailQueue = new Gauge({
    name: 'ticket_mirror_detail_queue_size',
    help: 'Tickets whose detail a list asked for (new or changed) and that are not fetched yet.',
    registers: [this.registry],
  });
  readonly #outboxPending = new Gauge({
    name: 'ticket_mirror_outbox_pending',
    help: 'Replies in reply_outbox not sent yet (pending or sending).',
    registers: [this.registry],
  });
  readonly #outboxFailed = new Gauge({
    name: 'ticket_mirror_outbox_failed',
    help: 'Replies in reply_outbox that failed for good.',
    registers: [this.registry],
  });
  readonly #lastSync = new Gauge({
    name: 'ticket_mirror_last_sync_timestamp_seconds',
    help: 'When the last recorded sync pass (of any process) finished, as a Unix time.',
    registers: [this.registry],
  });

  /** `backend`: the database this process runs on, a label of ticket_mirror_build_info. */
  constructor(build: { backend: 'postgres' | 'pglite' }) {
    collectDefaultMetrics({ register: this.registry });
    // What runs, for dashboards and alerts to join on: always 1, the facts in the labels.
    new Gauge({
      name: 'ticket_mirror_build_info',
      help: 'Always 1; the labels say what runs: the ticket-mirror version, the Node.js version, the database backend.',
      labelNames: ['version', 'node_version', 'backend'] as const,
      registers: [this.registry],
    }).set({ version: VERSION, node_version: process.versions.node, backend: build.backend }, 1);
  }

  /** Counts what an engine does; called for each engine this process leads with. */
  observe(engine: SyncEngine): void {
    engine.events.on('request:sent', (entry) => {
      this.#requests.inc({ kind: entry.kind, status: entry.status === null ? 'none' : String(entry.status) });
      if (entry.status === 429) this.#rateLimited.inc();
    });
    engine.events.on('pass:finished', (summary) => {
      this.#passDuration.observe((summary.finishedAt - summary.startedAt) / 1000);
      this.#passes.inc({ result: summary.stoppedBy ?? 'ok' });
    });
  }

  /** Sets the gauges: the mirror's state as read from the database, and this process's role. */
  update(status: MirrorStatus, leader: boolean): void {
    const now = Date.parse(status.now);
    const secondsSince = (iso: string) => Math.max(0, (now - Date.parse(iso)) / 1000);
    this.#leader.set(leader ? 1 : 0);
    this.#budget.set({ window: '24h' }, status.budget.dailyLeft);
    this.#budget.set({ window: '1m' }, status.budget.minuteLeft);
    this.#changeLag.set(status.freshness.oldestDueSince ? secondsSince(status.freshness.oldestDueSince) : 0);
    this.#listAge.reset();
    for (const [list, at] of Object.entries(status.lastPolls)) if (at) this.#listAge.set({ list }, secondsSince(at));
    const c = status.counts;
    for (const group of ['open', 'self', 'unassigned', 'resolved', 'missing', 'deleted'] as const) this.#tickets.set({ group }, c[group]);
    this.#backfill.set(status.backfill.remaining);
    this.#detailQueue.set(status.freshness.detailsDue);
    this.#outboxPending.set(c.outboxPending);
    this.#outboxFailed.set(c.outboxFailed);
    const finished = status.lastSync?.finishedAt;
    if (finished) this.#lastSync.set(Date.parse(finished) / 1000);
  }

  /** The exposition text of every series. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}

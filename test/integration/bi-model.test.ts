import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { queryRows, sql } from '../../src/db/connect.ts';
import { writeDetail } from '../../src/db/repos/details.ts';
import { writeReportSettings } from '../../src/db/repos/reportSettings.ts';
import { DEFAULT_REPORT_SETTINGS } from '../../src/model/reportSettings.ts';
import type { Agent, TicketTruth } from '../../src/simulator/index.ts';
import { mapDetail } from '../../src/sync/mapping.ts';
import { rebuildFromRaw } from '../../src/sync/rebuild.ts';
import { backends, type TestDatabase } from '../helpers/db.ts';
import { count, mirrorAsTruth, truthOf, virtualMirror, type VirtualMirror } from '../helpers/mirror.ts';

/**
 * The BI model of issue 17 against a mirror of the simulator: the agents view matches the simulator's users, the agent
 * ids beside the JSON, synced_at on messages and attachments, tickets_current, and the SLA views, all surviving a
 * rebuild. Instants are compared as UTC text from to_char, so both drivers answer alike.
 */

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`);
const HOUR_MS = 3_600_000;

interface AgentRow {
  id: string;
  name: string;
  email: string;
  first_seen_at: string;
  last_seen_at: string;
  messages: number;
  assigned_tickets: number;
  open_tickets: number;
}

const agentRows = (m: VirtualMirror) =>
  queryRows<AgentRow>(
    m.db,
    sql`select id, name, email, ${iso('first_seen_at')} as first_seen_at, ${iso('last_seen_at')} as last_seen_at,
               messages::int as messages, assigned_tickets::int as assigned_tickets, open_tickets::int as open_tickets
        from agents order by id`,
  );

/** What the agents view should say from the simulator's truth alone (its current state, no history). */
function agentsOfTruth(truth: TicketTruth[], open: Set<string>, agents: readonly Agent[]) {
  const out = new Map<string, { messages: number; assigned: number; open: number; firstMessage: string | null; lastMessage: string | null }>();
  const entry = (id: string) => {
    let e = out.get(id);
    if (!e) out.set(id, (e = { messages: 0, assigned: 0, open: 0, firstMessage: null, lastMessage: null }));
    return e;
  };
  for (const t of truth) {
    const assignee = t.assigned_to as Agent | null;
    if (assignee) {
      const e = entry(assignee.id);
      e.assigned++;
      if (open.has(t.id)) e.open++;
    }
    for (const msg of t.messages) {
      const author = msg.user as Agent | null;
      if (!author) continue;
      const e = entry(author.id);
      e.messages++;
      if (e.firstMessage === null || msg.created_at < e.firstMessage) e.firstMessage = msg.created_at;
      if (e.lastMessage === null || msg.created_at > e.lastMessage) e.lastMessage = msg.created_at;
    }
  }
  const byId = new Map(agents.map((a) => [a.id, a]));
  return [...out.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([id, e]) => ({ ...e, id, name: byId.get(id)?.name, email: byId.get(id)?.email }));
}

describe.each(backends)('the BI model on $name, against a mirrored simulator', { timeout: 180_000 }, ({ open }) => {
  let database: TestDatabase;
  let m: VirtualMirror;
  const backlog = () => count(m.db, sql`select count(*)::int as n from tickets where (detail_synced_at is null or detail_due_since is not null) and deleted_at is null`);
  const synced = async () => (await count(m.db, sql`select count(*)::int as n from tickets`)) > 0 && (await backlog()) === 0;

  beforeAll(async () => {
    database = await open();
    m = await virtualMirror(database);
    await m.runUntil(synced);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });
  afterAll(async () => {
    await m.close();
    await database.destroy();
  });

  it('agents are the simulator\'s users that the tickets show, with their names, e-mails, messages and tickets', async () => {
    const truth = m.sim.model.groundTruth();
    const openIds = new Set(m.sim.model.listOpen().map((t) => t.id));
    const expected = agentsOfTruth(truth, openIds, m.sim.model.agents);
    expect(expected.length).toBeGreaterThan(2);
    const rows = await agentRows(m);
    expect(rows.map(({ id, name, email, messages, assigned_tickets, open_tickets }) => ({ id, name, email, messages, assigned_tickets, open_tickets }))).toEqual(
      expected.map((e) => ({ id: e.id, name: e.name, email: e.email, messages: e.messages, assigned_tickets: e.assigned, open_tickets: e.open })),
    );
    // Every agent is one of the simulator's users, exactly as it spells them.
    const users = new Map(m.sim.model.agents.map((a) => [a.id, a]));
    for (const r of rows) expect({ id: r.id, name: r.name, email: r.email }).toEqual(users.get(r.id));
    // Seen first at their first message (the mirror observed assignments only later); last no earlier than their last.
    for (const [index, r] of rows.entries()) {
      const e = expected[index]!;
      if (e.firstMessage !== null) expect(r.first_seen_at).toBe(e.firstMessage);
      if (e.lastMessage !== null) expect(r.last_seen_at >= e.lastMessage).toBe(true);
      expect(r.first_seen_at <= r.last_seen_at).toBe(true);
    }
  });

  it('agent ids are plain columns equal to the JSON ids, for every row', async () => {
    const [ids] = await queryRows<Record<string, number>>(
      m.db,
      sql`select
            (select count(*) from tickets where assigned_to_id is distinct from assigned_to ->> 'id')::int as tickets_off,
            (select count(*) from messages where author_id is distinct from author ->> 'id')::int as messages_off,
            (select count(*) from ticket_history where assigned_to_id is distinct from assigned_to ->> 'id')::int as history_off,
            (select count(assigned_to_id) from tickets)::int as tickets_set,
            (select count(author_id) from messages)::int as messages_set`,
    );
    expect(ids).toMatchObject({ tickets_off: 0, messages_off: 0, history_off: 0 });
    const truth = m.sim.model.groundTruth();
    expect(ids!.tickets_set).toBe(truth.filter((t) => t.assigned_to !== null).length);
    expect(ids!.messages_set).toBe(truth.flatMap((t) => t.messages).filter((msg) => msg.user !== null).length);
  });

  it('tickets_current has the business columns only, one row per live ticket, the assignee spelled out', async () => {
    const columns = await queryRows<{ column_name: string }>(
      m.db,
      sql`select column_name::text as column_name from information_schema.columns
          where table_schema = current_schema() and table_name = 'tickets_current' order by ordinal_position`,
    );
    expect(columns.map((c) => c.column_name)).toEqual([
      'id', 'name', 'email', 'status', 'priority', 'has_unread_messages', 'replied_to_customer', 'created_at', 'updated_at',
      'last_contact_at', 'closed_at', 'assigned_to_id', 'assigned_to_name', 'assigned_to_email', 'widget_id', 'widget_name',
      'ai_summary', 'in_open', 'in_self', 'in_unassigned', 'in_resolved', 'missing_since', 'last_seen_at', 'synced_at',
    ]);
    const rows = await queryRows<{ id: string; status: string; assigned_to_id: string | null; assigned_to_name: string | null; assigned_to_email: string | null; widget_name: string; in_open: boolean; synced: boolean }>(
      m.db,
      sql`select c.id, c.status, c.assigned_to_id, c.assigned_to_name, c.assigned_to_email, c.widget_name, c.in_open,
                 c.synced_at = t.detail_synced_at as synced
          from tickets_current c join tickets t using (id) order by c.id`,
    );
    const openIds = new Set(m.sim.model.listOpen().map((t) => t.id));
    expect(rows).toEqual(
      (truthOf(m.sim) as TicketTruth[]).map((t) => {
        const a = t.assigned_to as Agent | null;
        return {
          id: t.id,
          status: t.status,
          assigned_to_id: a?.id ?? null,
          assigned_to_name: a?.name ?? null,
          assigned_to_email: a?.email ?? null,
          widget_name: t.widget.name,
          in_open: openIds.has(t.id),
          synced: true,
        };
      }),
    );
  });

  it('synced_at: every live message and attachment was confirmed by its ticket\'s last detail fetch', async () => {
    const [rows] = await queryRows<Record<string, number>>(
      m.db,
      sql`select
            (select count(*) from messages m join tickets t on t.id = m.ticket_id where m.removed_at is null)::int as messages,
            (select count(*) from messages m join tickets t on t.id = m.ticket_id
              where m.removed_at is null and m.synced_at is distinct from t.detail_synced_at)::int as messages_off,
            (select count(*) from attachments a join tickets t on t.id = a.ticket_id where a.removed_at is null)::int as attachments,
            (select count(*) from attachments a join tickets t on t.id = a.ticket_id
              where a.removed_at is null and a.synced_at is distinct from t.detail_synced_at)::int as attachments_off`,
    );
    expect(rows).toMatchObject({ messages_off: 0, attachments_off: 0 });
    expect(rows!.messages).toBeGreaterThan(0);
    expect(rows!.attachments).toBeGreaterThan(0);
  });

  it('synced_at moves with each detail that still holds the row, and stays where it was once the row is gone', async () => {
    const id = truthOf(m.sim).map((t) => t as TicketTruth).find((t) => t.messages.length >= 2 && t.messages.some((msg) => msg.attachments.length > 0))!.id;
    const detail = m.sim.model.detail(id)!;
    const dropped = detail.messages.find((msg) => msg.attachments.length > 0)!;
    const [before] = await queryRows<{ at: string }>(m.db, sql`select ${iso('detail_synced_at')} as at from tickets where id = ${id}`);
    // A detail without one message (and its files), an hour on: as if the helpdesk had removed it.
    const later = new Date(m.clock.now() + HOUR_MS).toISOString().replace('Z', '000Z');
    const droppedFiles = new Set(dropped.attachments.map((a) => a.id));
    const without = {
      ...detail,
      messages: detail.messages.filter((msg) => msg.id !== dropped.id),
      attachments: detail.attachments.filter((a) => !droppedFiles.has(a.id)),
    };
    await m.db.transaction((tx) => writeDetail(tx, mapDetail(JSON.parse(JSON.stringify(without)), id), later, later));
    const messages = await queryRows<{ id: string; synced_at: string; removed: boolean }>(
      m.db,
      sql`select id, ${iso('synced_at')} as synced_at, removed_at is not null as removed from messages where ticket_id = ${id} order by id`,
    );
    expect(messages).toEqual(
      detail.messages
        .map((msg) => ({ id: msg.id, synced_at: msg.id === dropped.id ? before!.at : later, removed: msg.id === dropped.id }))
        .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
    );
    const files = await queryRows<{ synced_at: string; removed: boolean }>(
      m.db,
      sql`select ${iso('synced_at')} as synced_at, removed_at is not null as removed from attachments where message_id = ${dropped.id}`,
    );
    expect(files).toEqual(dropped.attachments.map(() => ({ synced_at: before!.at, removed: true })));
    // The next real fetch brings the message back, confirmed at its time.
    m.clock.advance(2 * HOUR_MS);
    await m.db.execute(sql`update tickets set detail_due_since = ${new Date(m.clock.now()).toISOString()}::timestamptz where id = ${id}`);
    m.clock.advance(1_000);
    await m.runUntil(synced);
    const [back] = await queryRows<{ removed: boolean; same: boolean }>(
      m.db,
      sql`select m.removed_at is not null as removed, m.synced_at = t.detail_synced_at as same
          from messages m join tickets t on t.id = m.ticket_id where m.id = ${dropped.id}`,
    );
    expect(back).toEqual({ removed: false, same: true });
  });

  it('the agents view follows replies and reassignments', async () => {
    const model = m.sim.model;
    const ticket = model.listOpen()[0]!.id;
    const other = model.agents.find((a) => a.id !== model.self.id)!;
    const reply = model.agentReply(ticket, { agent: other.id });
    model.assign(ticket, model.self.id);
    await m.runFor(HOUR_MS);
    await m.runUntil(synced);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
    const rows = await agentRows(m);
    const expected = agentsOfTruth(model.groundTruth(), new Set(model.listOpen().map((t) => t.id)), model.agents);
    // Everyone the truth shows is there with the truth's counts; an agent only the history knows may be there too.
    for (const e of expected) {
      expect(rows.find((r) => r.id === e.id)).toMatchObject({ name: e.name, messages: e.messages, assigned_tickets: e.assigned, open_tickets: e.open });
    }
    for (const r of rows) expect(model.agents.map((a) => a.id)).toContain(r.id);
    expect(rows.find((r) => r.id === other.id)!.last_seen_at >= reply.created_at).toBe(true);
    const [self] = await queryRows<{ current: boolean }>(
      m.db,
      sql`select a.last_seen_at >= t.state_seen_at as current from agents a, tickets t where a.id = ${model.self.id} and t.id = ${ticket}`,
    );
    expect(self).toEqual({ current: true });
  });

  it('sla_breaches lists the tickets whose first response or resolution took longer than the targets', async () => {
    await writeReportSettings(m.db, { ...DEFAULT_REPORT_SETTINGS, slaFirstResponseSeconds: 3600, slaResolutionSeconds: 86400 });
    try {
      const rows = await queryRows<{ ticket_id: string; fr: boolean; res: boolean; now_ms: string }>(
        m.db,
        sql`select ticket_id, first_response_breached as fr, resolution_breached as res,
                   (extract(epoch from now()) * 1000)::bigint::text as now_ms
            from sla_breaches order by ticket_id`,
      );
      const now = rows.length > 0 ? Number(rows[0]!.now_ms) : Date.now();
      const expected = (truthOf(m.sim) as TicketTruth[]).flatMap((t) => {
        const created = Date.parse(t.created_at);
        const firstResponse = t.messages.filter((msg) => msg.message_type === 'outbound' && msg.created_at > t.created_at).map((msg) => Date.parse(msg.created_at));
        const answeredAt = firstResponse.length > 0 ? Math.min(...firstResponse) : now;
        const fr = answeredAt - created > 3600_000;
        const res = (t.closed_at === null ? now : Date.parse(t.closed_at)) - created > 86_400_000;
        return fr || res ? [{ ticket_id: t.id, fr, res }] : [];
      });
      expect(expected.length).toBeGreaterThan(0);
      expect(rows.map(({ ticket_id, fr, res }) => ({ ticket_id, fr, res }))).toEqual(expected);
    } finally {
      await writeReportSettings(m.db, DEFAULT_REPORT_SETTINGS);
    }
  });

  it('a rebuild from raw keeps the ids, synced_at and the views', async () => {
    const snapshot = () =>
      queryRows(m.db, sql`select m.id, m.author_id, ${iso('m.synced_at')} as synced_at from messages m order by m.id`);
    const agentsBefore = await agentRows(m);
    const before = await snapshot();
    await m.db.execute(sql`update tickets set assigned_to = null`);
    await m.db.execute(sql`update messages set author = null, synced_at = null`);
    const result = await rebuildFromRaw(m.db);
    expect(result.failed).toEqual([]);
    expect(await snapshot()).toEqual(before);
    expect(await agentRows(m)).toEqual(agentsBefore);
    expect(await mirrorAsTruth(m.db)).toEqual(truthOf(m.sim));
  });
});

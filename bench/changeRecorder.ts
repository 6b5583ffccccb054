import { LIST_NAMES, type ListName } from '../src/api/endpoints.ts';
import type { ActivityOp, AppliedMutation, SimulatorModel } from '../src/simulator/index.ts';

/**
 * Classifies each mutation the activity driver applies, from the simulator's own state before and after it:
 *
 * - **list-visible** when it changes a field of a list item (name, email, status, has_unread_messages, created_at) or
 *   the ticket's membership of a list; `lists` then names every list whose response changed because of it (the lists
 *   it left or joined, and, when an item field changed, every list that shows the item);
 * - **detail-only** otherwise (a message that leaves the unread flag as it was, a priority change, a reassignment
 *   between two other agents …): no list shows it, only the ticket's detail.
 *
 * The benchmarks record each mutation on its own, as it is applied; mutations of one ticket recorded together would
 * all be classified by their combined effect.
 */

/** Bit of a list in a list set: open 1, self 2, unassigned 4, resolved 8. */
export const LIST_BIT: Record<ListName, number> = { open: 1, self: 2, unassigned: 4, resolved: 8 };

export type ChangeClass = 'list' | 'detail';

export interface Change {
  /** Order of application, from 0. */
  seq: number;
  /** Virtual instant the API started showing it (epoch ms). */
  at: number;
  ticketId: string;
  op: ActivityOp;
  cls: ChangeClass;
  /** Lists whose response it changed (bits of LIST_BIT); 0 for a detail-only change. */
  lists: number;
}

interface ListState {
  groups: number;
  /** The list item's fields, joined. */
  item: string;
}

export class ChangeRecorder {
  readonly #model: SimulatorModel;
  /** Every existing ticket's list state, as of the last step. */
  readonly #shadow = new Map<string, ListState>();
  readonly #initialIds: string[];
  #seq = 0;

  constructor(model: SimulatorModel) {
    this.#model = model;
    for (const list of LIST_NAMES) {
      for (const item of model.list(list)) {
        const s = this.#shadow.get(item.id);
        if (s) s.groups |= LIST_BIT[list];
        else this.#shadow.set(item.id, { groups: LIST_BIT[list], item: itemKey(item) });
      }
    }
    this.#initialIds = [...this.#shadow.keys()];
  }

  /** The tickets that exist before any activity: what a backfill has to fetch. */
  get initialIds(): readonly string[] {
    return this.#initialIds;
  }

  /** Classifies the mutations one `driver.step` applied, in order. */
  record(applied: readonly AppliedMutation[]): Change[] {
    const after = new Map<string, ListState | null>();
    for (const m of applied) if (!after.has(m.ticketId)) after.set(m.ticketId, this.#stateOf(m.ticketId));
    const changes = applied.map((m): Change => {
      const before = this.#shadow.get(m.ticketId) ?? null;
      const now = after.get(m.ticketId) ?? null;
      let lists = (before?.groups ?? 0) ^ (now?.groups ?? 0);
      if (before && now && before.item !== now.item) lists |= before.groups | now.groups;
      return { seq: this.#seq++, at: m.appliedAt, ticketId: m.ticketId, op: m.op, cls: lists ? 'list' : 'detail', lists };
    });
    for (const [id, state] of after) {
      if (state) this.#shadow.set(id, state);
      else this.#shadow.delete(id);
    }
    return changes;
  }

  /**
   * Checks the shadow against the simulator's lists (their membership rule is private to the simulator, so the
   * recorder re-derives it from status and assignee): throws on any difference. Run once at the end.
   */
  verify(): void {
    const fromLists = new ChangeRecorder(this.#model).#shadow;
    if (fromLists.size !== this.#shadow.size) throw new Error(`change recorder: ${this.#shadow.size} tickets tracked, ${fromLists.size} listed`);
    for (const [id, s] of fromLists) {
      const mine = this.#shadow.get(id);
      if (!mine || mine.groups !== s.groups || mine.item !== s.item) throw new Error(`change recorder: ticket ${id} tracked wrongly`);
    }
  }

  #stateOf(id: string): ListState | null {
    const d = this.#model.detail(id);
    if (!d) return null;
    let groups: number;
    if (d.status === 'resolved' || d.status === 'closed') groups = LIST_BIT.resolved;
    else if (d.assigned_to === null) groups = LIST_BIT.open | LIST_BIT.unassigned;
    else groups = d.assigned_to.id === this.#model.self.id ? LIST_BIT.open | LIST_BIT.self : LIST_BIT.open;
    return { groups, item: itemKey(d) };
  }
}

function itemKey(i: { name: string; email: string; status: string; has_unread_messages: boolean; created_at: string }): string {
  return `${i.name}\u0000${i.email}\u0000${i.status}\u0000${i.has_unread_messages}\u0000${i.created_at}`;
}

import { ContentGenerator, WIDGET_NAMES, type Person } from './generator.ts';
import type { Random } from './random.ts';
import { formatMicros } from './stamps.ts';
import type {
  Agent,
  AttachmentRecord,
  MessageRecord,
  Priority,
  TicketRecord,
  TicketStatus,
  Widget,
} from './types.ts';

const ID_LENGTH = 8;
const OTHER_AGENTS = 5;

const PRIORITY_WEIGHTS: readonly (readonly [Priority, number])[] = [
  ['low', 40],
  ['medium', 35],
  ['high', 20],
  ['urgent', 5],
];

/**
 * Builds records — tickets, messages, attachments — for both the generated history and live mutations, so the two
 * cannot drift apart. Owns the cast (the token's user, other agents, widgets) and id uniqueness.
 */
export class TicketFactory {
  readonly rng: Random;
  readonly content: ContentGenerator;
  /** The token's user: "self" of endpoint 2 and the author of replies sent through endpoint 6. */
  readonly self: Agent;
  readonly others: readonly Agent[];
  readonly widgets: readonly Widget[];
  /** Null in a replica, which draws ids again rather than anew. */
  readonly #usedIds: Set<string> | null;
  /** How many drawn ids were already taken (and drawn again): a replica cannot repeat those draws. */
  collisions = 0;

  constructor(rng: Random, cast?: Pick<TicketFactory, 'self' | 'others' | 'widgets'>) {
    this.rng = rng;
    this.content = new ContentGenerator(rng);
    this.#usedIds = cast ? null : new Set();
    if (cast) {
      ({ self: this.self, others: this.others, widgets: this.widgets } = cast);
      return;
    }
    const [self, ...others] = this.content.agents(OTHER_AGENTS + 1).map((p) => ({ id: this.id(), ...p }));
    this.self = self!;
    this.others = others;
    this.widgets = WIDGET_NAMES.map((name) => ({ id: this.id(), name }));
  }

  /**
   * A factory with this one's cast that draws from `rng` and checks no id: given the state the generator had when a
   * record was built, it builds the same record again (if none of its ids collided then: see `collisions`).
   */
  replica(rng: Random): TicketFactory {
    return new TicketFactory(rng, this);
  }

  /** A fresh opaque id: 8 characters of [0-9A-Za-z], so none needs URL-encoding. */
  id(): string {
    let id = this.rng.base62(ID_LENGTH);
    if (this.#usedIds === null) return id;
    while (this.#usedIds.has(id)) {
      this.collisions++;
      id = this.rng.base62(ID_LENGTH);
    }
    this.#usedIds.add(id);
    return id;
  }

  priority(): Priority {
    return this.rng.weighted(PRIORITY_WEIGHTS);
  }

  /** A ticket without messages yet; the caller adds them and sets the derived fields. */
  ticket(person: Person, createdUs: number, priority: Priority = this.priority()): TicketRecord {
    const createdAt = formatMicros(createdUs);
    return {
      id: this.id(),
      name: person.name,
      email: person.email,
      status: 'pending',
      priority,
      hasUnread: false,
      repliedToCustomer: false,
      closedAt: null,
      lastContactAt: createdAt,
      createdAt,
      updatedAt: createdAt,
      assignedTo: null,
      widget: this.rng.pick(this.widgets),
      aiSummary: null,
      attachments: [],
      messages: [],
      createdUs,
      lastEventUs: createdUs,
    };
  }

  files(count: number): AttachmentRecord[] {
    return Array.from({ length: count }, () => ({ id: this.id(), ...this.content.file() }));
  }

  inbound(text: string, ticketStatus: TicketStatus, us: number, attachments: AttachmentRecord[] = []): MessageRecord {
    return this.#message('inbound', null, text, ticketStatus, us, attachments);
  }

  /**
   * A reply e-mailed to the customer. Most are delivered `deliveryDelayUs` later; a few bounce (with an error text)
   * or draw a spam complaint, as real outbound mail does.
   */
  outbound(agent: Agent, text: string, ticketStatus: TicketStatus, us: number, deliveryDelayUs: number): MessageRecord {
    const m = this.#message('outbound', agent, text, ticketStatus, us, []);
    m.outboundSent = true;
    if (this.rng.chance(0.03)) {
      m.bounced = true;
      m.error = this.content.deliveryError();
    } else {
      m.deliveredAt = formatMicros(us + deliveryDelayUs);
      m.spamComplaint = this.rng.chance(0.01);
    }
    return m;
  }

  note(agent: Agent, ticketStatus: TicketStatus, us: number): MessageRecord {
    return this.#message('note', agent, this.content.note(), ticketStatus, us, []);
  }

  #message(
    type: MessageRecord['type'],
    user: Agent | null,
    text: string,
    ticketStatus: TicketStatus,
    us: number,
    attachments: AttachmentRecord[],
  ): MessageRecord {
    return {
      id: this.id(),
      type,
      ticketStatus,
      text,
      outboundSent: false,
      deliveredAt: null,
      bounced: false,
      spamComplaint: false,
      error: null,
      createdAt: formatMicros(us),
      user,
      attachments,
    };
  }
}

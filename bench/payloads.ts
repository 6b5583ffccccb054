import { phpJson } from '../src/simulator/http.ts';
import { Random } from '../src/simulator/random.ts';
import { formatMicros } from '../src/simulator/stamps.ts';

/**
 * Synthetic API bodies for the local-cost measurements, encoded as the service encodes them (PHP's json_encode:
 * non-ASCII escaped). Seeded: the same size gives the same bytes.
 */

const NAMES = ['Emma Smith', 'José García', 'Zoë Müller', '王芳', 'Søren Jensen', 'Małgorzata Kowalski', 'Chloé Dubois 🚀'];
const STATUSES = ['pending', 'open', 'on_hold', 'resolved', 'closed'] as const;
const BASE_US = Date.UTC(2025, 6, 1) * 1000;

export interface ListItemJson {
  id: string;
  name: string;
  email: string;
  status: string;
  has_unread_messages: boolean;
  created_at: string;
}

/** `count` list items, newest first, like a list response. */
export function listItems(count: number, seed = 1): ListItemJson[] {
  const rng = new Random(seed);
  const items: ListItemJson[] = [];
  for (let i = 0; i < count; i++) {
    const name = rng.pick(NAMES);
    items.push({
      id: `${i.toString(36).padStart(6, '0')}${rng.base62(2)}`,
      name,
      email: `customer${i}@example.com`,
      status: rng.pick(STATUSES),
      has_unread_messages: rng.chance(0.5),
      created_at: formatMicros(BASE_US + (count - i) * 60_000_000 + rng.int(1, 999_999)),
    });
  }
  return items;
}

/** The same items with about `fraction` of them changed (unread flag flipped), as a later poll would show them. */
export function changedItems(items: readonly ListItemJson[], fraction: number, seed: number): ListItemJson[] {
  const rng = new Random(seed);
  return items.map((item) => (rng.chance(fraction) ? { ...item, has_unread_messages: !item.has_unread_messages } : item));
}

export function encode(value: unknown): string {
  return phpJson(value);
}

/** A ticket detail with `messages` messages (every fifth with an attachment), as endpoint 5 answers. */
export function detailBody(id: string, messages: number, seed = 1): Record<string, unknown> {
  const rng = new Random(seed);
  const agent = { id: 'agent001', name: 'Priya Raman', email: 'priya@northwind-support.example' };
  const stamp = (i: number) => formatMicros(BASE_US + i * 600_000_000 + rng.int(1, 999_999));
  const attachment = (n: number) => ({
    id: `att${id}${n}`,
    name: `screenshot ${n}.png`,
    mime_type: 'png',
    size: rng.int(1_000, 900_000),
    url: `http://storage.invalid/files/att${id}${n}/screenshot%20${n}.png?expires=1767571200&signature=${'ab'.repeat(32)}`,
  });
  const list = Array.from({ length: messages }, (_, i) => {
    const inbound = i % 2 === 0;
    return {
      id: `msg${id}${String(i).padStart(4, '0')}`,
      message_type: inbound ? 'inbound' : 'outbound',
      ticket_status: 'open',
      message: inbound ? 'Any news on this?\nThe invoice still shows 49,99 € — please check 🙏' : `Hi,\n\nThanks for writing.\n\nBest regards,\n${agent.name}`,
      outbound_sent: !inbound,
      outbound_delivered_at: inbound ? null : stamp(i),
      outbound_bounced: false,
      outbound_spam_complaint: false,
      outbound_error: null,
      created_at: stamp(i),
      user: inbound ? null : agent,
      attachments: i % 5 === 0 ? [attachment(i)] : [],
    };
  });
  return {
    id,
    name: 'Zoë Müller',
    email: 'zoe.muller@example.com',
    status: 'open',
    priority: 'high',
    has_unread_messages: true,
    replied_to_customer: true,
    closed_at: null,
    last_contact_at: stamp(messages),
    created_at: stamp(0),
    updated_at: stamp(messages),
    assigned_to: agent,
    widget: { id: 'widget01', name: 'Help center' },
    ai_summary: null,
    attachments: list.flatMap((m) => m.attachments),
    messages: list,
  };
}

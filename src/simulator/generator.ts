import type { Random } from './random.ts';

/**
 * Realistic, seeded content: people, message texts, file names. Deliberately awkward where real helpdesks are:
 * accents, CJK and emoji in names and texts, line breaks, file names that need URL-encoding — the things a mirror
 * must carry through to PostgreSQL unchanged.
 */

const FIRST_NAMES = [
  'Emma', 'Liam', 'Olivia', 'Noah', 'Sofía', 'José', 'Zoë', 'Björn', 'François', 'Ana', 'Mateus', 'Chloé', 'Søren',
  'Małgorzata', 'Dmitri', 'Aisha', 'Kwame', 'Ingrid', 'Lucía', 'Renée', 'Tomás', 'Ólafur', 'Çağla', 'Jürgen', 'Maya',
  'Ethan', 'Grace', 'Oliver', 'Hannah', 'Samuel',
] as const;

const LAST_NAMES = [
  'Smith', 'García', 'Müller', 'Martin', 'Rossi', 'Kowalski', 'Johansson', 'Nguyễn', 'Dubois', 'Silva', 'O’Brien',
  'van der Berg', 'Jensen', 'Fernández', 'Papadopoulos', 'Öztürk', 'Novák', 'Brown', 'Wilson', 'Lefèvre', 'Costa',
  'Schröder', 'Andersen', 'Taylor',
] as const;

/** Names in scripts without a Latin spelling, with the romanisation their owners use in e-mail addresses. */
const NON_LATIN_NAMES = [
  ['王芳', 'wang.fang'],
  ['李伟', 'li.wei'],
  ['佐藤 美咲', 'misaki.sato'],
  ['田中 健', 'ken.tanaka'],
  ['김민준', 'minjun.kim'],
  ['Дмитрий Иванов', 'd.ivanov'],
  ['Αλέξανδρος Νικολάου', 'alex.nikolaou'],
  ['محمد العلي', 'm.alali'],
] as const;

const EMOJI = ['🚀', '✨', '🌻', '🎧', '🐙'] as const;

/** Includes an internationalised domain: e-mail addresses are not always ASCII. */
const CUSTOMER_DOMAINS = [
  'example.com', 'example.org', 'example.net', 'mail.example', 'acme.example', 'bücher.example',
] as const;

const AGENT_NAMES = [
  'Alex Morgan', 'Priya Raman', 'Jonas Weber', 'Chloé Martin', 'Kenji Watanabe', 'Fatima Zahra', 'Diego Álvarez',
  'Maja Nowak',
] as const;

export const WIDGET_NAMES = ['Website chat', 'Help center', 'Contact form', 'E-mail'] as const;

const OPENINGS = [
  'I can’t log in since this morning. The reset link says “token expired” every time.',
  'My invoice for last month shows 49,99 € instead of 39,99 €. Could you check?',
  'The order #48213 still hasn’t arrived — tracking has been stuck for a week.',
  'Is there a way to export all our data as CSV? We need it for the yearly audit.',
  'The mobile app crashes right after the splash screen (iOS 17.4, iPhone 13).',
  'We’d like to upgrade from Basic to Advanced. Do we keep our existing tickets?',
  '注文番号 #77120 の配送状況を教えてください。まだ届いていません。',
  'Hallo, die Rechnung enthält die falsche Umsatzsteuer-ID. Bitte korrigieren.',
  'Bonjour, je n’arrive pas à changer l’adresse e-mail de mon compte.',
  'Two-factor codes arrive ~5 minutes late, so they are expired by then 😩',
] as const;

const DETAILS = [
  'I already tried clearing the cache and another browser.',
  'Steps:\n1. Open Settings\n2. Click “Billing”\n3. The page stays blank',
  'This is quite urgent for us, our team can’t work without it.',
  'Screenshot attached.',
  'Our account e-mail is the one I’m writing from.',
  'It worked fine until the update last Tuesday.',
  'Thanks in advance 🙏',
  'PS: the naïve fix of logging out and back in didn’t help.',
] as const;

const FOLLOW_UPS = [
  'Any news on this?',
  'Thanks! That worked 👍',
  'Unfortunately the problem is back again.',
  'I tried that, but I still get the same error:\n\n> Error 502 — Bad Gateway',
  'Here is the file you asked for.',
  'Could you also update the billing address? It’s now Königstraße 12, 70173 Stuttgart.',
  'ありがとうございます。確認しました。',
  'Sorry, one more question: does this also apply to the API?',
] as const;

const REPLIES = [
  'Thanks for reaching out! I’ve reset your session, could you try again?',
  'I’ve corrected the invoice; the new one is attached to this e-mail.',
  'The carrier confirmed a delay; your parcel should arrive within 2–3 days.',
  'Yes — you can export everything under Settings → Data → Export (CSV).',
  'Our developers are looking into it. I’ll update you as soon as I hear back.',
  'Could you send us a screenshot of the error and your browser version?',
  'Happy to help! Your plan has been upgraded, nothing else changes.',
] as const;

const NOTES = [
  'Checked the logs: token expiry is set to 5 min for this account.',
  'Escalated to billing, waiting for confirmation.',
  'Customer is on the legacy plan — handle with care.',
] as const;

const SUMMARIES = [
  'Customer cannot log in after a password reset; agent reset the session.',
  'Invoice shows the wrong amount; a corrected invoice was requested.',
  'Parcel delayed at the carrier; customer asked for an update twice.',
  'Customer wants a CSV export of all data for an audit.',
  'App crashes on start after the latest update; awaiting a fix from engineering.',
] as const;

const ERRORS = [
  '550 5.1.1 Recipient address rejected: User unknown',
  '552 5.2.2 Mailbox full',
  '554 5.7.1 Message rejected as spam',
] as const;

/** [file name, extension, min size, max size]; some names need URL-encoding on purpose. */
const FILES = [
  ['invoice-2025-11.pdf', 'pdf', 30_000, 400_000],
  ['Screen Shot 2026-01-03 at 10.14.22.png', 'png', 40_000, 900_000],
  ['screenshot.png', 'png', 20_000, 600_000],
  ['crash log.txt', 'txt', 300, 40_000],
  ['facture n°42.pdf', 'pdf', 30_000, 300_000],
  ['見積書.pdf', 'pdf', 50_000, 500_000],
  ['résumé (final).pdf', 'pdf', 40_000, 250_000],
  ['export #3 & more?.csv', 'csv', 1_000, 200_000],
  ['photo_2026-01-02.jpg', 'jpg', 80_000, 1_500_000],
] as const;

export interface Person {
  name: string;
  email: string;
}

export interface FileSpec {
  name: string;
  mimeType: string;
  size: number;
}

/** Lower-case ASCII for an e-mail local part: accents dropped, letters without a decomposition spelled out. */
function asciiSlug(text: string): string {
  const spelled: Record<string, string> = { ø: 'o', ß: 'ss', æ: 'ae', ł: 'l', đ: 'd', ı: 'i', '’': '' };
  return text
    .toLowerCase()
    .replace(/[øßæłđı’]/g, (c) => spelled[c] ?? '')
    .normalize('NFD')
    .replace(/[^a-z0-9]/g, '');
}

export class ContentGenerator {
  readonly #rng: Random;

  constructor(rng: Random) {
    this.#rng = rng;
  }

  customer(): Person {
    const rng = this.#rng;
    const domain = rng.pick(CUSTOMER_DOMAINS);
    if (rng.chance(0.1)) {
      const [name, local] = rng.pick(NON_LATIN_NAMES);
      return { name, email: `${local}@${domain}` };
    }
    const first = rng.pick(FIRST_NAMES);
    const last = rng.pick(LAST_NAMES);
    const suffix = rng.chance(0.3) ? String(rng.int(1, 99)) : '';
    const name = rng.chance(0.05) ? `${first} ${last} ${rng.pick(EMOJI)}` : `${first} ${last}`;
    return { name, email: `${asciiSlug(first)}.${asciiSlug(last)}${suffix}@${domain}` };
  }

  /** `count` distinct agents of the helpdesk's own team (at most as many as there are names). */
  agents(count: number): Person[] {
    return this.#rng
      .shuffle(AGENT_NAMES)
      .slice(0, count)
      .map((name) => ({ name, email: `${asciiSlug(name.split(' ')[0]!)}@northwind-support.example` }));
  }

  /** The customer's first message: the problem, often with details on further lines. */
  opening(): string {
    const rng = this.#rng;
    const parts: string[] = [rng.pick(OPENINGS)];
    for (let i = rng.int(0, 2); i > 0; i--) parts.push(rng.pick(DETAILS));
    return parts.join(rng.chance(0.5) ? '\n\n' : '\n');
  }

  followUp(): string {
    return this.#rng.pick(FOLLOW_UPS);
  }

  /** An agent's answer, greeting the customer and signed by the agent, as helpdesk replies are. */
  reply(customerName: string, agentName: string): string {
    const greeting = customerName.split(' ')[0];
    return `Hi ${greeting},\n\n${this.#rng.pick(REPLIES)}\n\nBest regards,\n${agentName}`;
  }

  note(): string {
    return this.#rng.pick(NOTES);
  }

  summary(): string {
    return this.#rng.pick(SUMMARIES);
  }

  deliveryError(): string {
    return this.#rng.pick(ERRORS);
  }

  file(): FileSpec {
    const [name, mimeType, min, max] = this.#rng.pick(FILES);
    return { name, mimeType, size: this.#rng.int(min, max) };
  }
}
